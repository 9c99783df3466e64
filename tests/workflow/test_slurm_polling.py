"""vlrl.workflow.slurm_polling: $VLRL_SLURM_STATUS_MAX_S bounds the Slurm plugin's wait between
two status checks, on the plugin's own check (its no-job path) and on a stand-in for a round
whose jobs all still run."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest
import snakemake_executor_plugin_slurm as plugin

from vlrl.workflow import slurm_polling
from vlrl.workflow.slurm_polling import ENV, cap_status_interval, status_interval_cap


@pytest.mark.parametrize(("raw", "expected"), [("", None), ("  ", None), ("5", 5.0), ("0.5", 0.5)])
def test_the_cap_is_read_from_the_environment(raw: str, expected: float | None) -> None:
    assert status_interval_cap({ENV: raw}) == expected
    assert status_interval_cap({}) is None


def test_without_a_mapping_the_process_environment_is_read(monkeypatch) -> None:
    monkeypatch.setenv(ENV, " 7 ")
    assert status_interval_cap() == 7.0
    monkeypatch.delenv(ENV)
    assert status_interval_cap() is None


@pytest.mark.parametrize("raw", ["0", "-3", "five", "nan"])
def test_a_cap_that_is_no_positive_number_is_refused_by_name(raw: str) -> None:
    with pytest.raises(ValueError) as caught:
        status_interval_cap({ENV: raw})
    assert str(caught.value) == f"${ENV}={raw!r}: not a positive number of seconds"


def test_nothing_is_wrapped_without_a_cap_or_without_the_plugin(monkeypatch) -> None:
    check = plugin.Executor.check_active_jobs
    assert cap_status_interval(None) is False
    monkeypatch.setattr(slurm_polling, "PLUGIN", "no_such_plugin_module_here")
    assert cap_status_interval(5) is False
    assert plugin.Executor.check_active_jobs is check


def _executor(init_seconds: float) -> SimpleNamespace:
    return SimpleNamespace(
        workflow=SimpleNamespace(
            executor_settings=SimpleNamespace(init_seconds_before_status_checks=init_seconds)
        ),
        logger=logging.getLogger("test_slurm_polling"),
        next_seconds_between_status_checks=None,
    )


def _check(executor: SimpleNamespace, jobs: list) -> list:
    async def drain() -> list:
        return [job async for job in plugin.Executor.check_active_jobs(executor, jobs)]

    return asyncio.run(drain())


def test_the_plugins_own_check_is_bounded(monkeypatch) -> None:
    """With no active job the plugin's check sets the wait to its initial interval: 40 s is
    bounded to 5, 2 s stays."""
    monkeypatch.setattr(plugin.Executor, "check_active_jobs", plugin.Executor.check_active_jobs)
    assert cap_status_interval(5) is True
    slow, quick = _executor(40), _executor(2)
    assert _check(slow, []) == [] and _check(quick, []) == []
    assert slow.next_seconds_between_status_checks == 5
    assert quick.next_seconds_between_status_checks == 2


def test_a_round_without_an_ended_job_waits_at_most_the_cap(monkeypatch) -> None:
    """The plugin adds 10 s after a round in which no job ended; the running jobs pass through
    unchanged; a second cap replaces the first instead of wrapping the wrap."""

    async def check(self, active_jobs):
        for job in active_jobs:
            yield job
        self.next_seconds_between_status_checks += 10

    monkeypatch.setattr(plugin.Executor, "check_active_jobs", check)
    executor = _executor(2)
    executor.next_seconds_between_status_checks = 2
    assert cap_status_interval(5) is True
    assert _check(executor, ["a", "b"]) == ["a", "b"]
    assert executor.next_seconds_between_status_checks == 5
    assert cap_status_interval(30) is True
    assert plugin.Executor.check_active_jobs.vlrl_unbounded is check
    assert _check(executor, ["a"]) == ["a"]
    assert executor.next_seconds_between_status_checks == 15
    assert _check(executor, ["a"]) == ["a"] and executor.next_seconds_between_status_checks == 25
    assert _check(executor, ["a"]) == ["a"] and executor.next_seconds_between_status_checks == 30
