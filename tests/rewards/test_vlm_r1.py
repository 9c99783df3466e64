"""Case tables for the VLM-R1 rewards, TRL signature.

Source: om-ai-lab/VLM-R1 @ 90052f4, ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` and
``.../open_r1/vlm_modules/qwen_module.py``.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from vlrl.items.prompts import PROMPTS
from vlrl.rewards import REGISTRY, _math_verify, vlm_r1
from vlrl.rewards._detection import _coco_stats
from vlrl.rewards._rec import clean_text, iou

R = vlm_r1.REWARDS


def one(name: str, completion, **columns):
    """The reward ``name`` of a single completion (columns given per row, unwrapped)."""
    (value,) = R[name]([completion], **{k: [v] for k, v in columns.items()})
    return value


def ans(x: str) -> str:
    return f"<think>look</think><answer>{x}</answer>"


def fence(items: list[dict]) -> str:
    return "```json\n" + json.dumps(items) + "\n```"


def box(label: str, x1: int, y1: int, x2: int, y2: int) -> dict:
    return {"bbox_2d": [x1, y1, x2, y2], "label": label}


CAT, DOG = box("cat", 0, 0, 100, 100), box("dog", 200, 200, 300, 300)
ZEBRA = box("zebra", 400, 400, 500, 500)
GT2 = fence([CAT, DOG])

# --- formats (format_reward, format_reward_rec) --------------------------------------------------

FORMAT_CASES = [
    ("<think>a</think><answer>1</answer>", 1.0, "well formed"),
    ("<think>a</think>\n\n<answer>1</answer>", 1.0, "whitespace between the blocks"),
    ("<think>line 1\nline 2</think><answer>x\ny</answer>", 1.0, "DOTALL: newlines inside blocks"),
    ("x<think>a</think><answer>1</answer>", 0.0, "text before: full match fails"),
    ("<think>a</think><answer>1</answer> done", 0.0, "text after: full match fails"),
    (" <think>a</think><answer>1</answer>", 0.0, "leading space: the released code never strips"),
    ("<think>a</think><answer>1</answer>\n", 0.0, "trailing newline fails too"),
    ("<think>a</think><answer>1</answer><answer>2</answer>", 1.0, "lazy .*? stretches to the end"),
    ("<answer>1</answer>", 0.0, "no think block"),
    ("<think>a</think>", 0.0, "no answer block"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format(text, expected, why) -> None:
    assert one("vlm_r1.format", text) == expected, why


REC_FORMAT_CASES = [
    (ans('{"bbox_2d": [1, 2, 3, 4]}'), 1.0, "JSON object with an integer box"),
    (ans('{"bbox_2d": [1,2,3,4], "label": "x"}'), 1.0, "no spaces after commas"),
    (ans('\n{\n  "bbox_2d": [1, 2, 3, 4]\n}\n'), 1.0, "DOTALL: multi-line JSON"),
    ("before " + ans('{"b": [1, 2, 3, 4]}') + " after", 1.0, "search, not full match"),
    (ans("[1, 2, 3, 4]"), 0.0, "no braces"),
    (ans('{"bbox_2d": [1.5, 2, 3, 4]}'), 0.0, "float coordinate"),
    (ans('{"bbox_2d": [-1, 2, 3, 4]}'), 0.0, "negative coordinate"),
    (ans('{"bbox_2d": [ 1, 2, 3, 4]}'), 0.0, "space after [ is not allowed"),
    ("<think>{[1, 2, 3, 4]}</think><answer>x</answer>", 0.0, "box only in the thinking"),
    ('<answer>{"bbox_2d": [1, 2, 3, 4]}</answer>', 0.0, "no think block"),
]


@pytest.mark.parametrize(("text", "expected", "why"), REC_FORMAT_CASES)
def test_rec_format(text, expected, why) -> None:
    assert one("vlm_r1.rec_format", text) == expected, why


# --- REC IoU (qwen_module.py iou_reward) ---------------------------------------------------------

GT_BOX = [0, 0, 10, 10]
REC_CASES = [
    (ans('{"bbox_2d": [0, 0, 10, 10]}'), 1.0, "exact box"),
    (ans("[5, 0, 15, 10]"), 1 / 3, "half overlap (no braces needed here)"),
    (ans("[8, 0, 18, 10]"), 20 / 180, "2 px overlap counts"),
    (ans("[9, 0, 20, 10]"), 0.0, "1 px overlap → 0 (the -1/+1 extents; plain IoU gives 0.05)"),
    (ans("[0.0, 0.0, 10.0, 10.0]"), 0.0, "floats never match the integer regex"),
    (ans("[-2, 0, 10, 10]"), 0.0, "negative numbers never match"),
    (ans("[ 0, 0, 10, 10]"), 0.0, "a space after [ never matches"),
    (ans("[0, 0, 10, 10]") + ans("[50, 50, 60, 60]"), 1.0, "the FIRST <answer> is read"),
    (ans("[50, 50, 60, 60]") + ans("[0, 0, 10, 10]"), 0.0, "a later right answer is ignored"),
    (ans('{"a": [0, 0, 10, 10], "b": [50, 50, 60, 60]}'), 1.0, "first box inside the answer"),
    ("<answer>\n[0, 0,\n 10, 10]\n</answer>", 1.0, "DOTALL answer, whitespace after commas"),
    ("<think>[0, 0, 10, 10]</think><answer>none</answer>", 0.0, "box outside the answer"),
    ("[0, 0, 10, 10]", 0.0, "no <answer> tag"),
    (ans("[20, 20, 30, 30]"), 0.0, "disjoint"),
]


@pytest.mark.parametrize(("text", "expected", "why"), REC_CASES)
def test_rec_iou(text, expected, why) -> None:
    assert one("vlm_r1.rec_iou", text, boxes=[GT_BOX]) == pytest.approx(expected), why


def test_rec_iou_zero_union_is_zero() -> None:
    assert one("vlm_r1.rec_iou", ans("[5, 5, 5, 5]"), boxes=[[5, 5, 5, 5]]) == 0.0


GT_COLUMN_CASES = [
    ({"answer": "[0, 0, 10, 10]", "boxes": []}, 1.0, "answer column as a JSON list"),
    ({"answer": '{"bbox_2d": [0, 0, 10, 10]}'}, 1.0, "answer column as a bbox_2d object"),
    ({"answer": "<answer> [0, 0, 10, 10] </answer>"}, 1.0, "answer column with tags"),
    ({"answer": "[50, 50, 60, 60]", "boxes": [GT_BOX]}, 1.0, "boxes win over answer"),
]


@pytest.mark.parametrize(("columns", "expected", "why"), GT_COLUMN_CASES)
def test_rec_iou_ground_truth_columns(columns, expected, why) -> None:
    assert one("vlm_r1.rec_iou", ans("[0, 0, 10, 10]"), **columns) == expected, why


def test_rec_iou_unreadable_ground_truth_names_the_row() -> None:
    with pytest.raises(ValueError, match=r"vlm_r1\.rec_iou: row 1: .*not a JSON box"):
        R["vlm_r1.rec_iou"]([ans("[0, 0, 1, 1]")] * 2, answer=["[0, 0, 1, 1]", "cat"])


PRED = ans("[10, 10, 50, 30]")  # in a 140x112 input frame (grid 8x10) of a 280x224 image
RESIZE_CASES = [
    ({"image_grid_thw": [[1, 8, 10]], "image_sizes": [[[280, 224]]]}, 1.0, "grid ×14 → original"),
    ({"image_grid_thw": [np.array([1, 8, 10])], "image_sizes": [[[280, 224]]]}, 1.0, "array row"),
    ({"image_grid_thw": [[[1, 8, 10]]], "image_sizes": [[[280, 224]]]}, 1.0, "per-image rows"),
    ({"input_size": [[140, 112]], "image_sizes": [[[280, 224]]]}, 1.0, "input_size column"),
    ({"input_size": [[140, 112]], "images": [[Image.new("RGB", (280, 224))]]}, 1.0, "PIL size"),
    ({"input_size": [[140, 112]], "images": [["IMAGE_PATH"]]}, 1.0, "image path opened"),
    ({"image_sizes": [[[280, 224]]]}, 300 / 3700, "no input frame: no resize"),
    ({"image_grid_thw": [[1, 8, 10]]}, 300 / 3700, "no original size: no resize"),
    ({}, 300 / 3700, "neither: the pre-00755a2 behaviour"),
]


@pytest.mark.parametrize(("columns", "expected", "why"), RESIZE_CASES)
def test_rec_iou_post_resize(columns, expected, why, tmp_path) -> None:
    if columns.get("images") == [["IMAGE_PATH"]]:
        Image.new("RGB", (280, 224)).save(tmp_path / "img.png")
        columns = {**columns, "images": [[str(tmp_path / "img.png")]]}
    got = R["vlm_r1.rec_iou"]([PRED], boxes=[[[20, 20, 100, 60]]], **columns)
    assert got == [pytest.approx(expected)], why


def test_rec_iou_resize_x_and_y_separately() -> None:
    columns = {"image_grid_thw": [[1, 4, 10]], "image_sizes": [[[140, 112]]]}  # 140x56 → 140x112
    got = R["vlm_r1.rec_iou"]([ans("[0, 0, 70, 28]")], boxes=[[[0, 0, 70, 56]]], **columns)
    assert got == [1.0]


BINARY_CASES = [
    (ans("[0, 0, 10, 10]"), [0, 0, 10, 16], 1.0, "IoU 0.625 > 0.5"),
    (ans("[0, 0, 10, 10]"), [0, 0, 10, 20], 0.0, "IoU exactly 0.5 is not > 0.5"),
    (ans("[0.0, 0, 10, 10]"), [0, 0, 10, 10], 0.0, "no integer box"),
]


@pytest.mark.parametrize(("text", "gt", "expected", "why"), BINARY_CASES)
def test_rec_iou_binary(text, gt, expected, why) -> None:
    assert one("vlm_r1.rec_iou_binary", text, boxes=[gt]) == expected, why


# --- accuracy (default_accuracy_reward) ----------------------------------------------------------

ACCURACY_CASES = [
    (ans(" \\frac{1}{2} "), "0.5", 1.0, "math-verify: fraction vs decimal"),
    (ans("1,000"), "1000", 1.0, "math-verify: thousands separator"),
    (ans("3 cm"), "3", 1.0, "math-verify: units"),
    (ans("1e3"), "1000", 1.0, "math-verify fails; float equality of clean_text strings"),
    (ans("4"), "3", 0.0, "both floats and unequal: 0, not a ratio"),
    (ans("three apples"), "3 apples", 0.7, "digit in GT, pred not a float: Levenshtein ratio"),
    (ans("B."), "B", 1.0, "choice letter"),
    (ans("The answer is B."), "B", 1.0, "choice letter found in a sentence"),
    (ans("C."), "B", 0.0, "wrong letter"),
    (ans("(B)"), "B", 0.0, "extract_choice needs punctuation or the end after the letter"),
    (ans("red"), "B", 0.0, "no letter in the prediction: 0, not a ratio"),
    (ans("A Cat.\n"), "a cat", 1.0, "clean_text: case, trailing full stop, newline"),
    (ans("cat"), "cats", 6 / 7, "text: Levenshtein ratio"),
    (ans(""), "abc", 0.0, "empty answer"),
    ("42", "42", 1.0, "no <answer>: the whole text is the prediction"),
    (ans("1") + "<answer>2</answer>", "2", 1.0, "the LAST <answer> is read"),
    (ans("5"), "<answer>5</answer>", 1.0, "tags in the answer column are stripped"),
]


@pytest.mark.parametrize(("text", "answer", "expected", "why"), ACCURACY_CASES)
def test_accuracy(text, answer, expected, why) -> None:
    assert one("vlm_r1.accuracy", text, answer=answer) == pytest.approx(expected), why


def test_accuracy_main_thread_does_not_use_a_worker(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("main-thread path must not spawn a process")

    monkeypatch.setattr(_math_verify, "_call_in_worker", refuse)
    assert R["vlm_r1.accuracy"]([ans("\\frac{2}{4}")], answer=["0.5"]) == [1.0]


def test_accuracy_from_a_thread() -> None:
    """signal.alarm raises ValueError off the main thread; the worker process path must not."""
    got: dict[str, object] = {}

    def run() -> None:
        try:
            got["value"] = R["vlm_r1.accuracy"](
                [ans("\\frac{1}{2}"), ans("\\frac{1}{3}"), ans("1e3")],
                answer=["0.5", "0.5", "1000"],
            )
        except Exception as exc:  # surfaced below
            got["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert "error" not in got, got.get("error")
    assert got["value"] == [1.0, 0.0, 1.0]
    assert _math_verify._pool is not None, "the thread path goes through the worker process"


def test_worker_timeout_kills_and_replaces_the_worker() -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        _math_verify._call_in_worker(time.sleep, (60,), 0.5)
    assert time.monotonic() - start < 30
    assert _math_verify._call_in_worker(abs, (-3,), 30) == 3


# --- object detection: map / odLength (grpo_jsonl.py) --------------------------------------------

ONE = 1 - 2e-16  # pycocotools' precision is tp / (tp + fp + eps)
MAP_CASES = [
    # (completion, answer, ap, ap50, odlength, why)
    (ans(GT2), GT2, ONE, ONE, ONE, "perfect"),
    (ans("None"), "None", 1.0, 1.0, 1.0, "both None"),
    (ans(fence([])), "None", 1.0, 1.0, 1.0, "empty list vs None: both lists empty"),
    (ans("none"), "None", 1.0, 1.0, 1.0, "lower-case none: no fences, both empty"),
    (ans(fence([CAT])), "None", 0.0, 0.0, 0.0, "boxes where there are none"),
    (ans("None"), GT2, 0.0, 0.0, 0.0, "None where there are boxes"),
    (GT2, GT2, 0.0, 0.0, 0.0, "no <answer> tag"),
    (ans("```json\n[{'bbox_2d': [0, 0, 1, 1]\n```"), GT2, 0.0, 0.0, 0.0, "invalid JSON"),
    (ans(fence([CAT, DOG, ZEBRA])), GT2, ONE, ONE, 2 / 3, "hallucinated label: free for AP"),
    (ans(fence([ZEBRA])), GT2, 0.0, 0.0, 0.0, "only unknown labels: all dropped"),
    (ans(fence([CAT])), GT2, 0.5, 0.5, 0.5, "one category missed"),
    (ans(fence([CAT, CAT])), fence([CAT]), ONE, ONE, 1 / 2, "duplicate: free for AP"),
    (ans(fence([box("cat", 0, 0, 100, 62)])), fence([CAT]), 0.3, ONE, 0.3, "IoU .62: 3 of 10"),
    (ans(fence([DOG]) + " then " + fence([CAT, DOG])), GT2, ONE, ONE, ONE, "LAST json block"),
    (ans(fence([DOG])) + ans(GT2), GT2, ONE, ONE, ONE, "LAST <answer>"),
    (ans(fence([{"label": "cat"}, CAT, DOG])), GT2, ONE, ONE, 2 / 3, "malformed item dropped"),
]


@pytest.mark.parametrize(("text", "answer", "ap", "ap50", "odl", "why"), MAP_CASES)
def test_map_family(text, answer, ap, ap50, odl, why) -> None:
    assert one("vlm_r1.ap", text, answer=answer) == pytest.approx(ap, abs=1e-9), why
    assert one("vlm_r1.ap50", text, answer=answer) == pytest.approx(ap50, abs=1e-9), why
    assert one("vlm_r1.odlength", text, answer=answer) == pytest.approx(odl, abs=1e-9), why


def test_map_matches_full_cocoeval_summary() -> None:
    """The reduced evaluation (area all, maxDets 100) equals COCOeval.summarize's stats."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    rng = np.random.default_rng(0)
    for _ in range(20):
        gts = [box(str(rng.choice(["a", "b"])), *_rand_box(rng)) for _ in range(rng.integers(1, 5))]
        preds = [box(str(rng.choice(["a", "b"])), *_rand_box(rng)) for _ in range(4)]
        preds += [box(g["label"], *(np.array(g["bbox_2d"]) + 2).tolist()) for g in gts]
        cats = {label: i for i, label in enumerate(dict.fromkeys(g["label"] for g in gts))}
        coco = COCO()
        coco.dataset = {
            "images": [{"id": 0, "width": 2048, "height": 2048}],
            "categories": [{"id": i, "name": n} for n, i in cats.items()],
            "annotations": [_ann(i + 1, g, cats) for i, g in enumerate(gts)],
        }
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
            dets = [{**_ann(0, p, cats), "score": 1.0} for p in preds if p["label"] in cats]
            full = COCOeval(coco, coco.loadRes(dets), "bbox")
            full.evaluate()
            full.accumulate()
            full.summarize()
        got = _coco_stats(json.dumps(preds, sort_keys=True), json.dumps(gts, sort_keys=True))
        assert got == (full.stats[0], full.stats[1])


def _rand_box(rng) -> list[int]:
    x, y = rng.integers(0, 300, size=2)
    return [int(x), int(y), int(x + rng.integers(5, 80)), int(y + rng.integers(5, 80))]


def _ann(ann_id: int, item: dict, cats: dict) -> dict:
    x1, y1, x2, y2 = item["bbox_2d"]
    bbox = [x1, y1, x2 - x1, y2 - y1]
    return {"id": ann_id, "image_id": 0, "category_id": cats[item["label"]], "bbox": bbox,
            "area": bbox[2] * bbox[3], "iscrowd": 0}  # fmt: skip


def test_map_malformed_ground_truth_names_the_row() -> None:
    with pytest.raises(ValueError, match=r"vlm_r1\.odlength: row 0: .*ground-truth"):
        R["vlm_r1.odlength"]([ans(GT2)], answer=["```json [{'a': 1}```"])


def test_map_unfenced_json_list_ground_truth() -> None:
    """Deviation (data only): a bare JSON list in the answer column is the ground truth."""
    assert one("vlm_r1.ap50", ans(GT2), answer=json.dumps([CAT, DOG])) == pytest.approx(1.0)


# --- weighted_sum / detection_score (grpo_jsonl.py) ----------------------------------------------

NEAR_CAT = box("cat", 0, 0, 100, 80)  # IoU 0.8 with CAT
WEIGHTED_CASES = [
    (ans(GT2), GT2, 1.0, "perfect"),
    (ans("None"), "None", 1.0, "both none"),
    (ans("none."), "None", 1.0, "none after clean_text"),
    (ans(fence([CAT])), "None", 0.0, "boxes where there are none"),
    (ans("None"), GT2, 0.0, "no predictions"),
    (ans(fence([])), fence([]), 1.0, "empty ground-truth list, no predictions"),
    (ans(fence([CAT])), fence([]), 0.0, "empty ground-truth list, a prediction"),
    (ans(fence([box("Cat", 0, 0, 100, 100)])), fence([CAT]), 1.0, "labels compared lower-case"),
    (ans(fence([box("dog", 0, 0, 100, 100)])), fence([CAT]), 0.3, "label mismatch: IoU 0"),
    (ans(fence([box("dog", 500, 500, 600, 600)])), fence([CAT]), 0.0, "no match at all"),
    (
        ans(fence([box("dog", 0, 0, 100, 100), NEAR_CAT])),
        fence([CAT]),
        0.3 * 0.75,
        "the mismatched best pair consumes the GT; the right cat is a false alarm",
    ),
    (ans(fence([CAT])), GT2, 0.7 * 0.5 + 0.3 * 0.75, "one of two found: position and miss"),
    (ans(fence([CAT, ZEBRA])), fence([CAT]), 0.7 + 0.3 * 0.75, "hallucination: false alarm"),
    (ans(fence([NEAR_CAT])), fence([CAT]), 0.7 * 0.8 + 0.3, "position is the IoU"),
    (ans(fence([box("cat", 0, 0, 100, 40)])), fence([CAT]), 0.0, "IoU 0.4 < 0.5: unmatched"),
    (ans(fence([CAT]) + fence([DOG])), fence([CAT]), 1.0, "FIRST json block (unlike map)"),
    (ans(fence([{"label": "cat"}])), fence([CAT]), 0.0, "box without bbox_2d: IoU 0"),
]


@pytest.mark.parametrize(("text", "answer", "expected", "why"), WEIGHTED_CASES)
def test_weighted_sum(text, answer, expected, why) -> None:
    assert one("vlm_r1.weighted_sum", text, answer=answer) == pytest.approx(expected), why


# --- repetition (repetition_rewards) -------------------------------------------------------------

A, B = box("a", 1, 2, 3, 4), box("b", 1, 2, 3, 4)
REPETITION_CASES = [
    ("", 0.0, "empty completion"),
    (fence([A, B, CAT]), 0.0, "distinct boxes (same box, other label counts as distinct)"),
    (fence([A, A, A, B]), -0.5, "box 1-grams: 2 unique of 4"),
    ("```\n" + json.dumps([A, A]) + "\n```", -0.5, "plain ``` fence"),
    ("boxes: " + json.dumps([A, A, A, A]), -0.75, "bare [{bbox_2d, label}] array"),
    ("```json\n[1, 1, 1, 1, 1, 1, 1]\n```", 0.0, "JSON list without box items: 0"),
    ("one two three four five", 0.0, "fewer than 6 words"),
    ("the cat sat on the mat", 0.0, "one 6-gram"),
    ("no No nO no no no no", -0.5, "word 6-grams, lower-cased: 1 unique of 2"),
    ("a b c d e f a b c d e f", 1 / 7 * -1, "12 words: 6 unique of 7 6-grams"),
    ('```json\n[{"bbox_2d": [1, 2\n```' + " w" * 7, -1 / 7, "bad JSON (no json_repair): words"),
    ("```json []``` x x x x x x x", -0.25, "empty JSON list: word path"),
]


@pytest.mark.parametrize(("text", "expected", "why"), REPETITION_CASES)
def test_repetition(text, expected, why) -> None:
    assert one("vlm_r1.repetition", text) == pytest.approx(expected), why


# --- cosine length reward (cosine_rewards) -------------------------------------------------------

COSINE_CASES = [
    (0, 1.0, "L = 0"),
    (512, 0.75, "L = 512"),
    (1024, 0.5, "L = 1024"),
    (1536, 0.75, "periodic beyond 1024: rises again"),
    (2048, 1.0, "periodic: back to 1.0 at 2048"),
]


@pytest.mark.parametrize(("length", "expected", "why"), COSINE_CASES)
def test_cosine_bug_always_correct_curve(length, expected, why) -> None:
    wrong = ans("nothing right here")  # the bug: accuracy is forced to 1.0
    got = R["vlm_r1.cosine"]([wrong], completion_ids=[[7] * length], answer=[GT2])
    assert got == [pytest.approx(expected)], why


def test_cosine_whitespace_fallback() -> None:
    assert R["vlm_r1.cosine"](["a b c"]) == [pytest.approx(vlm_r1.cosine_value(3, True))]


INTENDED_CASES = [
    (ans(GT2), GT2, 0, 1.0, "correct (score 1), short"),
    (ans(GT2), GT2, 1024, 0.5, "correct, long"),
    (ans("None"), "None", 0, 1.0, "None vs None is correct"),
    (ans(fence([CAT, ZEBRA])), fence([CAT]), 0, 1.0, "score 0.925 ≥ 0.7"),
    (ans(fence([CAT])), GT2, 0, -0.5, "score 0.575 < 0.7: wrong, short"),
    (ans(fence([CAT])), GT2, 1024, 0.0, "wrong, long"),
    (ans(fence([CAT])), GT2, 2048, -0.5, "wrong, periodic"),
]


@pytest.mark.parametrize(("text", "answer", "length", "expected", "why"), INTENDED_CASES)
def test_cosine_intended(text, answer, length, expected, why) -> None:
    got = R["vlm_r1.cosine_intended"]([text], answer=[answer], completion_ids=[[0] * length])
    assert got == [pytest.approx(expected)], why


# --- helpers -------------------------------------------------------------------------------------

CLEAN_CASES = [
    ("<answer>x</answer><answer> Last One. </answer>", "last one", "last answer, case, stop"),
    ("a \nb", "a b", "newline after a space is deleted"),
    ("a\nb", "a b", "other newlines become spaces"),
    ("3...", "3", "all trailing full stops"),
]


@pytest.mark.parametrize(("text", "expected", "why"), CLEAN_CASES)
def test_clean_text(text, expected, why) -> None:
    assert clean_text(text) == expected, why


def test_iou_matches_plain_iou_away_from_one_pixel() -> None:
    assert iou([0, 0, 10, 10], [5, 5, 15, 15]) == pytest.approx(25 / 175)


# --- contract ------------------------------------------------------------------------------------

EXPECTED_NAMES = {
    "vlm_r1.format", "vlm_r1.rec_format", "vlm_r1.rec_iou", "vlm_r1.rec_iou_binary",
    "vlm_r1.accuracy", "vlm_r1.odlength", "vlm_r1.ap", "vlm_r1.ap50", "vlm_r1.weighted_sum",
    "vlm_r1.repetition", "vlm_r1.cosine", "vlm_r1.cosine_intended", "vlm_r1.math",
    "vlm_r1.rec_baseline_format",
}  # fmt: skip
RANGES = {"vlm_r1.repetition": (-1.0, 0.0), "vlm_r1.cosine": (0.5, 1.0)}
RANGES["vlm_r1.cosine_intended"] = (-0.5, 1.0)

BATCH = [
    ans(GT2),
    [{"role": "assistant", "content": ans(fence([CAT, ZEBRA, ZEBRA]))}],
    ans('{"bbox_2d": [0, 0, 10, 10]}'),
    "",
    "no tags at all " * 20,
    ans("None"),
]


def test_registry_names() -> None:
    assert set(R) == EXPECTED_NAMES
    assert all(REGISTRY[name] is fn for name, fn in R.items())


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_one_value_per_completion_in_range(name) -> None:
    n = len(BATCH)
    columns = {
        "answer": [GT2, GT2, "[0, 0, 10, 10]", "None", "text", "None"],
        "boxes": [[GT_BOX]] * n,
        "completion_ids": [[1] * k for k in (10, 300, 900, 1, 1500, 2)],
        "problem_type": ["detection"] * n,
        "trainer_state": None,
    }
    if name in {"vlm_r1.accuracy", "vlm_r1.rec_iou", "vlm_r1.rec_iou_binary"}:
        columns["answer"][:2] = ["[0, 0, 10, 10]"] * 2
    got = R[name](BATCH, **columns)
    low, high = RANGES.get(name, (0.0, 1.0))
    assert len(got) == n
    assert all(isinstance(v, float) and low <= v <= high for v in got), got


def test_conversational_and_plain_completions_agree() -> None:
    text = ans(fence([CAT]))
    for name in ("vlm_r1.format", "vlm_r1.weighted_sum", "vlm_r1.odlength", "vlm_r1.repetition"):
        plain = R[name]([text], answer=[GT2])
        chat = R[name]([[{"role": "assistant", "content": text}]], answer=[GT2])
        assert plain == chat, name


# --- prompt formats agree with their rewards -----------------------------------------------------

FORMAT_AGREEMENT = [
    (PROMPTS["think_answer"], "vlm_r1.format", "2", "default template"),
    (vlm_r1.PROMPT_FORMATS["rec_json"], "vlm_r1.rec_format", '{"bbox_2d": [1, 2, 3, 4]}', "REC"),
    (vlm_r1.PROMPT_FORMATS["od_json"], "vlm_r1.format", GT2, "odLength"),
    (vlm_r1.PROMPT_FORMATS["od_json"], "vlm_r1.format", "None", "odLength, no targets"),
]


@pytest.mark.parametrize(("fmt", "reward", "answer", "why"), FORMAT_AGREEMENT)
def test_prompt_format_target_earns_full_format_reward(fmt, reward, answer, why) -> None:
    target = fmt.render_target("reasoning", answer)
    assert fmt.is_well_formed(target), why
    assert R[reward]([target]) == [1.0], why
    assert "{Question}" in fmt.template, why
