r"""Rewards of the Vision-SR1 recipe: see → think → ``\boxed{}``, with a visual self-reward.

Follows the released code (zli12321/Vision-SR1 @ 4480e08:
``train_examples/reward_function/see_think_selfReward.py`` and ``verl/trainer/ray_trainer.py``).

A response is ``<description>…</description><think>…</think>\boxed{…}``; there is no ``<answer>``
tag. The prompt format ``see_think_boxed`` and its texts (``SEE_THINK_SUFFIX``,
``SEE_THINK_TEMPLATE``, ``SEE_THINK_PATTERN``, re-exported here) are declared in
:mod:`vlrl.items.prompts`. Every training step runs a second, image-free pass of the same policy on
a prompt built from the first response's description (:func:`extract_description`,
:func:`self_reward_prompt`). The texts it generates reach the rewards in the column
**``self_reward_responses``** (list[str | None], aligned with ``completions``), filled by the
``self_reward`` algorithm.

Columns read: ``answer`` (ground truth, graded by mathruler) and ``self_reward_responses``.

Deviations from the released code (tested against verbatim copies in
``tests/rewards/test_vision_sr1_released.py``): without the ``self_reward_responses`` column
``visual`` is None and ``total`` raises (the released reward manager passes ``""``, scored 0, or 1
when the answer is "None"); a None entry there is None (released: 0 through its ``try``); a
ground truth that is not a string is graded as ``str(answer)`` (released: AttributeError in
mathruler); chat-message completions are scored on their text.

Weights (the released ``compute_score``): overall = 0.9·acc + 0.1·fmt + 1.0·vis,
range [0, 2]. In TRL the same advantage comes from rewards ``[vision_sr1.accuracy,
vision_sr1.format, vision_sr1.visual]`` with ``reward_weights: [0.9, 0.1, 1.0]`` and the default
``multi_objective_aggregation: sum_then_normalize`` (each part is then logged);
``vision_sr1.total`` is the same sum as one function.

Paper variant (arXiv:2508.19652v2, branch ``embedding-decomposition``): acc and vis are separate
channels, each GRPO-normalised per group, weights [1.0, 1.0], format dropped. That is not a scalar
reward, so there is no ``total_paper`` function: the nearest TRL setting is rewards
``[vision_sr1.accuracy, vision_sr1.visual]``, ``reward_weights: [1.0, 1.0]``,
``multi_objective_aggregation: normalize_then_sum`` (see :data:`PAPER_V2_TRL`).

The "regular Vision-R1" baseline (``train_examples/1-*_visionR1_train.sh`` → ``cot_config.yaml``:
``format_prompt/cot_format.jinja``, ``reward_function/cot_val.py:compute_score``) answers
think → ``\boxed{}`` (prompt format ``think_boxed``, declared in :mod:`vlrl.items.prompts`) and has
no self-reward: ``cot_val.py``'s overall = 0.9·acc + 0.1·fmt, in TRL rewards
``{vision_sr1.accuracy: 0.9, vision_sr1.format_cot: 0.1}`` (:data:`COT_WEIGHTS`). Its accuracy is
``vision_sr1.accuracy`` (``cot_val.py``'s ``accuracy_reward`` is the same function, also applied
after the whitespace normalisation).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from vlrl.items.prompt_texts import SEE_THINK_PATTERN as SEE_THINK_PATTERN
from vlrl.items.prompt_texts import SEE_THINK_SUFFIX as SEE_THINK_SUFFIX
from vlrl.items.prompt_texts import SEE_THINK_TEMPLATE as SEE_THINK_TEMPLATE
from vlrl.items.prompt_texts import THINK_BOXED_PATTERN as THINK_BOXED_PATTERN
from vlrl.items.prompt_texts import THINK_BOXED_SUFFIX as THINK_BOXED_SUFFIX
from vlrl.items.prompt_texts import THINK_BOXED_TEMPLATE as THINK_BOXED_TEMPLATE
from vlrl.rewards.common import completion_text

logger = logging.getLogger(__name__)

SELF_REWARD_COLUMN = "self_reward_responses"
"""Column holding the second-pass (image-free) response for each completion."""

_SEE_THINK = re.compile(SEE_THINK_PATTERN, re.DOTALL)
_THINK_BOXED = re.compile(THINK_BOXED_PATTERN, re.DOTALL)
_TAG_SPACE = re.compile(r"\s*(<|>|/)\s*")
_DESCRIPTION = re.compile(r"<description>([\s\S]*?)</description>", re.DOTALL)

# ``ABS_Verify_Prompt`` of verl/trainer/ray_trainer.py (real newlines, one backslash).
ABS_VERIFY_PROMPT = (
    "Text description: {Description}\nQuestion: {Question}\nYou are provided a text description "
    "of a problem and a question. Determine the answer to the question based on the text "
    "description. First provide an internal step-by-step reasoning within <think> </think> tags, "
    "then provide a single word or phrase answer in \\boxed{}."
)

PAPER_V2_TRL = {
    "rewards": ["vision_sr1.accuracy", "vision_sr1.visual"],
    "reward_weights": [1.0, 1.0],
    "multi_objective_aggregation": "normalize_then_sum",
}
"""Paper v2's decoupled loss, approximated in TRL (GDPO-style per-reward normalisation)."""

WEIGHTS = {"accuracy": 0.9, "format": 0.1, "visual": 1.0}
"""Released: ``(1 - format_weight)·acc + format_weight·fmt + vis`` with format_weight = 0.1."""

COT_WEIGHTS = {"vision_sr1.accuracy": 0.9, "vision_sr1.format_cot": 0.1}
"""``cot_val.py`` ``compute_score``: ``(1 - format_weight)·acc + format_weight·fmt``, 0.1."""


@functools.cache
def _mathruler():
    # Imported on first use; mathruler needs pylatexenc at import time.
    from mathruler.grader import extract_boxed_content, grade_answer

    return extract_boxed_content, grade_answer


def normalize_tag_whitespace(text: str) -> str:
    """Delete whitespace around ``<``, ``>`` and ``/`` (the released Qwen2.5-VL-32B fix).

    >>> normalize_tag_whitespace("< think > a / b </think>")
    '<think>a/b</think>'
    """
    return _TAG_SPACE.sub(r"\1", text)


def see_think_format(text: str) -> float:
    r"""1.0 when ``text`` full-matches :data:`SEE_THINK_PATTERN` (``format_reward``), else 0.0.

    No whitespace normalisation here; :func:`format_reward` applies it first.

    >>> see_think_format(r"<description>d</description><think>t</think>\boxed{2}")
    1.0
    """
    return 1.0 if _SEE_THINK.fullmatch(text) else 0.0


def think_boxed_format(text: str) -> float:
    r"""1.0 when ``text`` full-matches :data:`THINK_BOXED_PATTERN` (``cot_val.py``
    ``format_reward``), else 0.0. No whitespace normalisation here; :func:`format_cot_reward`
    applies it first.

    >>> think_boxed_format(r"<think>t</think> \boxed{2}")
    1.0
    >>> think_boxed_format(r" <think>t</think>\boxed{2}")  # no ``^\s*``, unlike ``format``
    0.0
    """
    return 1.0 if _THINK_BOXED.fullmatch(text) else 0.0


def boxed_accuracy(text: str, answer: str) -> float:
    r"""mathruler's ``grade_answer`` on the last ``\boxed{}`` of ``text``.

    Without a box mathruler extracts the string ``"None"``.

    >>> boxed_accuracy(r"\boxed{1} then \boxed{2}", "2")
    1.0
    """
    extract_boxed_content, grade_answer = _mathruler()
    return 1.0 if grade_answer(extract_boxed_content(text), answer) else 0.0


def extract_description(text: str) -> str:
    """The first ``<description>`` block, stripped; the whole text when there is none, as released.

    The ``self_reward`` algorithm uses it to build the second-pass prompt.

    >>> extract_description("<description> two red cubes </description><think>…")
    'two red cubes'
    >>> extract_description("no tags")
    'no tags'
    """
    match = _DESCRIPTION.search(text)
    return match.group(1).strip() if match else text


def self_reward_prompt(description: str, question: str) -> str:
    """The second-pass user message: ``ABS_Verify_Prompt`` filled by ``replace``.

    ``question`` is the raw problem text; ``<image>`` is removed from it. Sent as the only user
    message, with no image.

    >>> self_reward_prompt("a cat", "<image>What animal?").splitlines()[:2]
    ['Text description: a cat', 'Question: What animal?']
    """
    return ABS_VERIFY_PROMPT.replace("{Description}", description).replace(
        "{Question}", question.replace("<image>", "")
    )


def format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    r"""``vision_sr1.format`` (``format_reward``): description → think → ``\boxed{}``, 1.0 or 0.0.

    Whitespace around ``<``, ``>``, ``/`` is deleted first. Reads no columns.

    >>> format_reward([r"<description>d</description> <think>t</think> \boxed{2}",
    ...                r"<think>t</think>\boxed{2}"])
    [1.0, 0.0]
    """
    return [see_think_format(normalize_tag_whitespace(completion_text(c))) for c in completions]


def format_cot_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    r"""``vision_sr1.format_cot`` (``cot_val.py`` ``format_reward``, the regular Vision-R1
    baseline): think → ``\boxed{}``, 1.0 or 0.0. Whitespace around ``<``, ``>``, ``/`` is deleted
    first, as ``cot_val.py``'s ``compute_score`` does; after that nothing may precede ``<think>``
    or follow the box but whitespace. Reads no columns.

    >>> format_cot_reward([r" <think>t</think>  \boxed{2} ", r"<think>t</think>\boxed{2} done",
    ...                    r"<description>d</description><think>t</think>\boxed{2}"])
    [1.0, 0.0, 0.0]
    """
    return [think_boxed_format(normalize_tag_whitespace(completion_text(c))) for c in completions]


def accuracy_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    r"""``vision_sr1.accuracy``: last ``\boxed{}`` graded by mathruler, 1.0 or 0.0.

    Whitespace around ``<``, ``>``, ``/`` is deleted first. Reads ``answer``.

    >>> accuracy_reward([r"<think>t</think>\boxed{ 3 }", r"\boxed{4}"], answer=["3", "3"])
    [1.0, 0.0]
    """
    return [
        boxed_accuracy(normalize_tag_whitespace(completion_text(c)), str(a))
        for c, a in zip(completions, answer, strict=True)
    ]


def visual_reward(
    completions: list[Any],
    answer: list[str],
    self_reward_responses: list[str | None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    r"""``vision_sr1.visual``: accuracy of the image-free second-pass answer.

    Reads ``answer`` and ``self_reward_responses`` (the second-pass text for each completion,
    answered from the completion's own description). The second-pass text is graded as released:
    last ``\boxed{}``, no whitespace normalisation, 0.0 when grading raises. Without the column
    every value is None ("not applicable"); a None entry gives None for that completion.

    >>> visual_reward(["…", "…"], answer=["3", "3"],
    ...               self_reward_responses=[r"<think>t</think>\boxed{3}", "no box"])
    [1.0, 0.0]
    >>> visual_reward(["…"], answer=["3"])
    [None]
    """
    if self_reward_responses is None:
        return [None] * len(completions)
    _mathruler()  # a missing dependency must raise, not be scored 0 below
    scores: list[float | None] = []
    for second, gold in zip(self_reward_responses, answer, strict=True):
        if second is None:
            scores.append(None)
            continue
        try:
            scores.append(boxed_accuracy(str(second), str(gold)))
        except Exception as exc:  # the released code scores 0 on any error
            logger.warning("vision_sr1.visual: grading failed (%s); scored 0", exc)
            scores.append(0.0)
    if len(scores) != len(completions):
        raise ValueError(
            f"{SELF_REWARD_COLUMN} has {len(scores)} entries for {len(completions)} completions"
        )
    return scores


def total_reward(
    completions: list[Any],
    answer: list[str],
    self_reward_responses: list[str | None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    r"""``vision_sr1.total`` (released ``compute_score``): 0.9·acc + 0.1·fmt + 1.0·vis, in [0, 2].

    Reads ``answer`` and ``self_reward_responses``; raises ValueError when that column is absent
    (the sum is undefined without the second pass; use ``vision_sr1.accuracy`` for evaluation).

    >>> total_reward([r"<description>d</description><think>t</think>\boxed{3}"], answer=["3"],
    ...              self_reward_responses=[r"\boxed{3}"])
    [2.0]
    """
    if self_reward_responses is None:
        raise ValueError(
            f"vision_sr1.total needs the column {SELF_REWARD_COLUMN!r} (filled by the "
            "self_reward algorithm); it is absent"
        )
    acc = accuracy_reward(completions, answer)
    fmt = format_reward(completions)
    vis = visual_reward(completions, answer, self_reward_responses)
    w = WEIGHTS
    return [
        None if v is None else w["accuracy"] * a + w["format"] * f + w["visual"] * v
        for a, f, v in zip(acc, fmt, vis, strict=True)
    ]


REWARDS = {
    "vision_sr1.format": format_reward,
    "vision_sr1.format_cot": format_cot_reward,
    "vision_sr1.accuracy": accuracy_reward,
    "vision_sr1.visual": visual_reward,
    "vision_sr1.total": total_reward,
}
