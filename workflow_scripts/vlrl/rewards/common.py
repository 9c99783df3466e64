"""Rewards shared by every recipe: the think/answer format and task-aware accuracy.

Columns read from the dataset (TRL passes every column as a keyword): ``answer``,
``problem_type``, ``boxes``, ``options``.
"""

from __future__ import annotations

from typing import Any

from vlrl.items.answers import answer_accuracy
from vlrl.items.prompts import PROMPTS


def completion_text(completion: Any) -> str:
    """The text of one completion, conversational (``[{"role", "content"}]``) or plain."""
    if isinstance(completion, str):
        return completion
    return "".join(
        part if isinstance(part, str) else part.get("text", "")
        for message in completion
        for part in (
            [message["content"]] if isinstance(message["content"], str) else message["content"]
        )
    )


def think_answer_format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """1.0 when the whole completion is ``<think>…</think><answer>…</answer>``, else 0.0.

    Reads no columns. Follows VLM-R1's generic format reward (full match, DOTALL).

    >>> think_answer_format_reward(["<think>x</think><answer>1</answer>", "<answer>1</answer>"])
    [1.0, 0.0]
    """
    fmt = PROMPTS["think_answer"]
    return [1.0 if fmt.is_well_formed(completion_text(c)) else 0.0 for c in completions]


def accuracy_reward(
    completions: list[Any],
    answer: list[str],
    problem_type: list[str],
    boxes: list | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Task-aware accuracy in [0, 1] (see :func:`answer_accuracy`).

    Reads columns ``answer``, ``problem_type`` and, for grounding, ``boxes`` (the first box is
    the target).

    >>> accuracy_reward(["<think/><answer>3</answer>", "<answer>4</answer>"], answer=["3", "3"],
    ...                 problem_type=["numerical", "numerical"])
    [1.0, 0.0]
    """
    boxes = boxes or [None] * len(completions)
    return [
        answer_accuracy(completion_text(c), a, t, (b[0] if b else None))
        for c, a, t, b in zip(completions, answer, problem_type, boxes, strict=True)
    ]


def answer_correct(
    response: str, answer: str, problem_type: str, box: list[float] | None = None
) -> float:
    """Binary correctness, the benchmark's own rule: IoU >= 0.5 for grounding, an exact
    normalised match for free-form text, :func:`answer_accuracy` (already 0/1) otherwise.

    >>> answer_correct("<answer>[0, 0, 10, 8]</answer>", "", "grounding", [0, 0, 10, 10])
    1.0
    >>> answer_correct("<answer>a red circle</answer>", "a red circle and more", "free_form")
    0.0
    """
    score = answer_accuracy(response, answer, problem_type, box)
    if problem_type == "grounding":
        return float(score >= IOU_THRESHOLD)
    if problem_type in {"free_form", "ocr"}:
        return float(score == 1.0)
    return score


IOU_THRESHOLD = 0.5


def correct_reward(
    completions: list[Any],
    answer: list[str],
    problem_type: list[str],
    boxes: list | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """1.0 when the answer is right by the benchmark's rule (see :func:`answer_correct`), else 0.0.

    Reads columns ``answer``, ``problem_type`` and, for grounding, ``boxes``.

    >>> correct_reward(["<answer>[0, 0, 10, 6]</answer>"], answer=[""], problem_type=["grounding"],
    ...                boxes=[[[0, 0, 10, 10]]])
    [1.0]
    """
    boxes = boxes or [None] * len(completions)
    return [
        answer_correct(completion_text(c), a, t, (b[0] if b else None))
        for c, a, t, b in zip(completions, answer, problem_type, boxes, strict=True)
    ]


REWARDS = {
    "common.format": think_answer_format_reward,
    "common.accuracy": accuracy_reward,
    "common.correct": correct_reward,
}
"""The family's rewards, by registry name (:mod:`vlrl.rewards` finds them here)."""
