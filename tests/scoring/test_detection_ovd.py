"""The vlm_r1_ovd protocol (vlrl.scoring.detection): the boxes it reads (a case table), the gold
answers it accepts, its greedy matching against a verbatim copy of VLM-R1's detection_score
(tests/scoring/reference/vlm_r1_detection_score.py) on generated answers, the per-item verdict,
and the detection metric kinds of the OVD benchmarks (coco_ap, greedy_precision, greedy_recall)
through vlrl.scoring.metrics.compute and the score stage's rule_scores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from reference import vlm_r1_detection_score as released

from vlrl.benchmarks import MetricSpec, load_benchmark
from vlrl.core.errors import StageError
from vlrl.items.predictions import Detection, Prediction, items_as_dicts
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.detection import gold_detections, greedy_right, read_detections, vlm_r1_ovd
from vlrl.scoring.metrics import compute
from vlrl.scoring.protocols import get_protocol
from vlrl.scoring.verdicts import rule_scores


def _block(boxes: list) -> str:
    return "```json\n" + json.dumps(boxes) + "\n```"


CAT = {"bbox_2d": [0, 0, 10, 10], "label": "cat"}
DOG = {"bbox_2d": [20, 20, 40, 40], "label": "dog"}

READ = [
    (f"<think>x</think><answer>{_block([CAT, DOG])}</answer>", [CAT, DOG], "a JSON list"),
    (_block([CAT]) + _block([DOG]), [CAT], "the first block only, as test_od_r1.py"),
    ("<answer>None</answer>", [], "None: nothing detected"),
    (f"<answer>{json.dumps([CAT])}</answer>", [], "no ```json fence: nothing read"),
    ("```json [{'bbox_2d': [0, 0, 10, 10], 'label': 'cat'}] ```", [], "not JSON"),
    (_block(CAT), [], "an object, not a list"),
    (_block([{"bbox_2d": [0, 0, 10], "label": "cat"}, DOG]), [DOG], "three numbers: dropped"),
    (_block([{"bbox_2d": [0, 0, 10, 10]}, DOG]), [DOG], "no label: dropped"),
    (_block([{"bbox_2d": [0, 0, True, 10], "label": "x"}]), [], "a boolean is no coordinate"),
    (_block([{"bbox_2d": [0, 0, 10, "10"], "label": "x"}]), [], "a string is no coordinate"),
    ('```json [{"bbox_2d": [0, 0, 1e999, 10], "label": "x"}] ```', [], "infinite: dropped"),
    (_block([{"bbox_2d": [0, 0, 10**400, 10], "label": "x"}]), [], "beyond float range"),
    (_block([{"bbox_2d": [1.5, 2, 3, 4.25], "label": "x", "score": 0.3}]),
     [{"bbox_2d": [1.5, 2, 3, 4.25], "label": "x"}], "other keys ignored"),
    (_block(["cat", 3, None, CAT]), [CAT], "items that are no object: dropped"),
]  # fmt: skip


@pytest.mark.parametrize(("response", "expected", "why"), READ)
def test_read_detections(response: str, expected: list, why: str) -> None:
    read = [d.model_dump() for d in read_detections(response)]
    assert read == [{"bbox_2d": [float(v) for v in e["bbox_2d"]], "label": e["label"]}
                    for e in expected], why  # fmt: skip


def test_gold_answers() -> None:
    assert gold_detections("None") == []
    assert gold_detections(_block([CAT]))[0] == Detection(bbox_2d=[0, 0, 10, 10], label="cat")
    for bad in ("", "cat", _block(CAT), _block([{"bbox_2d": [0, 0, 1], "label": "c"}])):
        with pytest.raises(ValueError) as err:
            gold_detections(bad, "q1")
        assert str(err.value) == (
            "item 'q1': a detection answer must be None or a ```json block of "
            f'[{{"bbox_2d": [x1, y1, x2, y2], "label": str}}, …], not {bad[:200]!r}'
        )


# --------------------------------------------------- greedy matching vs detection_score
WORDS = ["cat", "Cat", "dog", "red cup"]


def _answer(rng: random.Random, near: list | None) -> list[dict]:
    boxes = []
    for _ in range(rng.randint(1, 6)):
        if near and rng.random() < 0.7:
            x1, y1, x2, y2 = rng.choice(near)["bbox_2d"]
            d = [rng.choice([-4, -1, 0, 0, 2, 6]) for _ in range(4)]
            box = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
        else:
            x, y = rng.randint(0, 60), rng.randint(0, 60)
            box = [x, y, x + rng.randint(1, 40), y + rng.randint(1, 40)]
        boxes.append({"bbox_2d": box, "label": rng.choice(WORDS)})
    return boxes


@pytest.mark.parametrize("seed", range(300))
def test_greedy_matching_is_detection_score_s(seed: int) -> None:
    """detection_score with only its label term (alpha 0, beta 1, gamma 0) is the right
    matches over the gold boxes: greedy_right must give the same count."""
    rng = random.Random(seed)
    gold = _answer(rng, None)
    predicted = _answer(rng, gold)
    score = released.detection_score(_block(predicted), _block(gold), alpha=0, beta=1, gamma=0)
    right = greedy_right(
        [Detection.model_validate(d) for d in predicted],
        [Detection.model_validate(d) for d in gold],
    )
    assert right == round(score * len(gold)), (predicted, gold)


# ------------------------------------------------------------------ the per-item verdict
def _candidate(response: str, gold: list, options=("cat", "dog")) -> Candidate:
    answer = _block(gold) if gold else "None"
    return Candidate(response, answer, "detection", options=tuple(options), item_id="i1")


VERDICTS = [
    (_block([CAT, DOG]), [CAT, DOG], 1.0, 1, "every box with its label"),
    (_block([DOG, CAT]), [CAT, DOG], 1.0, 1, "in any order"),
    (_block([CAT]), [CAT, DOG], 2 / 3, 0, "a box missed: F1 2/3"),
    (_block([CAT, CAT]), [CAT], 2 / 3, 0, "a box repeated"),
    (_block([{**CAT, "label": "bird"}]), [CAT], 0.0, 0, "a label not asked about is dropped"),
    ("<answer>None</answer>", [], 1.0, 1, "nothing there, nothing said"),
    (_block([CAT]), [], 0.0, 0, "a box where there is nothing"),
    ("", [CAT], 0.0, 0, "no answer"),
]  # fmt: skip


@pytest.mark.parametrize(("response", "gold", "score", "correct", "why"), VERDICTS)
def test_verdicts(response, gold, score, correct, why) -> None:
    verdict = vlm_r1_ovd(_candidate(response, gold))
    assert (verdict.score, verdict.correct) == (pytest.approx(score), correct), why


def test_verdict_extracts_the_kept_boxes_and_needs_detection() -> None:
    verdict = vlm_r1_ovd(_candidate(_block([CAT, {**DOG, "label": "bird"}]), [CAT]))
    assert json.loads(verdict.extracted) == [{"bbox_2d": [0.0, 0.0, 10.0, 10.0], "label": "cat"}]
    assert vlm_r1_ovd(_candidate("None", [CAT])).extracted is None
    with pytest.raises(ValueError) as err:
        vlm_r1_ovd(Candidate("x", "[1, 2, 3, 4]", "grounding", item_id="g"))
    assert str(err.value) == "item 'g': VLM-R1's OVD rule has no rule for problem_type 'grounding'"
    assert get_protocol("vlm_r1_ovd").covers == frozenset({"detection"})


# ------------------------------------------------------------------ through the score stage
def _prediction(n: int, response: str, gold: list, task: str, error: str | None = None):
    return Prediction(
        id=f"p{n}", task=task, problem_type="detection", problem="?", prompt="?",
        answer=_block(gold) if gold else "None", options=["cat", "dog"], response=response,
        error=error, model="m", checkpoint="base",
    )  # fmt: skip


def test_rule_scores_carry_the_boxes_and_the_metrics_read_them() -> None:
    bench = load_benchmark("coco_filtered")
    predictions = [
        _prediction(0, _block([CAT, DOG]), [CAT, DOG], "coco_filtered"),
        _prediction(1, _block([CAT, CAT]), [CAT], "coco_filtered"),
        _prediction(2, "", [DOG], "coco_filtered", error="server down"),
    ]
    items = rule_scores(predictions, bench, 0.5, Path("p.jsonl"))
    assert items[2].method == "failed"
    assert items[2].detections.model_dump() == {"predicted": [], "gold": [DOG | {
        "bbox_2d": [20.0, 20.0, 40.0, 40.0]}]}  # fmt: skip
    numerical = Prediction(id="q", task="t", problem_type="numerical", problem="?", prompt="?",
                           answer="4", response="4", model="m", checkpoint="base")  # fmt: skip
    scored = rule_scores([numerical], load_benchmark("shapes_test"), 0.5, Path("p.jsonl"))
    assert "detections" not in scored[0].model_dump()
    metrics = compute(items_as_dicts(items), bench.metrics)
    # right 3 (cat, dog; one of the two cats) of 4 predicted, of 4 gold boxes
    assert metrics["GP"]["value"] == metrics["GR"]["value"] == pytest.approx(0.75)
    assert metrics["GP"]["n"] == 4
    assert metrics["accuracy"]["value"] == pytest.approx(1 / 3)
    # cat: 2 gold, 3 boxes (2 right at precision 1 first? all score 1: COCO's order); dog: 1 of 2
    assert 0 < metrics["mAP"]["value"] < 1


def test_ovdeval_metrics_per_sub_task_and_overall() -> None:
    bench = load_benchmark("ovdeval")
    tasks = [m.tasks[0] for m in bench.metrics if m.kind == "coco_ap"]
    assert tasks == ["celebrity", "logo", "landmark", "color", "material", "position",
                     "relationship", "negation"]  # fmt: skip
    right = [_prediction(n, _block([CAT]), [CAT], task) for n, task in enumerate(tasks)]
    wrong = [_prediction(9, "None", [CAT], "negation")]
    items = items_as_dicts(rule_scores(right + wrong, bench, 0.5, Path("p.jsonl")))
    metrics = compute(items, bench.metrics)
    assert metrics["celebrity"]["value"] == pytest.approx(1.0)
    assert metrics["negation"]["value"] == pytest.approx(51 / 101)  # one cat of two
    assert metrics["overall"]["value"] == pytest.approx((4 + 51 / 101) / 5)
    assert bench.headline == "overall"


def test_a_detection_metric_without_its_tasks_or_boxes_fails() -> None:
    spec = MetricSpec(name="logo", kind="coco_ap", nms=True, tasks=["logo"])
    item = {"id": "a", "task": "color", "correct": 1, "groups": {}, "detections": None}
    with pytest.raises(StageError) as err:
        compute([item], [spec])
    assert str(err.value) == (
        "metric logo: no items of tasks ['logo'] (a subset of the benchmark?)"
    )
    with pytest.raises(StageError, match=r"^item 'a' has no detection boxes"):
        compute([item], [spec.model_copy(update={"tasks": None})])


def test_a_precision_with_nothing_predicted_is_zero() -> None:
    item = {"id": "a", "task": "t", "correct": 0, "groups": {},
            "detections": {"predicted": [], "gold": [CAT]}}  # fmt: skip
    metrics = compute([item], [MetricSpec(name="GP", kind="greedy_precision"),
                               MetricSpec(name="GR", kind="greedy_recall")])  # fmt: skip
    assert (metrics["GP"]["value"], metrics["GP"]["n"]) == (0.0, None)
    assert (metrics["GR"]["value"], metrics["GR"]["n"]) == (0.0, 1)


def test_nms_is_only_for_coco_ap() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="nms: only kind 'coco_ap' reads it, not 'greedy_"):
        MetricSpec(name="GP", kind="greedy_precision", nms=True)


def test_a_malformed_gold_answer_stops_the_stage_naming_the_line() -> None:
    bench = load_benchmark("ovdeval")
    bad = _prediction(0, _block([CAT]), [CAT], "logo").model_copy(update={"answer": "a cat"})
    failed = bad.model_copy(update={"error": "server down", "response": ""})
    for prediction in (bad, failed):
        with pytest.raises(StageError) as err:
            rule_scores([prediction], bench, 0.5, Path("p.jsonl"))
        assert str(err.value) == (
            "score: p.jsonl:1: item 'p0': a detection answer must be None or a ```json block of "
            '[{"bbox_2d": [x1, y1, x2, y2], "label": str}, …], not \'a cat\''
        )
