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


def test_the_first_step_is_timed_and_so_is_the_time_between_steps(clock: Clock) -> None:
    """The longest step sets the margin from the first one on, and a step's time runs from the
    end of the one before (what happens between them, logging or saving, counts)."""
    assert _steps(StopBeforeLimit(stop_at=clock.now + 100), clock, [30.0, 5.0, 5.0, 5.0]) == 3
    stopper = StopBeforeLimit(stop_at=clock.now + 100)
    args = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to=[])
    state = TrainerState(max_steps=100)
    for step in (1, 2):
        stopper.on_step_begin(args, state, TrainerControl())
        clock.now += 5.0
        state.global_step = step
        stopper.on_step_end(args, state, TrainerControl())
        clock.now += 25.0  # a save between the steps
    assert stopper._longest == 30.0


def test_a_short_run_without_a_stop_records_none(clock: Clock) -> None:
    stopper = StopBeforeLimit(stop_at=clock.now + 10_000)
    assert _steps(stopper, clock, [0.5] * 3) is None
    assert (stopper.stopped_at, stopper.stopped_by) == (None, None)
    # half-second steps: a margin of two of them, not of a second each
    assert _steps(StopBeforeLimit(stop_at=clock.now + 3.5), clock, [0.5] * 10) == 5


def test_a_signal_stops_after_the_step_and_says_which(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(timelimit, "stop_requested", lambda: "SIGURG")
    stopper = StopBeforeLimit(stop_at=None)
    with caplog.at_level("INFO", logger="vlrl.cluster.timelimit"):
        assert _steps(stopper, clock, [10.0] * 5) == 1
    assert (stopper.stopped_at, stopper.stopped_by) == (1, "on SIGURG")
    assert caplog.messages == [
        "stopping after step 1 of 100 on SIGURG (no time limit); saving a checkpoint"
    ]


def test_the_limit_stop_says_how_far_the_limit_is(clock: Clock, caplog) -> None:
    stopper = StopBeforeLimit(stop_at=clock.now + 45)
    with caplog.at_level("INFO", logger="vlrl.cluster.timelimit"):
        assert _steps(stopper, clock, [10.0] * 5) == 3
    assert caplog.messages == [
        "stopping after step 3 of 100 before the job's time limit (the time limit is 15 s "
        "away, longest step 10.0 s); saving a checkpoint"
    ]


def test_another_ranks_signal_stops_this_one_too(clock: Clock, monkeypatch) -> None:
    monkeypatch.setattr(timelimit, "_agree", lambda want, device: 2)  # _SIGNAL, from a peer
    stopper = StopBeforeLimit(stop_at=None)
    assert _steps(stopper, clock, [1.0] * 3) == 1
    assert stopper.stopped_by == "on a stop signal to another process"


def test_a_signal_during_the_all_reduce_is_this_ranks_own(clock: Clock, monkeypatch) -> None:
    """The relay signals every rank at once; one that got it while it waited for a faster peer
    in the all-reduce stopped on it, not only on its peer's decision."""
    received: list[str] = []

    def peer_signalled_meanwhile(want: int, device) -> int:
        received.append("SIGURG")
        return 2  # _SIGNAL

    monkeypatch.setattr(timelimit, "stop_requested", lambda: received[0] if received else None)
    monkeypatch.setattr(timelimit, "_agree", peer_signalled_meanwhile)
    stopper = StopBeforeLimit(stop_at=None)
    assert _steps(stopper, clock, [1.0] * 3) == 1
    assert stopper.stopped_by == "on SIGURG"


PEER = """
import sys
from datetime import timedelta
import torch.distributed as dist
from transformers import TrainerControl, TrainerState, TrainingArguments
from vlrl.cluster import timelimit

dist.init_process_group(
    "gloo", init_method=f"file://{sys.argv[1]}", rank=1, world_size=2, timeout=timedelta(seconds=60)
)
timelimit.stop_requested = lambda: "SIGURG"  # this rank got the signal
stopper = timelimit.StopBeforeLimit(stop_at=None)
args = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to=[])
state, control = TrainerState(max_steps=10), TrainerControl()
stopper.on_step_begin(args, state, control)
state.global_step = 1
stopper.on_step_end(args, state, control)
print(control.should_training_stop, stopper.stopped_by, timelimit._agree(2, "cpu"), flush=True)
dist.destroy_process_group()
"""


def test_every_rank_stops_for_the_strongest_reason_any_has(
    tmp_path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Across real processes (gloo; this one rank 0, a peer rank 1): the decision is
    all-reduced with MAX, so the rank that ran out of time and the one that got the signal
    both stop after the same step, for the signal."""
    import os
    import subprocess
    import sys
    from datetime import timedelta

    import torch.distributed as dist

    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # the same vlrl as here
    peer = subprocess.Popen(
        [sys.executable, "-c", PEER, str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        dist.init_process_group(
            "gloo", init_method=f"file://{store}", rank=0, world_size=2,
            timeout=timedelta(seconds=60),
        )  # fmt: skip
        try:
            stopper = StopBeforeLimit(stop_at=clock.now)  # out of time, no signal here
            assert _steps(stopper, clock, [1.0]) == 1
            assert stopper.stopped_by == "on a stop signal to another process"
            assert timelimit._agree(1, "cpu") == 2  # MAX, not the sum
        finally:
            dist.destroy_process_group()
        out, err = peer.communicate(timeout=120)
    finally:
        peer.kill()
    assert peer.returncode == 0, err[-2000:]
    assert out.strip().splitlines()[-1] == "True on SIGURG 2"
