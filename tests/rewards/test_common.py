"""Case tables for the common rewards (TRL signature)."""

from __future__ import annotations

import pytest

from vlrl.rewards.common import accuracy_reward, completion_text, think_answer_format_reward

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
