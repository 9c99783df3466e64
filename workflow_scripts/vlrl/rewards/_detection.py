"""Detection helpers of the VLM-R1 rewards (odLength, AP, weighted sum, repetition): boxes read
from a response and from the ground truth, COCO mAP through pycocotools.

Everything here follows the released code of om-ai-lab/VLM-R1 (``grpo_jsonl.py`` and
``vlm_modules/qwen_module.py``) at commit 90052f4, quirks included; deviations are
named where they occur. The REC helpers they share (the answer's text, IoU) are in
:mod:`vlrl.rewards._rec`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
from typing import Any

from vlrl.items.boxes import coco_precision, greedy_pairs
from vlrl.rewards._rec import ANSWER, GroundTruthError, clean_text, iou

_JSON_FENCE = re.compile(r"```json(.*?)```", re.DOTALL)
_ANY_FENCE = re.compile(r"```(.*?)```", re.DOTALL)
_BOX_ARRAY = re.compile(r'\[\s*{.*?"bbox_2d".*?"label".*?}\s*\]', re.DOTALL)


def _as_list(data: Any) -> list:
    # The released code writes ``[item for item in data]``: a dict yields its keys.
    return list(data)


def pred_boxes(text: str, block: int) -> list:
    """The predicted box list in ``text``'s ``block``-th (0 first, -1 last) ```` ```json ````
    fence; ``[]`` when there is none or it does not parse as a JSON iterable.

    Any parse failure gives ``[]``, as the bare ``except:`` around ``json.loads`` in the released
    ``grpo_jsonl.py`` (``map_reward``, ``detection_score``) does: besides malformed JSON, that
    includes RecursionError (nesting deeper than the recursion limit, ``[[[[…``) and ValueError
    (integers of over 4300 digits).

    >>> pred_boxes("```json " + "[" * 10000 + "```", 0)
    []
    """
    blocks = _JSON_FENCE.findall(text)
    if not blocks:
        return []
    try:
        return _as_list(json.loads(blocks[block].strip()))
    except Exception:  # the released bare ``except:``
        return []


def gt_boxes(text: str, block: int) -> list:
    """The ground-truth box list in ``text``'s ``block``-th ```` ```json ```` fence.

    Deviation (data only): a ground truth with no fence that is itself a JSON list of objects
    is read as that list (the released code would read ``[]``); any other unfenced text
    (``None``) is ``[]``. A fence that does not parse raises GroundTruthError (the released code
    raises too).
    """
    blocks = _JSON_FENCE.findall(text)
    if not blocks:
        with contextlib.suppress(ValueError):
            data = json.loads(text)
            if isinstance(data, list) and all(isinstance(item, dict) for item in data):
                return data
        return []
    try:
        return _as_list(json.loads(blocks[block].strip()))
    except (ValueError, TypeError) as exc:
        raise GroundTruthError(f"ground-truth ```json block is not a JSON list: {exc}") from None


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond float range
        return False


def _xywh(box: list) -> tuple[list, Any]:
    x1, y1, x2, y2 = box[0], box[1], box[2], box[3]
    return [x1, y1, x2 - x1, y2 - y1], (x2 - x1) * (y2 - y1)


@functools.lru_cache(maxsize=4096)
def _coco_stats(pred_key: str, gt_key: str) -> tuple[float, float]:
    """(AP@[.5:.95], AP50) of one prediction list against one ground-truth list (JSON keys)."""
    import numpy as np

    preds, gts = json.loads(pred_key), json.loads(gt_key)
    dataset: dict[str, list] = {
        "images": [{"id": 0, "width": 2048, "height": 2048, "file_name": "image_0.jpg"}],
        "categories": [],
        "annotations": [],
    }
    cat_ids: dict[Any, int] = {}
    try:
        for idx, gt in enumerate(gts):
            if gt["label"] not in cat_ids:
                cat_ids[gt["label"]] = len(cat_ids)
                dataset["categories"].append({"id": cat_ids[gt["label"]], "name": gt["label"]})
            bbox, area = _xywh(gt["bbox_2d"])
            dataset["annotations"].append(
                {"id": idx + 1, "image_id": 0, "category_id": cat_ids[gt["label"]],
                 "bbox": bbox, "area": area, "iscrowd": 0}
            )  # fmt: skip
    except (KeyError, IndexError, TypeError) as exc:
        raise GroundTruthError(f"ground-truth box {exc!r} lacks bbox_2d/label") from None
    detections = []
    for pred in preds:
        # Labels not among the ground truth's, and malformed items, are silently dropped: the
        # released ``calculate_map`` wraps building each detection in ``try: … except: pass``.
        try:
            category = cat_ids[pred["label"]]
            bbox, area = _xywh(pred["bbox_2d"])
        except Exception:
            continue
        # Deviation: a box with a coordinate that is not a finite float is dropped too. Released,
        # a NaN box matches any ground-truth box of its label (IoU NaN is never below the
        # threshold) and an integer beyond float range makes pycocotools raise OverflowError;
        # an infinite box has IoU 0 and an area outside [0, 1e10], so pycocotools ignores it
        # (the same as dropping it) unless its area is NaN (inf * 0), when it matches too.
        if not all(_finite(v) for v in bbox):
            continue
        detections.append(
            {"image_id": 0, "category_id": category, "bbox": bbox, "score": 1.0, "area": area}
        )
    if not detections:
        return 0.0, 0.0
    precision = coco_precision(dataset, detections)  # [iou_thr, recall, category]
    # the means below are COCOeval.summarize's stats[0] and stats[1]

    def mean_valid(values: Any) -> float:
        valid = values[values > -1]
        return float(np.mean(valid)) if valid.size else -1.0

    return mean_valid(precision), mean_valid(precision[0])  # iouThrs[0] == 0.5


def map_score(pred_text: str, gt_text: str, stat: int, length_factor: bool) -> float:
    """VLM-R1's ``map_reward`` on answer contents: COCO AP (``stat`` 0) or AP50 (1) of the
    last ```` ```json ```` blocks; both lists empty → 1, one empty → 0; with ``length_factor``
    the result is multiplied by ``min(1, n_gt / n_pred)`` (odLength)."""
    gts = gt_boxes(gt_text, block=-1)
    preds = pred_boxes(pred_text, block=-1)
    if preds and gts:
        try:
            pred_key = json.dumps(preds, sort_keys=True)
        except (TypeError, ValueError):
            pred_key = "[]"
        try:
            gt_key = json.dumps(gts, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise GroundTruthError(f"ground truth is not JSON-serialisable: {exc}") from None
        score = _coco_stats(pred_key, gt_key)[stat]
    else:
        score = 1.0 if not preds and not gts else 0.0
    if length_factor and len(preds) > len(gts):
        score *= len(gts) / len(preds)
    return score


def od_map_score(content: str, sol: str, stat: int, length_factor: bool = False) -> float:
    """VLM-R1's ``od_reward`` / ``odLength_reward``: the last ``<answer>`` of ``content`` (none →
    0) against the first of ``sol``; both exactly ``None`` → 1; else :func:`map_score`."""
    preds, found = ANSWER.findall(content), ANSWER.search(sol)
    if not preds:
        return 0.0
    pred, truth = preds[-1].strip(), (found.group(1).strip() if found else "")
    if pred == "None" and truth == "None":
        return 1.0
    return map_score(pred, truth, stat, length_factor)


def weighted_sum_score(content: str, sol: str) -> float:
    """VLM-R1's ``weighted_sum`` branch: cleaned texts; ground truth ``none`` → 1 iff the
    prediction is ``none``; else :func:`detection_score`."""
    clean, truth = clean_text(content), clean_text(sol)
    if truth == "none":
        return 1.0 if clean == "none" else 0.0
    return detection_score(clean, truth)


def _label(box: Any) -> str:
    # Released code: a missing gt label reads as ""; a missing pred label crashes (first pair)
    # or reuses the previous pair's label. Here both read as "".
    try:
        return box["label"].lower()
    except (KeyError, TypeError, AttributeError):
        return ""


def detection_score(
    content: str,
    sol: str,
    iou_threshold: float = 0.5,
    alpha: float = 0.7,
    beta: float = 0.0,
    gamma: float = 0.3,
) -> float:
    """VLM-R1's ``detection_score`` (reward ``weighted_sum``) on cleaned texts.

    Greedy matching takes the highest-IoU unmatched pair until the best is below
    ``iou_threshold``; a label mismatch still consumes the pair but scores IoU 0. Score =
    ``(alpha*position + beta*label + gamma*completeness) / (alpha+beta+gamma)``.

    >>> box = '```json [{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]```'
    >>> detection_score(box, box)
    1.0
    """
    preds = pred_boxes(clean_text(content), block=0)
    gts = gt_boxes(clean_text(sol), block=0)
    if not gts:
        return 0.0 if preds else 1.0
    if not preds:
        return 0.0
    ious = []
    for pred in preds:
        row = []
        for gt in gts:
            try:
                row.append(iou(pred["bbox_2d"], gt["bbox_2d"]))
            except Exception:  # the released code scores any failure here as IoU 0
                row.append(0.0)
        ious.append(row)
    pairs = greedy_pairs(ious, iou_threshold)
    matched: list[tuple[float, bool]] = []
    for p, g in pairs:
        same = _label(preds[p]) == _label(gts[g])
        matched.append((ious[p][g] if same else 0.0, same))
    free_gts, free_preds = len(gts) - len(pairs), len(preds) - len(pairs)
    position = sum(m[0] for m in matched) / len(gts) if matched else 0.0
    label = sum(1.0 for m in matched if m[1]) / len(gts) if matched else 0.0
    completeness = 1.0 - (free_gts / len(gts) + free_preds / len(preds)) / 2.0
    return (alpha * position + beta * label + gamma * completeness) / (alpha + beta + gamma)


def repetition_score(content: str) -> float:
    """VLM-R1's ``repetition_reward``: ``-(1 - unique/total)`` n-grams, in [-1, 0].

    With a parsable non-empty JSON list (first ```` ```json ```` fence, else first ```` ``` ````
    fence, else a ``[{..."bbox_2d"..."label"...}]`` array), 1-grams over ``"{bbox_2d}_{label}"``
    of the items having both keys (no such item → 0); otherwise 6-grams over the lower-cased
    words of the whole text (fewer than 6 words → 0). Deviation: the released code tries
    ``json_repair`` on a block that is not valid JSON; that package is not installed, so such a
    block falls through to the word n-grams (as when the repair fails).

    Deviations where the released ``grpo_jsonl.py::repetition_reward`` raises (it catches only
    ``json.JSONDecodeError`` around ``json.loads`` and ``KeyError`` around the items): a block
    nested deeper than the recursion limit (RecursionError) or holding an integer of over 4300
    digits (ValueError) falls through to the word n-grams, like an unparsable block; non-dict
    items (numbers, ``null``, and strings or lists naming both keys, a TypeError there) are
    skipped.

    >>> repetition_score("no no no no no no no"), repetition_score("a b c d e f g")
    (-0.5, 0.0)
    """
    if content == "":
        return 0.0
    found = _JSON_FENCE.search(content)
    if found:
        block = found.group(1).strip()
    else:
        found = _ANY_FENCE.search(content)
        block = found.group(1).strip() if found else None
        if not block:
            found = _BOX_ARRAY.search(content)
            block = found.group(0) if found else None
    data = None
    if block:
        with contextlib.suppress(ValueError, RecursionError):
            data = json.loads(block)
    if data and isinstance(data, list):
        items = [
            f"{item['bbox_2d']}_{item['label']}"
            for item in data
            if isinstance(item, dict) and "bbox_2d" in item and "label" in item
        ]
        return len(set(items)) / len(items) - 1.0 if items else 0.0
    words = content.lower().split()
    if len(words) < 6:
        return 0.0
    grams = list(zip(*(words[i:] for i in range(6)), strict=False))
    return len(set(grams)) / len(grams) - 1.0  # = -(1 - unique/total), without -0.0
