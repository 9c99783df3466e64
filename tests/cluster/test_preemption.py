"""A Slurm job's time left, the stop time a resumable stage derives from it, the stop signals,
and requeue (only with progress). The signals through a real Slurm job:
tests/pipeline/test_slurm_preemption.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_stand_ins import slurm_stand_in

from vlrl.cluster import preemption
from vlrl.cluster.preemption import (
    REQUEUES,
    STOP_AT_ENV,
    STOP_SIGNALS,
    parse_time_left,
    read_requeues,
    record_start,
    requeue_job,
    requeue_refusal,
    signal_option,
    stop_on_signals,
    stop_requested,
    stop_time,
)
from vlrl.core.errors import StageError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0:30", 30.0), ("59:59", 3599.0), ("1:00:00", 3600.0), ("2-00:00:01", 172801.0)],
)
def test_time_left_as_squeue_prints_it(text: str, seconds: float) -> None:
    assert parse_time_left(text) == seconds


@pytest.mark.parametrize("text", ["UNLIMITED", "NOT_SET", "INVALID", ""])
def test_no_time_limit(text: str) -> None:
    assert parse_time_left(text) is None


def test_a_limit_within_the_stop_margin_is_warned(monkeypatch, caplog) -> None:
    """A job shorter than the margin still progresses (one step a run), but says why."""
    monkeypatch.delenv(STOP_AT_ENV, raising=False)
    monkeypatch.setattr(preemption, "job_seconds_left", lambda: 120.0)
    with caplog.at_level("WARNING", logger="vlrl.cluster.preemption"):
        assert stop_time(300) < time.time()
    assert "120 s left, within the stop margin of 300 s" in caplog.text
    assert "resources.<stage>.runtime" in caplog.text
    caplog.clear()
    monkeypatch.setattr(preemption, "job_seconds_left", lambda: 3600.0)
    assert 3200 < stop_time(300) - time.time() <= 3300
    assert not caplog.text


# ------------------------------------------------------------------ the stop signal
def test_the_sbatch_signal_option() -> None:
    """SIGURG, which snakemake, bash and torchrun ignore (USR1 would kill them), to every
    process of the job's steps (no ``B:``, which signals only the batch shell)."""
    assert signal_option(300) == "--signal=URG@300"
    assert signal_option(0) == "--signal=URG@1"  # Slurm reads @0 as no warning at all
    assert signal_option(10**6) == "--signal=URG@65535"  # Slurm's largest


@pytest.mark.parametrize("sig", [signal.SIGURG, signal.SIGUSR1, signal.SIGTERM])
def test_a_stop_signal_is_noted_not_fatal(sig: signal.Signals) -> None:
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    with stop_on_signals():
        assert stop_requested() is None
        os.kill(os.getpid(), sig)
        time.sleep(0.01)  # the handler runs at the next bytecode of the main thread
        assert stop_requested() == sig.name
        os.kill(os.getpid(), signal.SIGURG)
        assert stop_requested() == sig.name  # the first one is kept
    assert {s: signal.getsignal(s) for s in STOP_SIGNALS} == before
    with stop_on_signals():
        assert stop_requested() is None  # each run starts afresh


def test_a_second_sigterm_ends_the_stage_at_once() -> None:
    with pytest.raises(SystemExit) as exit_, stop_on_signals(grace_s=60):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
        assert stop_requested() == "SIGTERM"
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
    assert exit_.value.code == 143
    assert signal.alarm(0) == 0  # the grace alarm is cancelled


def test_the_stage_ends_after_the_grace_without_a_checkpoint() -> None:
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_, stop_on_signals(grace_s=1):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert exit_.value.code == 143 and 0.5 < time.monotonic() - started < 4


def test_a_stop_signal_is_forwarded_to_the_ranks_session(tmp_path: Path) -> None:
    """``kill <stage>`` reaches the ranks, which torchrun starts in sessions of their own, as
    SIGURG."""
    got = tmp_path / "got"
    rank = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGURG, lambda s, f: open(sys.argv[1], 'w').write('URG'))\n"
            "open(sys.argv[1] + '.ready', 'w').close()\n"
            "time.sleep(30)\n",
            str(got),
        ],
        start_new_session=True,
    )
    try:
        while not Path(f"{got}.ready").exists():
            assert rank.poll() is None
            time.sleep(0.02)
        with stop_on_signals(forward=True):
            os.kill(os.getpid(), signal.SIGUSR1)
            deadline = time.monotonic() + 10
            while not got.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        assert got.read_text() == "URG" and rank.poll() is None
    finally:
        rank.kill()
        rank.wait()


# ------------------------------------------------------------------ requeue only with progress
def test_each_start_is_recorded(tmp_path: Path) -> None:
    assert read_requeues(tmp_path) == {"starts": [], "requeues": 0}
    record_start(tmp_path, 0)
    record_start(tmp_path, 4)
    assert read_requeues(tmp_path) == {"starts": [0, 4], "requeues": 0}
    (tmp_path / REQUEUES).write_text("{not json")
    assert read_requeues(tmp_path) == {"starts": [], "requeues": 0}


@pytest.mark.parametrize(
    ("starts", "requeues", "reached", "refusal"),
    [
        ([0], 0, 3, None),
        ([0, 3], 1, 6, None),
        ([0, 3], 9, 6, None),
        (
            [0, 3],
            10,
            6,
            "requeued max_requeues = 10 times already (10 requeues so far, the "
            "runs started at steps [0, 3]). Raise grpo.max_requeues and rerun to resume from "
            "step 6",
        ),
        ([0, 3], 1, 3, "no checkpoint got past step 3, where this run started"),
        ([0, 3], 1, None, "no checkpoint got past step 3"),
        ([0, 3], 1, 2, "no checkpoint got past step 3"),
    ],
)
def test_requeue_only_with_progress_and_at_most_max_requeues(
    starts: list[int], requeues: int, reached: int | None, refusal: str | None
) -> None:
    found = requeue_refusal({"starts": starts, "requeues": requeues}, reached, 10)
    if refusal is None:
        assert found is None
    else:
        assert refusal in found
        assert "resources.grpo.runtime" in found and "grpo.save_steps" in found


def test_a_refused_requeue_is_not_counted_and_says_what_makes_a_job_requeueable(
    tmp_path: Path,
) -> None:
    record_start(tmp_path, 0)
    assert requeue_job(tmp_path, env={}) == (False, "not a Slurm job")
    # a job Slurm does not know, a site with JobRequeue=0 (or no scontrol at all): refused
    requeued, why = requeue_job(tmp_path, env={"SLURM_JOB_ID": "2147483000"})
    assert not requeued
    assert why.startswith("Slurm refused to requeue job 2147483000 (`scontrol requeue 2147483000`")
    assert "--requeue" in why and "JobRequeue=1" in why and "`requeue: true`" in why
    assert read_requeues(tmp_path) == {"starts": [0], "requeues": 0}


def test_an_accepted_requeue_is_counted_before_slurm_ends_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slurm ends the job as soon as ``scontrol requeue`` returns: the count must already be
    on disk then (a stand-in scontrol reads it), one more at each requeue, so the cap
    (``requeue_refusal``) sees every requeue of the job."""
    checkpoints = tmp_path / "ckpt"
    seen = slurm_stand_in(
        tmp_path,
        "scontrol",
        f"(cat {checkpoints / REQUEUES}; echo) >> {tmp_path}/seen",
        monkeypatch,
    )
    checkpoints.mkdir()
    record_start(checkpoints, 0)
    assert requeue_job(checkpoints, env={"SLURM_JOB_ID": "77"}) == (True, "")
    record_start(checkpoints, 4)
    assert requeue_job(checkpoints, env={"SLURM_JOB_ID": "77"}) == (True, "")
    assert read_requeues(checkpoints) == {"starts": [0, 4], "requeues": 2}
    assert seen.read_text().splitlines() == ["requeue 77", "requeue 77"]
    assert (tmp_path / "seen").read_text().splitlines() == [
        '{"starts": [0], "requeues": 1}',
        '{"starts": [0, 4], "requeues": 2}',
    ]  # what the record said while Slurm ran
    assert requeue_refusal(read_requeues(checkpoints), 8, max_requeues=2) is not None
    # without a checkpoints folder nothing is counted, and the requeue still happens
    assert requeue_job(None, env={"SLURM_JOB_ID": "78"}) == (True, "")
    assert seen.read_text().splitlines()[-1].startswith("requeue 78")


def test_a_slurm_job_whose_limit_cannot_be_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a container without the Slurm client, the stage must not run on as if it had no
    limit (it would be killed at it without a checkpoint)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no squeue
    with pytest.raises(StageError, match=r"runs in Slurm job 12 but cannot read its time limit"):
        preemption.job_seconds_left({"SLURM_JOB_ID": "12"})
    assert preemption.job_seconds_left({}) is None  # outside Slurm: no limit


# ---------------------------------------------------------------- the decisions, one by one
def test_the_time_left_is_asked_of_squeue_for_this_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = slurm_stand_in(tmp_path, "squeue", "echo 1:00:00", monkeypatch)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert preemption.job_seconds_left() == 3600.0  # from the process's own environment
    assert argv.read_text().split() == ["-h", "-j", "4242", "-o", "%L"]


def test_an_unreadable_limit_says_what_to_do(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(StageError) as caught:
        preemption.job_seconds_left({"SLURM_JOB_ID": "12"})
    assert str(caught.value).endswith(
        ". Inside a container, bind the Slurm client and its configuration in (README, "
        '"Run on a cluster"); to run without a limit, unset SLURM_JOB_ID'
    )


def test_the_stop_time_given_by_the_launcher_wins(monkeypatch) -> None:
    monkeypatch.setenv(STOP_AT_ENV, "1234.5")
    monkeypatch.setenv("SLURM_JOB_ID", "1")  # not asked
    assert stop_time(60) == 1234.5


def test_a_limit_equal_to_the_margin_is_warned_in_full(monkeypatch, caplog) -> None:
    monkeypatch.delenv(STOP_AT_ENV, raising=False)
    monkeypatch.setattr(preemption, "job_seconds_left", lambda: 300.0)
    with caplog.at_level("WARNING", logger="vlrl.cluster.preemption"):
        stop_time(300)
    assert caplog.messages == [
        "the job has 300 s left, within the stop margin of 300 s: the stage stops after its "
        "first step and requeues, so every run of the job makes one step. Give the job more "
        "time (resources.<stage>.runtime) or lower the margin (grpo.stop_margin_s)"
    ]


def test_a_refusal_names_the_last_start_and_says_what_to_do() -> None:
    record = {"starts": [0, 3, 5], "requeues": 2}
    assert requeue_refusal(record, 5, 10) == (
        "no checkpoint got past step 5, where this run started, so a rerun would repeat it (2 "
        "requeues so far, the runs started at steps [0, 3, 5]). To make progress, give the job "
        "more time (resources.grpo.runtime), lower grpo.stop_margin_s, or save more often "
        "(grpo.save_steps)"
    )
    # no start recorded: the run started at step 0
    fresh = requeue_refusal({"starts": [], "requeues": 0}, None, 10)
    assert fresh.startswith("no checkpoint got past step 0, where this run started")
    assert "the runs started at steps [0]" in fresh


def test_a_refused_requeue_without_checkpoints_counts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stand_in(tmp_path, "scontrol", "echo refused >&2; exit 1", monkeypatch)
    requeued, why = requeue_job(None, env={"SLURM_JOB_ID": "9"})
    assert not requeued and why.startswith("Slurm refused to requeue job 9 (")
    assert "refused" in why


def test_outside_slurm_nothing_is_requeued(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert requeue_job(tmp_path) == (False, "not a Slurm job")  # the process's environment
    assert not (tmp_path / REQUEUES).exists()
