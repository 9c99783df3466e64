"""vlrl.scoring.grounding against a verbatim copy of VLM-R1's REC evaluation
(tests/scoring/reference/vlm_r1_test_rec_r1.py): odd cases with a reason each, then seeded random
replies on which vlrl and the reference must agree to the last bit."""

from __future__ import annotations

import random

import pytest
from reference import vlm_r1_test_rec_r1 as vlm_r1

from vlrl.scoring.candidate import Candidate
from vlrl.scoring.grounding import extract_bbox, vlm_r1_iou, vlm_r1_rec, vlm_r1_rec_baseline

GOLD = (10, 10, 110, 60)


@pytest.mark.parametrize(
    ("response", "iou", "why"),
    [
        ('<answer>{"bbox_2d": [10, 10, 110, 60]}</answer>', 1.0, "JSON in the answer"),
        ('<answer>[{"bbox_2d": [10, 10, 110, 60], "label": "dog"}]</answer>', 1.0, "a JSON list"),
        ("<answer>[10, 10, 110, 60]</answer>", 0.0, "a bare list: no braces, [0, 0, 0, 0]"),
        ('{"bbox_2d": [10, 10, 110, 60]}', 0.0, "no answer tag"),
        ('<answer>{"bbox_2d": [0, 0, 5, 5]}</answer>'
         '<answer>{"bbox_2d": [10, 10, 110, 60]}</answer>', 0.0, "the first tag, not the last"),
        ('<answer>{"a": [0, 0, 5, 5], "b": [10, 10, 110, 60]}</answer>', 1.0,
         "several boxes: the greedy pattern takes the last"),
        ('<answer>{"bbox_2d": [10.0, 10, 110, 60]}</answer>', 0.0, "floats do not match"),
        ('<answer>{"bbox_2d": [ 10, 10, 110, 60]}</answer>', 0.0, "no space after the bracket"),
        ('<answer>{"bbox_2d": [-1, 10, 110, 60]}</answer>', 0.0, "negatives do not match"),
        ('<answer>\n{"bbox_2d":\n[10,10,110,60]\n}\n</answer>', 1.0, "newlines are fine"),
        ('<answer>{"bbox_2d": [109, 10, 200, 60]}</answer>', 0.0, "a one-pixel overlap is none"),
        ('<answer>{"bbox_2d": [10, 10, 60, 60]}</answer>', 0.5, "half: not above 0.5"),
    ],
)  # fmt: skip
def test_vlm_r1_rec_cases(response: str, iou: float, why: str) -> None:
    verdict = vlm_r1_rec(Candidate(response, "", "grounding", boxes=(GOLD,)))
    assert verdict.score == pytest.approx(iou), why
    assert verdict.correct == int(iou > 0.5), why


def test_vlm_r1_rec_rescales_and_reads_the_answer_box() -> None:
    # the model saw the image at half size: [5, 5, 55, 30] is the gold box there
    response = '<answer>{"bbox_2d": [5, 5, 55, 30]}</answer>'
    frames = ((100.0, 50.0), (200.0, 100.0))
    verdict = vlm_r1_rec(Candidate(response, "", "grounding", boxes=(GOLD,), box_frames=frames))
    assert verdict == ("[5, 5, 55, 30]", 1.0, 1)
    # without boxes, the gold is the box in the answer
    assert vlm_r1_rec(Candidate(response, "[5, 5, 55, 30]", "grounding")).correct == 1


def test_vlm_r1_rec_degenerate_boxes() -> None:
    # the reference divides by a zero union (ZeroDivisionError): a zero score here
    assert vlm_r1_rec(Candidate("no box", "", "grounding", boxes=((5, 5, 5, 5),))).score == 0.0
    assert vlm_r1_iou([0, 0, 0, 0], [5, 5, 5, 9]) == 0.0
    with pytest.raises(ValueError, match="item 'r1': no gold box"):
        vlm_r1_rec(Candidate("x", "none", "grounding", item_id="r1"))
    with pytest.raises(ValueError, match=r"item 'r2'.*numerical"):
        vlm_r1_rec(Candidate("x", "1", "numerical", item_id="r2"))


def _box(rng: random.Random, near: list[int] | None = None) -> list[int]:
    if near is not None and rng.random() < 0.7:
        return [max(0, v + rng.randint(-8, 8)) for v in near]
    x1, y1 = rng.randint(0, 400), rng.randint(0, 400)
    size = rng.choice([0, 1, 2, *[rng.randint(20, 200)] * 5])
    return [x1, y1, x1 + size, y1 + rng.choice([size, rng.randint(0, 200)])]


def _reply(rng: random.Random, box: list[int]) -> str:
    a, b, c, d = box
    other = [rng.randint(0, 50) for _ in range(4)]
    json = f'{{"bbox_2d": [{a}, {b}, {c}, {d}], "label": "cat"}}'
    inner = rng.choice(
        [json, json, json, f"[{a}, {b}, {c}, {d}]",
         f'[{{"bbox_2d": {other}}}, {{"bbox_2d": [{a},{b},{c},{d}]}}]',
         f'{{"bbox_2d": [{a}.5, {b}, {c}, {d}]}}', f'{{"bbox_2d": [{a}, {b},\n {c}, {d}] }}',
         f'{{"bbox_2d": [-{a}, {b}, {c}, {d}]}}', f"{{[{d}, {c}, {b}, {a}]}}"]
    )  # fmt: skip
    return rng.choice(
        [f"<think>the box {other}</think><answer>{inner}</answer>", inner,
         f"<answer>{inner}</answer>",
         f"<answer>{inner}</answer><answer>{{{other}}}</answer>",
         f"<answer>{{{other}}}</answer><answer>{inner}</answer>", f"<answer> {inner} </answer>"]
    )  # fmt: skip


def _reference(response: str, gold: list[int], frames) -> tuple[float, int]:
    box = vlm_r1.extract_bbox_answer(response)
    if frames is not None:
        (in_w, in_h), (img_w, img_h) = frames
        box = vlm_r1.resize_bbox(box, in_h, in_w, img_h, img_w)
    try:
        iou = vlm_r1.iou(box, gold)
    except ZeroDivisionError:
        iou = 0.0
    return max(iou, 0.0), int(iou > 0.5)


def test_vlm_r1_rec_agrees_with_the_reference() -> None:
    rng = random.Random(20)
    hits = 0
    for _ in range(400):
        gold = _box(rng)
        frames = None
        if rng.random() < 0.5:
            frames = ((rng.choice([280.0, 448.0, 644.0]), rng.choice([280.0, 476.0])),
                      (rng.choice([320.0, 640.0, 1000.0]), rng.choice([240.0, 480.0])))  # fmt: skip
        shown = gold
        if frames is not None:  # answer near the gold box as the model saw it
            (in_w, in_h), (img_w, img_h) = frames
            shown = [round(gold[0] * in_w / img_w), round(gold[1] * in_h / img_h),
                     round(gold[2] * in_w / img_w), round(gold[3] * in_h / img_h)]  # fmt: skip
        response = _reply(rng, _box(rng, near=shown))
        candidate = Candidate(response, "", "grounding", boxes=(tuple(gold),), box_frames=frames)
        score, correct = _reference(response, list(gold), frames)
        verdict = vlm_r1_rec(candidate)
        assert (verdict.score, verdict.correct) == (score, correct), (response, gold, frames)
        assert (extract_bbox(response) or [0, 0, 0, 0]) == vlm_r1.extract_bbox_answer(response)
        hits += correct
    assert 40 < hits < 360


def test_vlm_r1_iou_agrees_with_the_reference_on_every_small_box_pair() -> None:
    """Every pair of boxes with corners in 0..3 (touching, one-unit and nested overlaps in each
    direction, empty boxes): the reference's ``min(x2) - 1 > max(x1)`` edge, exactly."""
    spans = [(a, b) for a in range(4) for b in range(a, 4)]
    boxes = [[x1, y1, x2, y2] for x1, x2 in spans for y1, y2 in spans]
    for box1 in boxes:
        for box2 in boxes:
            try:
                expected = vlm_r1.iou(box1, box2)
            except ZeroDivisionError:
                expected = 0.0
            assert vlm_r1_iou(box1, box2) == expected, (box1, box2)
    # overlaps of exactly one unit count as none, in either direction
    assert vlm_r1_iou([0, 0, 10, 10], [0, 9, 10, 19]) == 0.0
    assert vlm_r1_iou([0, 0, 10, 10], [9, 0, 19, 10]) == 0.0
    assert vlm_r1_iou([0, 0, 10, 10], [0, 8, 10, 18]) == pytest.approx(20 / 180)


@pytest.mark.parametrize(
    ("rule", "name"),
    [(vlm_r1_rec, "VLM-R1's REC rule"), (vlm_r1_rec_baseline, "VLM-R1's baseline REC rule")],
)
def test_a_non_grounding_item_is_refused_naming_the_rule(rule, name) -> None:
    with pytest.raises(ValueError) as refused:
        rule(Candidate("[1, 2, 3, 4]", "1", "numerical", item_id="q7"))
    assert str(refused.value) == f"item 'q7': {name} has no rule for problem_type 'numerical'"
