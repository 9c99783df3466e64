"""Box matching and COCO AP as VLM-R1 computes them, shared by its rewards
(:mod:`vlrl.rewards._detection`) and the detection benchmarks' scoring
(:mod:`vlrl.scoring.detection`, :mod:`vlrl.scoring.detection_ap`).

Both follow om-ai-lab/VLM-R1 at commit 90052f4, ``src/open-r1-multimodal/src/open_r1/
grpo_jsonl.py``: the greedy matching of ``detection_score`` (lines 431-563) and the COCO
evaluation of ``calculate_map`` (lines 238-295).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any


def greedy_pairs(ious: Sequence[Sequence[float]], threshold: float) -> list[tuple[int, int]]:
    """VLM-R1's greedy matching: while a prediction and a gold box are both unmatched, the pair
    of highest IoU (``ious[prediction][gold]``), the earliest prediction then the earliest gold
    box on ties (the reference's strict ``>`` over its index loops), until the best is below
    ``threshold``. The pairs in the order taken.

    >>> greedy_pairs([[0.9, 0.6], [0.95, 0.1]], 0.5)
    [(1, 0), (0, 1)]
    >>> greedy_pairs([[0.4]], 0.5), greedy_pairs([[0.5, 0.5]], 0.5)
    ([], [(0, 0)])
    """
    free_preds, free_golds = list(range(len(ious))), list(range(len(ious[0]) if ious else 0))
    pairs = []
    while free_preds and free_golds:
        best, best_pred, best_gold = -1.0, -1, -1
        for p in free_preds:
            for g in free_golds:
                if ious[p][g] > best:
                    best, best_pred, best_gold = ious[p][g], p, g
        if best < threshold:
            break
        pairs.append((best_pred, best_gold))
        free_preds.remove(best_pred)
        free_golds.remove(best_gold)
    return pairs


def coco_precision(dataset: dict[str, Any], results: list[dict[str, Any]]) -> Any:
    """pycocotools' precision array ``[IoU threshold, recall, category]`` of ``results``
    against the ground truth ``dataset`` (COCO's dict), for the one cell ``stats[0]`` and
    ``stats[1]`` read (area all, 100 detections per image): evaluating only it is exact, and
    about 4x faster than the full grid. Cells without ground truth hold -1, as COCOeval's."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        gt = COCO()
        gt.dataset = dataset
        gt.createIndex()
        evaluation = COCOeval(gt, gt.loadRes(results), "bbox")
        evaluation.params.areaRng, evaluation.params.areaRngLbl = [[0, 1e10]], ["all"]
        evaluation.params.maxDets = [100]
        evaluation.evaluate()
        evaluation.accumulate()
    return evaluation.eval["precision"][:, :, :, 0, 0]
