"""The vlm_r1_rec_baseline protocol against a verbatim copy of VLM-R1's baseline REC evaluation
(tests/scoring/reference/vlm_r1_test_rec_baseline.py, the script behind its SFT rows):
well-formed answers, then edge cases with a reason each, then seeded random outputs on which
vlrl and the reference must agree to the last bit."""

from __future__ import annotations

import random

import pytest
from reference import vlm_r1_test_rec_baseline as baseline

from vlrl.benchmarks import load_benchmark
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.grounding import extract_bbox_baseline, vlm_r1_rec_baseline
from vlrl.scoring.protocols import get_protocol

GOLD = (10, 10, 110, 60)
REC_BENCHMARKS = (
    "refcoco_val", "refcoco_plus_val", "refcocog_val", "lisa_grounding", "refcoco_testa",
    "refcoco_testb", "refcoco_plus_testa", "refcoco_plus_testb", "refcocog_test",
)  # fmt: skip


def _reference(response: str, gold: list[float], frames) -> tuple[float, int, list[float]]:
    """The reference's IoU (0 where it divides by a zero union), verdict and box as read."""
    read = baseline.extract_bbox_answer(response)
    box = list(read)
    if frames is not None:
        (in_w, in_h), (img_w, img_h) = frames
        box = baseline.resize_bbox(box, in_h, in_w, img_h, img_w)
    try:
        iou = baseline.iou(box, list(gold))
    except ZeroDivisionError:  # the script would stop here; vlrl scores 0
        return 0.0, 0, read
    correct = int(iou > 0.5)
    if frames is not None:  # the script's own loop body gives the same verdict
        assert baseline.score_one(response, in_h, in_w, img_h, img_w, list(gold)) == (box, correct)
    return max(iou, 0.0), correct, read


def _agree(response: str, gold=GOLD, frames=None):
    """vlrl's verdict, after checking it against the reference's."""
    verdict = vlm_r1_rec_baseline(Candidate(response, "", "grounding", boxes=(gold,),
                                            box_frames=frames))  # fmt: skip
    score, correct, read = _reference(response, list(gold), frames)
    assert (verdict.score, verdict.correct) == (score, correct), (response, gold, frames)
    assert (extract_bbox_baseline(response) or [0, 0, 0, 0]) == read, response
    return verdict


WELL_FORMED = [
    ('```json\n[\n\t{"bbox_2d": [10, 10, 110, 60], "label": "the dog"}\n]\n```',
     [10, 10, 110, 60], "Qwen2.5-VL's fenced JSON list"),
    ('```json\n{"bbox_2d": [10, 10, 110, 60]}\n```', [10, 10, 110, 60], "a fenced JSON object"),
    ('{"bbox_2d": [10, 10, 110, 60]}', [10, 10, 110, 60], "a JSON object"),
    ("[10, 10, 110, 60]", [10, 10, 110, 60], "a bare list"),
    ('{"bbox_2d": [10.0, 10.5, 110.25, 60]}', [10.0, 10.5, 110.25, 60.0], "floats"),
    ('```json\n[{"bbox_2d": [10.5, 9.75, 109.0, 60.2], "label": "cat"}]\n```',
     [10.5, 9.75, 109.0, 60.2], "floats in a fence"),
    ('<answer>{"bbox_2d": [10, 10, 110, 60]}</answer>', [10, 10, 110, 60], "tags are ignored"),
    ("The dog on the left is at [10, 10, 110, 60].", [10, 10, 110, 60], "text around"),
]  # fmt: skip

EDGE = [
    ("I cannot find it.", None, "no box: [0, 0, 0, 0]"),
    ('[{"bbox_2d": [0, 0, 5, 5]}, {"bbox_2d": [10, 10, 110, 60]}]', [0, 0, 5, 5],
     "several boxes: the first"),
    ("<think>first guess [0, 0, 5, 5]</think><answer>[10, 10, 110, 60]</answer>", [0, 0, 5, 5],
     "a box in the thinking comes before the answer's"),
    ("[-10, 10, 110, 60]", [-10, 10, 110, 60], "negatives match"),
    ("[.5, 10, 110, 60]", [0.5, 10, 110, 60], "a leading dot"),
    ("[ 10 , 10 ,110,60 ]", [10, 10, 110, 60], "spaces inside the brackets"),
    ("[\n  10,\n  10,\n  110,\n  60\n]", [10, 10, 110, 60], "newlines inside the brackets"),
    ("[[10, 10, 110, 60]]", [10, 10, 110, 60], "a nested list: the inner"),
    ("[1, 2, 3] and [10, 10, 110, 60]", [10, 10, 110, 60], "three numbers are no box"),
    ("[10, 10, 110, 60, 1]", None, "five numbers are no box"),
    ("[[10, 10], [110, 60]]", None, "two points are no box"),
    ("[10., 10, 110, 60]", None, "a trailing dot does not match"),
    ("[1e1, 10, 110, 60]", None, "exponents do not match"),
    ("[+10, 10, 110, 60]", None, "a plus sign does not match"),
    ('["10", "10", "110", "60"]', None, "quoted numbers do not match"),
    ("(10, 10, 110, 60)", None, "parentheses do not match"),
    ("[\u0661\u0660, 10, 110, 60]", [10, 10, 110, 60], "\\d and float() read Arabic-Indic digits"),
    ("[110, 60, 10, 10]", [110, 60, 10, 10], "an inverted box is read, scores 0"),
]  # fmt: skip


@pytest.mark.parametrize(("response", "box", "why"), WELL_FORMED + EDGE)
def test_the_box_read_agrees_with_the_reference(response: str, box, why: str) -> None:
    verdict = _agree(response)
    assert extract_bbox_baseline(response) == box, why
    assert (verdict.extracted is None) == (box is None), why


@pytest.mark.parametrize(
    ("response", "iou", "why"),
    [
        ("[10, 10, 110, 60]", 1.0, "the gold box"),
        ("[-10, 10, 110, 60]", 5000 / 6000, "a negative x1 widens the box"),
        ("[10, 10, 60, 60]", 0.5, "half: not above 0.5"),
        ("[109, 10, 200, 60]", 0.0, "a one-pixel overlap is none"),
        ("[110, 60, 10, 10]", 0.0, "an inverted box"),
        ("no box", 0.0, "[0, 0, 0, 0]"),
    ],
)
def test_iou_and_threshold(response: str, iou: float, why: str) -> None:
    verdict = _agree(response)
    assert verdict.score == pytest.approx(iou), why
    assert verdict.correct == int(iou > 0.5), why


def test_the_box_is_rescaled_from_the_model_input_frame() -> None:
    # the model saw the image at half size: [5, 5, 55, 30] is the gold box there
    frames = ((100.0, 50.0), (200.0, 100.0))
    verdict = _agree('```json\n[{"bbox_2d": [5, 5, 55, 30]}]\n```', frames=frames)
    assert verdict == ("[5.0, 5.0, 55.0, 30.0]", 1.0, 1)
    assert _agree("[5, 5, 55, 30]").correct == 0  # unscaled, the same box is wrong
    # without boxes, the gold is the box in the answer
    assert vlm_r1_rec_baseline(Candidate("[5, 5, 55, 30]", "[5, 5, 55, 30]", "grounding")).correct


def test_degenerate_and_refused_candidates() -> None:
    # the reference divides by a zero union (ZeroDivisionError): a zero score here
    assert _agree("no box", gold=(5, 5, 5, 5)).score == 0.0
    with pytest.raises(ValueError, match="item 'b1': no gold box"):
        vlm_r1_rec_baseline(Candidate("[1, 2, 3, 4]", "none", "grounding", item_id="b1"))
    with pytest.raises(ValueError, match=r"item 'b2'.*baseline.*numerical"):
        vlm_r1_rec_baseline(Candidate("[1, 2, 3, 4]", "1", "numerical", item_id="b2"))
    with pytest.raises(ValueError, match=r"'vlm_r1_rec_baseline' has no rule for .*numerical"):
        get_protocol("vlm_r1_rec_baseline").score(Candidate("[1, 2, 3, 4]", "1", "numerical"))


def test_the_protocol_differs_from_vlm_r1_rec_where_the_scripts_do() -> None:
    protocol = get_protocol("vlm_r1_rec_baseline")
    assert protocol.source == "om-ai-lab/VLM-R1@90052f4 src/eval/test_rec_baseline.py"
    assert (protocol.judge, protocol.covers) == ("none", frozenset({"grounding"}))
    rl = get_protocol("vlm_r1_rec")
    sft = Candidate('```json\n[{"bbox_2d": [10, 10, 110, 60]}]\n```', "", "grounding",
                    boxes=(GOLD,))  # fmt: skip
    assert (rl.score(sft).correct, protocol.score(sft).correct) == (0, 1)
    r1 = Candidate('<think>not [0, 0, 5, 5]</think><answer>{"bbox_2d": [10, 10, 110, 60]}'
                   "</answer>", "", "grounding", boxes=(GOLD,))  # fmt: skip
    assert (rl.score(r1).correct, protocol.score(r1).correct) == (1, 0)


@pytest.mark.parametrize("bench", REC_BENCHMARKS)
def test_rec_benchmarks_offer_it_after_vlm_r1_rec(bench: str) -> None:
    protocols = list(load_benchmark(bench).protocols)
    assert protocols[0] == "vlm_r1_rec"
    assert protocols.index("vlm_r1_rec_baseline") > protocols.index("vlm_r1_rec")


def _box(rng: random.Random, near: list[int] | None = None) -> list[float]:
    if near is not None and rng.random() < 0.7:
        box = [v + rng.randint(-8, 8) for v in near]
    else:
        x1, y1 = rng.randint(-5, 400), rng.randint(0, 400)
        size = rng.choice([0, 1, 2, *[rng.randint(20, 200)] * 5])
        box = [x1, y1, x1 + size, y1 + rng.choice([size, rng.randint(0, 200)])]
    if rng.random() < 0.3:  # decimals, as a model may write them
        return [v + rng.choice([0.0, 0.25, 0.5, 0.75]) for v in box]
    return box


def _number(rng: random.Random, value: float) -> str:
    text = f"{value:g}" if rng.random() < 0.8 else f"{value:.1f}"
    return rng.choice(["", "", "", " ", "\n  "]) + text + rng.choice(["", "", "", " "])


def _output(rng: random.Random, box: list[float]) -> str:
    nums = [_number(rng, v) for v in box]
    listed = "[" + ",".join(rng.choice([" ", "", "\n"]) + n for n in nums) + "]"
    other = f"[{', '.join(str(rng.randint(-20, 50)) for _ in range(4))}]"
    bad = rng.choice(["[1, 2, 3]", f"[{box[0]}, {box[1]}]", "[1e2, 3, 4, 5]", "[+1, 2, 3, 4]",
                      f"[{int(box[0])}., 1, 2, 3]", "(1, 2, 3, 4)", "[]"])  # fmt: skip
    obj = f'{{"bbox_2d": {listed}, "label": "the cat"}}'
    body = rng.choice(
        [obj, obj, f"[{obj}]", f"[\n\t{obj}\n]", listed,
         f'[{{"bbox_2d": {other}}}, {obj}]', f"[{obj}, {{\"bbox_2d\": {other}}}]",
         f"{bad} {obj}", f"{obj} {bad}", "no box at all", bad]
    )  # fmt: skip
    return rng.choice(
        [body, body, f"```json\n{body}\n```", f"The object is at {body}.",
         f"<think>near {other}</think><answer>{body}</answer>", f"<answer>{body}</answer>",
         f"Sure! ```json\n{body}\n``` Let me know.\n"]
    )  # fmt: skip


def test_vlm_r1_rec_baseline_agrees_with_the_reference() -> None:
    rng = random.Random(20250401)
    hits = misses = 0
    for _ in range(600):
        gold = [rng.randint(0, 400), rng.randint(0, 400)]
        gold += [gold[0] + rng.choice([0, rng.randint(10, 300)]), gold[1] + rng.randint(0, 300)]
        frames = None
        if rng.random() < 0.5:
            frames = ((rng.choice([280.0, 448.0, 644.0]), rng.choice([280.0, 476.0])),
                      (rng.choice([320.0, 640.0, 1000.0]), rng.choice([240.0, 480.0])))  # fmt: skip
        shown = gold
        if frames is not None:  # answer near the gold box as the model saw it
            (in_w, in_h), (img_w, img_h) = frames
            shown = [round(gold[0] * in_w / img_w), round(gold[1] * in_h / img_h),
                     round(gold[2] * in_w / img_w), round(gold[3] * in_h / img_h)]  # fmt: skip
        verdict = _agree(_output(rng, _box(rng, near=shown)), tuple(gold), frames)
        hits += verdict.correct
        misses += verdict.extracted is None
    # the generator reaches both verdicts and the no-box fallback
    assert 60 < hits < 500 and 20 < misses < 200, (hits, misses)
