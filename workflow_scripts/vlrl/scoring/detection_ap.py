"""Corpus metrics of detection benchmarks, from each item's boxes
(:class:`vlrl.items.predictions.Detections`, written by :mod:`vlrl.scoring.detection`):

- :func:`coco_ap`: COCO AP@[.5:.95] (pycocotools ``COCOeval(..., "bbox")``, ``stats[0]``: area
  all, 100 detections per image) with every predicted box scored 1, as VLM-R1 scores its VLMs
  (the authors' post om-ai-lab.github.io ``2025_03_20.html``; ``om-ai-lab/VLM-R1`` at
  ``90052f4`` ``grpo_jsonl.py`` ``calculate_map``, lines 238-295, on its copy of pycocotools,
  ``open_r1/utils/pycocotools``,
  which differs from pycocotools 2.0.11 only in silenced prints); with ``nms``, first OVDEval's
  suppression against the ground truth (:func:`nms_against_gold`): its NMS-AP (``om-ai-lab/
  OVDEval`` at ``2ba0aa95`` ``eval.py``);
- :func:`greedy_precision_recall`: VLM-R1 Table 3's greedy precision and recall at IoU 0.5,
  pooled over all boxes (:func:`vlrl.scoring.detection.greedy_right` per item).

The items are the images, each image's boxes in pixels of the image (xyxy, turned into COCO's
xywh as ``calculate_map`` does: ``[x1, y1, x2 - x1, y2 - y1]``); categories are the labels, a
label one category wherever it occurs (OVDEval's category list, mapped by name).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vlrl.core.errors import StageError
from vlrl.items.boxes import coco_precision
from vlrl.items.predictions import Detection
from vlrl.scoring.detection import greedy_right

NMS_IOU = 0.5
"""OVDEval ``eval.py`` ``--iou-threshold`` default (line 84)."""


def calculate_iou(box1: Sequence[float], boxes2: np.ndarray) -> np.ndarray:
    """IoU of one xywh box with each row of ``boxes2`` (xywh), 0 where the union is 0: OVDEval
    ``eval.py`` ``calculate_iou`` (om-ai-lab/OVDEval@2ba0aa95 lines 7-28), the same numpy
    operations.

    >>> calculate_iou([0, 0, 10, 10], np.array([[5, 0, 10, 10], [20, 20, 1, 1]])).tolist()
    [0.3333333333333333, 0.0]
    """
    x1, y1, w1, h1 = box1
    x2, y2, w2, h2 = boxes2[:, 0], boxes2[:, 1], boxes2[:, 2], boxes2[:, 3]
    intersection = np.maximum(0, np.minimum(x1 + w1, x2 + w2) - np.maximum(x1, x2)) * np.maximum(
        0, np.minimum(y1 + h1, y2 + h2) - np.maximum(y1, y2)
    )
    union = w1 * h1 + w2 * h2 - intersection
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union == 0, 0, intersection / union)


def nms_against_gold(
    gold: Sequence[dict[str, Any]], predicted: Sequence[dict[str, Any]], iou_threshold: float
) -> list[dict[str, Any]]:
    """OVDEval's NMS with the ground truth (``eval.py`` ``nms_threaded``, lines 30-64), one
    image: for each gold box, the predictions of IoU above ``iou_threshold`` with it (any
    label) are ranked by score, ``np.argsort(scores)[::-1]``, the first kept and the others
    marked; a marked prediction no gold box kept is removed. The rest come back in their order.

    Ties in score (every VLM box scores 1) are broken by a stable sort, reversed: the last
    prediction over a gold box wins. The reference's default ``argsort`` gives that order with
    numpy 2.4 on a CPU without AVX-512 (the differential tests compare the two), but numpy's
    AVX-512 sorts may order ties otherwise; the stable sort keeps a score the same on every CPU.

    >>> gold = [{"bbox": [0, 0, 10, 10]}]
    >>> preds = [{"bbox": [0, 0, 10, 10], "score": 1, "n": 0}, {"bbox": [0, 0, 10, 9],
    ...          "score": 1, "n": 1}, {"bbox": [50, 50, 5, 5], "score": 1, "n": 2}]
    >>> [p["n"] for p in nms_against_gold(gold, preds, 0.5)]
    [1, 2]
    """
    boxes = np.array([p["bbox"] for p in predicted])
    scores = np.array([p["score"] for p in predicted])
    keep: list[int] = []
    marked: list[int] = []
    for gold_box in (g["bbox"] for g in gold):
        matches = np.where(calculate_iou(gold_box, boxes) > iou_threshold)[0].tolist()
        if matches:
            ranked = [matches[i] for i in np.argsort(scores[matches], kind="stable")[::-1].tolist()]
            keep.append(ranked[0])
            marked += ranked[1:]
    removed = set(marked) - set(keep)
    return [p for i, p in enumerate(predicted) if i not in removed]


def _xywh(detection: Detection) -> list[float]:
    x1, y1, x2, y2 = detection.bbox_2d
    return [x1, y1, x2 - x1, y2 - y1]


def _boxes(items: Sequence[dict[str, Any]]) -> list[tuple[list[Detection], list[Detection]]]:
    """Each item's (predicted, gold) boxes; an item without them is an error naming it."""
    out = []
    for item in items:
        boxes = item.get("detections")
        if boxes is None:
            raise StageError(
                f"item {item.get('id')!r} has no detection boxes: a detection metric needs "
                "items scored by a detection protocol (vlm_r1_ovd)"
            )
        out.append(
            tuple(
                [Detection.model_validate(d) for d in boxes[key]] for key in ("predicted", "gold")
            )
        )
    return out


def coco_ap(items: Sequence[dict[str, Any]], nms: bool = False) -> float:
    """COCO AP@[.5:.95] of the items' predicted boxes (score 1 each) against their gold boxes,
    after OVDEval's NMS against the ground truth when ``nms`` (NMS-AP); 0.0 when nothing is
    predicted, as ``calculate_map`` returns (OVDEval's ``eval.py`` would stop: pycocotools
    cannot load an empty result list).

    The mean over categories (labels) with a gold box, as ``COCOeval.summarize`` takes it.

    >>> box = {"bbox_2d": [0, 0, 10, 10], "label": "cat"}
    >>> round(coco_ap([{"id": "1", "detections": {"predicted": [box], "gold": [box]}}]), 9)
    1.0

    Raises:
        StageError: an item without boxes, or no gold box at all.
    """
    pairs = _boxes(items)
    labels = sorted({d.label for predicted, gold in pairs for d in (*predicted, *gold)})
    category = {label: i for i, label in enumerate(labels)}
    images, annotations, results = [], [], []
    for image_id, (predicted, gold) in enumerate(pairs):
        images.append({"id": image_id})
        gts = [
            {"id": len(annotations) + n + 1, "image_id": image_id, "iscrowd": 0,
             "category_id": category[d.label], "bbox": _xywh(d), "area": _area(d)}
            for n, d in enumerate(gold)
        ]  # fmt: skip
        annotations += gts
        preds = [
            {"image_id": image_id, "score": 1.0, "category_id": category[d.label], "bbox": _xywh(d)}
            for d in predicted
        ]
        # eval.py runs its NMS on the images with predictions, against their gold boxes
        results += nms_against_gold(gts, preds, NMS_IOU) if nms and preds else preds
    if not annotations:
        raise StageError("no gold box among the items: COCO AP is undefined")
    if not results:
        return 0.0
    dataset = {
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i, "name": label} for label, i in category.items()],
    }
    precision = coco_precision(dataset, results)  # [iou thr, recall, category]
    valid = precision[precision > -1]
    return float(np.mean(valid)) if valid.size else 0.0


def _area(detection: Detection) -> float:
    _, _, w, h = _xywh(detection)
    return w * h


def greedy_precision_recall(
    items: Sequence[dict[str, Any]], iou_threshold: float = 0.5
) -> tuple[int, int, int]:
    """``(right, predicted, gold)`` pooled over the items: the predictions VLM-R1's greedy
    matching pairs with a gold box of their label (:func:`vlrl.scoring.detection.greedy_right`),
    and the boxes predicted and gold. Greedy precision = right / predicted, recall = right /
    gold.

    >>> box = {"bbox_2d": [0, 0, 10, 10], "label": "cat"}
    >>> greedy_precision_recall([{"id": "1", "detections": {"predicted": [box, box],
    ...                                                      "gold": [box]}}])
    (1, 2, 1)
    """
    right = predicted_n = gold_n = 0
    for predicted, gold in _boxes(items):
        right += greedy_right(predicted, gold, iou_threshold)
        predicted_n += len(predicted)
        gold_n += len(gold)
    return right, predicted_n, gold_n
