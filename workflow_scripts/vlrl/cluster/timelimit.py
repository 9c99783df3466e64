"""Stopping a training run before its job's time limit or on a stop signal, with a checkpoint to
resume from; and at a planned step of a longer schedule (:class:`StopAtStep`).

A Slurm job killed at its limit loses everything since its last checkpoint, and a run longer
than any one job's limit never ends. So the GRPO stage reads its job's time left when it starts
(:func:`vlrl.cluster.preemption.stop_time`), and :class:`StopBeforeLimit` ends training at the
first step after which the time left is under ``grpo.stop_margin_s`` plus two of the longest
steps seen (timed from the start of the first step: loading the model, starting DeepSpeed or
vLLM before it is no step), or after the step in which a process got a stop signal (Slurm's
signal before the limit, preemption, ``scancel --signal=URG``:
:func:`vlrl.cluster.preemption.stop_on_signals`): the trainer saves a checkpoint there and
stops. Every process decides together (the decision is all-reduced), so all ranks stop after the
same step, also when only one got the signal. The stage then requeues its job (or, outside
Slurm, asks to be rerun), and the next run resumes from the checkpoint.
"""

from __future__ import annotations

import logging
import time

from transformers import TrainerCallback

from vlrl.cluster.preemption import stop_requested
from vlrl.core.errors import ConfigError

log = logging.getLogger(__name__)

_NONE, _LIMIT, _SIGNAL = 0, 1, 2
"""Why a process wants to stop, in the order the all-reduce (max) prefers."""


def _agree(want: int, device) -> int:
    """The strongest reason any process has to stop (all-reduced, so every rank gets the same
    answer)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return want
    flag = torch.tensor([float(want)], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return int(flag.item())


class StopBeforeLimit(TrainerCallback):
    """Save a checkpoint and stop once a step ends within two of the longest steps of
    ``stop_at`` (seconds since the epoch; None: no limit), or once a process of the run got a
    stop signal; :attr:`stopped_at` is then that step and :attr:`stopped_by` why. The run's
    last step (``last_step``, else the end of the trainer's schedule) never stops: the run ends
    there anyway."""

    def __init__(self, stop_at: float | None, last_step: int | None = None) -> None:
        self.stop_at = stop_at
        self.last_step = last_step
        self.stopped_at: int | None = None
        self.stopped_by: str | None = None
        self._last: float | None = None
        self._longest = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        if self._last is None:  # the clock starts with the first step, not with the set-up
            self._last = time.time()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        now = time.time()
        self._longest = max(self._longest, now - (self._last if self._last is not None else now))
        self._last = now
        last = self.last_step or state.max_steps
        if state.global_step >= last:
            return control  # the last step: the run ends here anyway
        signalled = stop_requested()
        want = _NONE
        if signalled:
            want = _SIGNAL
        elif self.stop_at is not None and now + 2 * self._longest >= self.stop_at:
            want = _LIMIT
        why = _agree(want, args.device)
        if why == _NONE:
            return control
        if why == _SIGNAL:
            # a signal that arrived while this rank waited in the all-reduce reached it too
            signalled = stop_requested()
            self.stopped_by = f"on {signalled or 'a stop signal to another process'}"
        else:
            self.stopped_by = "before the job's time limit"
        log.info(
            "stopping after step %d of %d %s (%s); saving a checkpoint",
            state.global_step,
            last,
            self.stopped_by,
            "no time limit"
            if self.stop_at is None
            else f"the time limit is {self.stop_at - now:.0f} s away, longest step "
            f"{self._longest:.1f} s",
        )
        control.should_save = True
        control.should_training_stop = True
        self.stopped_at = state.global_step
        return control


class StopAtStep(TrainerCallback):
    """End training after optimizer step ``last_step`` (the setting ``stop_key``) of a longer
    schedule; fail at the start when the schedule the trainer planned has fewer steps (epochs
    of a small dataset), naming ``planned_by``: a released run planned for 2 epochs and reported
    at step 600 trains 600 steps at the rates of the 2-epoch schedule."""

    def __init__(self, last_step: int, planned_by: str, stop_key: str) -> None:
        self.last_step = last_step
        self.planned_by = planned_by
        self.stop_key = stop_key

    def on_train_begin(self, args, state, control, **kwargs):
        if state.max_steps < self.last_step:
            raise ConfigError(
                f"{self.planned_by} plans {state.max_steps} steps, fewer than "
                f"{self.stop_key} ({self.last_step}): the run would end before its last step"
            )
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= self.last_step:
            control.should_training_stop = True
        return control
