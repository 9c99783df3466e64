"""vlrl.reporting.versus: a pooled column's accuracy over its benchmarks' items, and our value
of a published column's metric (one metric with its interval, or a sum without one)."""

from __future__ import annotations

import pytest

from vlrl.reporting.combined import pooled_row
from vlrl.reporting.published import Column
from vlrl.reporting.versus import _reproduced, _stored
from vlrl.scoring.stats import proportion_ci


def test_the_pooled_accuracy_weighs_each_benchmark_by_its_items_with_a_wilson_interval() -> None:
    row = pooled_row([{"n": 10, "accuracy": 0.3}, {"n": 30, "accuracy": 0.5}], 0.9)
    low, high = proportion_ci(18, 40, 0.9)
    assert row == {"n": 40, "accuracy": 18 / 40, "ci_low": low, "ci_high": high}
    assert low < 0.45 < high


def test_a_pooled_count_is_rounded_to_whole_verdicts() -> None:
    # 1/3 of 3 items is one verdict, not 0.999…: the accuracy is exactly 1/3 of 3 + 2/2
    row = pooled_row([{"n": 3, "accuracy": 1 / 3}, {"n": 2, "accuracy": 1.0}], 0.95)
    assert row["accuracy"] == 3 / 5


def test_a_pool_with_a_missing_benchmark_has_no_number() -> None:
    assert pooled_row([{"n": 3, "accuracy": 1.0}, None], 0.95) is None
    assert pooled_row([None, {"n": 3, "accuracy": 1.0}], 0.95) is None
    assert pooled_row([], 0.95) is None


def column(metric, scale: str = "percent") -> Column:
    return Column(benchmark="mme", metric=metric, scale=scale)


ROW = {
    "accuracy": 0.5,
    "ci_low": 0.4,
    "ci_high": 0.6,
    "metric.perception": 1500.0,
    "metric.perception.ci_low": 1400.0,
    "metric.perception.ci_high": 1600.0,
    "metric.cognition": 600.0,
}


def test_our_value_of_one_metric_keeps_its_interval() -> None:
    assert _reproduced(ROW, column("accuracy")) == (0.5, 0.4, 0.6)
    assert _reproduced(ROW, column("perception", "raw")) == (1500.0, 1400.0, 1600.0)
    assert _reproduced(None, column("accuracy")) == (None, None, None)


def test_a_sum_of_metrics_has_no_interval_and_no_value_with_a_part_missing() -> None:
    assert _reproduced(ROW, column(["perception", "cognition"], "raw")) == (2100.0, None, None)
    assert _reproduced(ROW, column(["perception", "reasoning"], "raw")) == (None, None, None)


@pytest.mark.parametrize("scale, stored", [("percent", 0.675), ("fraction", 67.5), ("raw", 67.5)])
def test_a_published_number_is_stored_as_a_fraction_only_when_printed_in_percent(
    scale: str, stored: float
) -> None:
    assert _stored(67.5, column("accuracy", scale)) == pytest.approx(stored, abs=0)
