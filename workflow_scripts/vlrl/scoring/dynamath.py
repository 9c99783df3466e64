"""DynaMath's answer rule as VLMEvalKit applies it (github.com/open-compass/VLMEvalKit
``vlmeval/dataset/dynamath.py``: ``preprocess``, ``transfer``, ``parse_answer``,
``DynaMath_auxeval``; the same at c026693a, 2025-08-04, and e8e78f05, 2026-08, but for
``except:`` becoming ``except Exception:``).

VLMEvalKit asks for a JSON answer (``{"solution": ..., "short answer": ...}``) and reads it:

1. the prediction is cut to its outermost ``{...}`` and stripped of every backslash;
2. its ``"short answer"`` is parsed by the question's answer type (``float``: the first
   space-separated word as a number, ``2π`` as 2·π; ``multiple choice``: one character, or the
   only letter of A–E in it; ``text``: as it is);
3. if that fails (no JSON, no such key, or an answer of the wrong shape), the whole prediction
   is parsed the same way, and if that fails too a GPT judge (gpt-4o-mini) is asked for the
   short answer.

A ``float`` is right within 0.001 of the gold; a ``multiple choice`` letter right when it is
the gold letter (an unparsed one when the gold letter is among its first three characters); a
``text`` answer right when it is *contained in* the gold, case aside (so an empty answer is
right: the released rule, kept).

This is VLMEvalKit's exact-matching reading: where it would ask the judge, nothing is asked
and the answer stays unparsed (a protocol of judge ``none``; ``score.judge.benchmarks`` adds
vlrl's judge to a benchmark). Where the released code raises (a float written in digits that
are not ASCII, a JSON short answer that is not text for a ``text`` question: the item fails
there), the item is wrong here. Before VLMEvalKit f22451a5 (2025-03-22) step 2 read the key
``anwser_type`` and always failed, so predictions went straight to step 3: the OpenCompass
leaderboard of 2025-03-17 (VLM-R1's math row) was scored that way.
"""

from __future__ import annotations

import json
import math

from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.rules import answer_span

#: vlrl's problem types → DynaMath's answer types.
ANSWER_TYPES = {"multiple_choice": "multiple choice", "numerical": "float", "free_form": "text"}
FLOAT_TOLERANCE = 0.001


def preprocess(prediction: str) -> str:
    """The prediction cut to its outermost braces (when it has a ``{`` before a ``}``), every
    backslash removed.

    >>> preprocess('The answer: {"short answer": "\\\\frac{1}{2}"} done')
    '{"short answer": "frac{1}{2}"}'
    """
    text = str(prediction)
    if 0 <= text.find("{") < text.rfind("}"):
        text = text[text.find("{") : text.rfind("}") + 1]
    # the release then replaces "\\n" with a newline: a no-op once no backslash is left
    return text.replace("\\", "")


def transfer(text: str) -> float:
    """A number, ``<k>π`` read as k·π (ValueError otherwise, as ``float`` raises).

    >>> round(transfer("2π"), 4), transfer("1.5")
    (6.2832, 1.5)
    """
    if "π" in text:
        return float(text.split("π")[0]) * math.pi
    return float(text)


def parse_answer(answer, answer_type: str) -> tuple[bool, object]:
    """``(parsed, value)`` of an answer of DynaMath's ``answer_type``; raises where the release
    raises (``answer`` not a string where a method of one is called).

    >>> parse_answer("3.142 cm", "float"), parse_answer("(b)", "multiple choice")
    ((True, 3.142), (True, 'B'))
    >>> parse_answer("A or B", "multiple choice"), parse_answer("May", "text")
    ((False, None), (True, 'May'))
    """
    if answer_type == "float":
        if answer.isdigit():
            return True, float(answer)
        try:
            return True, transfer(answer.split(" ")[0])
        except Exception:  # the release catches everything here
            return False, None
    if answer_type == "multiple choice":
        if len(answer) == 1:
            return True, answer.upper()
        letters = [letter for letter in "ABCDE" if letter in answer.upper()]
        return (True, letters[0]) if len(letters) == 1 else (False, None)
    return True, answer


def short_answer(prediction: str, answer_type: str) -> tuple[bool, object]:
    """The JSON ``"short answer"`` parsed, else the whole (preprocessed) prediction parsed
    (steps 1–3 of the module docstring, without the judge)."""
    text = preprocess(prediction)
    try:
        found = json.loads(text, strict=False).get("short answer")
        assert found is not None
        parsed, value = parse_answer(found, answer_type)
        assert parsed
        return parsed, value
    except Exception:  # the release falls back on any failure
        return parse_answer(text, answer_type)


def _read(prediction: str, gold: str, answer_type: str) -> tuple[object, bool]:
    """``(the short answer or None, right)``, as ``DynaMath_auxeval`` decides them."""
    parsed, value = short_answer(prediction, answer_type)
    if answer_type == "float":
        right = parsed and abs(float(value) - float(gold)) <= FLOAT_TOLERANCE
    elif answer_type == "multiple choice":
        right = value == gold if parsed else gold in preprocess(prediction)[:3].upper()
    else:
        right = value.lower() in gold.lower()
    return (value if parsed else None), bool(right)


def dynamath_vlmevalkit(candidate: Candidate) -> Verdict:
    """VLMEvalKit's DynaMath verdict on the answer span (see the module docstring).

    >>> dynamath_vlmevalkit(Candidate('{"short answer": "2.094"}', "2.0944", "numerical"))
    Verdict(extracted='2.094', score=1.0, correct=1)
    >>> dynamath_vlmevalkit(Candidate("<answer>B</answer>", "A", "multiple_choice"))
    Verdict(extracted='B', score=0.0, correct=0)
    """
    answer_type = ANSWER_TYPES.get(candidate.problem_type)
    if answer_type is None:
        raise ValueError(
            f"item {candidate.item_id!r}: DynaMath's rule reads {sorted(ANSWER_TYPES)} answers, "
            f"not {candidate.problem_type!r}"
        )
    span = answer_span(candidate.response)
    try:
        value, right = _read(span, candidate.answer, answer_type)
    except Exception:  # where the release raises, the item is wrong
        return verdict(None, False)
    return verdict(None if value is None else str(value), right)
