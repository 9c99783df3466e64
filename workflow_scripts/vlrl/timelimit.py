"""Stopping a training run before its job's time limit, with a checkpoint to resume from.

A Slurm job killed at its limit loses everything since its last checkpoint, and a run longer than
any one job's limit never ends. So the GRPO stage reads its job's time left when it starts
(:func:`vlrl.distributed.stop_time`), and :class:`StopBeforeLimit` ends training at the
first step after which the time left is under ``grpo.stop_margin_s`` plus two of the
longest steps seen: the trainer saves a checkpoint there and stops. Every process decides
together (the decision is all-reduced), so all ranks stop after the same step. The stage then
requeues its job (or, outside Slurm, asks to be rerun), and the next run resumes from the
checkpoint.
"""

from __future__ import annotations

import logging
import time

from transformers import TrainerCallback

log = logging.getLogger(__name__)


def _agree(stop: bool, device) -> bool:
    """Whether any process wants to stop (all-reduced, so every rank gets the same answer)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return stop
    flag = torch.tensor([1.0 if stop else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


class StopBeforeLimit(TrainerCallback):
    """Save a checkpoint and stop once a step ends within two of the longest steps of
    ``stop_at`` (seconds since the epoch); :attr:`stopped_at` is then that step."""

    def __init__(self, stop_at: float) -> None:
        self.stop_at = stop_at
        self.stopped_at: int | None = None
        self._last = time.time()
        self._longest = 0.0

    def on_step_end(self, args, state, control, **kwargs):
        now = time.time()
        self._longest = max(self._longest, now - self._last)
        self._last = now
        if state.global_step >= state.max_steps:
            return control  # the last step: the run ends here anyway
        if _agree(now + 2 * self._longest >= self.stop_at, args.device):
            log.info(
                "stopping after step %d of %d: the time limit is %.0f s away (longest step "
                "%.1f s); saving a checkpoint",
                state.global_step,
                state.max_steps,
                self.stop_at - now,
                self._longest,
            )
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step
        return control
