"""MMMU's own scorer: github.com/MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py``
(``parse_multi_choice_response``, ``parse_open_response``, ``eval_multi_choice``,
``eval_open``) and ``mmmu/utils/data_utils.py`` (``get_multi_choice_info``) at
bb0b95a945998d91dfef37e969e07d49d1139438 (2025-05-19; eval_utils.py unchanged since aa9b70d,
2024-09-06), as ``mmmu/main_parse_and_eval.py`` applies them. The functions behave as the
released ones, on the answer span (:func:`vlrl.scoring.rules.answer_span`: the reasoning
stripped).

- Multiple choice: a letter in brackets ``(B)``, else a letter between spaces, else (in an
  answer of more than five words) the option texts inside it; of several, the last in the
  answer; of none, a random letter. The released code draws that letter from Python's global
  generator seeded 42 at import, so a guess depends on how many came before it; here each item
  draws from its own ``random.Random(item_id)`` (a string seed is hashed with SHA-512, the
  same in every process), so the guess is deterministic and independent of order. The letter
  must equal the gold (any of ``candidate.golds``).
- Open answers (numerical, free_form): the key parts of the answer (after "is", "so",
  "therefore", "answer", …, and "=" in the last line) and the numbers in them; numbers
  (commas dropped) are rounded to 2 places; correct when one equals a gold number or a gold
  text (lower-cased; a one-letter gold needs a space beside it) is inside one, any gold of
  ``candidate.golds`` counting.
"""

from __future__ import annotations

import random
import re

from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.rules import answer_span

_KEY_INDICATORS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = (":", ",", ".", "!", "?", ";", ":", "'")
_NUMBER_WITH_COMMAS = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")
_NUMBER_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_NUMBER_SIMPLE = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")


def get_multi_choice_info(options: list[str]) -> tuple[dict[str, str], list[str]]:
    """``index2ans`` (letter → option text) and ``all_choices`` (the letters).

    >>> get_multi_choice_info(["red", "blue"])
    ({'A': 'red', 'B': 'blue'}, ['A', 'B'])
    """
    letters = [chr(ord("A") + i) for i in range(len(options))]
    return dict(zip(letters, options, strict=True)), letters


def parse_multi_choice_response(
    response: str, all_choices: list[str], index2ans: dict[str, str], rng: random.Random
) -> str:
    """The letter MMMU reads in ``response``; ``rng`` picks one when it finds none.

    >>> index2ans, letters = get_multi_choice_info(["red", "blue", "green"])
    >>> rng = random.Random(0)
    >>> [parse_multi_choice_response(r, letters, index2ans, rng) for r in
    ...  ["(B)", "A or C", "I think that the ball is green here.", "(A) then (C)"]]
    ['B', 'C', 'C', 'C']
    """
    for char in (",", ".", "!", "?", ";", ":", "'"):
        response = response.strip(char)
    response = f" {response} "  # a letter between spaces, not inside a word

    by_letter, bracketed = True, False
    candidates = [choice for choice in all_choices if f"({choice})" in response]
    if candidates:
        bracketed = True
    else:
        candidates = [choice for choice in all_choices if f" {choice} " in response]
    if not candidates and len(response.split()) > 5:
        lowered = response.lower()
        candidates = [index for index, ans in index2ans.items() if ans.lower() in lowered]
        by_letter = not candidates
    if not candidates:
        return rng.choice(all_choices)
    if len(candidates) == 1:
        return candidates[0]
    if by_letter:
        form = "({})" if bracketed else " {} "
        starts = [response.rfind(form.format(can)) for can in candidates]
    else:
        starts = [response.lower().rfind(index2ans[can].lower()) for can in candidates]
    return candidates[starts.index(max(starts))]  # the last; np.argmax takes the first maximum


def check_is_number(string: str) -> bool:
    """Whether ``float`` reads the string once its commas are dropped.

    >>> check_is_number("7,243,000"), check_is_number("24/7")
    (True, False)
    """
    try:
        float(string.replace(",", ""))
    except ValueError:
        return False
    return True


def normalize_str(string: str) -> list[str | float]:
    """A number as itself rounded to 2 places; a text lower-cased (one character as
    ``" x"`` and ``"x "``, so that it matches only beside a space).

    >>> normalize_str(" 3.14159 "), normalize_str("MgS"), normalize_str("B")
    ([3.14], ['mgs'], [' b', 'b '])
    """
    string = string.strip()
    if check_is_number(string):
        return [round(float(string.replace(",", "")), 2)]
    string = string.lower()
    if len(string) == 1:
        return [" " + string, string + " "]
    return [string]


def extract_numbers(string: str) -> list[str]:
    """The numbers in a text: with thousands commas, in scientific notation, plain; the plain
    pattern also takes pieces of the other two, as released (``000`` of ``1,000``).

    >>> extract_numbers("1,000 apples, 2.5e3 pears and -3.5 plums")
    ['1,000', '2.5e3', '000', '2', '3', '-3.5']
    """
    return [
        *_NUMBER_WITH_COMMAS.findall(string),
        *_NUMBER_SCIENTIFIC.findall(string),
        *_NUMBER_SIMPLE.findall(string),
    ]


def _key_subresponses(response: str) -> list[str]:
    """The shortest tail after a key indicator, line by line; the whole (lower-cased) answer
    when no line has one."""
    response = response.strip().strip(".").lower()
    # the response is lower-cased first, so only the newlines split it
    sub_responses = re.split(r"\.\s(?=[A-Z])|\n", response)
    key_responses = []
    for index, resp in enumerate(sub_responses):
        indicators = _KEY_INDICATORS + (("=",) if index == len(sub_responses) - 1 else ())
        shortest = None
        for indicator in indicators:
            if indicator in resp:
                tail = resp.split(indicator)[-1].strip()
                if not shortest or len(tail) < len(shortest):
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            key_responses.append(shortest)
    return key_responses or [response]


def parse_open_response(response: str) -> list[str | float]:
    """The normalised candidates of an open answer: its key parts and the numbers in them
    (:func:`normalize_str` each), without duplicates.

    >>> sorted(parse_open_response("The speed is 3.429 m/s."), key=str)
    ['3.429 m/s', 3.43]
    """
    key_responses = _key_subresponses(response)
    pred_list: list[str] = [*key_responses]
    for resp in key_responses:
        pred_list.extend(extract_numbers(resp))
    normalized = [norm for pred in pred_list for norm in normalize_str(pred)]
    return list(set(normalized))


def eval_multi_choice(gold: str | list[str], pred: str) -> bool:
    """Exact equality with the gold letter, or with any of a list of golds.

    >>> eval_multi_choice(["A", "C"], "C"), eval_multi_choice("B", "C")
    (True, False)
    """
    if isinstance(gold, list):
        return any(answer == pred for answer in gold)
    return gold == pred


def eval_open(gold: str | list[str], pred: list[str | float]) -> bool:
    """Whether a parsed open answer matches the gold or any of a list of golds: a number equal
    to a gold number, or a gold text inside a parsed text.

    >>> eval_open(["24/7", "3.429"], parse_open_response("so v = 3.4290"))
    True
    >>> eval_open("Tampa", parse_open_response("It is Orlando."))
    False
    """
    if isinstance(gold, list):
        norm_answers = [norm for answer in gold for norm in normalize_str(answer)]
    else:
        norm_answers = normalize_str(gold)
    for p in pred:
        if isinstance(p, str):
            if any(isinstance(norm, str) and norm in p for norm in norm_answers):
                return True
        elif p in norm_answers:
            return True
    return False


def official(candidate: Candidate) -> Verdict:
    """MMMU's verdict on one candidate (see the module docstring): multiple_choice,
    numerical, free_form.

    >>> official(Candidate("<answer>(B) blue</answer>", "B", "multiple_choice", ("red", "blue")))
    Verdict(extracted='(B) blue', score=1.0, correct=1)
    >>> official(Candidate("so it is 24/7 m/s", "3.429", "free_form", accepted=("24/7",)))
    Verdict(extracted='so it is 24/7 m/s', score=1.0, correct=1)

    Raises:
        ValueError: another problem type, or a multiple-choice item without options.
    """
    span = answer_span(candidate.response)
    if candidate.problem_type == "multiple_choice":
        if not candidate.options:
            raise ValueError(f"item {candidate.item_id!r}: multiple_choice without options")
        index2ans, all_choices = get_multi_choice_info(list(candidate.options))
        rng = random.Random(candidate.item_id)
        pred = parse_multi_choice_response(span, all_choices, index2ans, rng)
        return verdict(span or None, eval_multi_choice(list(candidate.golds), pred))
    if candidate.problem_type in {"numerical", "free_form"}:
        return verdict(span or None, eval_open(list(candidate.golds), parse_open_response(span)))
    raise ValueError(
        f"item {candidate.item_id!r}: MMMU's scorer has no rule for problem_type "
        f"{candidate.problem_type!r} (multiple_choice, numerical, free_form)"
    )
