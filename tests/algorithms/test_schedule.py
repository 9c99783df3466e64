"""A GRPO run stopped at step N of a schedule planned for M steps (or E epochs): the learning
rate of each step is the long schedule's, and the run ends at N."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from schedules import linear_rates

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import ConfigError
from vlrl.stages import grpo

SMALL = [
    "sft.enabled=false",
    "grpo.processes=1",
    "grpo.logging_steps=1",
    "grpo.per_device_train_batch_size=4",
    "grpo.num_generations=2",
    "grpo.max_completion_length=8",
    "grpo.rewards={test.length: 1.0}",
    "grpo.learning_rate=0.01",
    "grpo.lr_scheduler_type=linear",
    "grpo.max_steps=2",
]


@pytest.fixture()
def grpo_inputs(project: Path, shapes_data: Path, tiny_model_dir: Path) -> Path:
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    return project


def logged_rates() -> tuple[int, list[float]]:
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    rates = [h["learning_rate"] for h in summary["log_history"] if "learning_rate" in h]
    return summary["steps"], rates


@pytest.mark.slow
@pytest.mark.parametrize("planned", [None, 8])
def test_the_rate_follows_the_planned_schedule_and_the_run_stops_at_max_steps(
    length_reward: str, grpo_inputs: Path, planned: int | None
) -> None:
    extra = [] if planned is None else [f"grpo.schedule_steps={planned}"]
    grpo.run("tiny_shapes", load_experiment("tiny_shapes", [*SMALL, *extra]))
    steps, rates = logged_rates()
    assert steps == 2 and len(rates) == 2
    assert rates == pytest.approx(linear_rates(0.01, planned or 2, 2), rel=1e-9)
    if planned is not None:
        assert rates[-1] > 0.005  # not half-way down a 2-step schedule


@pytest.mark.slow
def test_a_schedule_of_epochs_shorter_than_max_steps_is_refused_by_name(
    length_reward: str, grpo_inputs: Path
) -> None:
    # 2 prompts a step: a hundredth of an epoch of the shapes data is one step, fewer than 2
    cfg = load_experiment("tiny_shapes", [*SMALL, "grpo.schedule_epochs=0.01"])
    with pytest.raises(ConfigError, match=r"grpo.schedule_epochs \(0.01\) plans 1 steps, fewer"):
        grpo.run("tiny_shapes", cfg)


@pytest.mark.parametrize(
    ("settings", "options", "planned_by"),
    [
        ({"max_steps": 6}, {"max_steps": 6}, None),
        ({"max_steps": 6, "schedule_steps": 40}, {"max_steps": 40}, "grpo.schedule_steps (40)"),
        (
            {"max_steps": 6, "schedule_epochs": 2},
            {"max_steps": -1, "num_train_epochs": 2.0},
            "grpo.schedule_epochs (2.0)",
        ),
        ({"max_steps": 6, "schedule_steps": 6}, {"max_steps": 6}, "grpo.schedule_steps (6)"),
    ],
)
def test_the_horizon_and_the_stop_are_two_settings(settings, options, planned_by):
    from vlrl.algorithms.schedule import horizon_options, plans_beyond_the_stop, stop_callbacks
    from vlrl.config import GRPOConfig

    cfg = GRPOConfig(**settings)
    assert horizon_options(cfg) == options
    assert plans_beyond_the_stop(cfg) == (planned_by is not None)
    callbacks = stop_callbacks(cfg)
    if planned_by is None:
        assert callbacks == []
    else:
        (stop,) = callbacks
        assert (stop.last_step, stop.planned_by, stop.stop_key) == (6, planned_by, "grpo.max_steps")
