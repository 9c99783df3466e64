"""Rule-based scoring at its edges: the answer span with several ``</think>``, the rules a
benchmark's protocol swaps in (relaxed accuracy on every number-like type, its tolerance and its
percent reading, checked against VLMEvalKit's verbatim ``relaxed_correctness``), the plain-number
rule before Math-Verify, plain text kept out of Math-Verify's LaTeX reading, grounding without a
box list, and VLMEvalKit's punctuation rule where a mark follows a space."""

from __future__ import annotations

import pytest
from reference.vlmevalkit_vqa_eval import relaxed_correctness as vlmevalkit_relaxed
from reference.vlmevalkit_yorn import YOrN_Extraction

from vlrl.scoring.rules import (
    answer_span,
    relaxed_correctness,
    relaxed_float,
    score_item,
    yes_or_no,
)


def test_the_text_after_the_last_think_close_is_the_span() -> None:
    # a model that closes its reasoning twice: only what follows the last close is the answer
    response = "<think>maybe 3</think> 4? <think>no</think> 5 "
    assert answer_span(response) == "5"
    assert score_item(response, "5", "numerical") == ("5", 1.0, 1)
    assert answer_span("a </think> b </think> c </think> d") == "d"


# --- relaxed accuracy (ChartQA) -----------------------------------------------------------------


@pytest.mark.parametrize("problem_type", ["numerical", "free_form", "ocr"])
@pytest.mark.parametrize(
    ("span", "answer", "correct"),
    [
        ("104", "100", 1),  # within 5 %: the ordinary rules would say wrong
        ("95", "100", 1),  # exactly 5 % below
        ("94.9", "100", 0),
        ("12%", "0.12", 1),
        ("Democrats", "democrats", 1),
    ],
)
def test_relaxed_accuracy_replaces_the_rules_of_every_number_like_type(
    problem_type: str, span: str, answer: str, correct: int
) -> None:
    got = score_item(f"<answer>{span}</answer>", answer, problem_type, relaxed_tolerance=0.05)
    assert got == (span, float(correct), correct)
    assert correct == vlmevalkit_relaxed(answer, span)


@pytest.mark.parametrize(
    ("span", "tolerance", "correct"),
    [("108", 0.1, 1), ("110", 0.1, 1), ("111", 0.1, 0), ("101", 0.0, 0), ("100.0", 0.0, 1)],
)
def test_relaxed_accuracy_uses_the_protocols_tolerance(
    span: str, tolerance: float, correct: int
) -> None:
    got = score_item(f"<answer>{span}</answer>", "100", "numerical", relaxed_tolerance=tolerance)
    assert got[2] == correct == vlmevalkit_relaxed("100", span, tolerance)


@pytest.mark.parametrize(
    ("prediction", "target"),
    [("105", "100"), ("106", "100"), ("95", "100"), ("94", "100"), ("5.25%", "0.05"),
     ("5.26%", "0.05"), ("0", "0"), ("0.0", "0"), ("1,000", "1000"), ("Yes", "yes")],
)  # fmt: skip
def test_relaxed_correctness_default_tolerance_is_five_percent(prediction, target) -> None:
    assert relaxed_correctness(prediction, target) == vlmevalkit_relaxed(target, prediction)
    assert relaxed_correctness("105", "100") and not relaxed_correctness("106", "100")


@pytest.mark.parametrize(
    ("text", "value"),
    [("12%", 0.12), ("50%", 0.5), ("3.5%", 0.035), ("200%", 2.0), ("0.57", 0.57),
     ("5X%", None), ("%", None), ("1,000", None), ("Yes", None)],
)  # fmt: skip
def test_relaxed_float_reads_percentages_as_fractions(text: str, value: float | None) -> None:
    assert relaxed_float(text) == value
    # the reference only reads a number through the same _to_float: equal floats agree
    if value is not None:
        assert vlmevalkit_relaxed(str(value), text, 0.0)


# --- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "answer", "correct", "why"),
    [
        ("(7)", "7", 1, "the plain single-number rule; Math-Verify reads '(7)' as nothing"),
        ("7 (approx.)", "7", 1, "a single number with prose"),
        ("1,000 dollars", "1000", 1, "plain text with units is Math-Verify's plain reading"),
        ("2,000 people", "2000", 1, "… not a LaTeX product of the letters"),
        ("x=$\\sqrt{2}$", "\\sqrt{2}", 1, "delimited LaTeX is parsed as it is"),
    ],
)
def test_number_rules(span: str, answer: str, correct: int, why: str) -> None:
    assert score_item(f"<answer>{span}</answer>", answer, "numerical") == (
        span,
        float(correct),
        correct,
    ), why


# --- grounding ------------------------------------------------------------------------------------


def test_grounding_without_boxes_reads_the_reference_answer() -> None:
    response = "<answer>[0, 0, 10, 10]</answer>"
    for boxes in (None, []):
        assert score_item(response, "[0, 0, 10, 20]", "grounding", boxes=boxes) == (
            "[0, 0, 10, 10]",
            0.5,
            1,
        )
    assert score_item(response, "[0, 0, 10, 30]", "grounding")[1:] == pytest.approx((1 / 3, 0))


def test_rescaled_grounding_without_boxes_reads_the_reference_answer() -> None:
    # the model saw a 56x28 resize of a 112x56 image and answered in its pixels
    frames = ([56, 28], [112, 56])
    response = "<answer>[14, 7, 28, 14]</answer>"
    assert score_item(response, "[28, 14, 56, 28]", "grounding", box_frames=frames) == (
        "[14, 7, 28, 14]",
        1.0,
        1,
    )
    assert score_item(response, "[28, 14, 56, 42]", "grounding", box_frames=frames)[1:] == (0.5, 1)


@pytest.mark.parametrize(
    ("response", "answer", "boxes"),
    [
        ("<answer>the left dog</answer>", "[28, 14, 56, 28]", None),  # no predicted box
        ("<answer>the left dog</answer>", "", [[28, 14, 56, 28]]),
        ("<answer>[14, 7, 28, 14]</answer>", "the dog", None),  # no reference box
    ],
)
def test_rescaled_grounding_without_a_box_scores_zero(response: str, answer: str, boxes) -> None:
    got = score_item(response, answer, "grounding", boxes=boxes, box_frames=([56, 28], [112, 56]))
    assert got[1:] == (0.0, 0)


# --- yes / no ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # " -" occurs, so VLMEvalKit removes every "-": "yes-no" becomes the word "yesno"
        ("no, the sign says -yes-no", "no"),
        ("no -it is yes-no", "no"),
        # no mark next to a space: "-" becomes a space, "yes-no" two words
        ("no,it is yes-no", None),
    ],
)
def test_a_mark_after_a_space_is_removed_everywhere(text: str, expected: str | None) -> None:
    assert yes_or_no(text) == expected
    assert {"Yes": "yes", "No": "no", "Unknown": None}[YOrN_Extraction(text)] == expected
