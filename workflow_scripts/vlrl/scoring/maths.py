r"""Maths and chart answers matched as the papers' references match them.

Each matcher is a ``Candidate -> Verdict`` function (:mod:`vlrl.scoring.candidate`) ported from
one public scorer, whose behaviour it keeps, quirks included; the differential tests in
``tests/scoring/test_maths.py`` hold each against a verbatim copy of its source.

- :func:`mathvista_official`: the MathVista authors' ``calculate_score.py`` (rounding a float
  answer to the row's precision, the nearest option by edit distance);
- :func:`mathvista_vlmevalkit` / :func:`mathvista_vlmevalkit_2608`: VLMEvalKit's MathVista rule
  (``int`` / ``float`` of the whole prediction, no rounding) with its option reader as of
  c026693a / e8e78f05;
- :func:`relaxed_vlmevalkit`: VLMEvalKit's ChartQA relaxed accuracy at c026693a, relative to the
  prediction; :func:`relaxed_chartqa`: relative to the gold (pix2struct, lmms-eval, VLMEvalKit
  since);
- :func:`vision_sr1`: Vision-SR1's rule (MathRuler on the last ``\boxed{}``);
- :func:`olympiad_satori`: OlympiadBench's ``MathJudger`` as SATORI-R1's fork ran it
  (:mod:`vlrl.scoring.olympiad`);
- :func:`equivalent`: whether two maths answers are the same value, by Math-Verify.

The references read a model's "prediction"; here it is the answer span
(:func:`vlrl.scoring.rules.answer_span`) unless a matcher says otherwise. Where a reference asks
GPT to extract the answer first (MathVista, MATH-Vision), the span stands in for that extraction.
Math-Verify and the timeouts here use ``signal.alarm``: call the matchers from the main thread.
"""

from __future__ import annotations

import re

from vlrl.items.answers import normalize_text
from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.choice import can_infer_2505, can_infer_2608, gold_letters
from vlrl.scoring.olympiad import olympiad_satori
from vlrl.scoring.rules import LETTERS, answer_span, relaxed_correctness

__all__ = [
    "equivalent",
    "equivalent_match",
    "mathvista_official",
    "mathvista_vlmevalkit",
    "mathvista_vlmevalkit_2608",
    "olympiad_satori",
    "relaxed_chartqa",
    "relaxed_vlmevalkit",
    "vision_sr1",
]

#: Seconds MathRuler's ``grade_answer`` may take (it has no timeout of its own).
GRADE_TIMEOUT = 30


def _unsupported(candidate: Candidate, rule: str) -> ValueError:
    return ValueError(
        f"item {candidate.item_id!r}: {rule} has no rule for problem_type "
        f"{candidate.problem_type!r}"
    )


def _span(candidate: Candidate) -> tuple[str, str | None]:
    span = answer_span(candidate.response)
    return span, span or None


def _option_texts(candidate: Candidate) -> list[str]:
    """The option texts of the golds of a multiple-choice candidate."""
    letters = gold_letters(candidate)
    if not letters:
        raise ValueError(
            f"item {candidate.item_id!r}: answer {candidate.answer!r} names none of its "
            f"{len(candidate.options)} options"
        )
    return [candidate.options[LETTERS.index(letter)] for letter in sorted(letters)]


# ---- MathVista: the authors' calculate_score.py ---------------------------------------------


def mathvista_answer_type(candidate: Candidate) -> str:
    """MathVista's ``question_type`` / ``answer_type`` of a record: ``multi_choice`` (multiple
    choice), ``float`` (numerical with a precision), ``integer`` (numerical without), ``list``
    (free form).

    >>> mathvista_answer_type(Candidate("", "1.5", "numerical", precision=1))
    'float'
    """
    kinds = {"multiple_choice": "multi_choice", "free_form": "list"}
    if candidate.problem_type == "numerical":
        return "integer" if candidate.precision is None else "float"
    if candidate.problem_type not in kinds:
        raise _unsupported(candidate, "MathVista")
    return kinds[candidate.problem_type]


def _most_similar(prediction: str, choices: list[str]) -> str:
    """``get_most_similar``: the first choice at the least Levenshtein distance."""
    from Levenshtein import distance

    distances = [distance(prediction, choice) for choice in choices]
    return choices[distances.index(min(distances))]


def mathvista_normalize(extraction: str, candidate: Candidate) -> str | None:
    """``normalize_extracted_answer`` (``ignore_empty_extractions`` off, its default): a choice's
    text for multiple choice (a letter, ``(x)`` anywhere, else the nearest option text, so an
    empty answer names the shortest option), ``str(int(float(x)))``, ``str(round(float(x),
    precision))``, or the text itself for a list; None where ``float`` fails.

    >>> c = Candidate("", "B", "multiple_choice", options=("3/11", "8/11"))
    >>> mathvista_normalize("so (b) it is", c), mathvista_normalize("8/12", c)
    ('8/11', '8/11')
    >>> f = Candidate("", "1.5", "numerical", precision=1)
    >>> mathvista_normalize("1.46", f), mathvista_normalize("1,5", f)
    ('1.5', None)
    """
    kind = mathvista_answer_type(candidate)
    if kind == "multi_choice":
        if not candidate.options:
            raise ValueError(f"item {candidate.item_id!r}: a multiple-choice item has no options")
        extraction = extraction.strip()
        letter = re.findall(r"\(([a-zA-Z])\)", extraction)
        if letter:
            extraction = letter[0].upper()
        choices = list(candidate.options)
        letters = LETTERS[: len(choices)]
        if len(extraction) == 1 and extraction in letters:
            return choices[letters.index(extraction)]
        return _most_similar(extraction, choices)
    try:
        if kind == "integer":
            return str(int(float(extraction)))
        if kind == "float":
            return str(round(float(extraction), int(candidate.precision or 0)))
    except (ValueError, OverflowError):  # float("1,5"), int(float("inf"))
        return None
    return str(extraction)


def mathvista_official(candidate: Candidate) -> Verdict:
    """MathVista's own scorer: github.com/lupantech/MathVista ``evaluation/calculate_score.py``
    (``normalize_extracted_answer`` then ``safe_equal``, commit e999481e): the normalised answer
    must equal the gold as a string, the gold of a multiple-choice item being its option's text
    (so every letter of a repeated text is right).

    The official pipeline first has GPT extract the answer from the response
    (``extract_answer.py``); here the extraction is the answer span
    (:func:`vlrl.scoring.rules.answer_span`), which a response in ``<answer>`` tags states.

    >>> mathvista_official(Candidate("<answer>1.449</answer>", "1.45", "numerical", precision=2))
    Verdict(extracted='1.449', score=1.0, correct=1)
    >>> mathvista_official(Candidate("<answer>1.449</answer>", "1.4", "numerical", precision=1))
    Verdict(extracted='1.449', score=1.0, correct=1)
    >>> mathvista_official(Candidate("<answer>14.0</answer>", "14", "numerical"))
    Verdict(extracted='14.0', score=1.0, correct=1)
    """
    span, extracted = _span(candidate)
    prediction = mathvista_normalize(span, candidate)
    if mathvista_answer_type(candidate) == "multi_choice":
        golds = _option_texts(candidate)
    else:
        golds = list(candidate.golds)
    return verdict(extracted, prediction is not None and prediction in golds)


# ---- MathVista: VLMEvalKit's post_check -------------------------------------------------------


def _post_check(candidate: Candidate, choice) -> Verdict:
    """VLMEvalKit ``vlmeval/dataset/utils/mathvista.py::post_check`` on the answer span."""
    span, extracted = _span(candidate)
    kind = mathvista_answer_type(candidate)
    if kind == "multi_choice":
        letter = choice(span, list(candidate.options))
        return verdict(extracted, letter is not None and letter in gold_letters(candidate))
    if kind == "list":
        # post_check compares str(res) with res still None: "None", never a list answer
        return verdict(extracted, any(gold == "None" for gold in candidate.golds))
    convert = int if kind == "integer" else float
    try:
        value = convert(span)
    except ValueError:
        return verdict(extracted, False)
    correct = False
    for gold in candidate.golds:
        try:
            correct = correct or value == convert(gold)
        except ValueError:
            continue
    return verdict(extracted, correct)


def mathvista_vlmevalkit(candidate: Candidate) -> Verdict:
    """VLMEvalKit's MathVista rule at c026693a (github.com/open-compass/VLMEvalKit
    ``vlmeval/dataset/utils/mathvista.py::post_check``; the file is the same at e8e78f05 but for
    its imports): multiple choice by ``can_infer`` at c026693a
    (:func:`vlrl.scoring.choice.can_infer_2505`) against the gold letters (any letter of a
    repeated choice text; VLMEvalKit's TSV holds one), integers by
    ``int(prediction) == int(answer)``, floats by ``float(prediction) == float(answer)`` (no
    rounding: 1.449 is not 1.45), and lists never (``post_check`` compares ``str(None)``).

    VLMEvalKit first tries this on the whole prediction ("prefetch"); if that finds no answer it
    asks GPT to extract one and applies the rule to the extraction. The prediction here is the
    answer span and stands in for the extraction too, so the rule is applied once.

    >>> mathvista_vlmevalkit(Candidate("<answer>1.449</answer>", "1.45", "numerical", precision=2))
    Verdict(extracted='1.449', score=0.0, correct=0)
    >>> mathvista_vlmevalkit(Candidate("<answer>14</answer>", "14", "numerical"))
    Verdict(extracted='14', score=1.0, correct=1)
    >>> mathvista_vlmevalkit(Candidate("<answer>[1, 2]</answer>", "[1, 2]", "free_form"))
    Verdict(extracted='[1, 2]', score=0.0, correct=0)
    """
    return _post_check(candidate, can_infer_2505)


def mathvista_vlmevalkit_2608(candidate: Candidate) -> Verdict:
    """:func:`mathvista_vlmevalkit` with ``can_infer`` as of e8e78f05 (2026-08;
    :func:`vlrl.scoring.choice.can_infer_2608`: the letter among the last five words, the
    option-text length limit, "the answer is X").

    >>> c = Candidate("<answer>B. The others are wrong, as the figure shows.</answer>", "B",
    ...               "multiple_choice", options=("1", "2", "3", "4"))
    >>> mathvista_vlmevalkit(c).correct, mathvista_vlmevalkit_2608(c).correct
    (1, 0)
    """
    return _post_check(candidate, can_infer_2608)


# ---- ChartQA: relaxed accuracy ----------------------------------------------------------------


def _relaxed(candidate: Candidate, prediction_relative: bool) -> Verdict:
    span, extracted = _span(candidate)
    tolerance = 0.05 if candidate.relaxed_tolerance is None else candidate.relaxed_tolerance
    correct = any(
        relaxed_correctness(gold, span, tolerance)
        if prediction_relative
        else relaxed_correctness(span, gold, tolerance)
        for gold in candidate.golds
    )
    return verdict(extracted, correct)


def relaxed_vlmevalkit(candidate: Candidate) -> Verdict:
    """ChartQA's relaxed accuracy as VLMEvalKit computed it at c026693a
    (``vlmeval/dataset/utils/vqa_eval.py::process_line``): it calls ``relaxed_correctness(pred,
    gold)`` on a function whose parameters are ``(target, prediction)``, so the 5% is relative to
    the prediction, and a prediction of 0 is compared as text. Correct for any gold (the hit is
    the max over the golds). e8e78f05 swapped the arguments back (:func:`relaxed_chartqa`).

    >>> c = Candidate("<answer>95</answer>", "100", "numerical")
    >>> relaxed_vlmevalkit(c).correct, relaxed_chartqa(c).correct  # 5/95 > 5%, 5/100 is not
    (0, 1)
    """
    return _relaxed(candidate, prediction_relative=True)


def relaxed_chartqa(candidate: Candidate) -> Verdict:
    """ChartQA's relaxed accuracy relative to the gold (pix2struct ``metrics.py``, lmms-eval
    ``tasks/chartqa/utils.py``, VLMEvalKit since e8e78f05): :func:`vlrl.scoring.rules.
    relaxed_correctness` of the answer span, correct for any gold.

    >>> relaxed_chartqa(Candidate("<answer>12%</answer>", "0.12", "numerical")).correct
    1
    """
    return _relaxed(candidate, prediction_relative=False)


# ---- Vision-SR1 -------------------------------------------------------------------------------


def vision_sr1(candidate: Candidate) -> Verdict:
    r"""Vision-SR1's rule-based evaluation (github.com/zli12321/Vision-SR1 ``Evaluation/``,
    4480e080): ``accuracy_reward(response, gold)`` = MathRuler ``grade_answer`` of the last
    ``\boxed{}`` of the whole response (``extract_boxed_content``; ``"None"`` when there is
    none) against the gold. ``eval_result.py`` scores its multiple-choice sets the same way (the
    gold being the option letter), so this covers every problem type but grounding.

    MathRuler has no timeout; past :data:`GRADE_TIMEOUT` seconds an answer counts as wrong.

    >>> vision_sr1(Candidate("<think>\\boxed{3}</think> \\boxed{\\frac{1}{2}}", "0.5", "numerical"))
    Verdict(extracted='\\frac{1}{2}', score=1.0, correct=1)
    >>> vision_sr1(Candidate("<answer>B</answer>", "B", "multiple_choice", options=("x", "y")))
    Verdict(extracted=None, score=0.0, correct=0)
    """
    from math_verify.errors import TimeoutException
    from math_verify.utils import timeout
    from mathruler.grader import extract_boxed_content, grade_answer

    if candidate.problem_type == "grounding":
        raise _unsupported(candidate, "Vision-SR1")
    content = extract_boxed_content(candidate.response)
    extracted = None if content == "None" and "\\boxed{None}" not in candidate.response else content
    grade = timeout(GRADE_TIMEOUT)(grade_answer)
    correct = False
    for gold in candidate.golds:
        try:
            correct = grade(content, gold)
        except TimeoutException:
            correct = False
        if correct:
            break
    return verdict(extracted, correct)


# ---- equivalence of maths answers -------------------------------------------------------------

_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")
_MATH_MARK = re.compile(r"[\d\\^_{}=+\-*/()\[\]<>|!√π∞≤≥×÷±°]")


def _plain(text: str) -> str:
    return " ".join(text.replace("$", " ").split())


def _parse(text: str) -> list:
    """Math-Verify's parse; text without delimiters is read as one LaTeX expression first (alone,
    Math-Verify takes the last number of ``3 or 4`` and reads ``\\sqrt{3}`` as nothing)."""
    from math_verify import parse

    if not _DELIMITED.search(text):
        parsed = parse(f"${text}$")
        if parsed:
            return parsed
    return parse(text)


def equivalent(prediction: str, gold: str) -> bool:
    r"""Whether ``prediction`` states the same maths answer as ``gold``: equal once ``$`` signs
    and spaces are dropped, else Math-Verify's ``verify(parse(gold), parse(prediction))`` (LaTeX
    or plain; numbers, fractions, radicals, expressions, equations, intervals, sets, tuples in
    any order), or two numbers within 1e-6. Text without digits or maths signs (words, a single
    letter) is compared as text only, case-insensitively: Math-Verify reads a word as a product
    of symbols, so "dog" would equal "god". Call it from the main thread (Math-Verify's timeouts
    use ``signal.alarm``; in another thread it raises ValueError).

    VLMEvalKit's MATH-Vision ``is_equal`` (``vlmeval/dataset/utils/mathv.py``), the reference for
    MATH-Vision's open answers, accepts equal lower-cased strings, numbers within 1e-6 by
    ``eval`` and LaTeX numbers by ``latex2sympy``; any answer with a variable must match its
    string exactly there (``eval`` of ``2n+1`` fails before the symbolic check). This accepts
    what it accepts on numbers and LaTeX numbers (tested), and also equal expressions, equations,
    intervals and sets, and radicals against their decimals.

    >>> equivalent("$2n+1$", "2 n+1"), equivalent("\\frac12", "0.5"), equivalent("1,000", "1000")
    (True, True, True)
    >>> equivalent("x=2, x=1", "x=1, x=2"), equivalent("(-\\infty,1]", "(-\\infty, 1]")
    (True, True)
    >>> equivalent("3 or 4", "4"), equivalent("\\sqrt{3}", "3"), equivalent("god", "dog")
    (False, False, False)
    """
    from math_verify import verify

    pred, ref = _plain(prediction), _plain(gold)
    if not pred or not ref:
        return False
    if pred == ref:
        return True
    if not _MATH_MARK.search(pred) or not _MATH_MARK.search(ref):
        return normalize_text(pred) == normalize_text(ref)
    if _close(ref, pred):  # plain numbers, "5e-07" included (Math-Verify reads 5e - 7)
        return True
    parsed_gold, parsed_pred = _parse(gold), _parse(prediction)
    if not parsed_gold or not parsed_pred:
        return False
    return bool(verify(parsed_gold, parsed_pred)) or _close(parsed_gold[0], parsed_pred[0])


def _close(gold, prediction) -> bool:
    """Two plain numbers, as strings or sympy numbers (not expressions: evaluating those may not
    end), within ``is_equal``'s 1e-6 (Math-Verify holds an integer gold exact and rounds floats
    to 6 places, so 28.0000001 is not 28 there)."""
    if not all(isinstance(x, str) or getattr(x, "is_Number", False) for x in (gold, prediction)):
        return False
    try:
        return abs(float(gold) - float(prediction)) < 1e-6
    except (TypeError, ValueError, OverflowError):
        return False


def equivalent_match(candidate: Candidate) -> Verdict:
    """:func:`equivalent` of the answer span and any gold, as a matcher (MATH-Vision, MMMU and
    OlympiadBench answers that are not plain numbers).

    >>> equivalent_match(Candidate("<answer>$2 n+1$</answer>", "2 n+1", "free_form"))
    Verdict(extracted='$2 n+1$', score=1.0, correct=1)
    """
    span, extracted = _span(candidate)
    return verdict(extracted, any(equivalent(span, gold) for gold in candidate.golds))
