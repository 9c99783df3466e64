"""Case tables for the SATORI-R1 rewards (justairr/SATORI-R1 @ 8857b30 plugin.py, prompt.txt)."""

from __future__ import annotations

import re

import pytest

from vlrl.rewards import REGISTRY
from vlrl.rewards.satori import (
    CAPTION_BBOX_ANSWER_PATTERN,
    REWARDS,
    BBoxIoUReward,
    CaptionReward,
    format_reward,
    get_bbox_iou_reward,
    get_caption_reward,
    parse_boxes,
    smart_resize,
    union_iou,
    vqa_reward,
)

GOOD = "<caption>a dog on grass</caption><bbox>[[0, 0, 10, 10]]</bbox><answer>dog</answer>"

FORMAT_CASES = [
    (GOOD, 1.0, "caption → bbox → answer"),
    (
        " \n<caption>c</caption>\n<bbox> [[1,2,3,4]] </bbox>\n<answer>a</answer>\n",
        1.0,
        "whitespace",
    ),
    (GOOD + "\nextra line", 1.0, "MULTILINE $: trailing lines tolerated"),
    (GOOD + " extra", 0.0, "text after </answer> on the same line"),
    ("<caption>c</caption><bbox>[1,2,3,4]</bbox><answer>a</answer>", 0.0, "flat box: needs [["),
    ("<caption>c</caption><bbox>[[1,2,3,4],[5,6,7,8]]</bbox><answer>a</answer>", 1.0, "two boxes"),
    ("<bbox>[[1,2,3,4]]</bbox><answer>a</answer>", 0.0, "missing caption"),
    ("<caption>c</caption><answer>a</answer>", 0.0, "missing bbox"),
    ("<caption>c</caption><bbox>[[1,2,3,4]]</bbox>", 0.0, "missing answer"),
    ("<bbox>[[1,2,3,4]]</bbox><caption>c</caption><answer>a</answer>", 0.0, "out of order"),
    ("<think>t</think>" + GOOD, 0.0, "no <think> in this format"),
    ("x" + GOOD, 0.0, "text before caption"),
    ("<caption></caption><bbox>[[]]</bbox><answer></answer>", 1.0, "empty contents pass format"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format(text: str, expected: float, why: str) -> None:
    assert format_reward([text]) == [expected], why


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_fullmatch_pattern_agrees_with_reward(text: str, expected: float, why: str) -> None:
    matched = re.fullmatch(CAPTION_BBOX_ANSWER_PATTERN, text.strip(), re.DOTALL) is not None
    assert matched == (expected == 1.0), why


PARSE_CASES = [
    ("<bbox>[[1, 2, 3, 4]]</bbox>", [[1, 2, 3, 4]], "one box"),
    ("<bbox>[1, 2, 3, 4]</bbox>", [[1, 2, 3, 4]], "flat box wrapped"),
    ("<bbox> [[1.5, 2, 3, 4], [5, 6, 7, 8]] </bbox>", [[1.5, 2, 3, 4], [5, 6, 7, 8]], "spaces"),
    ("<bbox>[[1,2,3,4]]</bbox><bbox>[[9,9,9,9]]</bbox>", [[1, 2, 3, 4]], "first block only"),
    ("<bbox>[[1, 2, 3]]</bbox>", None, "three numbers"),
    ("<bbox>[[1, 2, 3, 'a']]</bbox>", None, "non-numeric"),
    ("<bbox>[]</bbox>", None, "empty list"),
    ("<bbox>((1, 2, 3, 4),)</bbox>", None, "tuples are not lists"),
    ("<bbox>[[1, 2, 3, 4]</bbox>", None, "syntax error"),
    ('<bbox>{"bbox_2d": [1, 2, 3, 4]}</bbox>', None, "JSON object"),
    ("[[1, 2, 3, 4]]", None, "missing tag"),
]


@pytest.mark.parametrize(("text", "expected", "why"), PARSE_CASES)
def test_parse_boxes(text: str, expected: list | None, why: str) -> None:
    assert parse_boxes(text) == expected, why


# Predictions in original pixels (no rescaling) isolate the union-IoU rule.
IOU_CASES = [
    ([[0, 0, 10, 10]], [[0, 0, 10, 10]], 1.0, "exact"),
    ([[0, 0, 5, 10]], [[0, 0, 10, 10]], 0.5, "half"),
    ([[0, 0, 5, 10], [5, 0, 10, 10]], [[0, 0, 10, 10]], 1.0, "two halves make the union"),
    ([[0, 0, 10, 10]], [[0, 0, 5, 10], [5, 0, 10, 10]], 1.0, "box count irrelevant"),
    ([[0, 0, 10, 10], [0, 0, 10, 10]], [[0, 0, 10, 10]], 1.0, "duplicates not double-counted"),
    ([[0, 0, 10, 10], [20, 0, 30, 10]], [[0, 0, 10, 10]], 0.5, "extra box halves the score"),
    ([[0, 0, 10, 10], [5, 5, 15, 15]], [[0, 0, 15, 15]], 175 / 225, "overlapping union (L shape)"),
    ([[10, 10, 0, 0]], [[0, 0, 10, 10]], 1.0, "reversed corners: same rectangle"),
    ([[0, 0, 0, 10]], [[0, 0, 10, 10]], 0.0, "zero-area box"),
    ([[20, 20, 30, 30]], [[0, 0, 10, 10]], 0.0, "disjoint"),
]


@pytest.mark.parametrize(("pred", "gold", "expected", "why"), IOU_CASES)
def test_union_iou(pred: list, gold: list, expected: float, why: str) -> None:
    reward = BBoxIoUReward(prediction_frame="original")
    got = reward([f"<bbox>{pred}</bbox>"], boxes=[gold], image_sizes=[[[100, 100]]])
    assert got == [pytest.approx(expected, abs=1e-6)], why


def test_union_iou_keeps_the_epsilon() -> None:
    assert union_iou([[0, 0, 10, 10]], [[0, 0, 10, 10]]) == 100 / (100 + 1e-6)


SIZE_CASES = [
    (640, 480, (476, 644), "round to multiples of 28 inside the pixel range"),
    (1920, 1080, (448, 840), "above max_pixels: scaled down, floored"),
    (200, 150, (392, 532), "below min_pixels: scaled up, ceiled"),
    (28, 28, (448, 448), "tiny square"),
]


@pytest.mark.parametrize(("width", "height", "expected", "why"), SIZE_CASES)
def test_smart_resize(width: int, height: int, expected: tuple, why: str) -> None:
    h, w = smart_resize(height, width)
    assert (h, w) == expected, why
    assert 200704 <= h * w <= 401408 and h % 28 == 0 and w % 28 == 0


RESCALE_CASES = [
    ("input", "[[0, 0, 644, 476]]", 640, 480, [[0, 0, 640, 480]], 1.0, "full input frame"),
    ("input", "[[0, 0, 420, 224]]", 1920, 1080, [[0, 0, 960, 540]], 1.0, "downscaled image"),
    ("input", "[[0, 0, 266, 196]]", 200, 150, [[0, 0, 100, 75]], 1.0, "upscaled image"),
    ("original", "[[0, 0, 640, 480]]", 640, 480, [[0, 0, 640, 480]], 1.0, "original frame"),
    (
        "original",
        "[[0, 0, 420, 224]]",
        1920,
        1080,
        [[0, 0, 960, 540]],
        420 * 224 / (960 * 540),
        "original frame: no rescaling",
    ),
]


@pytest.mark.parametrize(("frame", "pred", "w", "h", "gold", "expected", "why"), RESCALE_CASES)
def test_rescaling_frames(frame, pred, w, h, gold, expected, why) -> None:
    reward = BBoxIoUReward(prediction_frame=frame)
    got = reward([f"<bbox>{pred}</bbox>"], boxes=[gold], image_sizes=[[[w, h]]])
    assert got == [pytest.approx(expected, abs=1e-6)], why


def test_pixel_limits_are_configurable() -> None:
    reward = get_bbox_iou_reward(min_pixels=28 * 28, max_pixels=640 * 480)  # 640x480 kept
    got = reward(
        ["<bbox>[[0, 0, 644, 476]]</bbox>"], boxes=[[[0, 0, 640, 480]]], image_sizes=[[[640, 480]]]
    )
    assert got == [pytest.approx(1.0, abs=1e-6)]


def test_size_columns_width_height_and_image_sizes_agree() -> None:
    text = ["<bbox>[[10, 10, 300, 200]]</bbox>"]
    gold = [[[0, 0, 320, 240]]]
    a = BBoxIoUReward()(text, boxes=gold, image_sizes=[[[640, 480]]])
    b = BBoxIoUReward()(text, bboxs=gold, width=[640], height=[480])
    assert a == b and 0.0 < a[0] < 1.0


BBOX_ROW_CASES = [
    ("no tag", [[0, 0, 10, 10]], 0.0, "missing <bbox>"),
    ("<bbox>[[1, 2, 3]]</bbox>", [[0, 0, 10, 10]], 0.0, "malformed box"),
    ("<bbox>[[0, 0, 10, 10]]</bbox>", [], None, "row without reference boxes"),
]


@pytest.mark.parametrize(("text", "gold", "expected", "why"), BBOX_ROW_CASES)
def test_bbox_rows(text: str, gold: list, expected: float | None, why: str) -> None:
    got = BBoxIoUReward()([text], boxes=[gold], image_sizes=[[[100, 100]]])
    assert got == [expected], why


def test_bbox_without_boxes_column_is_not_applicable() -> None:
    assert BBoxIoUReward()(["<bbox>[[0, 0, 1, 1]]</bbox>"]) == [None]


def test_bbox_without_size_is_an_error() -> None:
    with pytest.raises(ValueError, match="row 0"):
        BBoxIoUReward()(["<bbox>[[0, 0, 1, 1]]</bbox>"], boxes=[[[0, 0, 1, 1]]])


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"prediction_frame": "normalized"}, "unknown frame"),
        ({"min_pixels": 10, "max_pixels": 5}, "min > max"),
    ],
)
def test_bbox_factory_validates_eagerly(options: dict, why: str) -> None:
    with pytest.raises(ValueError):
        get_bbox_iou_reward(**options)


VQA_CASES = [
    ("<answer>two</answer>", ["2", "two"], 1.0, "exact member"),
    ("<answer> two \n</answer>", ["2", "two"], 1.0, "stripped"),
    ("<answer>Two</answer>", ["2", "two"], 0.0, "case differs"),
    ("<answer>two.</answer>", ["2", "two"], 0.0, "punctuation differs"),
    ("<answer>the two</answer>", ["2", "two"], 0.0, "article not removed"),
    ("<answer>tw</answer>", ["2", "two"], 0.0, "substring of an answer is not a member"),
    ("<answer>B</answer>", ["B. blue"], 0.0, "no option-letter parsing"),
    ("<answer>2</answer><answer>x</answer>", ["2"], 1.0, "first answer tag"),
    ("two", ["2", "two"], 0.0, "missing tag"),
    ("<answer></answer>", ["2", "two"], 0.0, "empty answer"),
]


@pytest.mark.parametrize(("text", "accepted", "expected", "why"), VQA_CASES)
def test_vqa(text: str, accepted: list[str], expected: float, why: str) -> None:
    assert vqa_reward([text], possible_answers=[accepted]) == [expected], why


VQA_FALLBACK_CASES = [
    (None, ["two"], 1.0, "column absent: [answer]"),
    ([None], ["two"], 1.0, "row without a list: [answer]"),
    ([[]], ["two"], 1.0, "empty list: [answer]"),
    (["two"], ["x"], 1.0, "bare string counts as one answer"),
    (["twofold"], ["x"], 0.0, "bare string is not a substring test"),
]


@pytest.mark.parametrize(("possible", "answer", "expected", "why"), VQA_FALLBACK_CASES)
def test_vqa_fallbacks(possible, answer, expected, why) -> None:
    got = vqa_reward(["<answer>two</answer>"], answer=answer, possible_answers=possible)
    assert got == [expected], why


CAPTION_CASES = [
    ("<caption>a dog on grass</caption>", "a dog on grass", 1.0, "identical"),
    ("<caption> A Dog On Grass </caption>", "a dog on grass", 1.0, "case and padding ignored"),
    ("<caption></caption>", "a dog on grass", 0.0, "empty caption"),
    ("no tag", "a dog on grass", 0.0, "missing tag"),
    (
        "<caption>blue sky</caption><caption>a dog on grass</caption>",
        "a dog on grass",
        0.0,
        "first caption tag",
    ),
    ("<caption>blue sky</caption>", "a dog on grass", 0.0, "no overlap"),
    ("<caption>a dog</caption>", "", 0.0, "empty reference caption"),
]


@pytest.mark.parametrize(("text", "reference", "expected", "why"), CAPTION_CASES)
def test_caption(text: str, reference: str, expected: float, why: str) -> None:
    assert CaptionReward()([text], caption=[reference]) == [pytest.approx(expected)], why


def test_caption_partial_overlap_is_half_bleu_half_rouge() -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    (got,) = CaptionReward()(["<caption>a dog runs</caption>"], caption=["a dog runs fast"])
    bleu = sentence_bleu(
        [["a", "dog", "runs", "fast"]],
        ["a", "dog", "runs"],
        smoothing_function=SmoothingFunction().method1,
    )
    rouge_l = 2 * 1.0 * 0.75 / 1.75
    assert got == pytest.approx((bleu + rouge_l) / 2)


def test_caption_reference_column_names() -> None:
    text = ["<caption>a dog</caption>"]
    assert CaptionReward()(text, image_caption=["a dog"]) == CaptionReward()(
        text, caption=["a dog"]
    )
    assert CaptionReward()(text) == [None]
    assert CaptionReward()(text, caption=[None]) == [None]


def test_caption_tokenizer_splits_sentence_final_periods() -> None:
    # word_tokenize splits "dog." only after sentence splitting; the data-free default does too.
    (got,) = CaptionReward()(["<caption>a dog. a cat.</caption>"], caption=["a dog . a cat ."])
    assert got == pytest.approx(1.0)


def test_caption_factory_validates_eagerly() -> None:
    with pytest.raises(ValueError):
        get_caption_reward(tokenizer="whitespace")


def test_caption_punkt_tokenizer_needs_its_data() -> None:
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        with pytest.raises(LookupError, match="punkt_tab"):
            get_caption_reward(tokenizer="punkt")(["<caption>a</caption>"], caption=["a"])
    else:
        assert get_caption_reward(tokenizer="punkt")(["<caption>a</caption>"], caption=["a"])


def test_system_prompt_example_earns_full_format() -> None:
    example = "<caption>c</caption> <bbox>[[1,2,3,4], [5,6,7,8]]</bbox> <answer>a</answer>"
    assert format_reward([example]) == [1.0]


def test_registry_names() -> None:
    assert set(REWARDS) == {
        "satori.format",
        "satori.format_think",
        "satori.bbox_iou",
        "satori.vqa",
        "satori.caption",
    }
    assert all(REGISTRY[name] is fn for name, fn in REWARDS.items())


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_one_value_per_completion_in_range(name: str) -> None:
    texts = [row[0] for row in FORMAT_CASES]
    completions = [[{"role": "assistant", "content": t}] for t in texts]  # conversational
    n = len(texts)
    got = REWARDS[name](
        completions,
        answer=["a"] * n,
        possible_answers=[["a", "dog"]] * n,
        boxes=[[[0, 0, 10, 10]]] * n,
        image_sizes=[[[640, 480]]] * n,
        caption=["a dog on grass"] * n,
    )
    assert len(got) == n
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in got)
