"""Benchmark metrics against the references' own formulas, on generated verdicts."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from vlrl.benchmarks import MetricSpec
from vlrl.core.errors import StageError
from vlrl.scoring.metrics import WEMATH_MEASURES, compute, wemath_counts


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


def test_task_accuracy_counts_the_named_tasks_only_with_an_interval() -> None:
    """MathVerse's Vision Only rows alone: 2 of 3 right there, whatever the other versions."""
    items = [
        {"id": "1", "task": "Vision Only", "correct": 1, "groups": {}},
        {"id": "2", "task": "Vision Only", "correct": 0, "groups": {}},
        {"id": "3", "task": "Vision Only", "correct": 1, "groups": {}},
        {"id": "4", "task": "Text Dominant", "correct": 0, "groups": {}},
        {"id": "5", "task": "Vision Only", "correct": None, "groups": {}},  # not scored
    ]
    spec = MetricSpec(name="vision_only", kind="task_accuracy", tasks=["Vision Only"])
    got = compute(items, [spec])["vision_only"]
    assert (got["value"], got["n"]) == (pytest.approx(2 / 3), 3)
    assert 0 < got["ci_low"] < 2 / 3 < got["ci_high"] < 1
    absent = MetricSpec(name="v", kind="task_accuracy", tasks=["Vision Intensive"])
    with pytest.raises(StageError, match=r"metric v: no scored items of tasks \['Vision Int"):
        compute(items, [absent])


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
        ({"name": "t", "kind": "task_accuracy"}, "needs the tasks it counts"),
    ],
)
def test_bad_metric_declarations_are_refused(values: dict, message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises((ValidationError, ValueError), match=message):
        MetricSpec(**values)


# --- We-Math's four-dimensional metrics -----------------------------------------------------


def wemath_items(rng: random.Random, two: int = 24, three: int = 11) -> list[dict]:
    """We-Math-shaped verdicts: ``two`` two-step and ``three`` three-step composite problems, each
    with its sub-questions and multi-step question, at a random per-benchmark accuracy."""
    p = rng.random()
    items = []
    for n, count in ((2, two), (3, three)):
        for k in range(1, count + 1):
            for step in [*(f"{n}steps_{i}" for i in range(1, n + 1)), f"{n}steps_multi"]:
                items.append(
                    {
                        "id": f"{n}steps_{k}#{step}",
                        "task": "multi" if step.endswith("multi") else "one_step",
                        "correct": int(rng.random() < p),
                        "groups": {"problem": f"{n}steps_{k}", "step": step},
                    }
                )
    rng.shuffle(items)
    return items


def vlmevalkit_wemath(items: list[dict]) -> dict[str, float]:
    """VLMEvalKit ``wemath.py``: rows merged per ID into ``joker_1`` … ``joker_n`` and
    ``joker_multi`` (``evaluate_process_steps_data``), the twelve row filters of
    ``evaluate_calculate_metrics``, the rates and scores of ``evaluate_compute_final_scores`` /
    ``evaluate_update_main_results_df`` (as fractions; 525 there is the problem count here)."""
    merged: dict[str, dict[str, bool]] = defaultdict(dict)
    for item in items:
        merged[item["groups"]["problem"]]["joker_" + item["groups"]["step"].split("_")[1]] = bool(
            item["correct"]
        )
    filters = defaultdict(int)
    for row in merged.values():
        subs = [v for k, v in row.items() if k != "joker_multi"]
        multi = row["joker_multi"]
        filters["rows_1_loose"] += all(s is False for s in subs) and multi is True
        filters["rows_1_strict"] += any(s is False for s in subs) and multi is True
        filters["rows_2"] += all(s is True for s in subs) and multi is False
        filters["rows_3"] += any(s is False for s in subs) and multi is False
        filters["rows_4_loose"] += any(s is True for s in subs) and multi is True
        filters["rows_4_strict"] += all(s is True for s in subs) and multi is True
    total = len(merged)
    ig, ik = filters["rows_2"], filters["rows_3"]
    cm = {"strict": filters["rows_4_strict"], "loose": filters["rows_4_loose"]}
    rm = {"strict": filters["rows_1_strict"], "loose": filters["rows_1_loose"]}
    out = {"IK": ik / total, "IG": ig / total}
    for setting in ("strict", "loose"):
        out[f"score_{setting}"] = (total - 0.5 * ig - rm[setting] - ik) / total
        out[f"CM_{setting}"] = cm[setting] / total
        out[f"RM_{setting}"] = rm[setting] / (cm[setting] + rm[setting])
    return out


def wemath_specs() -> list[MetricSpec]:
    return [
        MetricSpec(name=m, kind="wemath_four_dimensional", group="problem", step="step", measure=m)
        for m in WEMATH_MEASURES
    ]


@pytest.mark.parametrize("seed", range(8))
def test_wemath_four_dimensional_is_vlmevalkits(seed: int) -> None:
    items = wemath_items(random.Random(seed))
    got = compute(items, wemath_specs())
    want = vlmevalkit_wemath(items)
    assert set(want) == set(WEMATH_MEASURES)
    for name, value in want.items():
        assert got[name]["value"] == pytest.approx(value), name
    # IK, IG and CM are shares of the 35 problems, with an interval; the scores have none
    assert (
        got["IK"]["n"] == 35 and got["IK"]["ci_low"] <= got["IK"]["value"] <= got["IK"]["ci_high"]
    )
    assert got["score_strict"]["n"] is None and got["score_strict"]["ci_low"] is None
    # the four dimensions partition the problems, in each setting
    counts = wemath_counts(items, "problem", "step")
    for setting in ("strict", "loose"):
        four = ("IK", "IG", f"CM_{setting}", f"RM_{setting}")
        assert sum(counts[d] for d in four) == counts["problems"] == 35


def test_wemath_worked_example() -> None:
    """Three problems: a two-step one with one sub-question wrong but the multi-step question
    right (rote memorization, strict only), a three-step one with every sub-question right and
    the multi-step question wrong (inadequate generalization), and a two-step one all wrong
    (insufficient knowledge)."""
    verdicts = {
        ("a", "2steps_1"): 1, ("a", "2steps_2"): 0, ("a", "2steps_multi"): 1,
        ("b", "3steps_1"): 1, ("b", "3steps_2"): 1, ("b", "3steps_3"): 1, ("b", "3steps_multi"): 0,
        ("c", "2steps_1"): 0, ("c", "2steps_2"): 0, ("c", "2steps_multi"): 0,
    }  # fmt: skip
    items = [
        {"id": f"{p}#{s}", "task": "t", "correct": c, "groups": {"problem": p, "step": s}}
        for (p, s), c in verdicts.items()
    ]
    got = {k: v["value"] for k, v in compute(items, wemath_specs()).items()}
    assert got == pytest.approx(
        {
            "accuracy": 5 / 10,
            "score_strict": (3 - 0.5 * 1 - 1 - 1) / 3,
            "score_loose": (3 - 0.5 * 1 - 0 - 1) / 3,
            "IK": 1 / 3,
            "IG": 1 / 3,
            "CM_strict": 0.0,
            "CM_loose": 1 / 3,
            "RM_strict": 1.0,
            "RM_loose": 0.0,
        }
    )


def test_wemath_all_right_and_all_wrong() -> None:
    items = wemath_items(random.Random(0), two=3, three=2)
    best = compute([{**i, "correct": 1} for i in items], wemath_specs())
    worst = compute([{**i, "correct": 0} for i in items], wemath_specs())
    assert {k: v["value"] for k, v in best.items()} == pytest.approx(
        {"accuracy": 1, "score_strict": 1, "score_loose": 1, "IK": 0, "IG": 0,
         "CM_strict": 1, "CM_loose": 1, "RM_strict": 0, "RM_loose": 0}
    )  # fmt: skip
    # no multi-step question solved: RM is 0/0, where the reference divides by zero; 0.0 here
    assert {k: v["value"] for k, v in worst.items()} == pytest.approx(
        {"accuracy": 0, "score_strict": 0, "score_loose": 0, "IK": 1, "IG": 0,
         "CM_strict": 0, "CM_loose": 0, "RM_strict": 0, "RM_loose": 0}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda items: items[1:], r"problem '2steps_1' has the steps .* not .*subset"),
        (
            lambda items: [*items, {**items[0], "id": "dup"}],
            r"item 'dup': problem '2steps_1' has '2steps_1' twice",
        ),
        (
            lambda items: [{**items[0], "groups": {"problem": "2steps_1", "step": "4steps_1"}}],
            r"groups\['step'\] is '4steps_1', not a We-Math step key",
        ),
        (lambda items: [{**items[0], "groups": {"step": "2steps_1"}}], r"no groups\['problem'\]"),
    ],
)
def test_wemath_incomplete_or_malformed_problems_are_refused(change, message: str) -> None:
    items = sorted(wemath_items(random.Random(1), two=2, three=1), key=lambda i: i["id"])
    with pytest.raises(StageError, match=message):
        compute(change(items), wemath_specs()[:1])


def test_wemath_measures_are_the_metric_specs() -> None:
    from pydantic import ValidationError

    assert [s.measure for s in wemath_specs()] == list(WEMATH_MEASURES)
    with pytest.raises(ValidationError, match="measure"):
        MetricSpec(name="x", kind="wemath_four_dimensional", group="p", step="s", measure="XX")
    with pytest.raises((ValidationError, ValueError), match="step: kind 'wemath_four_dimensional'"):
        MetricSpec(name="x", kind="wemath_four_dimensional", group="p", measure="IK")


def test_a_group_with_an_unscored_member_is_left_out_not_counted_right() -> None:
    """An unscored item (the judge failed) leaves its group's verdict unknown: the group metric
    is computed over complete groups and says how many it left out; accuracy ignores the item."""
    items = [
        {"id": "a1", "correct": 1, "task": "t", "groups": {"q": "a"}},
        {"id": "a2", "correct": None, "task": "t", "groups": {"q": "a"}},  # its wrong member?
        {"id": "b1", "correct": 1, "task": "t", "groups": {"q": "b"}},
        {"id": "b2", "correct": 0, "task": "t", "groups": {"q": "b"}},
        {"id": "c1", "correct": 1, "task": "t", "groups": {"q": "c"}},
    ]
    specs = [MetricSpec(name="CircularEval", kind="all_correct", group="q")]
    out = compute(items, specs)
    assert (out["CircularEval"]["value"], out["CircularEval"]["n"]) == (0.5, 2)
    assert out["CircularEval"]["left_out"] == 1
    assert (out["accuracy"]["value"], out["accuracy"]["n"]) == (0.75, 4)


def test_wemath_leaves_out_problems_with_an_unscored_question() -> None:
    rows = [("p", "2steps_1", 1), ("p", "2steps_2", None), ("p", "2steps_multi", 1),
            ("q", "2steps_1", 1), ("q", "2steps_2", 1), ("q", "2steps_multi", 1)]  # fmt: skip
    items = [
        {"id": f"{p}{s}", "correct": c, "task": "t", "groups": {"problem": p, "step": s}}
        for p, s, c in rows
    ]
    spec = MetricSpec(
        name="CM", kind="wemath_four_dimensional", group="problem", step="step", measure="CM_strict"
    )
    out = compute(items, [spec])["CM"]
    assert (out["value"], out["n"], out["left_out"]) == (1.0, 1, 1)
