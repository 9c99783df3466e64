"""An upper bound on how long Snakemake waits between two looks at its Slurm jobs.

snakemake-executor-plugin-slurm 2.8.0 (``Executor.check_active_jobs``) waits
``--slurm-init-seconds-before-status-checks`` between two ``sacct`` queries, and 10 s longer
after each query in which no job ended, up to 180 s: right for a busy controller and jobs of
hours, but a chain of minute-long jobs (score, report, a test cluster's whole DAG) then waits
up to a minute after each job. ``$VLRL_SLURM_STATUS_MAX_S`` (seconds) bounds that wait; unset,
the plugin's own schedule holds.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from typing import Any

PLUGIN = "snakemake_executor_plugin_slurm"
ENV = "VLRL_SLURM_STATUS_MAX_S"


def status_interval_cap(environ: dict[str, str] | None = None) -> float | None:
    """The bound ``$VLRL_SLURM_STATUS_MAX_S`` sets, or None when it is unset or empty.

    >>> status_interval_cap({ENV: "5"}), status_interval_cap({})
    (5.0, None)

    Raises:
        ValueError: the value is not a positive number (the message names the variable).
    """
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0:  # (NaN too)
        raise ValueError(f"${ENV}={raw!r}: not a positive number of seconds")
    return seconds


def cap_status_interval(seconds: float | None) -> bool:
    """Wrap the Slurm plugin's status check so that the wait before the next one is at most
    ``seconds``; the last call's bound holds. False, changing nothing, when ``seconds`` is None
    or the plugin is not installed."""
    if seconds is None:
        return False
    try:
        executor = __import__(PLUGIN).Executor
    except ImportError:
        return False
    check = executor.check_active_jobs
    original = getattr(check, "vlrl_unbounded", check)

    @functools.wraps(original)
    async def check_active_jobs(self: Any, active_jobs: Any) -> AsyncIterator[Any]:
        async for job in original(self, active_jobs):
            yield job
        if self.next_seconds_between_status_checks > seconds:
            self.next_seconds_between_status_checks = seconds

    check_active_jobs.vlrl_unbounded = original
    executor.check_active_jobs = check_active_jobs
    return True
