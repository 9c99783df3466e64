"""Rewards shared by every recipe: the think/answer format and task-aware accuracy.

Columns read from the dataset (TRL passes every column as a keyword): ``answer``,
``problem_type``, ``boxes``, ``options``.
"""

from __future__ import annotations

import functools
from typing import Any

from vlrl.answers import (
    box_iou,
    extract_answer,
    normalize_text,
    parse_box,
    parse_letter,
    parse_number,
)
from vlrl.prompts import PROMPTS


@functools.cache
def _rouge():
    # Built on first use: importing rouge_score configures absl's root logging.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


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


def answer_accuracy(
    response: str, answer: str, problem_type: str, box: list[float] | None = None
) -> float:
    """Continuous accuracy of one response's ``<answer>`` against the reference.

    multiple_choice / yes_no: exact letter or word; numerical: equal numbers; grounding: IoU of the
    first box with the reference box; free_form / ocr: ROUGE-L F1 of the normalised texts.

    >>> answer_accuracy("<answer>B</answer>", "B", "multiple_choice")
    1.0
    >>> answer_accuracy("<answer>[0, 0, 10, 10]</answer>", "", "grounding", [0, 0, 10, 10])
    1.0
    """
    extracted = extract_answer(response)
    if extracted is None:
        return 0.0
    if problem_type == "multiple_choice":
        return float(parse_letter(extracted) == parse_letter(answer))
    if problem_type == "yes_no":
        return float(normalize_text(extracted) == normalize_text(answer))
    if problem_type == "numerical":
        pred, gold = parse_number(extracted), parse_number(answer)
        return float(pred is not None and gold is not None and abs(pred - gold) < 1e-6)
    if problem_type == "grounding":
        pred_box = parse_box(extracted)
        gold_box = box if box is not None else parse_box(answer)
        return box_iou(pred_box, gold_box) if pred_box and gold_box else 0.0
    if problem_type in {"free_form", "ocr"}:
        if not normalize_text(extracted):
            return 0.0
        return _rouge().score(normalize_text(answer), normalize_text(extracted))["rougeL"].fmeasure
    raise ValueError(f"no accuracy rule for problem_type {problem_type!r}")


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
