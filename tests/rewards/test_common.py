"""Case tables for the common rewards (TRL signature)."""

from __future__ import annotations

import pytest

from vlrl.rewards.common import (
    IOU_THRESHOLD,
    accuracy_reward,
    answer_correct,
    completion_text,
    correct_reward,
    think_answer_format_reward,
)

FORMAT_CASES = [
    ("<think>a</think><answer>1</answer>", 1.0, "well formed"),
    ("<think>a</think>\n<answer>1</answer>", 1.0, "whitespace between the blocks is allowed"),
    ("  <think>a</think><answer>1</answer>  ", 1.0, "surrounding whitespace is stripped"),
    ("x<think>a</think><answer>1</answer>", 0.0, "text before: full match fails"),
    ("<think>a</think><answer>1</answer> done", 0.0, "text after: full match fails"),
    ("<answer>1</answer>", 0.0, "no think block"),
    ("<think>a</think>", 0.0, "no answer block"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format(text: str, expected: float, why: str) -> None:
    assert think_answer_format_reward([text]) == [expected], why


ACCURACY_CASES = [
    ("<answer>B</answer>", "B", "multiple_choice", None, 1.0, "right letter"),
    ("<answer>(B) red</answer>", "B", "multiple_choice", None, 1.0, "letter with option text"),
    ("<answer>C</answer>", "B", "multiple_choice", None, 0.0, "wrong letter"),
    ("<answer>3</answer>", "3", "numerical", None, 1.0, "equal number"),
    ("<answer>3.0</answer>", "3", "numerical", None, 1.0, "same value, other form"),
    ("<answer>3 or 4</answer>", "3", "numerical", None, 0.0, "two numbers: ambiguous"),
    ("<think>3</think><answer>4</answer>", "3", "numerical", None, 0.0, "number in think ignored"),
    ("3", "3", "numerical", None, 0.0, "no answer tag"),
    ("<answer>3</answer>", "\\sqrt{3}", "numerical", None, 0.0, "a LaTeX reference is no number"),
    (
        "<answer>[0, 0, 10, 10]</answer>",
        "[0, 0, 10, 10]",
        "grounding",
        [0, 0, 10, 10],
        1.0,
        "exact box",
    ),
    ("<answer>[5, 0, 15, 10]</answer>", "", "grounding", [0, 0, 10, 10], 1 / 3, "half overlap"),
    ("<answer>no box</answer>", "", "grounding", [0, 0, 10, 10], 0.0, "no box"),
    ("<answer>yes</answer>", "Yes", "yes_no", None, 1.0, "case-insensitive"),
    ("<answer>a red circle</answer>", "a red circle", "free_form", None, 1.0, "same caption"),
    ("<answer></answer>", "a red circle", "free_form", None, 0.0, "empty caption"),
]


@pytest.mark.parametrize(("text", "answer", "ptype", "box", "expected", "why"), ACCURACY_CASES)
def test_accuracy(text, answer, ptype, box, expected, why) -> None:
    got = accuracy_reward(
        [text], answer=[answer], problem_type=[ptype], boxes=[[box] if box else []]
    )
    assert got == [pytest.approx(expected)], why


def test_accuracy_in_range_for_partial_caption() -> None:
    (got,) = accuracy_reward(
        ["<answer>a red circle</answer>"],
        answer=["a red circle and a blue square"],
        problem_type=["free_form"],
    )
    assert 0.0 < got < 1.0


def test_conversational_completion() -> None:
    completion = [{"role": "assistant", "content": "<think>a</think><answer>1</answer>"}]
    assert completion_text(completion) == "<think>a</think><answer>1</answer>"
    assert think_answer_format_reward([completion]) == [1.0]


def test_unknown_problem_type_raises() -> None:
    with pytest.raises(ValueError, match="detection"):
        accuracy_reward(["<answer>x</answer>"], answer=["x"], problem_type=["detection"])


# --------------------------------------------------------- answer_correct / common.correct
# The box column wins over a box in the answer text: the answer here holds a far-away box, so a
# reward that dropped the column would score 0.
FAR = "[100, 100, 110, 110]"
CORRECT_CASES = [
    ("<answer>[0, 0, 10, 5]</answer>", FAR, "grounding", [0, 0, 10, 10], 1.0, "IoU exactly 0.5"),
    ("<answer>[0, 0, 10, 6]</answer>", FAR, "grounding", [0, 0, 10, 10], 1.0, "IoU 0.6"),
    ("<answer>[0, 0, 10, 4]</answer>", FAR, "grounding", [0, 0, 10, 10], 0.0, "IoU 0.4"),
    ("<answer>[0, 0, 10, 10]</answer>", FAR, "grounding", [0, 0, 10, 10], 1.0, "IoU 1"),
    ("<answer>[0, 0, 10, 10]</answer>", "[0, 0, 10, 5]", "grounding", None, 1.0, "box in answer"),
    ("<answer>a red circle</answer>", "A red circle.", "free_form", None, 1.0, "same caption"),
    ("<answer>a red circle</answer>", "a red circle and more", "free_form", None, 0.0, "partial"),
    ("<answer>STOP 42</answer>", "stop 42", "ocr", None, 1.0, "same text"),
    ("<answer>STOP</answer>", "stop 42", "ocr", None, 0.0, "partial text"),
    ("<answer>B</answer>", "B", "multiple_choice", None, 1.0, "right letter"),
    ("<answer>C</answer>", "B", "multiple_choice", None, 0.0, "wrong letter"),
    ("<answer>3.0</answer>", "3", "numerical", None, 1.0, "equal number"),
    ("<answer>no</answer>", "yes", "yes_no", None, 0.0, "wrong word"),
]


@pytest.mark.parametrize(("text", "answer", "ptype", "box", "expected", "why"), CORRECT_CASES)
def test_answer_correct(text, answer, ptype, box, expected, why) -> None:
    assert answer_correct(text, answer, ptype, box) == expected, why
    got = correct_reward(
        [text], answer=[answer], problem_type=[ptype], boxes=[[box] if box else []]
    )
    assert got == [expected], why


def test_answer_correct_threshold_is_one_half() -> None:
    assert IOU_THRESHOLD == 0.5
    # IoU 0.5 exactly is correct (>=), and a hair below is not.
    assert answer_correct("<answer>[0, 0, 10, 5]</answer>", "", "grounding", [0, 0, 10, 10]) == 1.0
    below = "<answer>[0, 0, 10, 4.99]</answer>"
    assert answer_correct(below, "", "grounding", [0, 0, 10, 10]) == 0.0


def test_answer_correct_is_binary_where_accuracy_is_continuous() -> None:
    # The continuous accuracy of these is strictly between 0 and 1; correctness is 0.
    for text, answer, ptype, box in [
        ("<answer>[5, 0, 15, 10]</answer>", "", "grounding", [0, 0, 10, 10]),
        ("<answer>a red circle</answer>", "a red circle and more", "free_form", None),
        ("<answer>STOP</answer>", "stop 42", "ocr", None),
    ]:
        (accuracy,) = accuracy_reward(
            [text], answer=[answer], problem_type=[ptype], boxes=[[box]] if box else None
        )
        assert 0.0 < accuracy < 1.0
        assert answer_correct(text, answer, ptype, box) == 0.0


def test_correct_reward_without_boxes_column() -> None:
    got = correct_reward(
        ["<answer>B</answer>", "<answer>[0, 0, 10, 10]</answer>", "<answer>4</answer>"],
        answer=["B", "[0, 0, 10, 6]", "3"],
        problem_type=["multiple_choice", "grounding", "numerical"],
    )
    assert got == [1.0, 1.0, 0.0]


def test_correct_reward_uses_the_first_box_of_each_row() -> None:
    got = correct_reward(
        ["<answer>[0, 0, 10, 10]</answer>"] * 3,
        answer=[FAR] * 3,
        problem_type=["grounding"] * 3,
        boxes=[[[0, 0, 10, 10], [100, 100, 110, 110]], [[100, 100, 110, 110]], []],
    )
    assert got == [1.0, 0.0, 0.0]  # an empty row falls back to the answer's (far) box


@pytest.mark.parametrize("reward", [accuracy_reward, correct_reward])
def test_columns_of_other_lengths_raise(reward) -> None:
    # TRL passes one value per completion in every column: a shorter column is a bug upstream,
    # not a batch to score partly.
    two = ["<answer>3</answer>", "<answer>3</answer>"]
    with pytest.raises(ValueError, match="zip"):
        reward(two, answer=["3"], problem_type=["numerical", "numerical"])
    with pytest.raises(ValueError, match="zip"):
        reward(two, answer=["3", "3"], problem_type=["numerical"])
    with pytest.raises(ValueError, match="zip"):
        reward(two, answer=["3", "3"], problem_type=["numerical"] * 2, boxes=[[[0, 0, 1, 1]]])
