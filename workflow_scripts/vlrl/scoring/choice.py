"""Multiple-choice matching: which option letters are right, and how each scorer reads the letter
an answer names. Every matcher reads :func:`vlrl.scoring.rules.answer_span` (the reasoning
stripped) and returns ``Verdict(span, score, correct)``, correct iff the letter it reads is one
of :func:`gold_letters`.

- :func:`strict`: vlrl's rule (:func:`vlrl.scoring.rules.option_letter`).
- :func:`vlmevalkit_2505`: VLMEvalKit's ``can_infer`` as SophiaVL-R1 and SATORI-R1 were scored
  (May 2025): github.com/open-compass/VLMEvalKit ``vlmeval/utils/matching_util.py`` at
  c026693a1cdac9292447eb480579dc2e11fb6f1c, the parent of c3371551; SATORI-R1 vendors the same
  three functions (github.com/justairr/SATORI-R1 at 8857b30f, ``VLMEvalKit/vlmeval/utils/``).
- :func:`vlmevalkit_2608`: the same file at e8e78f05f3080fe28154f2130321f17951c3be94
  (2026-08-18): the letter's first occurrence must be among the last four words (``index >
  len(splits) - 5``) and the text match refuses a long answer (c3371551, 2025-08-04);
  "(correct) answer is X" (a67ace50, 2026-06-17).

VLMEvalKit's ``VERBOSE`` check (an ``A`` that may be an article) runs only with that
environment variable set and is left out. Without a judge, VLMEvalKit scores what ``can_infer``
cannot read as ``Z`` (wrong); a refusal reads ``Z`` too, which is right only for a gold ``Z``
(a 26th option), as there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.rules import LETTERS, answer_span, gold_option_letters, option_letter

_SEPARATORS = ".()[],:;!*#{}"
_REFUSALS = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)
_API_FAILURE = "Failed to obtain answer via API"
_VERBOSE_ANSWER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def gold_letters(candidate: Candidate) -> frozenset[str]:
    """Every option letter the candidate's references accept
    (:func:`vlrl.scoring.rules.gold_option_letters` of ``answer`` and of each ``accepted``).

    >>> sorted(gold_letters(Candidate("", "C", "multiple_choice", ("9", "12", "18", "18"),
    ...                                accepted=("D",))))
    ['C', 'D']
    >>> sorted(gold_letters(Candidate("", "A", "multiple_choice", ("B", "A"))))
    ['A']
    """
    options = list(candidate.options)
    return frozenset().union(*(gold_option_letters(g, options) for g in candidate.golds))


def _option(answer: str, letters: str, recent: bool) -> str | None:
    """``can_infer_option``: a lone option letter among the words (``recent``: and among the
    last four, else "(correct) answer is X", X in A-D); ``Z`` for a refusal or a lone ``Z``."""
    if _API_FAILURE in answer:
        return None
    if any(refusal in answer for refusal in _REFUSALS):
        return "Z"
    words = answer
    for char in _SEPARATORS:
        words = words.replace(char, " ")
    splits = words.split()
    found = [letter for letter in letters if letter in splits]
    if len(found) == 1:
        if not recent or splits.index(found[0]) > len(splits) - 5:
            return found[0]
    elif not found and "Z" in splits:
        return "Z"
    if recent:
        match = _VERBOSE_ANSWER.search(answer)
        if match and match.group(1).upper() in letters:
            return match.group(1).upper()
    return None


def _text(answer: str, options: list[str], limited: bool) -> str | None:
    """``can_infer_text``: the one option whose text (lower-cased) is inside the answer
    (``limited``: unless the answer is over twice as long as the option texts together)."""
    lowered = answer.lower()
    if limited and len(lowered) > 2 * sum(len(option) for option in options):
        return None
    hits = [letter for letter, option in zip(LETTERS, options, strict=False)
            if option.lower() in lowered]  # fmt: skip
    return hits[0] if len(hits) == 1 else None


def can_infer_2505(answer: str, options: list[str]) -> str | None:
    """The letter VLMEvalKit's ``can_infer`` at c026693a reads (None where it returns False):
    a lone option letter among the words (after ``.()[],:;!*#{}`` become spaces), else the one
    option text inside the answer.

    >>> opts = ["red", "blue", "green"]
    >>> [can_infer_2505(a, opts) for a in ["B", "B, though it could be another one", "A or B"]]
    ['B', 'B', None]
    >>> [can_infer_2505(a, opts) for a in ["It is blue.", "Cannot determine the answer"]]
    ['B', 'Z']
    """
    letters = LETTERS[: len(options)]
    return _option(answer, letters, recent=False) or _text(answer, options, limited=False)


def can_infer_2608(answer: str, options: list[str]) -> str | None:
    """The letter VLMEvalKit's ``can_infer`` at e8e78f05 reads (None where it returns False):
    as :func:`can_infer_2505`, but the letter must be among the last four words, else
    "(correct) answer is X" counts, and no option text is read in an answer over twice as long
    as the option texts together.

    >>> opts = ["red", "blue", "green"]
    >>> [can_infer_2608(a, opts) for a in ["B", "B, though it could be another one"]]
    ['B', None]
    >>> [can_infer_2608(a, opts) for a in ["The answer is **C**, not A.", "It is blue."]]
    ['C', 'B']
    """
    letters = LETTERS[: len(options)]
    return _option(answer, letters, recent=True) or _text(answer, options, limited=True)


def _read(candidate: Candidate, reader: Callable[[str, list[str]], str | None]) -> Verdict:
    span = answer_span(candidate.response)
    letter = reader(span, list(candidate.options))
    return verdict(span or None, letter is not None and letter in gold_letters(candidate))


def strict(candidate: Candidate) -> Verdict:
    """vlrl's strict rule: a lone letter, the exact text of an option, or a leading letter
    (:func:`vlrl.scoring.rules.option_letter`).

    >>> strict(Candidate("<answer>(B) blue</answer>", "B", "multiple_choice", ("red", "blue")))
    Verdict(extracted='(B) blue', score=1.0, correct=1)
    """
    return _read(candidate, option_letter)


def vlmevalkit_2505(candidate: Candidate) -> Verdict:
    """VLMEvalKit's matching at c026693a (:func:`can_infer_2505`), as SophiaVL-R1 and
    SATORI-R1 were scored.

    >>> response = "B, though it could be another one"
    >>> vlmevalkit_2505(Candidate(response, "B", "multiple_choice", ("red", "blue", "green")))
    Verdict(extracted='B, though it could be another one', score=1.0, correct=1)
    """
    return _read(candidate, can_infer_2505)


def vlmevalkit_2608(candidate: Candidate) -> Verdict:
    """VLMEvalKit's matching at e8e78f05 (:func:`can_infer_2608`).

    >>> vlmevalkit_2608(Candidate("<answer>The answer is C.</answer>", "C", "multiple_choice",
    ...                           ("red", "blue", "green")))
    Verdict(extracted='The answer is C.', score=1.0, correct=1)
    """
    return _read(candidate, can_infer_2608)
