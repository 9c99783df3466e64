"""Run times are split off trainers' log rows (vlrl.core.volatile): by exact key or suffix."""

from __future__ import annotations

import pytest

from vlrl.core.volatile import is_run_time, split_run_times


@pytest.mark.parametrize(
    ("key", "volatile"),
    [
        ("step_time", True),
        ("elapsed_time", True),
        ("remaining_time", True),
        ("train_runtime", True),
        ("eval_samples_per_second", True),
        ("train_steps_per_second", True),
        ("train_loss", False),
        ("epoch", False),
        ("total_flos", False),
        ("runtime_budget", False),  # a suffix rule, not a substring one
        ("time", False),
    ],
)
def test_run_time_keys(key: str, volatile: bool) -> None:
    assert is_run_time(key) is volatile


def test_a_row_splits_into_its_values_and_its_run_times_in_order() -> None:
    kept, times = split_run_times(
        {"loss": 1.5, "train_runtime": 9.0, "step": 3, "step_time": 0.4, "epoch": 1}
    )
    assert list(kept.items()) == [("loss", 1.5), ("step", 3), ("epoch", 1)]
    assert list(times.items()) == [("train_runtime", 9.0), ("step_time", 0.4)]
