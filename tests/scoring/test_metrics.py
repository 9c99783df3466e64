"""Benchmark metrics against the references' own formulas, on generated verdicts."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from vlrl.benchmarks import MetricSpec
from vlrl.errors import StageError
from vlrl.scoring.metrics import compute


def hallusion_items(rng: random.Random) -> list[dict]:
    """Figures with 1-3 questions; a question is asked on 1-2 figures of its set."""
    items = []
    for s in range(12):
        for q in range(rng.randint(1, 3)):
            for f in range(rng.randint(1, 2)):
                items.append(
                    {
                        "id": f"{s}_{q}_{f}",
                        "task": "VD_x" if s % 2 else "VS_y",
                        "correct": rng.randint(0, 1),
                        "groups": {"figure": f"{s}_{f}", "question": f"{s}_{q}"},
                    }
                )
    return items


def vlmevalkit_hallusion(items: list[dict]) -> dict[str, float]:
    """VLMEvalKit ``yorn.py::Hallusion_rating``: aAcc, fAcc, qAcc (as fractions)."""
    by_fig, by_q = defaultdict(list), defaultdict(list)
    for item in items:
        by_fig[item["groups"]["figure"]].append(item["correct"])
        by_q[item["groups"]["question"]].append(item["correct"])
    return {
        "accuracy": sum(i["correct"] for i in items) / len(items),
        "fAcc": sum(all(v) for v in by_fig.values()) / len(by_fig),
        "qAcc": sum(all(v) for v in by_q.values()) / len(by_q),
    }


@pytest.mark.parametrize("seed", range(5))
def test_hallusionbench_metrics_are_the_references(seed: int) -> None:
    items = hallusion_items(random.Random(seed))
    specs = [
        MetricSpec(name="fAcc", kind="all_correct", group="figure"),
        MetricSpec(name="qAcc", kind="all_correct", group="question"),
        MetricSpec(name="overall", kind="mean_of", of=["accuracy", "fAcc", "qAcc"]),
    ]
    got = compute(items, specs)
    want = vlmevalkit_hallusion(items)
    for name, value in want.items():
        assert got[name]["value"] == pytest.approx(value)
    assert got["overall"]["value"] == pytest.approx(sum(want.values()) / 3)
    assert got["fAcc"]["n"] == len({i["groups"]["figure"] for i in items})
    assert got["fAcc"]["ci_low"] <= got["fAcc"]["value"] <= got["fAcc"]["ci_high"]


@pytest.mark.parametrize("seed", range(5))
def test_mme_score_is_lmms_evals(seed: int) -> None:
    rng = random.Random(seed)
    tasks = ["existence", "count", "OCR", "code_reasoning"]
    items = [
        {
            "id": f"{t}/{img}#{k}",
            "task": t,
            "correct": rng.randint(0, 1),
            "groups": {"image": f"{t}/{img}"},
        }
        for t in tasks
        for img in range(rng.randint(2, 6))
        for k in range(2)
    ]
    # lmms-eval mme/utils.py::mme_aggregate_results: per category, acc + acc_plus, × 100.
    by_task = defaultdict(lambda: defaultdict(list))
    for item in items:
        by_task[item["task"]][item["groups"]["image"]].append(item["correct"])
    perception = 0.0
    for task in ["existence", "count", "OCR"]:
        images = by_task[task]
        acc = sum(sum(v) for v in images.values()) / sum(len(v) for v in images.values())
        acc_plus = sum(all(v) for v in images.values()) / len(images)
        perception += 100 * (acc + acc_plus)

    specs = [
        MetricSpec(name="acc_plus", kind="all_correct", group="image"),
        MetricSpec(
            name="perception",
            kind="task_sum",
            of=["accuracy", "acc_plus"],
            tasks=["existence", "count", "OCR"],
            scale=100,
        ),
    ]
    assert compute(items, specs)["perception"]["value"] == pytest.approx(perception)


def test_macro_mean_averages_the_groups_accuracies() -> None:
    items = [
        {"id": "1", "task": "t", "correct": 1, "groups": {"l2": "a"}},
        {"id": "2", "task": "t", "correct": 0, "groups": {"l2": "a"}},
        {"id": "3", "task": "t", "correct": 1, "groups": {"l2": "b"}},
    ]
    got = compute(items, [MetricSpec(name="macro", kind="macro_mean", by="l2")])
    assert got["macro"]["value"] == pytest.approx((0.5 + 1.0) / 2)
    assert got["accuracy"]["value"] == pytest.approx(2 / 3)


def test_a_missing_group_key_names_the_item() -> None:
    items = [{"id": "q7", "task": "t", "correct": 1, "groups": {}}]
    with pytest.raises(StageError, match=r"item 'q7' has no groups\['figure'\]"):
        compute(items, [MetricSpec(name="fAcc", kind="all_correct", group="figure")])


def test_a_task_sum_over_absent_tasks_is_refused() -> None:
    items = [{"id": "1", "task": "count", "correct": 1, "groups": {}}]
    spec = MetricSpec(name="score", kind="task_sum", of=["accuracy"], tasks=["count", "OCR"])
    with pytest.raises(StageError, match=r"no items of tasks \['OCR'\]"):
        compute(items, [spec])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"name": "accuracy", "kind": "mean_of", "of": ["accuracy"]}, "always computed"),
        ({"name": "f", "kind": "all_correct"}, "needs the groups key"),
        ({"name": "m", "kind": "mean_of"}, "needs the metrics it combines"),
    ],
)
def test_bad_metric_declarations_are_refused(values: dict, message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises((ValidationError, ValueError), match=message):
        MetricSpec(**values)
