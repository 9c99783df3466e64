"""Targeted tests of ``vlrl.rewards._detection`` and ``vlrl.rewards._rec`` (the VLM-R1 detection
and REC helpers).

Each case sits on an edge the random differential test (``test_vlm_r1_released.py``) rarely
hits: thresholds met exactly, ties, 1-px overlaps, case folding beyond ASCII, the
``detection_score`` weights and thresholds, unfenced ground truths, malformed REC answers.
Where the released code has the same path the oracle is ``released_vlm_r1.py`` (verbatim
om-ai-lab/VLM-R1 @90052f4, ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py``).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import released_vlm_r1 as released

from vlrl.rewards import _detection as det
from vlrl.rewards import _rec as rec
from vlrl.rewards import vlm_r1


@pytest.fixture(autouse=True)
def _cold_coco_cache():
    # _coco_stats memoises on its JSON keys; a cache warmed by earlier tests (or by the clean run
    # that mutation-testing workers fork from) would skip what it calls (_xywh, _finite).
    det._coco_stats.cache_clear()
    yield
    det._coco_stats.cache_clear()


def fence(items) -> str:
    return f"```json {json.dumps(items)}```"


def box(coords, label="cat") -> dict:
    return {"bbox_2d": coords, "label": label}


def quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools' summarize prints
        return fn(*args, **kwargs)


# --- iou ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0, 0, 10, 10], [0, 9, 10, 20], 0.0),  # rows overlap by 1 px: no intersection
        ([0, 0, 10, 10], [9, 0, 20, 10], 0.0),  # columns overlap by 1 px
        ([0, 0, 10, 10], [0, 8, 10, 20], 20 / 200),  # 2 px: counted (extent +1)
        ([0, 0, 10, 10], [0, 0, 10, 20], 0.5),
        ([0, 0, 10, 10], [0, 0, 10, 10], 1.0),
    ],
)
def test_iou_edges(a, b, expected) -> None:
    assert rec.iou(a, b) == released.iou(a, b) == expected


# --- REC ground truth and frame sizes -----------------------------------------------------------


def test_rec_ground_truth_needs_a_column() -> None:
    message = "needs the 'boxes' or the 'answer' column"
    with pytest.raises(ValueError, match=message):
        rec.rec_ground_truth(0, None, None)
    with pytest.raises(ValueError, match=f"^vlm_r1.rec_iou: row 0: {message}$"):
        vlm_r1.REWARDS["vlm_r1.rec_iou"](["<answer>[0, 0, 1, 1]</answer>"])


@pytest.mark.parametrize(
    "answer",
    [
        "5",  # not a sequence (TypeError inside)
        "null",
        '{"box": [1, 2, 3, 4]}',  # no bbox_2d (KeyError inside)
        '{"bbox_2d": 7}',
        "[1, 2, 3]",  # numbers, but three
        "[1, 2, 3, 4, 5]",
        '[1, 2, "3", 4]',  # four, but not all numbers
        '["a", "b", "c", "d"]',
        "<answer>not json</answer>",
    ],
)
def test_rec_ground_truth_rejects_non_boxes(answer) -> None:
    with pytest.raises(ValueError, match=r"is not a JSON box \[x1, y1, x2, y2\]$"):
        rec.rec_ground_truth(0, [answer], None)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[1, 2, 3, 4]", [1.0, 2.0, 3.0, 4.0]),
        ('<answer> {"bbox_2d": [1, 2.5, 3, 4]} </answer>', [1.0, 2.5, 3.0, 4.0]),
        ("<answer>x</answer><answer>[0, 0, 9, 9]</answer>", [0.0, 0.0, 9.0, 9.0]),
    ],
)
def test_rec_ground_truth_reads_answer_boxes(answer, expected) -> None:
    assert rec.rec_ground_truth(0, [answer], None) == expected
    assert rec.rec_ground_truth(0, [answer], [[]]) == expected  # an empty boxes row falls back


@pytest.mark.parametrize("grid", [[], [[]]])
def test_empty_grid_row_means_no_frame(grid) -> None:
    columns = {"image_grid_thw": [grid], "image_sizes": [[[70, 56]]]}
    assert rec.input_and_original_size(0, columns) is None


def test_input_size_frame_and_missing_original() -> None:
    columns = {"input_size": [[140, 112]], "image_sizes": [[70, 56]]}
    assert rec.input_and_original_size(0, columns) == ((140.0, 112.0), (70.0, 56.0))
    assert rec.input_and_original_size(0, {"input_size": [[140, 112]]}) is None


# --- ground-truth box lists ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"bbox_2d": [0, 0, 1, 1], "label": "a"}]', [{"bbox_2d": [0, 0, 1, 1], "label": "a"}]),
        ("[]", []),
        ("[1, 2]", []),  # a list, but not of objects
        ('[{"a": 1}, 2]', []),
        ('{"bbox_2d": [0, 0, 1, 1]}', []),  # an object, not a list
        ("5", []),
        ("None", []),
    ],
)
def test_unfenced_ground_truth(text, expected) -> None:
    assert det.gt_boxes(text, block=0) == expected


# --- COCO AP (map_score / od_map_score) ---------------------------------------------------------

MAP_CASES = [
    # (ground truth, prediction): offsets in x and y differ, so coordinate mix-ups show
    ([box([10, 20, 60, 90])], [box([12, 25, 55, 80])]),
    ([box([30, 5, 70, 45])], [box([30, 5, 75, 40])]),
    ([box([30, 5, 70, 45]), box([100, 120, 180, 150], "dog")],
     [box([28, 8, 70, 45]), box([100, 125, 170, 150], "dog"), box([5, 5, 20, 20], "dog")]),
    # a zero-height ground-truth box (area 0, still evaluated) beside a normal one
    ([box([0, 5, 10, 5]), box([20, 20, 40, 40])], [box([20, 20, 40, 40])]),
    ([box([0, 5, 10, 5])], [box([0, 5, 10, 5])]),
    # inverted ground-truth boxes (negative area: pycocotools ignores them)
    ([box([10, 10, 5, 20]), box([20, 20, 40, 40])], [box([20, 20, 40, 40])]),
    ([box([0, 10, 10, 0]), box([20, 20, 40, 40])], [box([20, 20, 40, 40])]),
]  # fmt: skip


@pytest.mark.parametrize(("gts", "preds"), MAP_CASES)
@pytest.mark.parametrize("stat", [0, 1])
@pytest.mark.parametrize("length_factor", [False, True])
def test_map_score_matches_released(gts, preds, stat, length_factor) -> None:
    expected = quiet(released.map_reward, fence(preds), fence(gts), length_factor, stat)
    got = det.map_score(fence(preds), fence(gts), stat, length_factor)
    assert got == pytest.approx(expected, abs=1e-12)


def test_non_finite_predicted_boxes_are_dropped() -> None:
    """Documented deviation (``_coco_stats``): a box with an integer beyond float range (released:
    OverflowError in pycocotools) or NaN (released: matches anything) is dropped; the dog box
    alone then gives AP 0.5 over the two labels."""
    gt = fence([box([0, 0, 100, 100]), box([200, 200, 300, 300], "dog")])
    dog = '{"bbox_2d": [200, 200, 300, 300], "label": "dog"}'
    expected = quiet(released.map_reward, f"```json [{dog}]```", gt)
    assert expected == pytest.approx(0.5)
    for bad in ("1" + "0" * 400, "NaN"):
        pred = f'```json [{{"bbox_2d": [0, 0, {bad}, 100], "label": "cat"}}, {dog}]```'
        assert det.map_score(pred, gt, 0, False) == pytest.approx(expected)


@pytest.mark.parametrize("pred", ["", "```json []```", "no boxes"])
def test_no_prediction_against_unusable_ground_truth(pred) -> None:
    """No predicted box: 0 (released too) without reading the ground-truth items, even ones
    that are not boxes."""
    for gt in ("```json [1]```", "```json [{}]```", '```json ["x"]```'):
        assert det.map_score(pred, gt, 0, False) == quiet(released.map_reward, pred, gt) == 0.0


def test_od_map_score_without_answer_tags_in_truth() -> None:
    # No <answer> in the solution reads as an empty ground truth (the reward always adds tags).
    assert det.od_map_score("<answer>None</answer>", "None", 0) == 1.0
    assert det.od_map_score(f"<answer>{fence([box([0, 0, 5, 5])])}</answer>", "x", 0) == 0.0


# --- weighted_sum / detection_score ------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "sol", "expected"),
    [
        ("<answer>None.</answer>", "<answer> None </answer>", 1.0),
        ("<answer>a cat</answer>", "<answer> None </answer>", 0.0),
        ("<answer>```json []```</answer>", "<answer> None </answer>", 0.0),
        ("<answer></answer>", "<answer> none </answer>", 0.0),
        ("<answer>none</answer>", "<answer> ```json []``` </answer>", 1.0),
    ],
)
def test_weighted_sum_none_ground_truth(content, sol, expected) -> None:
    """Released ``accuracy_reward`` 'weighted_sum' branch (grpo_jsonl.py L842-851): a cleaned
    ground truth ``none`` scores 1 iff the cleaned prediction is ``none``, whatever else."""
    assert det.weighted_sum_score(content, sol) == expected


def released_detection(content: str, sol: str, **kwargs) -> float:
    return released.detection_score(
        released.clean_text(content), released.clean_text(sol), **kwargs
    )


def ours(content: str, sol: str, **kwargs) -> float:
    return det.detection_score(rec.clean_text(content), rec.clean_text(sol), **kwargs)


@pytest.mark.parametrize(
    ("pred_label", "gt_label"),
    [("ß", "ss"), ("ı", "i"), ("ſ", "s"), ("ς", "σ"), ("Cat", "cat"), ("cat", "dog")],
)
def test_labels_compare_lower_cased(pred_label, gt_label) -> None:
    content = fence([box([0, 0, 10, 10], pred_label)])
    sol = fence([box([0, 0, 10, 10], gt_label)])
    expected = released_detection(content, sol)
    assert ours(content, sol) == expected
    assert expected == (1.0 if pred_label.lower() == gt_label else 0.3)


def test_missing_ground_truth_label_reads_as_empty() -> None:
    content = fence([box([0, 0, 10, 10], "")])
    sol = fence([{"bbox_2d": [0, 0, 10, 10]}])
    assert ours(content, sol) == released_detection(content, sol) == 1.0


def test_ties_take_the_first_pair() -> None:
    """Two predictions with the same IoU: the first (here the wrong label) is matched."""
    content = fence([box([0, 0, 10, 10], "dog"), box([0, 0, 10, 10], "cat")])
    sol = fence([box([0, 0, 10, 10], "cat")])
    expected = released_detection(content, sol)
    assert ours(content, sol) == pytest.approx(expected) == pytest.approx(0.3 * 0.75)


def test_iou_exactly_at_threshold_matches() -> None:
    content, sol = fence([box([0, 0, 10, 20])]), fence([box([0, 0, 10, 10])])
    expected = released_detection(content, sol)
    assert ours(content, sol) == pytest.approx(expected) == pytest.approx(0.7 * 0.5 + 0.3)


DETECTION_CASES = [
    ([box([0, 0, 10, 10])], [box([0, 0, 10, 10])]),
    ([box([0, 0, 10, 10]), box([50, 50, 90, 80], "dog")],
     [box([1, 0, 10, 12]), box([50, 52, 90, 80], "cat"), box([200, 200, 220, 230])]),
    ([box([0, 0, 10, 10]), box([50, 50, 90, 80], "dog")], [box([100, 100, 120, 130])]),
    ([box([0, 0, 40, 40])], [box([5, 5, 30, 40]), box([0, 0, 20, 20]), box([0, 0, 40, 39])]),
]  # fmt: skip


@pytest.mark.parametrize(("gts", "preds"), DETECTION_CASES)
@pytest.mark.parametrize(
    "weights", [(0.7, 0.0, 0.3), (1.0, 1.0, 1.0), (0.2, 0.5, 0.1), (0.0, 1.0, 0.0), (0.5, 2.0, 0.5)]
)
def test_detection_score_weights(gts, preds, weights) -> None:
    alpha, beta, gamma = weights
    content, sol = fence(preds), fence(gts)
    expected = released_detection(content, sol, alpha=alpha, beta=beta, gamma=gamma)
    got = ours(content, sol, alpha=alpha, beta=beta, gamma=gamma)
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("gts", "preds"), DETECTION_CASES)
@pytest.mark.parametrize("threshold", [-1.0, 0.0, 0.3, 0.5, 0.9, 1.0])
def test_detection_score_thresholds(gts, preds, threshold) -> None:
    content, sol = fence(preds), fence(gts)
    expected = released_detection(content, sol, iou_threshold=threshold)
    assert ours(content, sol, iou_threshold=threshold) == pytest.approx(expected, abs=1e-12)


# --- repetition ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        # a plain ``` fence holding a JSON list without box items: 0, the words are not read
        '```[{"a": 1}]``` x x x x x x x x x',
        '```[{"label": "a", "bbox_2d": [1, 2, 3, 4]}, {"label": "a", "bbox_2d": [1, 2, 3, 4]}]```',
        "```not json``` y y y y y y y y",
        # words: n-grams of lower-cased words (ß ≠ ss lower-cased, = SS upper-cased)
        "ß 1 2 3 4 5 ss 1 2 3 4 5",
        "A b c d e f a B C D E F",
        "one two three four five six",
    ],
)
def test_repetition_matches_released(content) -> None:
    assert det.repetition_score(content) == released.repetition_reward(content)


def test_repetition_values() -> None:
    assert det.repetition_score('```[{"a": 1}]``` x x x x x x x x x') == 0.0
    assert det.repetition_score("ß 1 2 3 4 5 ss 1 2 3 4 5") == 0.0
    assert det.repetition_score("A b c d e f a B C D E F") == pytest.approx(-1 / 7)
