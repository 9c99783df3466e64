"""The vlm_r1_od protocol against a verbatim copy of VLM-R1's OVD evaluation
(tests/scoring/reference/vlm_r1_test_od_r1.py): well-formed answers, edge cases with a reason
each, then seeded random outputs on which vlrl and the reference must agree to the last bit."""

from __future__ import annotations

import json
import math
import random

import pytest
from reference import vlm_r1_test_od_r1 as released

from vlrl.benchmarks import load_benchmark
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.grounding import extract_bbox_od, vlm_r1_od
from vlrl.scoring.protocols import get_protocol

GOLD = (10, 10, 110, 60)
OD_BENCHMARKS = ("refcoco_val_od", "refcoco_plus_val_od", "refcocog_val_od")


def _reference(response: str, gold: list[float]) -> tuple[float, int] | None:
    """The reference's IoU and verdict; None where the script stops with an error."""
    try:
        box, correct = released.score_one(response, gold)
        iou = released.iou(box, gold)
    except (TypeError, IndexError, ZeroDivisionError):
        return None
    return iou, correct


def _agree(response: str, gold=GOLD, frames=None):
    """vlrl's verdict, after checking it against the reference's (a crash of the script, and
    a NaN IoU it counts wrong, score 0 here)."""
    verdict = vlm_r1_od(Candidate(response, "", "grounding", boxes=(gold,), box_frames=frames))
    reference = _reference(response, list(gold))
    if reference is None or math.isnan(reference[0]):
        assert (verdict.score, verdict.correct) == (0.0, 0), response
        return verdict
    iou, correct = reference
    assert verdict.correct == correct, (response, gold)
    assert verdict.score == max(iou, 0.0), (response, gold)
    return verdict


WELL_FORMED = [
    ('```json\n[\n\t{"bbox_2d": [10, 10, 110, 60], "label": "the dog"}\n]\n```',
     [10, 10, 110, 60], "Qwen2.5-VL's fenced JSON list"),
    ('<think>a dog</think><answer>```json\n[{"bbox_2d": [10, 10, 110, 60]}]\n```</answer>',
     [10, 10, 110, 60], "inside the answer tags"),
    ('```json\n[{"bbox_2d": [10.5, 9.75, 109.0, 60.2], "label": "cat"}]\n```',
     [10.5, 9.75, 109.0, 60.2], "floats"),
    ('```json[{"bbox_2d": [10, 10, 110, 60]}]```', [10, 10, 110, 60], "no newlines"),
]  # fmt: skip

EDGE = [
    ('<answer>{"bbox_2d": [10, 10, 110, 60]}</answer>', None, "no fence: [0, 0, 0, 0]"),
    ('```\n[{"bbox_2d": [10, 10, 110, 60]}]\n```', None, "a fence without json"),
    ('```json\n{"bbox_2d": [10, 10, 110, 60]}\n```', None, "an object, not a list"),
    ("```json\n[[10, 10, 110, 60]]\n```", None, "a list of lists"),
    ('```json\n[{"bbox_2d": [0, 0, 5, 5]}, {"bbox_2d": [10, 10, 110, 60]}]\n```', [0, 0, 5, 5],
     "several boxes: the first"),
    ('```json\n[{"bbox_2d": [0, 0, 5, 5]}]\n``` then ```json\n[{"bbox_2d": [10, 10, 110, 60]}]'
     "\n```", [0, 0, 5, 5], "several blocks: the first"),
    ('<think>```json\n[{"bbox_2d": [0, 0, 5, 5]}]\n```</think><answer>```json\n'
     '[{"bbox_2d": [10, 10, 110, 60]}]\n```</answer>', [0, 0, 5, 5],
     "a block in the thinking comes first"),
    ("```json\n```", None, "an empty block"),
    ('```json\n[{"bbox_2d": [10, 10, 110, 60]\n```', None, "broken JSON"),
    ('```json\n[{"bbox_2d": [10, 10, 110, 60, 7]}]\n```', [10, 10, 110, 60],
     "five numbers: the first four"),
    ('```json\n[{"bbox_2d": [10, 10, 110]}]\n```', None, "three numbers: the script fails"),
    ('```json\n[{"bbox_2d": ["10", "10", "110", "60"]}]\n```', None,
     "quoted numbers: the script fails"),
    ('```json\n[{"bbox_2d": [true, 10, 110, 60]}]\n```', [1, 10, 110, 60], "true is 1"),
    ('```json\n[{"bbox_2d": [NaN, 10, 110, 60]}]\n```', None, "NaN: the script counts it wrong"),
    ('```json\n[{"bbox_2d": [-10, 10, 110, 60]}]\n```', [-10, 10, 110, 60], "negatives"),
    ('```json\n[{"bbox_2d": [110, 60, 10, 10]}]\n```', [110, 60, 10, 10], "an inverted box"),
    ('```json\n[{"bbox": [10, 10, 110, 60]}]\n```', None, "another key"),
]  # fmt: skip


@pytest.mark.parametrize(("response", "box", "why"), WELL_FORMED + EDGE)
def test_the_box_read_agrees_with_the_reference(response: str, box, why: str) -> None:
    _agree(response)
    assert extract_bbox_od(response) == box, why


@pytest.mark.parametrize(
    ("response", "iou", "why"),
    [
        ('```json\n[{"bbox_2d": [10, 10, 110, 60]}]\n```', 1.0, "the gold box"),
        ('```json\n[{"bbox_2d": [10, 10, 60, 60]}]\n```', 0.5, "half: not above 0.5"),
        ('```json\n[{"bbox_2d": [109, 10, 200, 60]}]\n```', 0.0, "a one-pixel overlap is none"),
        ("no box", 0.0, "[0, 0, 0, 0]"),
    ],
)
def test_iou_and_threshold(response: str, iou: float, why: str) -> None:
    verdict = _agree(response)
    assert verdict.score == pytest.approx(iou), why
    assert verdict.correct == int(iou > 0.5), why


def test_the_box_is_never_rescaled() -> None:
    """The script's ``normalized`` is always False: frames change nothing (the REC protocol
    rescales the same answer and finds it right)."""
    half = '```json\n[{"bbox_2d": [5, 5, 55, 30]}]\n```'
    frames = ((100.0, 50.0), (200.0, 100.0))
    assert _agree(half, frames=frames).correct == 0
    assert (
        get_protocol("vlm_r1_rec_baseline")
        .score(Candidate(half, "", "grounding", boxes=(GOLD,), box_frames=frames))
        .correct
    )


def test_the_protocol_and_its_benchmarks() -> None:
    protocol = get_protocol("vlm_r1_od")
    assert protocol.source == "om-ai-lab/VLM-R1@90052f4 src/eval/test_od_r1.py"
    assert (protocol.judge, protocol.covers) == ("none", frozenset({"grounding"}))
    with pytest.raises(ValueError, match="item 'b1': no gold box"):
        vlm_r1_od(Candidate("[1, 2, 3, 4]", "none", "grounding", item_id="b1"))
    for bench in OD_BENCHMARKS:
        cfg = load_benchmark(bench)
        # test_od_r1.py: the REC question template, 256 tokens, 500 of a seed-42 shuffle, no
        # rescale
        assert (cfg.protocols[0], cfg.prompt, cfg.max_new_tokens) == ("vlm_r1_od", "rec_json", 256)
        assert (cfg.subsample.n, cfg.subsample.seed, cfg.box_frame) == (500, 42, "original")
        assert cfg.file.endswith("_val_od.jsonl")


def _value(rng: random.Random, value: float) -> object:
    kind = rng.random()
    if kind < 0.75:
        return value
    if kind < 0.85:
        return value + rng.choice([0.25, 0.5])
    return rng.choice([str(value), True, None, [value], float("nan"), -value])


def _output(rng: random.Random, gold: list[int]) -> str:
    if rng.random() < 0.6:
        box = [v + rng.randint(-8, 8) for v in gold]
    else:
        x1, y1 = rng.randint(0, 400), rng.randint(0, 400)
        box = [x1, y1, x1 + rng.randint(0, 200), y1 + rng.randint(0, 200)]
    box = [_value(rng, v) for v in box] if rng.random() < 0.2 else box
    box = box[: rng.choice([2, 3, 4, 4, 4, 4, 5])] if rng.random() < 0.2 else box
    entry = {"bbox_2d": box, "label": "it"} if rng.random() < 0.9 else {"box": box}
    other = {"bbox_2d": [rng.randint(0, 50) for _ in range(4)]}
    body = rng.choice(
        [*[[entry]] * 6, [entry, other], [other, entry], entry, [box], [], "text"]
    )  # fmt: skip
    text = json.dumps(body, indent=rng.choice([None, 2]))
    if rng.random() < 0.1:
        text = text[: rng.randint(0, len(text))]  # cut off: broken JSON
    fences = ["```json\n{}\n```"] * 6 + ["```json{}```", "```\n{}\n```", "{}"]
    block = rng.choice(fences).format(text)
    return rng.choice(
        [block, block, f"<think>near {other}</think><answer>{block}</answer>",
         f"<answer>{block}</answer>", f"Sure! {block} Let me know.", "no box at all"]
    )  # fmt: skip


def test_vlm_r1_od_agrees_with_the_reference() -> None:
    rng = random.Random(20250313)
    hits = misses = failures = 0
    for _ in range(1500):
        gold = [rng.randint(0, 400), rng.randint(0, 400)]
        width = 0 if rng.random() < 0.05 else rng.randint(10, 300)  # a degenerate gold too
        gold += [gold[0] + width, gold[1] + rng.randint(10, 300)]
        response = _output(rng, gold)
        verdict = _agree(response, tuple(gold))
        failures += _reference(response, gold) is None
        hits += verdict.correct
        misses += not verdict.correct
    # the draw reaches both verdicts and the script's failures
    assert hits > 150 and misses > 300 and failures > 20, (hits, misses, failures)
