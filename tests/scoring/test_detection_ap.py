"""OVDEval's NMS-AP and COCO AP of detection items (vlrl.scoring.detection_ap) against a verbatim
copy of OVDEval's eval.py (tests/scoring/reference/ovdeval_eval.py): its calculate_iou and
nms_threaded on hundreds of generated images (ties in score included: every VLM box scores 1, so
numpy's argsort order decides which box survives), and the whole evaluation, NMS then
pycocotools COCOeval, on generated sets; then hand-checkable cases, and on single images against
VLM-R1's calculate_map (tests/scoring/reference/vlm_r1_detection_score.py)."""

from __future__ import annotations

import contextlib
import io
import random

import numpy as np
import pytest
from reference import ovdeval_eval as released

from vlrl.core.errors import StageError
from vlrl.scoring.detection_ap import (
    calculate_iou,
    coco_ap,
    greedy_precision_recall,
    nms_against_gold,
)

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

LABELS = ["cat", "dog", "red cup", "cup without a handle"]


def _box(rng: random.Random, near: list[float] | None = None, integer: bool = True) -> list:
    """A random xywh box in a 100 x 100 image; ``near`` another box: a jittered copy of it (so
    that IoU lands on both sides of 0.5)."""
    if near is not None:
        x, y, w, h = (v + rng.choice([-3, -1, 0, 0, 1, 2, 5]) for v in near)
        box = [max(x, 0), max(y, 0), max(w, 0), max(h, 0)]
    else:
        box = [rng.randint(0, 80), rng.randint(0, 80), rng.randint(0, 40), rng.randint(0, 40)]
    return box if integer else [v + rng.choice([0, 0.25, 0.5]) for v in box]


def _image(rng: random.Random, image_id: int = 0) -> tuple[list[dict], list[dict]]:
    """(gold, predicted) of one generated image, as eval.py reads them."""
    integer = rng.random() < 0.7
    gold = [
        {"bbox": _box(rng, integer=integer), "category_id": rng.randrange(4),
         "image_id": image_id}
        for _ in range(rng.randint(0, 4))
    ]  # fmt: skip
    # every box 1 (a VLM's boxes, ties broken as the reference breaks them here), or distinct
    # scores (no ties: numpy's default sort orders ties of mixed scores by its own algorithm)
    tied = rng.random() < 0.5
    predicted = []
    for _ in range(rng.randint(1, rng.choice([3, 8, 40]))):
        near = rng.choice(gold)["bbox"] if gold and rng.random() < 0.8 else None
        score = 1.0 if tied else rng.random()
        predicted.append(
            {"image_id": image_id, "bbox": _box(rng, near, integer), "score": score,
             "category_id": rng.randrange(4)}
        )  # fmt: skip
    return gold, predicted


@pytest.mark.parametrize("seed", range(400))
def test_nms_keeps_what_ovdeval_keeps(seed: int) -> None:
    rng = random.Random(seed)
    gold, predicted = _image(rng)
    expected = released.nms_threaded(gold, predicted, 0.5, 16)
    kept = nms_against_gold(gold, predicted, 0.5)
    assert [id(p) for p in kept] == [id(p) for p in expected]


def test_ties_go_to_the_last_prediction() -> None:
    """Every box scores 1: the box kept is the first of the scores' descending stable order,
    the last prediction, as eval.py's ``np.argsort(scores)[::-1]`` keeps it with numpy 2.4 on a
    CPU without AVX-512 (the same whatever the CPU here)."""
    gold = [{"bbox": [10, 10, 20, 20]}]
    predicted = [{"bbox": [10, 10, 20, 20], "score": 1.0, "n": n} for n in range(5)]
    assert [p["n"] for p in nms_against_gold(gold, predicted, 0.5)] == [4]
    if [int(i) for i in np.argsort(np.ones(5))] == list(range(5)):  # numpy keeps ties in order
        assert [p["n"] for p in released.nms_threaded(gold, predicted, 0.5, 16)] == [4]


@pytest.mark.parametrize("matches", [2, 15, 16, 17, 40, 200])
def test_ties_of_many_matches_keep_the_last(matches: int) -> None:
    gold = [{"bbox": [10, 10, 20, 20]}, {"bbox": [11, 10, 20, 20]}]
    predicted = [{"bbox": [10, 10, 20, 20], "score": 1.0} for _ in range(matches)]
    kept = nms_against_gold(gold, predicted, 0.5)
    assert [id(p) for p in kept] == [id(predicted[-1])]


@pytest.mark.parametrize("seed", range(200))
def test_calculate_iou_is_ovdeval_s(seed: int) -> None:
    rng = random.Random(seed)
    box = _box(rng, integer=rng.random() < 0.5)
    boxes = np.array([_box(rng, box if rng.random() < 0.5 else None) for _ in range(6)])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = released.calculate_iou(np.array(box), boxes)
    assert calculate_iou(box, boxes).tolist() == expected.tolist()


def test_calculate_iou_of_empty_boxes_is_zero() -> None:
    assert calculate_iou([5, 5, 0, 0], np.array([[5, 5, 0, 0], [0, 0, 10, 10]])).tolist() == [0, 0]


# ------------------------------------------------------------------ the whole evaluation
def _as_items(gold_data: dict, results: list[dict]) -> list[dict]:
    """The images of a COCO-style set as detection items (labels = category names)."""
    name = {c["id"]: c["name"] for c in gold_data["categories"]}

    def detection(box: dict) -> dict:
        x, y, w, h = box["bbox"]
        return {"bbox_2d": [x, y, x + w, y + h], "label": name[box["category_id"]]}

    return [
        {
            "id": str(image["id"]),
            "task": "t",
            "detections": {
                "predicted": [detection(r) for r in results if r["image_id"] == image["id"]],
                "gold": [
                    detection(a) for a in gold_data["annotations"] if a["image_id"] == image["id"]
                ],
            },
        }
        for image in gold_data["images"]
    ]


def _generated_set(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    gold_data: dict = {
        "images": [],
        "annotations": [],
        "categories": [{"id": i, "name": n} for i, n in enumerate(LABELS)],
    }
    results = []
    for image_id in range(rng.randint(1, 6)):
        gold, predicted = _image(rng, image_id)
        gold = [g for g in gold if g["bbox"][2] > 0 and g["bbox"][3] > 0]
        gold_data["images"].append({"id": image_id, "width": 100, "height": 100})
        for g in gold:
            w, h = g["bbox"][2:]
            gold_data["annotations"].append(
                {**g, "id": len(gold_data["annotations"]) + 1, "iscrowd": 0, "area": w * h}
            )
        results += [dict(p, score=1.0) for p in predicted]
    return gold_data, results


@pytest.mark.parametrize("seed", range(60))
def test_nms_ap_is_ovdeval_s(seed: int) -> None:
    gold_data, results = _generated_set(seed)
    if not gold_data["annotations"]:
        pytest.skip("a set without a gold box (no AP)")
    with contextlib.redirect_stdout(io.StringIO()):
        expected = released.nms_ap(gold_data, [dict(r) for r in results], 0.5)
    items = _as_items(gold_data, results)
    assert coco_ap(items, nms=True) == pytest.approx(max(expected, 0.0), abs=1e-12)


# ------------------------------------------------------------------ hand-checkable cases
def _item(predicted: list, gold: list, task: str = "t") -> dict:
    def box(b: tuple) -> dict:
        return {"bbox_2d": list(b[1:]), "label": b[0]}

    return {
        "id": "x",
        "task": task,
        "detections": {"predicted": [box(p) for p in predicted], "gold": [box(g) for g in gold]},
    }


CAT = ("cat", 0, 0, 10, 10)
DOG = ("dog", 20, 20, 40, 40)
AP_CASES = [
    ([CAT, DOG], [CAT, DOG], False, 1.0, "every box found"),
    ([], [CAT], False, 0.0, "nothing predicted: 0, where pycocotools cannot load no results"),
    ([CAT], [CAT, DOG], False, 0.5, "dog missed: its category's AP is 0, the mean 0.5"),
    ([("dog", 0, 0, 10, 10)], [CAT], False, 0.0, "a dog box on the cat: no cat found"),
    ([("dog", 0, 0, 10, 10), CAT], [CAT], False, 1.0,
     "without NMS the wrong label costs nothing (dog has no gold box: not averaged)"),
]  # fmt: skip
LAST_WINS = bool(np.argsort(np.ones(2))[::-1][0] == 1)
"""Whether numpy keeps equal scores in their order here (so of two tied boxes the last wins)."""
AP_CASES += [
    ([CAT, ("dog", 0, 0, 10, 10)], [CAT], True, 0.0 if LAST_WINS else 1.0,
     "NMS-AP: a hard negative tied with the cat box over the cat: one survives"),
    ([("dog", 0, 0, 10, 10), CAT], [CAT], True, 1.0 if LAST_WINS else 0.0,
     "NMS-AP: the other order, the other box"),
]  # fmt: skip


@pytest.mark.parametrize(("predicted", "gold", "nms", "expected", "why"), AP_CASES)
def test_coco_ap_cases(predicted, gold, nms, expected, why) -> None:
    assert coco_ap([_item(predicted, gold)], nms=nms) == pytest.approx(expected), why


def test_coco_ap_over_several_images_is_one_evaluation() -> None:
    items = [_item([CAT], [CAT]), _item([], [CAT])]
    # one cat of two found, at precision 1: the 101-point interpolation gives 51/101
    assert coco_ap(items) == pytest.approx(51 / 101)


def test_coco_ap_needs_boxes_and_a_gold_box() -> None:
    with pytest.raises(StageError) as err:
        coco_ap([{"id": "q7", "task": "t", "detections": None}])
    assert str(err.value) == (
        "item 'q7' has no detection boxes: a detection metric needs items scored by a "
        "detection protocol (vlm_r1_ovd)"
    )
    with pytest.raises(StageError) as err:
        coco_ap([_item([CAT], [])])
    assert str(err.value) == "no gold box among the items: COCO AP is undefined"


GREEDY = [
    ([CAT, DOG], [CAT, DOG], (2, 2, 2), "both right"),
    ([CAT, CAT], [CAT], (1, 2, 1), "a repeated box: one right of two"),
    ([("Cat", 1, 0, 10, 10)], [CAT], (1, 1, 1), "labels compared lower-cased; IoU 0.9"),
    ([("dog", 0, 0, 10, 10)], [CAT, ("dog", 0, 0, 10, 11)], (0, 1, 2),
     "the dog box takes the cat (IoU 1 beats 0.91), a wrong label: nothing right"),
    ([("cat", 0, 0, 10, 20)], [CAT], (1, 1, 1), "IoU exactly 0.5 is matched (>=)"),
    ([("cat", 0, 0, 10, 21)], [CAT], (0, 1, 1), "IoU below 0.5"),
    ([], [CAT], (0, 0, 1), "nothing predicted"),
]  # fmt: skip


@pytest.mark.parametrize(("predicted", "gold", "expected", "why"), GREEDY)
def test_greedy_counts(predicted, gold, expected, why) -> None:
    assert greedy_precision_recall([_item(predicted, gold)]) == expected, why


# ------------------------------------------------ one image: VLM-R1's calculate_map
@pytest.mark.parametrize("seed", range(80))
def test_coco_ap_of_one_image_is_vlm_r1_calculate_map(seed: int) -> None:
    """On one image, COCO AP with every box scored 1 is VLM-R1's calculate_map (grpo_jsonl.py;
    tests/scoring/reference/vlm_r1_detection_score.py): the same xyxy → xywh turn, the same
    pycocotools evaluation, labels with no gold box dropped (they have no category there)."""
    from reference import vlm_r1_detection_score as vlm_r1

    rng = random.Random(seed)
    gold_xywh, predicted_xywh = _image(rng)
    gold_xywh = [g for g in gold_xywh if g["bbox"][2] > 0 and g["bbox"][3] > 0] or [
        {"bbox": [5, 5, 20, 20], "category_id": 0}
    ]

    def xyxy(box: dict) -> dict:
        x, y, w, h = box["bbox"]
        return {"bbox_2d": [x, y, x + w, y + h], "label": LABELS[box["category_id"]]}

    gold, predicted = [xyxy(g) for g in gold_xywh], [xyxy(p) for p in predicted_xywh]
    with contextlib.redirect_stdout(io.StringIO()):
        expected = vlm_r1.calculate_map(predicted, gold)
    item = {"id": "1", "task": "t", "detections": {"predicted": predicted, "gold": gold}}
    assert coco_ap([item]) == pytest.approx(max(expected, 0.0), abs=1e-12)
