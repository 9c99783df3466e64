"""Edges of vlrl.scoring.maths that the differential tests in test_maths.py leave open: the
``extracted`` field of each matcher's verdict, the errors a user gets for an item a rule cannot
score, thresholds (a float precision of 0, 1e-6 exactly, a custom relaxed tolerance), Vision-SR1's
timeout, and the text / Math-Verify split of :func:`vlrl.scoring.maths.equivalent`. Where a
released scorer defines the value, its verbatim copy in tests/scoring/reference/ is the oracle."""

from __future__ import annotations

import time

import mathruler.grader
import pytest
from reference import mathvista_calculate_score as official
from reference import vlmevalkit_mathvista as vk_mathvista

from vlrl.scoring import maths
from vlrl.scoring.candidate import Candidate, Verdict

# ---- the answer each matcher reports as read -------------------------------------------------

MATCHERS = [
    maths.mathvista_official,
    maths.mathvista_vlmevalkit,
    maths.mathvista_vlmevalkit_2608,
    maths.relaxed_vlmevalkit,
    maths.relaxed_chartqa,
    maths.equivalent_match,
]


@pytest.mark.parametrize("matcher", MATCHERS, ids=lambda m: m.__name__)
@pytest.mark.parametrize(
    ("candidate", "extracted"),
    [
        (Candidate("<think>4</think><answer>14</answer>", "14", "numerical"), "14"),
        (Candidate("<answer>13</answer>", "14", "numerical"), "13"),
        (Candidate("<answer>fourteen</answer>", "14", "numerical"), "fourteen"),
        (Candidate("<answer>1.5</answer>", "1.5", "numerical", precision=1), "1.5"),
        (Candidate("<answer>[1, 2]</answer>", "[1, 2]", "free_form"), "[1, 2]"),
        (Candidate("<answer></answer>", "14", "numerical"), None),
    ],
)
def test_the_answer_span_is_reported_as_extracted(matcher, candidate, extracted) -> None:
    """Every span-reading matcher reports the span it read, right or wrong, and None for an
    empty one (per-item records and the no-answer rate read it)."""
    assert matcher(candidate).extracted == extracted


@pytest.mark.parametrize(
    "matcher", [maths.mathvista_official, maths.mathvista_vlmevalkit], ids=lambda m: m.__name__
)
@pytest.mark.parametrize("span", ["B", "8/11", "A or B", "nothing"])
def test_a_multiple_choice_span_is_reported_as_extracted(matcher, span: str) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", "B", "multiple_choice", ("3/11", "8/11"))
    assert matcher(candidate).extracted == span


def test_equivalent_match_verdicts() -> None:
    right = Candidate("<answer>$\\frac{1}{2}$</answer>", "0.5", "free_form")
    wrong = Candidate("<answer>$\\frac{1}{3}$</answer>", "0.5", "free_form")
    assert maths.equivalent_match(right) == Verdict("$\\frac{1}{2}$", 1.0, 1)
    assert maths.equivalent_match(wrong) == Verdict("$\\frac{1}{3}$", 0.0, 0)


# ---- MathVista ---------------------------------------------------------------------------------


def test_mathvista_answer_types() -> None:
    """The names calculate_score.py's rows use; ``list`` picks VLMEvalKit's str() branch."""
    kinds = {
        ("multiple_choice", None): "multi_choice",
        ("free_form", None): "list",
        ("numerical", None): "integer",
        ("numerical", 0): "float",
        ("numerical", 2): "float",
    }
    for (problem_type, precision), kind in kinds.items():
        candidate = Candidate("", "1", problem_type, ("a", "b"), precision=precision)
        assert maths.mathvista_answer_type(candidate) == kind, (problem_type, precision)


@pytest.mark.parametrize(
    "matcher",
    [maths.mathvista_official, maths.mathvista_vlmevalkit, maths.mathvista_answer_type],
    ids=lambda m: m.__name__,
)
def test_mathvista_refuses_other_problem_types(matcher) -> None:
    candidate = Candidate("<answer>1</answer>", "1", "grounding", item_id="mv-7")
    with pytest.raises(ValueError, match=r"^item 'mv-7': MathVista has no rule for problem_type "):
        matcher(candidate)


def test_mathvista_multiple_choice_needs_options() -> None:
    candidate = Candidate("<answer>A</answer>", "A", "multiple_choice", item_id="mv-8")
    with pytest.raises(ValueError, match=r"^item 'mv-8': a multiple-choice item has no options$"):
        maths.mathvista_official(candidate)


def test_mathvista_gold_letter_outside_the_options() -> None:
    candidate = Candidate(
        "<answer>A</answer>", "E", "multiple_choice", ("3/11", "8/11"), item_id="mv-9"
    )
    with pytest.raises(ValueError, match=r"^item 'mv-9': answer 'E' names none of its 2 options$"):
        maths.mathvista_official(candidate)


@pytest.mark.parametrize(
    ("span", "gold", "correct"),
    [("2.7", "3.0", 1), ("2.7", "2.7", 0), ("3.4", "3.0", 1), ("2.5", "2.0", 1), ("3", "3", 0)],
)
def test_mathvista_official_precision_zero(span: str, gold: str, correct: int) -> None:
    """A precision of 0 rounds to a whole float (``str(round(2.7, 0))`` is ``'3.0'``)."""
    candidate = Candidate(f"<answer>{span}</answer>", gold, "numerical", precision=0)
    expected = official.safe_equal(
        official.normalize_extracted_answer(span, None, "free_form", "float", 0), gold
    )
    assert expected == bool(correct)
    assert maths.mathvista_official(candidate) == Verdict(span, float(correct), correct)


def _vlmevalkit_list(span: str, gold: str) -> bool:
    """VLMEvalKit's prefetch then post_check on a list item (tests/scoring/test_maths.py)."""
    line = {"question_type": "free_form", "answer_type": "list", "answer": gold,
            "answer_option": gold, "choices": "None", "prediction": span}  # fmt: skip
    prefetch = vk_mathvista.post_check(line, prefetch=True)
    line["res"] = prefetch if prefetch else span
    return bool(vk_mathvista.post_check(line, prefetch=False))


@pytest.mark.parametrize(
    ("span", "gold"),
    [("[1, 2]", "None"), ("anything", "None"), ("None", "None"), ("None", "none"), ("1", "NONE")],
)
def test_mathvista_vlmevalkit_list_compares_str_none(span: str, gold: str) -> None:
    """post_check compares ``str(None)`` with the gold: only a gold spelt ``None`` is right."""
    expected = _vlmevalkit_list(span, gold)
    assert expected == (gold == "None")
    for matcher in (maths.mathvista_vlmevalkit, maths.mathvista_vlmevalkit_2608):
        verdict = matcher(Candidate(f"<answer>{span}</answer>", gold, "free_form"))
        assert verdict == Verdict(span, float(expected), int(expected))


def test_mathvista_vlmevalkit_unreadable_number() -> None:
    candidate = Candidate("<answer>7 cm</answer>", "7", "numerical")
    assert maths.mathvista_vlmevalkit(candidate) == Verdict("7 cm", 0.0, 0)


def test_mathvista_vlmevalkit_skips_an_unreadable_gold() -> None:
    """A gold ``int()`` cannot read does not hide an accepted one after it."""
    candidate = Candidate("<answer>14</answer>", "14.0", "numerical", accepted=("14",))
    assert maths.mathvista_vlmevalkit(candidate) == Verdict("14", 1.0, 1)
    floats = Candidate("<answer>1.5</answer>", "1,5", "numerical", accepted=("1.5",), precision=1)
    assert maths.mathvista_vlmevalkit(floats) == Verdict("1.5", 1.0, 1)


# ---- ChartQA -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "tolerance", "vlmevalkit", "chartqa"),
    [
        ("108", 0.1, 1, 1),  # 8/108 and 8/100 within 10%
        ("108", None, 0, 0),  # the default 5%
        ("111", 0.1, 1, 0),  # 11/111 < 10% < 11/100
        ("90", 0.1, 0, 1),  # 10/90 > 10% >= 10/100
        ("104", None, 1, 1),
        ("112", 0.12, 1, 1),
    ],
)
def test_relaxed_tolerance_is_the_candidates(
    span: str, tolerance: float | None, vlmevalkit: int, chartqa: int
) -> None:
    candidate = Candidate(
        f"<answer>{span}</answer>", "100", "numerical", relaxed_tolerance=tolerance
    )
    assert maths.relaxed_vlmevalkit(candidate) == Verdict(span, float(vlmevalkit), vlmevalkit)
    assert maths.relaxed_chartqa(candidate) == Verdict(span, float(chartqa), chartqa)


# ---- Vision-SR1 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "gold", "expected"),
    [
        ("<think>so</think> \\boxed{3}", "3", Verdict("3", 1.0, 1)),
        ("\\boxed{4}", "3", Verdict("4", 0.0, 0)),
        ("<answer>3</answer>", "3", Verdict(None, 0.0, 0)),
        # no box reads as "None", so a gold "None" is right, but nothing was extracted
        ("<answer>None</answer>", "None", Verdict(None, 1.0, 1)),
        ("\\boxed{None}", "None", Verdict("None", 1.0, 1)),
        ("\\boxed{none}", "None", Verdict("none", 1.0, 1)),
        ("\\boxed{None} or \\boxed{3}", "3", Verdict("3", 1.0, 1)),
    ],
)
def test_vision_sr1_verdicts(response: str, gold: str, expected: Verdict) -> None:
    assert maths.vision_sr1(Candidate(response, gold, "free_form")) == expected


def test_vision_sr1_refuses_grounding() -> None:
    candidate = Candidate("\\boxed{[1, 2, 3, 4]}", "[1, 2, 3, 4]", "grounding", item_id="sr-3")
    with pytest.raises(
        ValueError, match=r"^item 'sr-3': Vision-SR1 has no rule for problem_type 'grounding'$"
    ):
        maths.vision_sr1(candidate)


def test_vision_sr1_times_out_as_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """MathRuler has no timeout: past GRADE_TIMEOUT seconds the answer is wrong. The grader is
    replaced by a stand-in that takes longer and would otherwise say right."""

    def slow_grade(given: str, gold: str) -> bool:
        time.sleep(3)
        return True

    monkeypatch.setattr(maths, "GRADE_TIMEOUT", 1)
    monkeypatch.setattr(mathruler.grader, "grade_answer", slow_grade)
    start = time.monotonic()
    assert maths.vision_sr1(Candidate("\\boxed{3}", "3", "numerical")) == Verdict("3", 0.0, 0)
    assert time.monotonic() - start < 2.5


# ---- equivalence -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "same", "why"),
    [
        ("Paris .", "Paris", True, "text: spaces collapse before the trailing full stop drops"),
        ("$Paris$", "Paris", True, "dollar signs are dropped from text"),
        ("Paris", "$Paris$", True, "from either side"),
        ("$New$ York", "new york", True, "a dollar sign is a space"),
        ("", ".", False, "an empty prediction is never right"),
        (".", "", False, "nor an empty gold"),
        ("$$", ".", False, "dollar signs alone are empty"),
        ("god", "d*o*g", False, "a word is text even against a product of letters"),
        ("d*o*g", "god", False, "either way round"),
        ("\\boxed{}", "3", False, "a prediction Math-Verify reads as nothing"),
        ("3", "\\boxed{}", False, "a gold Math-Verify reads as nothing"),
        ("\\(\\frac{280000001}{10000000}\\)", "28", True, "parsed numbers within 1e-6"),
        ("0.000001", "0", False, "1e-6 exactly is not within 1e-6"),
        ("0.0000009", "0", True, "just within"),
        ("3.1415922", "\\pi", False, "pi is not evaluated: Math-Verify's 6 places decide"),
        ("3.1415930", "\\pi", True, "which round pi to 3.141593"),
        ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\3\\end{pmatrix}", False,
         "matrices are not numbers"),
        ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1 \\\\ 2\\end{pmatrix}", True,
         "the same matrix"),
    ],
)  # fmt: skip
def test_equivalent_edges(prediction: str, gold: str, same: bool, why: str) -> None:
    assert maths.equivalent(prediction, gold) is same, why
