"""SATORI with a thinking stage: prompt ``caption_bbox_think_answer``, ``satori.format_think``.

Neither is released (justairr/SATORI-R1 @ 8857b30 has caption → bbox → answer only: ``prompt.txt``
and ``plugin.py`` lines 17-30); both are vlrl's construction after paper v2 Fig. 3 (arXiv
2505.19094; the project page in the same repository, ``docs/index.html`` lines 184-189 and
``docs/pics/figure3.png``: Glance (caption) → Focus (bbox) → Think → answer). The oracle is the
released ``plugin.py`` ``Format`` (verbatim in ``reference/released_satori_format.py``), its regex
with ``\\s*<think>.*?</think>`` inserted after ``</bbox>``; the released reward itself must reject
the thinking layout, so the two formats are distinct. The prompt oracle is ``prompt.txt`` @ 8857b30
(verbatim in ``reference/released_satori_prompt.txt``).
"""

from __future__ import annotations

import random
import re

import pytest
from released_code import REFERENCE, released_module

from vlrl.items import prompt_texts
from vlrl.items.prompts import PROMPTS
from vlrl.rewards import REGISTRY
from vlrl.rewards.satori import (
    CAPTION_BBOX_THINK_ANSWER_PATTERN,
    CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT,
    REWARDS,
    SATORI_FORMAT_PATTERN,
    SATORI_FORMAT_THINK_PATTERN,
    format_reward,
    format_think_reward,
)

released = released_module("released_satori_format.py")
RELEASED_FORMAT = released.orms["external_format"]()
RELEASED_PATTERN = next(
    c
    for c in RELEASED_FORMAT.__call__.__code__.co_consts
    if isinstance(c, str) and "<caption>" in c
)
"""The regex literal of the released ``Format.__call__``."""
THINK = r"\s*<think>.*?</think>"
ORACLE_PATTERN = RELEASED_PATTERN.replace(r"</bbox>", r"</bbox>" + THINK, 1)
"""The released regex with the think block inserted after ``</bbox>`` (before ``\\s*<answer>``)."""


def oracle(text: str) -> float:
    return 1.0 if re.match(ORACLE_PATTERN, text, re.DOTALL | re.MULTILINE) else 0.0


def test_patterns_are_the_released_one_plus_think() -> None:
    assert RELEASED_PATTERN == SATORI_FORMAT_PATTERN
    assert ORACLE_PATTERN == SATORI_FORMAT_THINK_PATTERN
    assert SATORI_FORMAT_THINK_PATTERN.replace(THINK, "") == SATORI_FORMAT_PATTERN


GOOD = (
    "<caption>a dog on grass</caption><bbox>[[0, 0, 10, 10]]</bbox>"
    "<think>the dog is in the box</think><answer>dog</answer>"
)
NO_THINK = "<caption>a dog on grass</caption><bbox>[[0, 0, 10, 10]]</bbox><answer>dog</answer>"

# (text, format_think, released format, why)
CASES = [
    (GOOD, 1.0, 0.0, "caption → bbox → think → answer"),
    (" \n<caption>c</caption>\n<bbox> [[1,2,3,4]] </bbox>\n<think>\nt\n</think>\n"
     "<answer>a</answer>\n", 1.0, 0.0, "whitespace between blocks"),
    (GOOD + "\nextra line", 1.0, 0.0, "MULTILINE $: trailing lines tolerated"),
    ("<caption></caption><bbox>[[]]</bbox><think></think><answer></answer>", 1.0, 0.0, "empty"),
    (NO_THINK, 0.0, 1.0, "no think: the released layout"),
    (GOOD + " extra", 0.0, 0.0, "text after </answer> on the same line"),
    ("<think>t</think>" + NO_THINK, 0.0, 0.0, "think first"),
    ("<caption>c</caption><think>t</think><bbox>[[1,2,3,4]]</bbox><answer>a</answer>", 0.0, 0.0,
     "think before bbox"),
    ("<caption>c</caption><bbox>[[1,2,3,4]]</bbox><answer>a</answer><think>t</think>", 0.0, 0.0,
     "think after answer"),
    ("<caption>c</caption><bbox>[1,2,3,4]</bbox><think>t</think><answer>a</answer>", 0.0, 0.0,
     "flat box"),
    ("<caption>c</caption><bbox>[[1,2,3,4]]</bbox>x<think>t</think><answer>a</answer>", 0.0, 0.0,
     "text between bbox and think"),
    ("<caption>c</caption><bbox>[[1,2,3,4]]</bbox><think>t<answer>a</answer>", 0.0, 0.0,
     "unclosed think"),
    ("", 0.0, 0.0, "empty completion"),
    ("<caption>c</caption><bbox>[[1]]</bbox><answer>x</answer>]]</bbox><think>t</think>"
     "<answer>a</answer>", 1.0, 1.0, "lazy .*? may span tags: a crafted text earns both"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "think", "plain", "why"), CASES)
def test_format_think(text: str, think: float, plain: float, why: str) -> None:
    assert format_think_reward([text]) == [think] == [oracle(text)], why
    assert format_reward([text]) == [plain] == RELEASED_FORMAT([text]), why
    matched = re.fullmatch(CAPTION_BBOX_THINK_ANSWER_PATTERN, text.strip(), re.DOTALL) is not None
    assert matched == (think == 1.0), why


# --- differential: generated responses -----------------------------------------------------------

SPACES = ["", "", " ", "\n", " \n  "]
SOUP = [
    "<caption>", "</caption>", "<bbox>", "</bbox>", "<think>", "</think>", "<answer>", "</answer>",
    "[[", "]]", "[", "]", "1,2,3,4", " ", "\n", "x", "dog",
]  # fmt: skip


def well_formed(rng: random.Random) -> str:
    """caption → bbox → think → answer, with whitespace between the blocks and multi-line text."""
    boxes = rng.choice(["[[1,2,3,4]]", "[[1, 2, 3, 4], [5, 6, 7, 8]]", " [[0,0,9,9]] "])
    think = rng.choice(["", "the dog\nis left", "look at [1, 2] first"])
    s = [rng.choice(SPACES) for _ in range(5)]
    tail = rng.choice(["", "", "\nmore"])
    return (
        f"{s[0]}<caption>a dog</caption>{s[1]}<bbox>{boxes}</bbox>{s[2]}<think>{think}</think>"
        f"{s[3]}<answer>dog</answer>{s[4]}{tail}"
    )


def edge_case(rng: random.Random) -> str:
    if rng.random() < 0.6:
        text = well_formed(rng)
        for _ in range(rng.randrange(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(SOUP) + text[at:]
        return text
    return "".join(rng.choice(SOUP) for _ in range(rng.randrange(14)))


@pytest.mark.parametrize("seed", range(100))
def test_well_formed_thinking_layout(seed: int) -> None:
    text = well_formed(random.Random(seed))
    assert format_think_reward([text]) == [1.0] == [oracle(text)], repr(text)
    assert PROMPTS["caption_bbox_think_answer"].is_well_formed(text), repr(text)
    # the released format rejects it: the two rewards are distinct
    assert format_reward([text]) == [0.0] == RELEASED_FORMAT([text]), repr(text)


@pytest.mark.parametrize("seed", range(300))
def test_edge_cases_match_the_oracle(seed: int) -> None:
    text = edge_case(random.Random(20_000 + seed))
    chat = [{"role": "assistant", "content": text}]
    assert format_think_reward([chat]) == [oracle(text)], repr(text)
    assert format_reward([chat]) == RELEASED_FORMAT([text]), repr(text)
    matched = PROMPTS["caption_bbox_think_answer"].is_well_formed(text)
    assert matched == (oracle(text) == 1.0), repr(text)


# --- the prompt ----------------------------------------------------------------------------------


def test_system_prompt_is_prompt_txt_plus_a_think_step() -> None:
    released_prompt = (REFERENCE / "released_satori_prompt.txt").read_text()
    step = prompt_texts.SATORI_THINK_STEP
    assert CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT.replace(f" {step}", "") == released_prompt
    assert f"</bbox>. {step} Finally, provide the final answer" in (
        CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT
    )
    assert "<think> </think>" in step  # the tag pair, written as prompt.txt writes its others
    fmt = PROMPTS["caption_bbox_think_answer"]
    assert fmt.system == CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT
    assert fmt.render_prompt("What is red?") == "What is red?"


def test_source_says_it_is_a_construction() -> None:
    source = PROMPTS["caption_bbox_think_answer"].source
    assert "vlrl's construction after SATORI-R1 paper v2 Fig. 3; not released" in source


def test_target_earns_format_think() -> None:
    fmt = PROMPTS["caption_bbox_think_answer"]
    target = fmt.render_target("it is red", "a", description="a red ball", boxes=[[1, 2, 3, 4]])
    assert target == (
        "<caption>a red ball</caption><bbox>[[1, 2, 3, 4]]</bbox><think>it is red</think>"
        "<answer>a</answer>"
    )
    assert format_think_reward([target]) == [1.0] == [oracle(target)]
    assert format_reward([target]) == [0.0]


def test_registered() -> None:
    assert REGISTRY["satori.format_think"] is REWARDS["satori.format_think"] is format_think_reward
