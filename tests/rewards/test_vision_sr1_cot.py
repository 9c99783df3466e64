r"""Vision-SR1's regular Vision-R1 baseline: prompt ``think_boxed``, ``vision_sr1.format_cot``.

Differential tests against the released code, kept verbatim under ``reference/``
(zli12321/Vision-SR1 @ 4480e08: ``train_examples/reward_function/cot_val.py`` and
``train_examples/format_prompt/cot_format.jinja``): seeded well-formed responses first, then
edge cases (spaced tags, text around the blocks, tag soup). The recipe's rewards
``{vision_sr1.accuracy: 0.9, vision_sr1.format_cot: 0.1}`` must give ``cot_val.compute_score``'s
``overall``.
"""

from __future__ import annotations

import random

import jinja2
import pytest
from released_code import REFERENCE, released_module

from vlrl.items.prompts import PROMPTS
from vlrl.rewards import REGISTRY
from vlrl.rewards.vision_sr1 import (
    COT_WEIGHTS,
    REWARDS,
    THINK_BOXED_SUFFIX,
    accuracy_reward,
    format_cot_reward,
    format_reward,
)

released = released_module("released_vision_sr1_cot_val.py")

GOOD = r"<think>two red cubes, so 2</think>\boxed{2}"

FORMAT_CASES = [
    (GOOD, 1.0, "think → boxed"),
    ("<think>a\nb</think>\n\\boxed{2}\n", 1.0, "newlines inside and between blocks"),
    (r"<think></think>\boxed{}", 1.0, "empty blocks"),
    ("  \n" + GOOD, 1.0, "leading whitespace: deleted before '<' by the normalisation"),
    (r"< think >t</ think >\boxed{2}", 1.0, "spaces around < > / deleted"),
    (r"<think>t</think>\boxed{1} \boxed{2}", 1.0, "two boxes: the lazy .*? spans"),
    (r"<think>t</think>\boxed{\frac{1}{2}}", 1.0, "nested braces"),
    (r"So: <think>t</think>\boxed{2}", 0.0, "text before think: no ^\\s*.* allowance"),
    (r"<think>t</think>\boxed{2} done", 0.0, "text after the box"),
    (r"<think>t</think> x \boxed{2}", 0.0, "text between think and box"),
    (r"<description>d</description><think>t</think>\boxed{2}", 0.0, "see-think layout"),
    (r"\boxed{2}", 0.0, "no think"),
    ("<think>t</think>", 0.0, "no box"),
    ("<think>t</think><answer>2</answer>", 0.0, "answer tag instead of a box"),
    (r"<think>t\boxed{2}", 0.0, "unclosed think"),
    (r"<think>t</think>\boxed 2", 0.0, "box without braces"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format_cot(text: str, expected: float, why: str) -> None:
    assert format_cot_reward([text]) == [expected], why
    assert released.compute_score([text], ["2"], ["q"], [""])[0]["format"] == expected, why


def test_format_cot_differs_from_the_see_think_format() -> None:
    see_think = r"<description>d</description><think>t</think>\boxed{2}"
    assert format_cot_reward([see_think, GOOD]) == [0.0, 1.0]
    assert format_reward([see_think, GOOD]) == [1.0, 0.0]


# --- differential: cot_val.compute_score on generated responses ----------------------------------

ANSWERS = ["2", "3", "yes", "No", "1/2", r"\frac{1}{2}", "0.5", "10 cm", "A", "red cube", ""]
SPACES = ["", "", " ", "\n", "  \n ", "\t"]
SOUP = [
    "<think>", "</think>", "< think >", "</ think>", "< /think >", r"\boxed{", r"\boxed", "}", "{",
    "<description>", "</description>", "<answer>", "</answer>", " ", "\n", "x", "2", "/", " / ",
    "$", "<", ">", "think", "\\", r"\frac{1}{2}", "answer: ", "é", "。",
]  # fmt: skip


def well_formed(rng: random.Random, answer: str) -> str:
    """``<think>…</think>\\boxed{answer}``, with whitespace and spaced tags as models write them."""
    open_tag, close_tag = rng.choice(
        [("<think>", "</think>"), ("< think >", "</ think >"), ("<think >", "< / think>")]
    )
    reasoning = rng.choice(["", "count: 2", "a / b\nso yes", r"\boxed{3} no, wait"])
    return (
        f"{rng.choice(SPACES)}{open_tag}{reasoning}{close_tag}{rng.choice(SPACES)}"
        f"\\boxed{{{answer}}}{rng.choice(SPACES)}"
    )


def edge_case(rng: random.Random, answer: str) -> str:
    """A well-formed response broken by insertions, or tag soup."""
    if rng.random() < 0.5:
        text = well_formed(rng, answer)
        for _ in range(rng.randrange(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(SOUP) + text[at:]
        return text
    return "".join(rng.choice(SOUP) for _ in range(rng.randrange(12)))


def _check_against_released(text: str, answer: str) -> None:
    (expected,) = released.compute_score([text], [answer], ["question"], ["description answer"])
    fmt = format_cot_reward([[{"role": "assistant", "content": text}]])[0]
    acc = accuracy_reward([text], answer=[answer])[0]
    assert (fmt, acc) == (expected["format"], expected["accuracy"]), repr(text)
    overall = sum(COT_WEIGHTS[name] * REGISTRY[name]([text], answer=[answer])[0]
                  for name in COT_WEIGHTS)  # fmt: skip
    assert overall == pytest.approx(expected["overall"]), repr(text)


def _answers(rng: random.Random) -> tuple[str, str]:
    """(the boxed answer, the ground truth): the same one half of the time."""
    answer = rng.choice(ANSWERS)
    return answer, answer if answer and rng.random() < 0.5 else rng.choice(ANSWERS[:-1])


@pytest.mark.parametrize("seed", range(150))
def test_well_formed_matches_released(seed: int) -> None:
    rng = random.Random(seed)
    answer, truth = _answers(rng)
    _check_against_released(well_formed(rng, answer), truth)


@pytest.mark.parametrize("seed", range(250))
def test_edge_cases_match_released(seed: int) -> None:
    rng = random.Random(10_000 + seed)
    answer, truth = _answers(rng)
    _check_against_released(edge_case(rng, answer), truth)


def test_recipe_weights_are_cot_val_s() -> None:
    # cot_val.py lines 82 and 96 (reference/released_vision_sr1_cot_val.py):
    # (1 - format_weight) * accuracy + format_weight * format, format_weight = 0.1
    assert COT_WEIGHTS == {"vision_sr1.accuracy": 0.9, "vision_sr1.format_cot": 0.1}
    assert all(REGISTRY[name] is REWARDS[name] for name in COT_WEIGHTS)


def test_registered() -> None:
    assert REGISTRY["vision_sr1.format_cot"] is format_cot_reward


# --- the prompt: cot_format.jinja ----------------------------------------------------------------

QUESTIONS = ["How many cubes?", "  How many cubes?\n", "<image>What is red?", "Q {x} }{", ""]


@pytest.mark.parametrize("question", QUESTIONS)
def test_prompt_is_the_rendered_jinja(question: str) -> None:
    # zli12321/Vision-SR1 @ 4480e08, verl/utils/dataset.py lines 181-184:
    # Template(format_prompt.strip()).render(content=prompt)
    template = jinja2.Template((REFERENCE / "released_cot_format.jinja").read_text().strip())
    expected = template.render(content=question)
    assert PROMPTS["think_boxed"].render_prompt(question, problem_type="numerical") == expected


def test_prompt_suffix_and_target() -> None:
    fmt = PROMPTS["think_boxed"]
    assert fmt.render_prompt("Q").endswith(r"The final answer MUST BE put in \boxed{}.")
    assert fmt.instruction_texts() == [THINK_BOXED_SUFFIX]
    assert fmt.system is None
    target = fmt.render_target("two cubes", "2", description="ignored")
    assert target == r"<think>two cubes</think>\boxed{2}"
    assert released.format_reward(target) == 1.0
    assert released.accuracy_reward(target, "2") == 1.0
