"""vlrl.workflow.slurm_preempted: the wrap of the Slurm plugin's status query, its exact
warning, and what it does without the plugin."""

from __future__ import annotations

import asyncio
import logging

import pytest
import snakemake_executor_plugin_slurm as plugin

from vlrl.workflow import slurm_preempted


def test_without_the_plugin_nothing_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm_preempted, "PLUGIN", "no_such_plugin_module_here")
    assert slurm_preempted.report_preempted_as_failed() is False


def test_the_plugin_is_the_slurm_executors() -> None:
    assert slurm_preempted.PLUGIN == "snakemake_executor_plugin_slurm"


def test_an_already_wrapped_query_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    async def query(command, logger):
        return {"1": "PREEMPTED"}, 0.0

    query.vlrl_preempted_as_failed = True
    monkeypatch.setattr(plugin, "query_job_status", query)
    assert slurm_preempted.report_preempted_as_failed() is True
    assert plugin.query_job_status is query


def test_an_unwrapped_query_is_wrapped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async def query(command, logger):
        return {}, 0.0

    monkeypatch.setattr(plugin, "query_job_status", query)
    assert slurm_preempted.report_preempted_as_failed() is True
    wrapped = plugin.query_job_status
    assert wrapped is not query and wrapped.vlrl_preempted_as_failed is True
    assert wrapped.__name__ == "query" and wrapped.__wrapped__ is query
    assert slurm_preempted.report_preempted_as_failed() is True
    assert plugin.query_job_status is wrapped


def test_the_warning_names_the_job_and_why_it_is_failed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    asked = []

    async def query(command, logger):
        asked.append((command, logger))
        return {"7": "PREEMPTED", "8": "preempted"}, 2.5

    monkeypatch.setattr(plugin, "query_job_status", query)
    slurm_preempted.report_preempted_as_failed()
    logger = logging.getLogger("test.slurm")
    with caplog.at_level(logging.WARNING, logger="test.slurm"):
        status, duration = asyncio.run(plugin.query_job_status("sacct -X", logger))
    assert asked == [("sacct -X", logger)]
    assert (status, duration) == ({"7": "FAILED", "8": "preempted"}, 2.5)
    assert [r.getMessage() for r in caplog.records] == [
        "Slurm job 7 was preempted and cancelled (PreemptMode=CANCEL): reported as failed, so "
        "that Snakemake's retries resubmit it (a GRPO job resumes from its checkpoint)"
    ]
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
