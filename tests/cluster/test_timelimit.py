"""vlrl.cluster.timelimit: when training stops before its job's limit. The steps are timed from
the start of the first one, so the set-up before it (loading, DeepSpeed, vLLM) counts as none."""

from __future__ import annotations

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from vlrl.cluster import timelimit
from vlrl.cluster.timelimit import StopAtStep, StopBeforeLimit
from vlrl.core.errors import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(timelimit.time, "time", clock)
    monkeypatch.setattr(timelimit, "stop_requested", lambda: None)
    return clock


def _steps(stopper: StopBeforeLimit, clock: Clock, seconds: list[float]) -> int | None:
    args = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to=[])
    state = TrainerState(max_steps=100)
    for step, duration in enumerate(seconds, start=1):
        control = TrainerControl()
        stopper.on_step_begin(args, state, control)
        clock.now += duration
        state.global_step = step
        stopper.on_step_end(args, state, control)
        if control.should_training_stop:
            assert control.should_save
            return step
    return None


def test_set_up_before_the_first_step_is_not_a_step(clock: Clock) -> None:
    """Ten minutes of set-up and 10 s steps, 300 s left at the start of training: the run takes
    steps until two of them would overrun, not one step as if the first had taken 610 s."""
    stopper = StopBeforeLimit(stop_at=clock.now + 600 + 300)
    clock.now += 600  # model loading, DeepSpeed and vLLM start-up
    stopped = _steps(stopper, clock, [10.0] * 40)
    assert stopped == 28  # 1600 + 28 x 10 + 2 x 10 = 1900: the stop time
    assert stopper.stopped_by == "before the job's time limit"


def test_the_longest_step_sets_the_margin(clock: Clock) -> None:
    stopper = StopBeforeLimit(stop_at=clock.now + 100)
    assert _steps(stopper, clock, [10.0, 30.0, 5.0, 5.0]) == 2  # 1040 + 2 x 30 >= 1100


def test_no_limit_never_stops(clock: Clock) -> None:
    assert _steps(StopBeforeLimit(stop_at=None), clock, [10.0] * 5) is None


def test_the_runs_last_step_never_stops_where_the_schedule_is_longer(clock: Clock) -> None:
    """A run that stops at step 3 of a 100-step schedule (grpo.schedule_steps) ends there
    anyway: a limit reached at that step saves and requeues nothing."""
    assert _steps(StopBeforeLimit(stop_at=clock.now, last_step=3), clock, [10.0] * 3) == 1
    # 10 s steps, the limit 45 s away: steps 1 and 2 end with 30 and 40 s < 45 s to go
    assert _steps(StopBeforeLimit(stop_at=clock.now + 45), clock, [10.0] * 3) == 3
    assert _steps(StopBeforeLimit(stop_at=clock.now + 45, last_step=3), clock, [10.0] * 3) is None


def test_stop_at_step_ends_the_run_after_its_step_of_a_longer_schedule() -> None:
    args = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to=[])
    stopper = StopAtStep(3, "sft.num_train_epochs", "sft.max_steps")
    state = TrainerState(max_steps=10)
    stopper.on_train_begin(args, state, TrainerControl())
    stopped = []
    for step in range(1, 11):
        control = TrainerControl()
        state.global_step = step
        stopper.on_step_end(args, state, control)
        if control.should_training_stop:
            stopped.append(step)
            break
    assert stopped == [3]
    # planned for exactly the steps it trains: allowed
    StopAtStep(10, "p", "k").on_train_begin(args, TrainerState(max_steps=10), TrainerControl())


def test_stop_at_step_refuses_a_schedule_shorter_than_the_run_by_name() -> None:
    args = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to=[])
    stopper = StopAtStep(11, "grpo.schedule_epochs (0.5)", "grpo.max_steps")
    with pytest.raises(ConfigError) as caught:
        stopper.on_train_begin(args, TrainerState(max_steps=10), TrainerControl())
    assert str(caught.value) == (
        "grpo.schedule_epochs (0.5) plans 10 steps, fewer than grpo.max_steps (11): the run "
        "would end before its last step"
    )
