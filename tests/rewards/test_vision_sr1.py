r"""Case tables for the Vision-SR1 rewards.

Source: zli12321/Vision-SR1 @ 4480e08: ``train_examples/reward_function/see_think_selfReward.py``
(``format_reward`` lines 45-52, ``accuracy_reward`` 88-91, ``compute_score`` 96-138, copied
verbatim in ``reference/released_vision_sr1_rewards.py``), ``verl/trainer/ray_trainer.py``
(``extract_description`` 66-76, ``ABS_Verify_Prompt`` 81 and its use 673-679, copied in
``reference/released_vision_sr1_trainer.py``) and
``train_examples/format_prompt/see_think_format.jinja``. Box extraction and grading are
mathruler's (``mathruler.grader.extract_boxed_content``, ``grade_answer``). The differential
tests against those copies are in ``test_vision_sr1_released.py``.
"""

from __future__ import annotations

import pytest

from vlrl.rewards import REGISTRY
from vlrl.rewards.vision_sr1 import (
    REWARDS,
    SEE_THINK_SUFFIX,
    SEE_THINK_TEMPLATE,
    accuracy_reward,
    extract_description,
    format_reward,
    self_reward_prompt,
    total_reward,
    visual_reward,
)

GOOD = r"<description>two red cubes</description><think>count them</think>\boxed{2}"

# see_think_selfReward.py lines 45-52 (fullmatch, DOTALL) after line 102's deletion of the
# whitespace around < > /.
FORMAT_CASES = [
    (GOOD, 1.0, "description → think → boxed"),
    (
        "<description>d</description>\n<think>t</think>\n\\boxed{2}\n",
        1.0,
        "whitespace between blocks",
    ),
    ("  \n" + GOOD, 1.0, "leading whitespace allowed by ^\\s*"),
    (
        r"< description >d</ description ><think>t</think>\boxed{2}",
        1.0,
        "spaces around < > / deleted",
    ),
    (r"<think>t</think>\boxed{2}", 0.0, "missing description tag"),
    (r"<description>d</description>\boxed{2}", 0.0, "missing think tag"),
    ("<description>d</description><think>t</think>", 0.0, "missing boxed answer"),
    (r"<think>t</think><description>d</description>\boxed{2}", 0.0, "blocks out of order"),
    (r"<description>d</description><think>t</think>\boxed{2} done", 0.0, "text after the box"),
    (r"So: <description>d</description><think>t</think>\boxed{2}", 0.0, "text before description"),
    (r"<description>d</description>x<think>t</think>\boxed{2}", 0.0, "text between blocks"),
    (
        r"<description>d</description><think>t</think>\boxed{1} \boxed{2}",
        1.0,
        "two boxes: lazy .*? spans",
    ),
    (r"<description>d</description><think>t</think>\boxed{\frac{1}{2}}", 1.0, "nested braces"),
    ("<description>d</description><think>t</think><answer>2</answer>", 0.0, "answer tag, no box"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format(text: str, expected: float, why: str) -> None:
    assert format_reward([text]) == [expected], why


# see_think_selfReward.py lines 88-91: mathruler's grade_answer on the last \boxed{} (line 102's
# normalisation first); without a box extract_boxed_content returns the string "None".
ACCURACY_CASES = [
    (GOOD, "2", 1.0, "right answer"),
    (r"\boxed{2}", "2", 1.0, "box without the other blocks still graded"),
    (r"<think>\boxed{3}</think>\boxed{2}", "2", 1.0, "last box counts"),
    (r"<think>\boxed{2}</think>\boxed{3}", "2", 0.0, "earlier right box ignored"),
    ("<answer>2</answer>", "2", 0.0, "no box: mathruler extracts 'None'"),
    (r"\boxed{\frac{1}{2}}", "1/2", 1.0, "latex fraction equals 1/2"),
    (r"\boxed{\frac{2}{4}}", "1/2", 0.0, "unreduced fraction must match exactly"),
    (r"\boxed{\frac{4}{2}}", "2", 0.0, "integer ground truth: fraction rejected"),
    (r"\boxed{10 \text{ cm}}", "10", 1.0, "units stripped by mathruler"),
    (r"\boxed{yes}", "Yes", 1.0, "case-insensitive word"),
    (r"\boxed{ 1 / 2 }", "1/2", 1.0, "spaces around / deleted"),
    (r"\boxed{2.0}", "2", 1.0, "2.0 normalises to 2"),
    (r"\boxed{3}", "2", 0.0, "wrong answer"),
]


@pytest.mark.parametrize(("text", "answer", "expected", "why"), ACCURACY_CASES)
def test_accuracy(text: str, answer: str, expected: float, why: str) -> None:
    assert accuracy_reward([text], answer=[answer]) == [expected], why


# see_think_selfReward.py lines 111-114: accuracy_reward on the raw second-pass text
# (description_answers), 0 when it raises.
VISUAL_CASES = [
    (r"<think>from the text</think>\boxed{2}", "2", 1.0, "second pass right"),
    (r"<think>t</think>\boxed{3}", "2", 0.0, "second pass wrong"),
    (r"\boxed{3}\boxed{2}", "2", 1.0, "last box of the second pass"),
    ("I cannot tell", "2", 0.0, "second pass without a box"),
    ("", "2", 0.0, "empty second pass"),
    ("no box", "None", 1.0, "released quirk: a missing box extracts the string 'None'"),
    (None, "2", None, "no second pass for this completion: not applicable"),
]


@pytest.mark.parametrize(("second", "answer", "expected", "why"), VISUAL_CASES)
def test_visual(second: str | None, answer: str, expected: float | None, why: str) -> None:
    got = visual_reward([GOOD], answer=[answer], self_reward_responses=[second])
    assert got == [expected], why


def test_visual_scores_the_second_pass_not_the_completion() -> None:
    got = visual_reward([r"\boxed{9}"], answer=["2"], self_reward_responses=[r"\boxed{2}"])
    assert got == [1.0]


def test_visual_without_column_is_not_applicable() -> None:
    assert visual_reward([GOOD, GOOD], answer=["2", "2"]) == [None, None]


def test_visual_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError):
        visual_reward([GOOD, GOOD], answer=["2"], self_reward_responses=[r"\boxed{2}"])


# see_think_selfReward.py line 121: "overall" = (1 - 0.1)·accuracy + 0.1·format + description.
TOTAL_CASES = [
    (GOOD, r"\boxed{2}", 2.0, "all three parts"),
    (GOOD, r"\boxed{3}", 1.0, "acc + fmt"),
    (r"\boxed{2}", r"\boxed{2}", 1.9, "acc + vis, bad format"),
    (r"<description>d</description><think>t</think>\boxed{3}", r"\boxed{3}", 0.1, "format only"),
    (r"\boxed{3}", r"\boxed{2}", 1.0, "vis only"),
    ("nothing", "nothing", 0.0, "nothing right"),
]


@pytest.mark.parametrize(("text", "second", "expected", "why"), TOTAL_CASES)
def test_total_weights(text: str, second: str, expected: float, why: str) -> None:
    got = total_reward([text], answer=["2"], self_reward_responses=[second])
    assert got == [pytest.approx(expected)], why


def test_total_needs_the_self_reward_column() -> None:
    with pytest.raises(ValueError, match="self_reward_responses"):
        total_reward([GOOD], answer=["2"])


def test_total_none_entry_stays_none() -> None:
    assert total_reward([GOOD], answer=["2"], self_reward_responses=[None]) == [None]


# ray_trainer.py lines 66-76 (the same function as see_think_selfReward.py lines 63-72).
DESCRIPTION_CASES = [
    ("<description> two cubes </description><think>t</think>", "two cubes", "stripped content"),
    ("<description>a</description><description>b</description>", "a", "first block wins"),
    ("<description>\nline1\nline2\n</description>", "line1\nline2", "multi-line"),
    ("no tags at all", "no tags at all", "missing tag: whole response (possible leak)"),
    (
        "<description>unclosed <think>t</think>",
        "<description>unclosed <think>t</think>",
        "unclosed",
    ),
    (" \\boxed{2} ", " \\boxed{2} ", "whole text is not stripped"),
]


@pytest.mark.parametrize(("text", "expected", "why"), DESCRIPTION_CASES)
def test_extract_description(text: str, expected: str, why: str) -> None:
    assert extract_description(text) == expected, why


def test_self_reward_prompt_is_the_released_text() -> None:
    # ray_trainer.py line 81 (ABS_Verify_Prompt), filled as on lines 675-677.
    got = self_reward_prompt("two cubes", "<image>How many cubes?")
    assert got == (
        "Text description: two cubes\nQuestion: How many cubes?\nYou are provided a text "
        "description of a problem and a question. Determine the answer to the question based on "
        "the text description. First provide an internal step-by-step reasoning within <think> "
        "</think> tags, then provide a single word or phrase answer in \\boxed{}."
    )


def test_see_think_template_renders_the_jinja_suffix() -> None:
    # train_examples/format_prompt/see_think_format.jinja, rendered by verl/utils/dataset.py
    # lines 181-184 (Template(format_prompt.strip()).render(content=prompt)).
    rendered = SEE_THINK_TEMPLATE.format(Question="How many cubes?")
    assert rendered == "How many cubes? " + SEE_THINK_SUFFIX
    assert "\\n Next" in rendered and "\\boxed{}" in rendered  # literal backslash-n kept
    assert rendered.endswith("\\boxed{FINAL ANSWER here}.")


def test_prompt_example_output_earns_full_format() -> None:
    example = (
        "<description> image/video description here </description> <think> reasoning process "
        "here </think> \\boxed{FINAL ANSWER here}"
    )
    assert format_reward([example]) == [1.0]


def test_registry_names() -> None:
    assert set(REWARDS) == {
        "vision_sr1.format",
        "vision_sr1.format_cot",
        "vision_sr1.accuracy",
        "vision_sr1.visual",
        "vision_sr1.total",
    }
    assert all(REGISTRY[name] is fn for name, fn in REWARDS.items())


RANGES = {
    "vision_sr1.format": (0.0, 1.0),
    "vision_sr1.accuracy": (0.0, 1.0),
    "vision_sr1.visual": (0.0, 1.0),
    "vision_sr1.total": (0.0, 2.0),
}


@pytest.mark.parametrize("name", sorted(RANGES))
def test_one_value_per_completion_in_range(name: str) -> None:
    texts = [row[0] for row in FORMAT_CASES]
    completions = [[{"role": "assistant", "content": t}] for t in texts]  # conversational
    second = [r"\boxed{2}", "x", None] * (len(texts) // 3) + ["y"] * (len(texts) % 3)
    got = REWARDS[name](completions, answer=["2"] * len(texts), self_reward_responses=second)
    assert len(got) == len(texts)
    low, high = RANGES[name]
    assert all(v is None or low <= v <= high for v in got)


# --- mutation-testing gaps ---------------------------------------------------------------------


def test_accuracy_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="zip"):
        accuracy_reward([GOOD, GOOD], answer=["2"])


def test_visual_answer_length_mismatch_is_an_error() -> None:
    # as many second-pass texts as completions, one answer too many: still an error
    with pytest.raises(ValueError, match="zip"):
        visual_reward([GOOD] * 2, answer=["2"] * 3, self_reward_responses=[r"\boxed{2}"] * 2)


def test_visual_column_length_error_names_the_column() -> None:
    with pytest.raises(
        ValueError, match=r"^self_reward_responses has 1 entries for 2 completions$"
    ):
        visual_reward([GOOD, GOOD], answer=["2"], self_reward_responses=[r"\boxed{2}"])


class _Unprintable:
    """A second-pass entry whose text cannot be taken: grading it raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_visual_grading_error_scores_zero_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    # see_think_selfReward.py lines 111-114: any exception while grading the second pass scores 0.
    with caplog.at_level("WARNING", logger="vlrl.rewards.vision_sr1"):
        got = visual_reward(
            [GOOD, GOOD], answer=["2", "2"], self_reward_responses=[_Unprintable(), r"\boxed{2}"]
        )
    assert got == [0.0, 1.0]
    assert [r.getMessage() for r in caplog.records] == [
        "vision_sr1.visual: grading failed (no text); scored 0"
    ]


def test_total_error_message_names_the_algorithm() -> None:
    with pytest.raises(
        ValueError,
        match=r"^vision_sr1.total needs the column 'self_reward_responses' \(filled by the "
        r"self_reward algorithm\); it is absent$",
    ):
        total_reward([GOOD], answer=["2"])
