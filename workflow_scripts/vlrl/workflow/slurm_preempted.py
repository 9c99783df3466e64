"""A Slurm job cancelled by preemption fails in Snakemake instead of being waited on for ever.

Under ``PreemptMode=CANCEL`` a preempted job ends in state ``PREEMPTED``.
snakemake-executor-plugin-slurm 2.8.0 (``Executor.check_active_jobs``) warns once on that state
and then reports the job as running on every later poll (PREEMPTED is not among its failure
states), so ``retries`` never fires and the workflow waits for ever. This module wraps the
plugin's status query so that ``PREEMPTED`` reads as ``FAILED``: Snakemake then resubmits the
job (the Slurm profile's ``retries``), and a GRPO job resumes from its checkpoint. Under
``PreemptMode=REQUEUE`` Slurm requeues the job itself and sacct reports it pending, then running:
nothing changes there.

A resumable stage that gets the preemption's SIGTERM during the QOS's GraceTime requeues its
own job once it has checkpointed (:mod:`vlrl.cluster.preemption`), so a preemption rarely gets
that far; this is for the job the grace was too short for.
"""

from __future__ import annotations

import functools
from typing import Any

PLUGIN = "snakemake_executor_plugin_slurm"


def report_preempted_as_failed() -> bool:
    """Wrap the Slurm executor plugin's status query (see the module docstring); False when the
    plugin is not installed. Idempotent."""
    try:
        plugin = __import__(PLUGIN)
    except ImportError:
        return False
    query = plugin.query_job_status
    if getattr(query, "vlrl_preempted_as_failed", False):
        return True

    @functools.wraps(query)
    async def query_job_status(command: str, logger: Any):
        status, duration = await query(command, logger)
        for job, state in (status or {}).items():
            if state == "PREEMPTED":
                logger.warning(
                    f"Slurm job {job} was preempted and cancelled (PreemptMode=CANCEL): reported "
                    "as failed, so that Snakemake's retries resubmit it (a GRPO job resumes from "
                    "its checkpoint)"
                )
                status[job] = "FAILED"
        return status, duration

    query_job_status.vlrl_preempted_as_failed = True
    plugin.query_job_status = query_job_status
    return True
