r"""Differential tests: the Vision-SR1 rewards against the released code on seeded random inputs.

Oracles, kept verbatim under ``reference/`` (zli12321/Vision-SR1 @ 4480e08):

- ``released_vision_sr1_rewards.py``: ``train_examples/reward_function/see_think_selfReward.py``
  (the ``reward_function`` of ``selfReward_config.yaml``). Its ``compute_score`` gives, per
  response, ``format`` (``vision_sr1.format``), ``accuracy`` (``vision_sr1.accuracy``),
  ``description_accuracy`` (``vision_sr1.visual``, the self-reward's visual-perception part) and
  ``overall`` (``vision_sr1.total``, and the weighted sum of the three parts with
  :data:`~vlrl.rewards.vision_sr1.WEIGHTS`); its ``format_reward``,
  ``description_format_reward`` and ``accuracy_reward`` are the oracles of the helpers
  ``see_think_format``, ``think_boxed_format`` and ``boxed_accuracy``.
- ``released_vision_sr1_trainer.py``: ``verl/trainer/ray_trainer.py``'s ``extract_description``
  and the second-pass prompt (``ABS_Verify_Prompt``), the oracles of ``extract_description`` and
  ``self_reward_prompt``.

The think → box baseline (``cot_val.py``, ``vision_sr1.format_cot``) is covered by
``test_vision_sr1_cot.py``. Each test loops over a few hundred seeded cases, ORDINARY ones first
(well-formed see → think → box responses with numeric, multiple-choice, LaTeX and word answers,
right and wrong, as models write them), then ADVERSARIAL ones (tag soup inserted, missing, nested
or unclosed tags and boxes, unicode and unicode whitespace, empty strings), and fails on the first
mismatch with the input's repr. Values must be equal (the total to 1e-9).

Declared deviations (by design; the expected values in :func:`test_declared_deviations` and
:func:`test_non_string_ground_truth_is_graded_as_its_str`; 4 in the loops):

1. No second-pass column (``self_reward_responses`` absent): ``vision_sr1.visual`` gives None for
   every completion and ``vision_sr1.total`` raises ValueError (declared in their docstrings).
   Released, ``BatchFunctionRewardManager`` (``verl/workers/reward/function.py``, lines 150 and
   163) passes ``""``, graded as the string ``"None"``: 0.0 unless the ground truth is ``None``.
2. A None entry in that column (no second pass for that completion): None, "not applicable"
   (declared in ``visual_reward``'s docstring). Released has no such entry; a None would raise
   inside its ``try`` and score 0.
3. A ground truth that is not a string (e.g. the int 2) is graded as ``str(answer)``. Released,
   mathruler's ``normalize_answer`` calls ``.strip()`` on it: ``accuracy_reward`` raises
   AttributeError (uncaught in ``compute_score``) and the description reward is 0 (its ``try``).
   Not declared in the reward module's docstring.
4. Conversational completions (``[{"role": "assistant", "content": …}]``) are scored on their
   text; the released code only sees decoded strings.
"""

from __future__ import annotations

import contextlib
import io
import math
import random

import pytest
from released_code import released_module

from vlrl.rewards import REGISTRY
from vlrl.rewards.vision_sr1 import (
    REWARDS,
    WEIGHTS,
    accuracy_reward,
    boxed_accuracy,
    extract_description,
    format_reward,
    see_think_format,
    self_reward_prompt,
    think_boxed_format,
    total_reward,
    visual_reward,
)

released = released_module("released_vision_sr1_rewards.py")
trainer = released_module("released_vision_sr1_trainer.py")


def released_row(text: str, truth, second, question: str = "How many?<image>"):
    """``compute_score``'s dict for one response, or the exception it raises (prints muted)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            (row,) = released.compute_score([text], [truth], [question], [second])
        return row
    except Exception as exc:  # compared, and reported with the input
        return exc


def oracle(fn, *args):
    """A released helper's value, or the exception it raises."""
    try:
        return fn(*args)
    except Exception as exc:  # compared, and reported with the input
        return exc


# --- generated inputs ----------------------------------------------------------------------------

# Groups of answers, equivalent or nearly so under mathruler: a right response boxes another
# member of its ground truth's group half of the time.
ANSWER_GROUPS = [
    ["2", "2.0", "2.00", " 2 "],
    ["3.5", "7/2", r"\frac{7}{2}", "3.50"],
    ["0.5", "1/2", r"\frac{1}{2}", r"\dfrac{1}{2}", r"\tfrac12"],
    ["1000", "1,000", "10^3", r"1{,}000"],
    ["-4", "-4.0", "- 4"],
    ["45", r"45^\circ", r"45^{\circ}", "45 degrees"],
    ["10 cm", "10", r"10 \text{ cm}", r"10\,\text{cm}"],
    ["25%", "25", r"25\%", "0.25"],
    ["A", "(A)", "A.", "a", r"\text{A}"],
    ["B", "b", "B. a red cube", "(B)"],
    ["C", "C:", "option C"],
    [r"\sqrt{2}", r"\sqrt2", "sqrt(2)", r"2^{1/2}"],
    [r"2\pi", r"2 \pi", "2*pi", r"\pi \cdot 2"],
    ["x^2 + 1", "x^2+1", "1 + x^2"],
    ["(1, 2)", "(1,2)", "(2, 1)"],
    ["[0, 1]", "[0,1]", "(0, 1)"],
    ["yes", "Yes", "YES", r"\text{yes}"],
    ["no", "No", "no."],
    ["red cube", "Red cube", "a red cube", "red  cube"],
    ["3", "three", "3.0", "$3$"],
]
ALL_ANSWERS = [a for group in ANSWER_GROUPS for a in group]
ODD_TRUTHS = ["", " ", "None", r"\boxed{2}", "２", "½", "2\n", "答案", "{2}", "1e400", "nan"]
# (boxed, truth) pairs right only after the whitespace around < > / is deleted (mathruler deletes
# spaces, not tabs or wide spaces): they tell the normalised response from the raw second pass.
WIDE_SPACE_PAIRS = [
    ("x\u3000<\u30005", "x<5"),
    ("x\t<5", "x<5"),
    ("x >\u00a03", "x>3"),
    ("x\u2003>\t3", "x > 3"),
]

DESCRIPTIONS = [
    "Two red cubes and a blue sphere on a table.",
    "A bar chart: 2019 is 3 / 4 as tall as 2020, and x < 5 on the axis.",
    "The triangle ABC has AB = 3, BC = 4 and a right angle at B.\nThe question asks for AC.",
    "A street sign reading 'STOP' / 'ARRÊT'.",
    "",
    "A table with columns <name> and <price>; 3 rows.",
    "Graph of y = x^2 + 1 for -2 ≤ x ≤ 2.",
]
REASONINGS = [
    "There are two cubes, so the answer is 2.",
    "AC = \\sqrt{3^2 + 4^2} = 5.",
    "Compare the heights: 3/4 < 1.\nSo the answer is B.",
    "",
    "First \\boxed{3}? No, wait, recount.",
    "Options: (A) cat (B) dog. The image shows a dog.",
]
SPACES = ["", "", "", " ", "\n", "\n\n", "  \n ", "\t"]
TAGS = [
    ("<{}>", "</{}>"),
    ("<{}>", "</{}>"),
    ("< {} >", "</ {} >"),
    ("<{} >", "< / {}>"),
]
SOUP = [
    "<description>", "</description>", "< description >", "</ description>", "<think>",
    "</think>", "< think >", "< /think >", "<answer>", "</answer>", r"\boxed{", r"\boxed", "}",
    "{", r"\boxed{}", r"\boxed{2}", r"\boxed{{2}}", r"\frac{1}{2}", " ", "\n", "\r\n", "\t",
    "\u00a0", "\u2003", "\u3000", "\u200b", "\ufeff", "x", "2", "/", " / ", "<", ">", "$",
    "\\", "é", "答案", "。", "😀", "e\u0301", "\u202e", "＜think＞", "／", "\x00", "None",
    "Answer: B", "description", "think",
]  # fmt: skip


def _tag(rng: random.Random, name: str) -> tuple[str, str]:
    open_tag, close_tag = rng.choice(TAGS)
    return open_tag.format(name), close_tag.format(name)


def answers(rng: random.Random, odd: bool = False) -> tuple[str, str]:
    """(a boxed answer, the ground truth): the same group half of the time."""
    group = rng.choice(ANSWER_GROUPS)
    truth = rng.choice(group)
    boxed = rng.choice(group) if rng.random() < 0.5 else rng.choice(ALL_ANSWERS)
    if odd and rng.random() < 0.3:
        truth = rng.choice(ODD_TRUTHS)
    elif odd and rng.random() < 0.2:
        boxed, truth = rng.choice(WIDE_SPACE_PAIRS)
    return boxed, truth


def well_formed(rng: random.Random, boxed: str) -> str:
    r"""``<description>…</description><think>…</think>\boxed{…}`` as models write it, now and
    then with a closing sentence or an unstripped end-of-turn token after the box."""
    d_open, d_close = _tag(rng, "description")
    t_open, t_close = _tag(rng, "think")
    s = [rng.choice(SPACES) for _ in range(4)]
    tail = rng.choice(["", "", "", "", "", "", " So the answer is 2.", "<|im_end|>"])
    return (
        f"{s[0]}{d_open}{rng.choice(DESCRIPTIONS)}{d_close}{s[1]}{t_open}{rng.choice(REASONINGS)}"
        f"{t_close}{s[2]}\\boxed{{{boxed}}}{s[3]}{tail}"
    )


def second_pass(rng: random.Random, boxed: str) -> str:
    """An image-free second-pass answer: think → box, now and then without the box."""
    if rng.random() < 0.15:
        return f"From the description, the answer is {boxed}."
    s = [rng.choice(SPACES) for _ in range(3)]
    return f"{s[0]}<think>{rng.choice(REASONINGS)}</think>{s[1]}\\boxed{{{boxed}}}{s[2]}"


def broken(rng: random.Random, text: str) -> str:
    """``text`` with tag soup inserted, a block dropped or nested, cut short, or pure soup."""
    kind = rng.randrange(6)
    if kind == 0:  # pure soup (sometimes empty)
        return "".join(rng.choice(SOUP) for _ in range(rng.randrange(10)))
    if kind == 1:  # a block or a tag dropped
        for cut in rng.sample(["<description>", "</description>", "<think>", "</think>"], 2):
            text = text.replace(cut, "", 1)
        return text
    if kind == 2:  # nested
        return text.replace("<description>", "<description><description>", 1).replace(
            "</think>", "<think>x</think></think>", 1
        )
    if kind == 3:  # cut short (unclosed tag or box)
        return text[: rng.randrange(len(text) + 1)]
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(SOUP) + text[at:]
    return text


def case(seed: int, kind: str) -> tuple[str, str, str]:
    """(response, ground truth, second-pass text) for one seed: ordinary or adversarial."""
    rng = random.Random(seed)
    boxed, truth = answers(rng, odd=kind == "adversarial")
    text = well_formed(rng, boxed)
    again, _ = answers(rng)
    second = second_pass(rng, rng.choice([truth, boxed, again]))
    if kind == "adversarial":
        if rng.random() < 0.8:
            text = broken(rng, text)
        if rng.random() < 0.6:
            second = broken(rng, second)
    return text, truth, second


KINDS = {"ordinary": (range(0, 250), 0), "adversarial": (range(250), 1_000_000)}
"""Per kind: the cases of each test (a few hundred) and the seed offset."""


def cases(kind: str, salt: int):
    """The seeded cases of one test (``salt`` keeps the tests' cases apart)."""
    seeds, offset = KINDS[kind]
    return [case(offset + salt * 10_000 + s, kind) for s in seeds]


def conversational(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


# --- the differential tests ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_format_matches_released(kind: str) -> None:
    for text, _, second in cases(kind, salt=1):
        row = released_row(text, "2", second)
        assert not isinstance(row, Exception), repr(text)
        assert format_reward([text]) == [row["format"]], repr(text)
        assert format_reward([conversational(text)]) == [row["format"]], repr(text)
        # The helpers, on raw text (no whitespace normalisation), the second pass included.
        for raw in (text, second):
            assert see_think_format(raw) == oracle(released.format_reward, raw), repr(raw)
            expected = oracle(released.description_format_reward, raw)
            assert think_boxed_format(raw) == expected, repr(raw)


@pytest.mark.parametrize("kind", KINDS)
def test_accuracy_matches_released(kind: str) -> None:
    for text, truth, second in cases(kind, salt=2):
        row = released_row(text, truth, second)
        assert not isinstance(row, Exception), repr((text, truth))
        assert accuracy_reward([text], answer=[truth]) == [row["accuracy"]], repr((text, truth))
        assert accuracy_reward([conversational(text)], answer=[truth]) == [row["accuracy"]]
        expected = oracle(released.accuracy_reward, text, truth)  # raw text, no normalisation
        assert boxed_accuracy(text, truth) == expected, repr((text, truth))


@pytest.mark.parametrize("kind", KINDS)
def test_visual_matches_released(kind: str) -> None:
    for text, truth, second in cases(kind, salt=3):
        row = released_row(text, truth, second)
        assert not isinstance(row, Exception), repr((text, truth, second))
        got = visual_reward([text], answer=[truth], self_reward_responses=[second])
        assert got == [row["description_accuracy"]], repr((second, truth))


@pytest.mark.parametrize("kind", KINDS)
def test_total_matches_released(kind: str) -> None:
    for text, truth, second in cases(kind, salt=4):
        row = released_row(text, truth, second)
        assert not isinstance(row, Exception), repr((text, truth, second))
        columns = {"answer": [truth], "self_reward_responses": [second]}
        (total,) = total_reward([text], **columns)
        summed = sum(WEIGHTS[part] * REWARDS[f"vision_sr1.{part}"]([text], **columns)[0]
                     for part in WEIGHTS)  # fmt: skip
        for got in (total, summed):
            assert math.isclose(got, row["overall"], rel_tol=0, abs_tol=1e-9), repr(
                (text, truth, second)
            )


QUESTIONS = [
    "How many cubes are there?<image>",
    "<image>What color is the sphere?",
    "Which option is correct?\nA. cat\nB. dog<image>",
    "  What is AC?  ",
    "",
]
ODD_QUESTIONS = [
    "<image><image>Compare the two images.",
    "Use {Description} and {Question} literally.",
    "< image >Spaced tag",
    "问题：有几个立方体？<image>",
    "\u202eRTL\u200b",
    "{Description}<image>{Question}",
]
ODD_DESCRIPTIONS = ["{Question}", "{Description}", "<image>", "\\boxed{2}", "  ", "😀\u3000"]


@pytest.mark.parametrize("kind", KINDS)
def test_second_pass_prompt_matches_released(kind: str) -> None:
    rng = random.Random(5 + len(kind))
    for text, _, _ in cases(kind, salt=5):
        question = rng.choice(QUESTIONS)
        if kind == "adversarial":
            question = rng.choice([question, *ODD_QUESTIONS])
            if rng.random() < 0.3:  # a description the prompt's replace() chain sees again
                odd = rng.choice(ODD_DESCRIPTIONS)
                text = text.replace("<description>", f"<description>{odd}", 1)
        expected = trainer.extract_description(text)
        assert extract_description(text) == expected, repr(text)
        assert released.extract_description(text) == expected, repr(text)
        (prompt,) = trainer.second_hop_inputs_of([text], [question])
        assert self_reward_prompt(extract_description(text), question) == prompt, repr(
            (text, question)
        )


# --- declared deviations -------------------------------------------------------------------------

DEVIATION_TRUTHS = ["2", "None", "none", "B", ""]


@pytest.mark.parametrize("truth", DEVIATION_TRUTHS)
def test_declared_deviations(truth: str) -> None:
    text = r"<description>d</description><think>t</think>\boxed{2}"
    # 1. No second-pass column: None / ValueError; released grades "" (box-less: "None").
    row = released_row(text, truth, "")
    assert row["description_accuracy"] == (1.0 if truth.lower() == "none" else 0.0)
    assert visual_reward([text], answer=[truth]) == [None]
    with pytest.raises(ValueError, match="self_reward_responses"):
        total_reward([text], answer=[truth])
    # 2. A None entry: None; released scores it 0 (the try around accuracy_reward).
    assert released_row(text, truth, None)["description_accuracy"] == 0
    assert visual_reward([text], answer=[truth], self_reward_responses=[None]) == [None]
    assert total_reward([text], answer=[truth], self_reward_responses=[None]) == [None]


@pytest.mark.parametrize(("truth", "expected"), [(2, 1.0), (2.0, 1.0), (3, 0.0)])
def test_non_string_ground_truth_is_graded_as_its_str(truth, expected: float) -> None:
    # 3. Released, mathruler calls truth.strip(): accuracy raises, the description reward is 0.
    text = r"<description>d</description><think>t</think>\boxed{2}"
    assert isinstance(released_row(text, truth, r"\boxed{2}"), AttributeError)
    assert released.accuracy_reward(text, str(truth)) == expected
    assert accuracy_reward([text], answer=[truth]) == [expected]
    assert visual_reward([text], answer=[truth], self_reward_responses=[r"\boxed{2}"]) == [expected]


def test_released_weights_are_the_registry_s() -> None:
    # compute_score: (1 - format_weight)·accuracy + format_weight·format + description_reward.
    assert WEIGHTS == {"accuracy": 1 - 0.1, "format": 0.1, "visual": 1.0}
    assert all(REGISTRY[f"vision_sr1.{part}"] is REWARDS[f"vision_sr1.{part}"] for part in WEIGHTS)
