"""Benchmark metrics at their edges: the exact published numbers on hand-checkable verdicts, the
intervals at the requested confidence (checked against formulas written out here from the
standard library, not against scipy, which vlrl itself calls), unscored items in either order,
and the exact errors a user gets for a subset or a malformed declaration."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from statistics import NormalDist

import pytest

from vlrl.benchmarks import MetricSpec
from vlrl.core.errors import StageError
from vlrl.scoring.metrics import (
    WEMATH_MEASURES,
    all_correct,
    compute,
    group_key,
    mean_score,
    wemath_counts,
    wemath_four_dimensional,
)


def wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval (Wilson 1927), written out: the independent oracle."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def normal_interval(scores: list[float], confidence: float) -> tuple[float, float]:
    """mean ± z·s/√n (s the sample standard deviation), clipped to [0, 1]."""
    mean = statistics.fmean(scores)
    sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * sd / math.sqrt(len(scores))
    return max(0.0, mean - half), min(1.0, mean + half)


def item(id_: str, correct: int | None, task: str = "t", **groups: str) -> dict:
    return {"id": id_, "correct": correct, "task": task, "groups": groups}


def wemath(rows: list[tuple[str, str, int | None]]) -> list[dict]:
    return [item(f"{p}#{s}", c, problem=p, step=s) for p, s, c in rows]


# a two-step problem memorised (sub-question wrong, multi right), a three-step one not
# generalised (all subs right, multi wrong), a two-step one all wrong, a two-step one mastered
WEMATH_ROWS = [
    ("a", "2steps_1", 1), ("a", "2steps_2", 0), ("a", "2steps_multi", 1),
    ("b", "3steps_1", 1), ("b", "3steps_2", 1), ("b", "3steps_3", 1), ("b", "3steps_multi", 0),
    ("c", "2steps_1", 0), ("c", "2steps_2", 0), ("c", "2steps_multi", 0),
    ("d", "2steps_1", 1), ("d", "2steps_2", 1), ("d", "2steps_multi", 1),
]  # fmt: skip


def wemath_spec(measure: str) -> MetricSpec:
    return MetricSpec(
        name=measure, kind="wemath_four_dimensional", group="problem", step="step", measure=measure
    )


NO_INTERVAL = {"n": None, "ci_low": None, "ci_high": None}


# --- intervals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_every_proportion_carries_the_wilson_interval_at_the_requested_confidence(
    confidence: float,
) -> None:
    items = [
        item("1", 1, fig="f1"), item("2", 1, fig="f1"), item("3", 0, fig="f2"),
        item("4", 1, fig="f3"), item("5", None, fig="f4"),
    ]  # fmt: skip
    out = compute(items, [MetricSpec(name="fAcc", kind="all_correct", group="fig")], confidence)
    low, high = wilson(3, 4, confidence)
    assert out["accuracy"] == pytest.approx({"value": 0.75, "n": 4, "ci_low": low, "ci_high": high})
    low, high = wilson(2, 3, confidence)  # f1, f3 right; f2 wrong; f4 unscored
    assert out["fAcc"] == pytest.approx(
        {"value": 2 / 3, "n": 3, "ci_low": low, "ci_high": high, "left_out": 1}
    )
    wm = compute(wemath(WEMATH_ROWS), [wemath_spec("IK"), wemath_spec("RM_strict")], confidence)
    low, high = wilson(1, 4, confidence)  # IK: problem c
    assert wm["IK"] == pytest.approx(
        {"value": 0.25, "n": 4, "ci_low": low, "ci_high": high, "left_out": 0}
    )
    low, high = wilson(1, 2, confidence)  # RM_strict: a of the solved multi-step a and d
    assert wm["RM_strict"] == pytest.approx(
        {"value": 0.5, "n": 2, "ci_low": low, "ci_high": high, "left_out": 0}
    )


def test_the_default_confidence_is_95_percent() -> None:
    items = wemath(WEMATH_ROWS)
    got = wemath_four_dimensional(items, "problem", "step", "IG")
    assert (got["value"], got["n"]) == (0.25, 4)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(wilson(1, 4, 0.95))
    assert compute(items, [])["accuracy"]["ci_low"] == pytest.approx(wilson(8, 13, 0.95)[0])
    scores = [{"score": s} for s in (0.2, 0.9, 0.4)]
    got = mean_score(scores)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(normal_interval([0.2, 0.9, 0.4], 0.95))


# --- mean_score (MM-Vet) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores",
    [
        [1.0, 0.5, 0.0, 0.5],  # the docstring's: 0.5 ± 0.400
        [0.2, 0.6],  # n = 2: one degree of freedom
        [0.3, 0.4, 0.5, 0.6, 0.7, 0.2, 0.9],
        [1.0, 1.0, 0.9, 1.0],  # the upper end clipped at 1
        [0.0, 0.1, 0.0, 0.0],  # the lower end clipped at 0
    ],
)
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_mean_score_is_the_mean_with_a_normal_interval(
    scores: list[float], confidence: float
) -> None:
    got = mean_score([{"score": s} for s in scores], confidence)
    low, high = normal_interval(scores, confidence)
    assert got == pytest.approx(
        {"value": statistics.fmean(scores), "n": len(scores), "ci_low": low, "ci_high": high}
    )
    assert 0.0 <= got["ci_low"] < got["value"] < got["ci_high"] <= 1.0


def test_mean_score_hand_values() -> None:
    """[1, .5, 0, .5]: s = √(0.5/3), half = 1.959964 × s / 2 = 0.400076."""
    got = mean_score([{"score": s} for s in (1.0, 0.5, 0.0, 0.5)])
    assert got == pytest.approx(
        {"value": 0.5, "n": 4, "ci_low": 0.099924, "ci_high": 0.900076}, abs=1e-6
    )
    clipped = mean_score([{"score": s} for s in (1.0, 1.0, 0.9, 1.0)])
    assert clipped["ci_high"] == 1.0
    assert clipped["ci_low"] == pytest.approx(0.975 - 1.959964 * 0.05 / 2, abs=1e-6)
    clipped = mean_score([{"score": s} for s in (0.0, 0.1, 0.0, 0.0)])
    assert clipped["ci_low"] == 0.0
    assert clipped["ci_high"] == pytest.approx(0.025 + 1.959964 * 0.05 / 2, abs=1e-6)


def test_mean_score_of_one_item_has_a_zero_width_interval() -> None:
    assert mean_score([{"score": 0.7}]) == {"value": 0.7, "n": 1, "ci_low": 0.7, "ci_high": 0.7}


def test_compute_mean_score_uses_the_scored_items_and_the_confidence() -> None:
    items = [
        {**item("1", 1), "score": 0.8},
        {**item("2", 0), "score": 0.3},
        {**item("3", 1), "score": 0.6},
        {**item("4", None), "score": 0.0},  # unscored: left out
    ]
    out = compute(items, [MetricSpec(name="mmvet", kind="mean_score")], confidence=0.9)
    low, high = normal_interval([0.8, 0.3, 0.6], 0.9)
    assert out["mmvet"] == pytest.approx({"value": 1.7 / 3, "n": 3, "ci_low": low, "ci_high": high})


# --- values without an interval -----------------------------------------------------------------


def test_combined_metrics_are_values_without_an_interval() -> None:
    items = [
        item("1", 1, "count", fig="f1"), item("2", 1, "count", fig="f1"),
        item("3", 1, "OCR", fig="f2"), item("4", 0, "OCR", fig="f2"),
        item("5", 1, "OCR", fig="f3"), item("6", 1, "OCR", fig="f3"),
    ]  # fmt: skip
    specs = [
        MetricSpec(name="accplus", kind="all_correct", group="fig"),
        MetricSpec(name="overall", kind="mean_of", of=["accuracy", "accplus"]),
        MetricSpec(name="macro", kind="macro_mean"),
        MetricSpec(name="score", kind="task_sum", of=["accuracy", "accplus"], scale=100),
    ]
    out = compute(items, specs)
    # count: acc 1, acc+ 1; OCR: acc 3/4, acc+ 1/2 -> 100 * (1 + 1 + 0.75 + 0.5)
    assert out["score"] == {"value": pytest.approx(325.0), **NO_INTERVAL}
    assert out["overall"] == {"value": pytest.approx((5 / 6 + 2 / 3) / 2), **NO_INTERVAL}
    assert out["macro"] == {"value": pytest.approx((1 + 0.75) / 2), **NO_INTERVAL}
    scores = compute(wemath(WEMATH_ROWS), [wemath_spec("score_strict")])
    # (4 - 0.5 IG(b) - RM_strict(a) - IK(c)) / 4
    assert scores["score_strict"] == {"value": 1.5 / 4, "left_out": 0, **NO_INTERVAL}


def test_wemath_rm_without_a_solved_multistep_question_is_zero_without_interval() -> None:
    rows = [("c", "2steps_1", 0), ("c", "2steps_2", 1), ("c", "2steps_multi", 0)]
    got = wemath_four_dimensional(wemath(rows), "problem", "step", "RM_loose")
    assert got == {"value": 0.0, **NO_INTERVAL}


# --- unscored members ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order", [(0, None), (None, 0), (1, None), (None, 1), (0, None, 1), (1, None, 0)]
)
def test_a_group_with_an_unscored_member_is_left_out_in_any_order(order: tuple) -> None:
    items = [item(f"a{i}", c, q="a") for i, c in enumerate(order)]
    items += [item("b", 1, q="b"), item("c0", 1, q="c"), item("c1", 0, q="c")]
    assert all_correct(items, "q") == (1, 2)
    out = compute(items, [MetricSpec(name="circ", kind="all_correct", group="q")])["circ"]
    assert (out["value"], out["n"], out["left_out"]) == (0.5, 2, 1)


# --- the errors a user gets ---------------------------------------------------------------------


def test_a_missing_group_key_error_is_complete() -> None:
    with pytest.raises(StageError) as error:
        group_key(item("q7", 1, step="2steps_1"), "problem")
    assert str(error.value) == (
        "item 'q7' has no groups['problem'] (its groups: ['step']); "
        "the benchmark's metric needs it: check the dataset's format"
    )


def test_a_malformed_wemath_step_names_the_item() -> None:
    items = [item("row9", 1, problem="p", step="2steps_4")]
    with pytest.raises(StageError) as error:
        wemath_counts(items, "problem", "step")
    assert str(error.value).startswith(
        "item 'row9': groups['step'] is '2steps_4', not a We-Math step key (2steps_1, "
    )


def test_an_incomplete_wemath_problem_error_is_complete() -> None:
    rows = [("p", "3steps_1", 1), ("p", "3steps_2", 1), ("p", "3steps_multi", 1)]
    with pytest.raises(StageError) as error:
        wemath_counts(wemath(rows), "problem", "step")
    assert str(error.value) == (
        "We-Math problem 'p' has the steps ['3steps_1', '3steps_2', '3steps_multi'], not "
        "['3steps_1', '3steps_2', '3steps_3', '3steps_multi']: the four dimensions need a "
        "verdict on every question of a problem (a subset of the benchmark, or items left "
        "unscored?)"
    )


def test_an_unknown_wemath_measure_lists_the_known_ones() -> None:
    with pytest.raises(StageError) as error:
        wemath_four_dimensional(wemath(WEMATH_ROWS), "problem", "step", "CM")
    assert str(error.value) == f"no We-Math measure 'CM'; known: {list(WEMATH_MEASURES)}"
    assert "'score_strict', 'score_loose', 'IK', 'IG'" in str(error.value)


def test_wemath_without_a_complete_problem_is_refused() -> None:
    rows = [("p", "2steps_1", 1), ("p", "2steps_2", None), ("p", "2steps_multi", 1)]
    with pytest.raises(StageError) as error:
        compute(wemath(rows), [wemath_spec("IK")])
    assert str(error.value) == "no We-Math problem has a verdict on every question"


def test_no_scored_items_is_refused() -> None:
    with pytest.raises(StageError) as error:
        compute([item("1", None), item("2", None)], [])
    assert str(error.value) == "no scored items to compute metrics on"


def test_all_correct_without_a_complete_group_is_refused() -> None:
    items = [item("1", 1, q="a"), item("2", None, q="a"), item("3", None, q="b")]
    with pytest.raises(StageError) as error:
        compute(items, [MetricSpec(name="qAcc", kind="all_correct", group="q")])
    assert str(error.value) == "metric qAcc: no group has every member scored"


def test_a_task_sum_of_a_metric_without_per_task_values_is_refused() -> None:
    specs = [
        MetricSpec(name="overall", kind="mean_of", of=["accuracy"]),
        MetricSpec(name="score", kind="task_sum", of=["overall"]),
    ]
    with pytest.raises(StageError) as error:
        compute([item("1", 1)], specs)
    assert str(error.value) == "metric score: overall has no per-task values"


def test_a_task_sum_over_absent_tasks_error_is_complete() -> None:
    spec = MetricSpec(name="perception", kind="task_sum", of=["accuracy"], tasks=["OCR", "count"])
    with pytest.raises(StageError) as error:
        compute([item("1", 1, "count")], [spec])
    assert str(error.value) == (
        "metric perception: no items of tasks ['OCR'], so the sum over its tasks would be too "
        "small (a subset of the benchmark?)"
    )


@dataclass
class _Spec:
    """A declaration that bypasses MetricSpec's validation (compute takes any Spec)."""

    name: str
    kind: str
    group: str | None = None
    by: str | None = None
    of: list[str] = field(default_factory=list)
    tasks: list[str] | None = None
    scale: float = 1.0
    step: str | None = None
    measure: str | None = None


def test_an_unknown_metric_kind_is_refused() -> None:
    with pytest.raises(StageError) as error:
        compute([item("1", 1)], [_Spec(name="m", kind="median")])
    assert str(error.value) == "metric m: unknown kind 'median'"
