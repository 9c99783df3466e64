"""Run times in trainers' logs: they differ from run to run, so they stay out of stage outputs.

A stage output holds only what the inputs determine, so that two runs on two machines in two
checkouts hash the same (DVC compares those hashes). Trainers mix wall-clock figures into
their logs and summaries (HF's ``train_runtime`` / ``*_per_second``, TRL's ``step_time``,
LLaMA-Factory's ``elapsed_time`` / ``remaining_time``); the stages split them off and write them
to the stage's log instead (``logs/<stage>/...``, not an output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RUN_TIME_KEYS = frozenset({"step_time", "elapsed_time", "remaining_time"})
"""Time keys by exact name; HF's ``<split>_runtime`` and ``<split>_*_per_second`` by suffix."""
RUN_TIME_SUFFIXES = ("_runtime", "_per_second")


def is_run_time(key: str) -> bool:
    """Whether a logged key is a wall-clock figure.

    >>> [is_run_time(k) for k in ("train_runtime", "train_samples_per_second", "step_time")]
    [True, True, True]
    >>> [is_run_time(k) for k in ("train_loss", "epoch", "total_flos", "reward")]
    [False, False, False, False]
    """
    return key in RUN_TIME_KEYS or key.endswith(RUN_TIME_SUFFIXES)


def split_run_times(row: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``row`` without its run times, and the run times.

    >>> split_run_times({"loss": 1.5, "step_time": 0.4, "step": 3})
    ({'loss': 1.5, 'step': 3}, {'step_time': 0.4})
    """
    kept = {k: v for k, v in row.items() if not is_run_time(k)}
    times = {k: v for k, v in row.items() if is_run_time(k)}
    return kept, times
