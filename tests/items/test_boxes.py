"""VLM-R1's greedy box matching and one-cell COCO evaluation (vlrl.items.boxes), shared by the
detection rewards and the detection benchmarks' scoring; both sides' differential tests against
the released code cover them on generated boxes (tests/rewards, tests/scoring)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlrl.items.boxes import coco_precision, greedy_pairs


@pytest.mark.parametrize(
    ("ious", "threshold", "pairs"),
    [
        ([], 0.5, []),  # no prediction
        ([[], []], 0.5, []),  # no gold box
        ([[0.9, 0.6], [0.95, 0.1]], 0.5, [(1, 0), (0, 1)]),  # the best pair first
        ([[0.7, 0.7], [0.7, 0.7]], 0.5, [(0, 0), (1, 1)]),  # ties: earliest pair
        ([[0.49]], 0.5, []),  # below the threshold
        ([[0.5]], 0.5, [(0, 0)]),  # at it: taken
        ([[0.8, 0.3]], 0.5, [(0, 0)]),  # one prediction takes one gold box
        ([[0.0]], 0.0, [(0, 0)]),  # IoU 0 reaches a threshold of 0
        ([[math.nan, 0.6]], 0.5, [(0, 1)]),  # NaN is never the best
        ([[math.nan]], -2.0, []),  # nothing beats -1: stops, as the reward's callers never see
    ],
)
def test_greedy_pairs(ious: list, threshold: float, pairs: list) -> None:
    if ious == [[math.nan]]:
        with pytest.raises(ValueError):  # list.remove(-1), as the released loop
            greedy_pairs(ious, threshold)
        return
    assert greedy_pairs(ious, threshold) == pairs


def _dataset(*boxes: list[float]) -> dict:
    return {
        "images": [{"id": 0}],
        "annotations": [
            {"id": n + 1, "image_id": 0, "category_id": 0, "bbox": b, "area": b[2] * b[3],
             "iscrowd": 0}
            for n, b in enumerate(boxes)
        ],
        "categories": [{"id": 0, "name": "cat"}],
    }  # fmt: skip


def test_coco_precision_of_one_cell() -> None:
    """A perfect box: precision 1 at every IoU threshold and recall; a box of IoU 0.6: found at
    the thresholds 0.5 to 0.6 (IoU at least the threshold); shape [10 thresholds, 101 recalls,
    1 category]."""
    perfect = coco_precision(
        _dataset([0, 0, 10, 10]),
        [{"image_id": 0, "category_id": 0, "bbox": [0, 0, 10, 10], "score": 1.0}],
    )
    assert perfect.shape == (10, 101, 1) and perfect == pytest.approx(np.ones((10, 101, 1)))
    partial = coco_precision(
        _dataset([0, 0, 10, 10]),
        [{"image_id": 0, "category_id": 0, "bbox": [0, 0, 10, 6], "score": 1.0}],
    )
    assert [float(partial[t].mean()) for t in range(10)] == pytest.approx([1.0] * 3 + [0.0] * 7)


def test_coco_precision_prints_nothing(capsys: pytest.CaptureFixture) -> None:
    coco_precision(
        _dataset([0, 0, 10, 10]),
        [{"image_id": 0, "category_id": 0, "bbox": [0, 0, 10, 10], "score": 1.0}],
    )
    assert capsys.readouterr().out == ""


def test_coco_precision_reads_100_detections_per_image() -> None:
    """COCO's stats[0] cell: the first 100 detections of an image (all scored 1: file order);
    a right box 101st is not read."""
    wrong = [
        {"image_id": 0, "category_id": 0, "bbox": [50 + n, 50, 5, 5], "score": 1.0}
        for n in range(100)
    ]
    right = [{"image_id": 0, "category_id": 0, "bbox": [0, 0, 10, 10], "score": 1.0}]
    assert coco_precision(_dataset([0, 0, 10, 10]), [*wrong, *right]).max() == 0
    assert coco_precision(_dataset([0, 0, 10, 10]), [*wrong[:99], *right]).max() > 0
