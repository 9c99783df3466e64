"""Case tables for the SATORI-R1 rewards.

Expected values follow the released ms-swift plugin, justairr/SATORI-R1 @ 8923be7 ``plugin.py``
(unchanged at HEAD 8857b30; verbatim in ``reference/released_satori_rewards.py``): ``Format``
lines 17-30, ``CaptionAccuracy`` 32-66, ``BoundingBoxAccuracy`` 68-139 (pixel limits line 97),
``VQAAccuracy`` 141-160; the prompt is ``prompt.txt`` @ 8857b30. ``smart_resize`` is
qwen-vl-utils 0.0.10 ``qwen_vl_utils/vision_process.py`` lines 44-85 (pinned by SATORI's
``environment.yaml`` line 380; verbatim in the same reference file).
``test_satori_released.py`` checks the same rewards against that copy on generated inputs.
"""

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

# plugin.py lines 24-30: re.match of ^\s*<caption>.*?</caption>\s*<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*
# <answer>.*?</answer>\s*$ with DOTALL | MULTILINE.
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


# plugin.py lines 75-95: first <bbox> block, ast.literal_eval, a flat box wrapped, 4 numbers each.
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


# Predictions in original pixels (no rescaling) isolate the union-IoU rule (plugin.py lines
# 121-139: shapely unary_union of each side, intersection / (union + 1e-6)).
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


# qwen-vl-utils 0.0.10 smart_resize (vision_process.py lines 59-85) with SATORI's limits,
# min_pixels=200704 and max_pixels=401408 (plugin.py line 97).
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


# plugin.py lines 97-102: predictions scaled by original / smart_resize size ("input" frame).
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


# A row without reference boxes: released 0.0, here None (deviation 4 of test_satori_released.py).
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


# plugin.py lines 148-158: first <answer>, stripped, ``in`` the possible answers (no normalisation).
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


# vlrl's column handling; released, a bare string is a substring test and an empty or missing list
# scores 0.0 or raises (deviations 6 and 7 of test_satori_released.py).
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


# plugin.py lines 39-64: first <caption>, stripped; (BLEU-4 with method1 smoothing on lower-cased
# word tokens + ROUGE-L F1 with stemmer on the raw strings) / 2.
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
    # prompt.txt @ 8857b30 asks for <bbox>[[x1,y1,x2,y2], ...]</bbox> between the other two tags.
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


# --- thresholds, validation and column handling (mutation-testing gaps) -----------------------

# qwen-vl-utils 0.0.10 smart_resize (vision_process.py lines 59-85) exactly on its thresholds;
# the values are the released function's (reference/released_satori_rewards.py).
SIZE_THRESHOLD_CASES = [
    (450, 895, (448, 896), "rounded size exactly max_pixels (448 * 896): kept, not scaled down"),
    (895, 450, (896, 448), "the same, transposed"),
    (450, 446, (448, 448), "rounded size exactly min_pixels (448 * 448): kept, not scaled up"),
    (1, 200, (56, 6356), "aspect ratio exactly 200: allowed"),
    (200, 1, (6356, 56), "aspect ratio exactly 200, transposed"),
]


@pytest.mark.parametrize(("height", "width", "expected", "why"), SIZE_THRESHOLD_CASES)
def test_smart_resize_thresholds(height: int, width: int, expected: tuple, why: str) -> None:
    assert smart_resize(height, width) == expected, why


def test_smart_resize_aspect_ratio_above_200_is_an_error() -> None:
    # 401 / 2 = 200.5 (released: "absolute aspect ratio must be smaller than 200, got 200.5")
    with pytest.raises(ValueError, match=r"^aspect ratio of 401x2 is above 200$"):
        smart_resize(2, 401)


def test_bbox_iou_uses_the_configured_max_pixels() -> None:
    # 640x480 with max_pixels 78400 is fed as 308x224 (released smart_resize with these limits).
    reward = BBoxIoUReward(min_pixels=28 * 28, max_pixels=78400)
    got = reward(
        ["<bbox>[[0, 0, 308, 224]]</bbox>"], boxes=[[[0, 0, 640, 480]]], image_sizes=[[[640, 480]]]
    )
    assert got == [pytest.approx(1.0, abs=1e-6)]


@pytest.mark.parametrize(
    ("min_pixels", "max_pixels", "input_box", "why"),
    [
        (1, 401408, "[[0, 0, 644, 476]]", "min_pixels 1 is valid (0 < 1)"),
        (401408, 401408, "[[0, 0, 756, 560]]", "min_pixels == max_pixels is valid"),
    ],
)
def test_bbox_pixel_limit_bounds_accepted(min_pixels, max_pixels, input_box, why) -> None:
    reward = get_bbox_iou_reward(min_pixels=min_pixels, max_pixels=max_pixels)
    got = reward(
        [f"<bbox>{input_box}</bbox>"], boxes=[[[0, 0, 640, 480]]], image_sizes=[[[640, 480]]]
    )
    assert got == [pytest.approx(1.0, abs=1e-6)], why


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_pixels": 0}, r"^need 0 < min_pixels <= max_pixels, got 0, 401408$"),
        ({"min_pixels": 10, "max_pixels": 5}, r"^need 0 < min_pixels <= max_pixels, got 10, 5$"),
        (
            {"prediction_frame": "normalized"},
            r"^prediction_frame must be 'input' or 'original', not 'normalized'$",
        ),
    ],
)
def test_bbox_option_errors_name_the_option(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_bbox_iou_reward(**options)


def test_caption_option_error_names_the_option() -> None:
    with pytest.raises(
        ValueError, match=r"^tokenizer must be 'punkt' or 'untrained_punkt', not 'x'$"
    ):
        get_caption_reward(tokenizer="x")


def test_reward_names() -> None:
    # TRL logs each reward under its function's __name__.
    assert REWARDS["satori.bbox_iou"].__name__ == "satori.bbox_iou"
    assert get_bbox_iou_reward(prediction_frame="original").__name__ == "satori.bbox_iou"
    assert REWARDS["satori.caption"].__name__ == "satori.caption"
    assert get_caption_reward().__name__ == "satori.caption"


# Zero-area boxes add nothing even where a coordinate is infinite (``1e999`` parses to inf): they
# must not turn the union's area into NaN (0 * inf, inf - inf).
INFINITE_CASES = [
    ("[[0, 0, 10, 10], [1e999, 0, 1e999, 10]]", 100 / (100 + 1e-6), "zero width at x = inf"),
    ("[[0, 0, 10, 10], [0, 1e999, 10, 1e999]]", 100 / (100 + 1e-6), "zero height at y = inf"),
    ("[[0, 0, 10, 1e999], [0, 5, 10, 1e999]]", 0.0, "two unbounded boxes: union inf, IoU 0"),
]


@pytest.mark.parametrize(("pred", "expected", "why"), INFINITE_CASES)
def test_infinite_coordinates_never_give_nan(pred: str, expected: float, why: str) -> None:
    reward = BBoxIoUReward(prediction_frame="original")
    got = reward([f"<bbox>{pred}</bbox>"], boxes=[[[0, 0, 10, 10]]], image_sizes=[[[100, 100]]])
    assert got == [expected], why


def test_bbox_row_without_boxes_does_not_stop_the_batch() -> None:
    text = "<bbox>[[0, 0, 5, 10]]</bbox>"
    got = BBoxIoUReward(prediction_frame="original")(
        [text, text], boxes=[[], [[0, 0, 10, 10]]], image_sizes=[[[20, 20]], [[20, 20]]]
    )
    assert got == [None, pytest.approx(0.5, abs=1e-6)]


def test_bbox_width_without_height_falls_back_to_image_sizes() -> None:
    got = BBoxIoUReward()(
        ["<bbox>[[0, 0, 644, 476]]</bbox>"],
        boxes=[[[0, 0, 640, 480]]],
        image_sizes=[[[640, 480]]],
        width=[640],
    )
    assert got == [pytest.approx(1.0, abs=1e-6)]


def test_bbox_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="zip"):
        BBoxIoUReward()(
            ["<bbox>[[0, 0, 1, 1]]</bbox>"] * 2, boxes=[[[0, 0, 1, 1]]], image_sizes=[[[9, 9]]] * 2
        )


def test_caption_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="zip"):
        CaptionReward()(["<caption>a</caption>"] * 2, caption=["a"])


def test_vqa_without_any_answer_column_names_the_row() -> None:
    with pytest.raises(
        ValueError, match=r"^satori.vqa: row 1 has neither possible_answers nor answer$"
    ):
        vqa_reward(["<answer>a</answer>"] * 2, possible_answers=[["a"], None])
