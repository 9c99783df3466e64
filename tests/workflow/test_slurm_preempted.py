"""vlrl.workflow.slurm_preempted: a job Slurm reports PREEMPTED (PreemptMode=CANCEL) fails in
the Slurm executor plugin, so Snakemake's retries resubmit it; the real cancel-mode preemption:
tests/pipeline/test_slurm_preemption.py."""

from __future__ import annotations

import asyncio
import logging

import pytest
import snakemake_executor_plugin_slurm as plugin

from vlrl.workflow.slurm_preempted import report_preempted_as_failed


def test_the_plugin_itself_still_waits_on_a_preempted_job() -> None:
    """Why the wrap exists: the pinned plugin does not count PREEMPTED as a failure. When a
    release does, this fails and the wrap can go."""
    import inspect

    source = inspect.getsource(plugin.Executor.check_active_jobs)
    fail_states = source[
        source.index("fail_stati = (") : source.index(")", source.index("fail_stati"))
    ]
    assert '"PREEMPTED"' not in fail_states and '"FAILED"' in fail_states


def test_preempted_reads_as_failed_and_other_states_pass(
    monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    async def query(command, logger):
        return {"11": "PREEMPTED", "12": "RUNNING", "13": "COMPLETED", "14": "PENDING"}, 0.1

    monkeypatch.setattr(plugin, "query_job_status", query)
    assert report_preempted_as_failed() and report_preempted_as_failed()  # idempotent
    wrapped = plugin.query_job_status
    assert wrapped.vlrl_preempted_as_failed and wrapped.__wrapped__ is query
    logger = logging.getLogger("test")
    with caplog.at_level("WARNING"):
        status, duration = asyncio.run(wrapped("sacct ...", logger))
    assert status == {"11": "FAILED", "12": "RUNNING", "13": "COMPLETED", "14": "PENDING"}
    assert duration == 0.1
    assert "Slurm job 11 was preempted and cancelled (PreemptMode=CANCEL)" in caplog.text


def test_a_failed_query_passes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    async def query(command, logger):
        return None, None

    monkeypatch.setattr(plugin, "query_job_status", query)
    report_preempted_as_failed()
    assert asyncio.run(plugin.query_job_status("sacct", logging.getLogger())) == (None, None)
