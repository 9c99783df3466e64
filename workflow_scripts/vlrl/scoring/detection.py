r"""Detection answers as VLM-R1's open-vocabulary detection (OVD) models give them: a list of
``{"bbox_2d": [x1, y1, x2, y2], "label": …}`` in a ```` ```json ```` block.

VLM-R1 released no evaluation script for its OVD tables (arXiv:2504.07615v2 §5.1, Tables 3-5;
``om-ai-lab/VLM-R1`` issues #233, #284, #301 ask for it), so the reading follows the repository's
OVD evaluation of RefCOCO, ``src/eval/test_od_r1.py`` at commit
``90052f478646e38bc67363862f699b7afca6b337`` (``extract_bbox_answer``, lines 13-26): the **first**
```` ```json … ``` ```` block anywhere in the output, parsed with ``json.loads`` (any failure: no
box), here read whole rather than its first box. A detection is kept when it is an object with
a ``bbox_2d`` of four finite numbers and a string ``label`` that is one of the labels the item
asked about (the record's ``options``): a label that names no category has no category id to be
mapped to, as VLM-R1's ``calculate_map`` (``grpo_jsonl.py`` lines 238-295) leaves out predicted
labels that are not categories. Every kept box gets score 1 at evaluation: a VLM gives no
confidence, and the authors' post on these tables says "a confidence score of 1.0 was assigned
to all predicted boxes" (om-ai-lab.github.io ``2025_03_20.html``, "Technical Insights").

Per item, the verdict is vlrl's (the papers report only corpus metrics,
:mod:`vlrl.scoring.detection_ap`): VLM-R1's greedy matching (``grpo_jsonl.py``
``detection_score``, lines 431-563: repeatedly the unmatched prediction / gold pair of highest
IoU, by its ``iou`` of lines 418-429, until the best is below the threshold; a pair whose labels
differ, compared lower-cased, is consumed without counting), score = the item's greedy F1
``2·right / (predicted + gold)`` (1 when both are empty), correct iff it is 1: every gold box
found with its label and nothing else predicted.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from vlrl.items.boxes import greedy_pairs
from vlrl.items.predictions import Detection, Detections
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.grounding import vlm_r1_iou

_JSON_BLOCK = re.compile(r"```json(.*?)```", re.DOTALL)  # test_od_r1.py's pattern


def _box(value: Any) -> list[float] | None:
    if not isinstance(value, list) or len(value) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    try:
        box = [float(v) for v in value]
    except OverflowError:  # an integer beyond float range
        return None
    return box if all(math.isfinite(v) for v in box) else None


def read_detections(content: str) -> list[Detection]:
    r"""Every well-formed detection of the first ```` ```json ```` block of ``content``, in its
    order (``[]`` without a block, or when it is not a JSON list).

    >>> [d.label for d in read_detections('<answer>```json [{"bbox_2d": [1, 2, 30, 40], '
    ...  '"label": "cup"}, {"bbox_2d": [1, 2, 3]}, {"label": "pen"}] ```</answer>')]
    ['cup']
    >>> read_detections("<answer>None</answer>"), read_detections('```json {"a": 1} ```')
    ([], [])
    """
    block = _JSON_BLOCK.search(content)
    if block is None:
        return []
    try:
        data = json.loads(block.group(1).strip())
    except Exception:  # the script's bare except: nothing read
        return []
    if not isinstance(data, list):
        return []
    found = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("label"), str):
            continue
        box = _box(item.get("bbox_2d"))
        if box is not None:
            found.append(Detection(bbox_2d=box, label=item["label"]))
    return found


def gold_detections(answer: str, item_id: str = "") -> list[Detection]:
    r"""The gold boxes of a detection record's ``answer``: ``None`` (nothing to detect) or one
    ```` ```json ```` block holding ``[{"bbox_2d": [x1, y1, x2, y2], "label": str}, …]`` (the
    form the OVD formats write, VLM-R1's training answers').

    >>> gold_detections('```json\n[{"bbox_2d": [0, 0, 5, 5], "label": "cat"}]\n```')[0].label
    'cat'

    Raises:
        ValueError: the answer is neither ``None`` nor such a block (naming the item).
    """
    if answer.strip() == "None":
        return []
    block = _JSON_BLOCK.search(answer)
    try:
        data = json.loads(block.group(1).strip()) if block else None
        if isinstance(data, list):
            return [Detection(bbox_2d=_box(d["bbox_2d"]), label=d["label"]) for d in data]
    except Exception:
        pass
    raise ValueError(
        f"item {item_id!r}: a detection answer must be None or a ```json block of "
        f'[{{"bbox_2d": [x1, y1, x2, y2], "label": str}}, …], not {answer[:200]!r}'
    )


def item_detections(candidate: Candidate) -> Detections:
    """The boxes a detection item is evaluated on: those read from the response whose label
    the item asked about (``candidate.options``), and the gold boxes of its answer.

    Raises:
        ValueError: the gold answer is malformed (:func:`gold_detections`).
    """
    asked = set(candidate.options)
    predicted = [d for d in read_detections(candidate.response) if d.label in asked]
    return Detections(
        predicted=predicted, gold=gold_detections(candidate.answer, candidate.item_id)
    )


def greedy_right(
    predicted: list[Detection], gold: list[Detection], iou_threshold: float = 0.5
) -> int:
    """How many predictions VLM-R1's greedy matching (``detection_score``, module docstring)
    pairs with a gold box of the same label (compared lower-cased).

    Ties in IoU go to the earliest prediction, then the earliest gold box (the reference's
    strict ``>`` over its index loops); a pair is taken when its IoU is at least the
    threshold.

    >>> cat = Detection(bbox_2d=[0, 0, 10, 10], label="Cat")
    >>> dog = Detection(bbox_2d=[0, 0, 10, 10], label="dog")
    >>> greedy_right([cat], [dog]), greedy_right([dog], [cat.model_copy(update={"label": "dog"})])
    (0, 1)
    """
    ious = [[vlm_r1_iou(p.bbox_2d, g.bbox_2d) for g in gold] for p in predicted]
    return sum(
        predicted[p].label.lower() == gold[g].label.lower()
        for p, g in greedy_pairs(ious, iou_threshold)
    )


def vlm_r1_ovd(candidate: Candidate) -> Verdict:
    """The per-item verdict on a detection answer (module docstring): ``extracted`` = the
    boxes kept, as JSON; score = greedy F1 at ``candidate.iou_threshold``; correct iff 1.

    >>> gold = '```json\\n[{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]\\n```'
    >>> vlm_r1_ovd(Candidate("<answer>" + gold + "</answer>", gold, "detection",
    ...                      options=("cat", "dog")))[1:]
    (1.0, 1)

    Raises:
        ValueError: the candidate is not a detection item, or its gold answer is malformed.
    """
    if candidate.problem_type != "detection":
        raise ValueError(
            f"item {candidate.item_id!r}: VLM-R1's OVD rule has no rule for problem_type "
            f"{candidate.problem_type!r}"
        )
    boxes = item_detections(candidate)
    total = len(boxes.predicted) + len(boxes.gold)
    right = greedy_right(boxes.predicted, boxes.gold, candidate.iou_threshold)
    score = 2 * right / total if total else 1.0
    extracted = json.dumps([d.model_dump() for d in boxes.predicted]) if boxes.predicted else None
    return Verdict(extracted, score, int(score == 1.0))
