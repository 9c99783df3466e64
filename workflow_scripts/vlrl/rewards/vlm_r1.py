"""Rewards of the VLM-R1 recipe: the released code of om-ai-lab/VLM-R1 @ 90052f4, in
``src/open-r1-multimodal/src/open_r1/`` (``grpo_jsonl.py``, ``vlm_modules/qwen_module.py``).
Where the paper (arXiv:2504.07615) and the code differ, the code is the default and the paper is a
named variant (``vlm_r1.cosine_intended``, ``vlm_r1.rec_iou_binary`` for the pre-``5faf4b1`` one).

Every reward has TRL's signature ``fn(completions, **columns) -> list[float | None]``; a
completion is a string or ``[{"role": "assistant", "content": str}]``. VLM-R1's solution string
is ``"<answer> {answer} </answer>"`` built from our ``answer`` column. A ground truth the
reward cannot read raises ValueError naming the reward and the row.

Prompt formats (declared in :mod:`vlrl.items.prompts`): ``think_answer`` (default template,
``vlm_r1.format``), ``rec_json`` (``vlm_r1.rec_format``), ``od_json`` (odLength "enhanced
prompt", ``vlm_r1.format``; :data:`PROMPT_FORMATS` holds these two) and ``rec_baseline`` (the REC
SFT baseline, the JSON box alone; ``vlm_r1.rec_baseline_format``).
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from Levenshtein import ratio

from vlrl.items.prompt_texts import REC_JSON_PATTERN as REC_FORMAT_PATTERN
from vlrl.items.prompt_texts import THINK_ANSWER_PATTERN as FORMAT_PATTERN
from vlrl.items.prompts import PROMPTS, PromptFormat
from vlrl.rewards import _vlm_r1_grading
from vlrl.rewards._detection import od_map_score, repetition_score, weighted_sum_score
from vlrl.rewards._math_verify import math_verify_equal as math_verify_equal
from vlrl.rewards._rec import (
    ANSWER,
    GroundTruthError,
    clean_text,
    input_and_original_size,
    rec_ground_truth,
    rec_iou,
)
from vlrl.rewards._vlm_r1_grading import extract_choice as extract_choice
from vlrl.rewards.common import completion_text

log = logging.getLogger(__name__)

_GT_ANSWER = re.compile(r"<answer>(.*?)</answer>")  # no DOTALL, as in default_accuracy_reward
PROMPT_FORMATS: dict[str, PromptFormat] = {name: PROMPTS[name] for name in ("rec_json", "od_json")}


def _texts(completions: list[Any]) -> Iterator[tuple[int, str]]:
    return enumerate(completion_text(c) for c in completions)


def _solution(answer: str) -> str:
    """VLM-R1's solution string (``grpo_jsonl.py``): answer tags stripped, then re-wrapped."""
    return f"<answer> {answer.replace('<answer>', '').replace('</answer>', '').strip()} </answer>"


def _row_error(name: str, row: int, exc: Exception) -> ValueError:
    return ValueError(f"{name}: row {row}: {exc}")


# --- formats (format_reward, format_reward_rec) --------------------------------------------------


def format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """VLM-R1 generic ``format_reward``: 1.0 iff the *whole* completion full-matches (DOTALL)
    ``<think>.*?</think>\\s*<answer>.*?</answer>`` (nothing before or after, not even
    whitespace), else 0.0. Reads no columns.

    >>> format_reward(["<think>a</think> <answer>1</answer>", "<think></think><answer>1</answer>!"])
    [1.0, 0.0]
    """
    return [float(bool(re.fullmatch(FORMAT_PATTERN, t, re.DOTALL))) for _, t in _texts(completions)]


def rec_format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """VLM-R1 REC format (``qwen_module.format_reward_rec``): 1.0 iff ``re.search`` (DOTALL) finds
    think then an answer holding a JSON-ish ``{...[int, int, int, int]...}``. Reads no columns.

    >>> rec_format_reward(['<think>a</think><answer>{"bbox_2d": [1, 2, 3, 4]}</answer>',
    ...                    '<think>a</think><answer>[1, 2, 3, 4]</answer>'])
    [1.0, 0.0]
    """
    return [
        float(bool(re.search(REC_FORMAT_PATTERN, t, re.DOTALL))) for _, t in _texts(completions)
    ]


def rec_baseline_format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """vlrl's check of ``rec_baseline`` (VLM-R1's REC SFT baseline has no format reward): 1.0 iff
    the stripped completion full-matches its pattern, a JSON object holding ``[x1, y1, x2, y2]``.

    >>> rec_baseline_format_reward(['{"bbox_2d": [1, 2, 3, 4]}', "<answer>[1, 2, 3, 4]</answer>"])
    [1.0, 0.0]
    """
    fmt = PROMPTS["rec_baseline"]
    return [float(fmt.is_well_formed(t)) for _, t in _texts(completions)]


# --- REC IoU (qwen_module.py iou_reward) ---------------------------------------------------------


def _rec_ious(name: str, completions: list[Any], kwargs: dict[str, Any]) -> list[float]:
    answer, boxes = kwargs.get("answer"), kwargs.get("boxes")
    rewards = []
    for row, text in _texts(completions):
        try:
            gt = rec_ground_truth(row, answer, boxes)
        except ValueError as exc:
            raise _row_error(name, row, exc) from None
        rewards.append(rec_iou(text, gt, input_and_original_size(row, kwargs)))
    return rewards


def rec_iou_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """VLM-R1 REC accuracy (``qwen_module.iou_reward``): continuous IoU in [0, 1].

    Prediction: the first ``[int, int, int, int]`` (no floats, no signs) inside the *first*
    ``<answer>``. Ground truth: column ``boxes`` (first box, xyxy original pixels) when the row
    has one, else column ``answer`` as a JSON box (``[x1, y1, x2, y2]`` or ``{"bbox_2d": ...}``).
    Post-resize (commit ``00755a2``): the predicted box is scaled from the model-input frame to
    the original image as ``resize_bbox`` does it, ``x / input_width * image_width`` (divide
    first: :func:`vlrl.rewards._detection.rec_iou`). The input frame is the ``image_grid_thw``
    kwarg row (``[t, h, w]`` ×14; the VLM-R1 trainer passes it, TRL 1.16 does not) or else
    column ``input_size`` (``[width, height]``); the original size is column ``image_sizes``
    (first ``[width, height]``) or else the first PIL image of column ``images``. Without both,
    no rescaling (the pre-``00755a2`` behaviour). IoU: :func:`vlrl.rewards._detection.iou` (±1
    px extents).

    >>> rec_iou_reward(["<answer>{'bbox_2d': [0, 0, 10, 10]}</answer>",
    ...                 "<answer>[0.0, 0.0, 10.0, 10.0]</answer>"], boxes=[[[0, 0, 10, 10]]] * 2)
    [1.0, 0.0]
    """
    return _rec_ious("vlm_r1.rec_iou", completions, kwargs)


def rec_iou_binary_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """The REC accuracy before commit ``5faf4b1`` (the Feb-2025 500-step
    checkpoint): 1.0 iff :func:`rec_iou_reward`'s IoU > 0.5. Same columns. (That code had no
    resize yet: give no input frame to reproduce it exactly.)

    >>> rec_iou_binary_reward(["<answer>[0, 0, 10, 10]</answer>"], answer=["[0, 0, 10, 16]"])
    [1.0]
    """
    return [float(v > 0.5) for v in _rec_ious("vlm_r1.rec_iou_binary", completions, kwargs)]


# --- math / general accuracy (grpo_jsonl.py) ----------------------------------------------------


def default_accuracy(content: str, answer: str) -> float:
    """VLM-R1's ``default_accuracy_reward`` for one completion, in [0, 1]."""
    sol = _solution(answer)
    found = _GT_ANSWER.search(sol)
    truth = found.group(1).strip() if found else sol.strip()
    preds = ANSWER.findall(content)
    pred = preds[-1].strip() if preds else content.strip()
    if math_verify_equal(pred, truth):
        return 1.0
    if re.search(r"\d", truth):
        try:
            return float(float(clean_text(pred)) == float(clean_text(truth)))
        except ValueError:
            return ratio(clean_text(pred), clean_text(truth))
    choice = extract_choice(truth)
    if choice:
        picked = extract_choice(pred)
        return float(picked == choice.upper()) if picked else 0.0
    return ratio(clean_text(pred), clean_text(truth))


def accuracy_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    """VLM-R1 ``default_accuracy_reward``: the last ``<answer>`` (else the whole text)
    against column ``answer``: Math-Verify (:func:`math_verify_equal`) → 1; else, if the answer
    has a digit, float equality of the ``clean_text`` strings (not floats → Levenshtein ratio);
    elif the answer is a choice letter, letter equality; else the Levenshtein ratio.

    >>> accuracy_reward(["<answer> 0.5 </answer>", "<answer>B.</answer>", "<answer>cat</answer>"],
    ...                 answer=["\\\\frac{1}{2}", "B", "cats"])
    [1.0, 1.0, 0.8571428571428572]
    """
    return [default_accuracy(t, a) for (_, t), a in zip(_texts(completions), answer, strict=True)]


def math_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    r"""VLM-R1 ``math_reward`` (``accu_reward_method == "math"``): ``utils/math.py``
    ``compute_score`` (:func:`vlrl.rewards._vlm_r1_grading.compute_score`: exact match,
    Math-Verify by :func:`math_verify_equal`, then the last ``\boxed{}``'s Hendrycks ``is_equiv``)
    of the ``clean_text`` of the completion (last ``<answer>``, lower-cased) and of the solution
    string built from column ``answer``; 1.0 or 0.0. Deviation: where Math-Verify raises (the
    released reward then raises), the ``\boxed{}`` step still runs.

    >>> math_reward([r"<answer>\boxed{0.5}</answer>", "<answer>3</answer>"], answer=["1/2", "4"])
    [1.0, 0.0]
    """
    return [
        _vlm_r1_grading.compute_score(clean_text(t), clean_text(_solution(a)), math_verify_equal)
        for (_, t), a in zip(_texts(completions), answer, strict=True)
    ]


# --- open-vocabulary detection (grpo_jsonl.py) --------------------------------------------------


def _od(name: str, completions: list[Any], answer: list[str], score: Callable) -> list[float]:
    rewards = []
    for (row, text), gt in zip(_texts(completions), answer, strict=True):
        try:
            rewards.append(score(text, _solution(gt)))
        except GroundTruthError as exc:
            raise _row_error(name, row, exc) from None
    return rewards


def odlength_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    """VLM-R1 ``odLength`` (paper §4.3, eq. 7-8): COCO AP@[.5:.95] × ``min(1, n_gt / n_pred)``,
    so hallucinated extra boxes, free under ``vlm_r1.ap``, cost through the length factor.

    Column ``answer``: a ```` ```json [{"bbox_2d": [x1, y1, x2, y2], "label": str}, ...]``` ````
    list or ``None``. Prediction: the last ``<answer>`` (none → 0); both exactly ``None`` → 1;
    else :func:`vlrl.rewards._detection.map_score` (last ```` ```json ```` blocks, both empty →
    1, one empty → 0, pycocotools on one fake 2048×2048 image). In [0, 1].

    >>> cat = '{"bbox_2d": [0, 0, 10, 10], "label": "cat"}'
    >>> dog = '{"bbox_2d": [50, 50, 60, 60], "label": "dog"}'
    >>> odlength_reward([f"<answer>```json [{cat}, {dog}]```</answer>", "<answer>None</answer>"],
    ...                 answer=[f"```json [{cat}]```", "None"])  # pycocotools: AP 1 - 2e-16
    [0.4999999999999999, 1.0]
    """
    return _od(
        "vlm_r1.odlength",
        completions,
        answer,
        functools.partial(od_map_score, stat=0, length_factor=True),
    )


def ap_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    """VLM-R1 ``od_ap``: COCO AP@[.5:.95] (``stats[0]``); the column, the answer
    extraction and the edge cases are those of :func:`odlength_reward`, without the length
    factor (predicted labels absent from the ground truth are dropped: they cost nothing)."""
    return _od("vlm_r1.ap", completions, answer, functools.partial(od_map_score, stat=0))


def ap50_reward(completions: list[Any], answer: list[str], **kwargs: Any) -> list[float | None]:
    """VLM-R1 ``od_ap50``: COCO AP at IoU 0.5 (``stats[1]``); otherwise as
    :func:`ap_reward`."""
    return _od("vlm_r1.ap50", completions, answer, functools.partial(od_map_score, stat=1))


def weighted_sum_reward(
    completions: list[Any], answer: list[str], **kwargs: Any
) -> list[float | None]:
    """VLM-R1 ``weighted_sum``: ``detection_score(iou_thr=0.5, alpha=0.7, beta=0,
    gamma=0.3)`` of the cleaned last answer against column ``answer`` (first ```` ```json ````
    block; ``none`` → 1 iff the prediction is ``none``). In [0, 1].

    >>> box = '```json [{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]```'
    >>> weighted_sum_reward([f"<answer>{box}</answer>", "<answer>none.</answer>"],
    ...                     answer=[box, "None"])
    [1.0, 1.0]
    """
    return _od("vlm_r1.weighted_sum", completions, answer, weighted_sum_score)


def repetition_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """VLM-R1 ``repetition_rewards``: in [-1, 0], see
    :func:`vlrl.rewards._detection.repetition_score` (box 1-grams when a JSON box list parses,
    else word 6-grams of the whole completion). Reads no columns.

    >>> item = '{"bbox_2d": [1, 2, 3, 4], "label": "a"}'
    >>> repetition_reward([f"```json [{item}, {item}]```", "no repeated words here"])
    [-0.5, 0.0]
    """
    return [repetition_score(t) for _, t in _texts(completions)]


# --- cosine length reward (grpo_jsonl.py cosine_rewards) ----------------------------------------


def cosine_value(length: int, correct: bool, max_len: int = 1024) -> float:
    """``vmax - (vmax - vmin) * (1 - cos(pi * L / max_len)) / 2``: correct (1.0 → 0.5) or wrong
    (-0.5 → 0.0) over ``L`` in [0, max_len], periodic beyond.

    >>> cosine_value(0, True), cosine_value(1024, True), cosine_value(0, False)
    (1.0, 0.5, -0.5)
    """
    vmax, vmin = (1.0, 0.5) if correct else (-0.5, 0.0)
    return vmax - (vmax - vmin) * (1 - math.cos(math.pi * length / max_len)) / 2


def _lengths(completions: list[Any], completion_ids: list | None) -> list[int]:
    if completion_ids is not None:
        return [len(ids) for ids in completion_ids]
    return [len(completion_text(c).split()) for c in completions]


def cosine_reward(
    completions: list[Any], completion_ids: list | None = None, **kwargs: Any
) -> list[float | None]:
    """VLM-R1 ``cosine_rewards`` as released: the accuracy is overwritten with 1.0, so
    always the "correct" curve, 1.0 at L=0 → 0.5 at L=1024, periodic beyond.

    ``L`` is the number of tokens of the whole completion: the ``completion_ids`` kwarg (TRL
    passes it; it includes the EOS token, so it is one more than VLM-R1's
    ``len(tokenizer.encode(text))`` for a finished completion), else whitespace-separated words.
    Reads no columns.

    >>> cosine_reward(["a", "b"], completion_ids=[[], [0] * 512])
    [1.0, 0.75]
    """
    return [cosine_value(n, True) for n in _lengths(completions, completion_ids)]


def cosine_intended_reward(
    completions: list[Any], answer: list[str], completion_ids: list | None = None, **kwargs: Any
) -> list[float | None]:
    """The paper's / intended cosine reward (after arXiv:2502.03373): the curve is chosen by the
    ``weighted_sum`` detection score ≥ 0.7 (correct: 1.0 → 0.5; else -0.5 → 0.0). Columns:
    ``answer`` (detection ground truth); ``L`` as in :func:`cosine_reward`.

    >>> box = '```json [{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]```'
    >>> cosine_intended_reward([f"<answer>{box}</answer>", "<answer>no</answer>"], answer=[box] * 2,
    ...                        completion_ids=[[], []])
    [1.0, -0.5]
    """
    accs = weighted_sum_reward(completions, answer)
    lengths = _lengths(completions, completion_ids)
    return [cosine_value(n, acc >= 0.7) for n, acc in zip(lengths, accs, strict=True)]


REWARDS: dict[str, Callable[..., list[float | None]]] = {
    "vlm_r1.format": format_reward,
    "vlm_r1.rec_format": rec_format_reward,
    "vlm_r1.rec_baseline_format": rec_baseline_format_reward,
    "vlm_r1.rec_iou": rec_iou_reward,
    "vlm_r1.rec_iou_binary": rec_iou_binary_reward,
    "vlm_r1.accuracy": accuracy_reward,
    "vlm_r1.math": math_reward,
    "vlm_r1.odlength": odlength_reward,
    "vlm_r1.ap": ap_reward,
    "vlm_r1.ap50": ap50_reward,
    "vlm_r1.weighted_sum": weighted_sum_reward,
    "vlm_r1.repetition": repetition_reward,
    "vlm_r1.cosine": cosine_reward,
    "vlm_r1.cosine_intended": cosine_intended_reward,
}
