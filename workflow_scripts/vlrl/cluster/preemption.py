"""A Slurm job's time limit, preemption and requeue, as a resumable training stage sees them.

A resumable stage stops, with a checkpoint, after the step in which either comes first:

- its stop time: the job's time left, read once when the stage starts (:func:`stop_time`);
- a stop signal: SIGURG, SIGUSR1 or SIGTERM (:func:`stop_on_signals`; a second SIGTERM, or
  :data:`~vlrl.cluster.relay.TERM_GRACE_S` after the first, ends the stage at once as before).

Which signal Slurm sends: :func:`signal_option`. A Snakemake job runs under Slurm as
``sh`` (the batch script) → snakemake → ``srun`` → snakemake → bash → ``vlrl grpo``, which
starts the training in a job step of its own under the relay (:func:`relayed_command`):
``srun`` → relay → ``vlrl grpo`` → torchrun → ranks. ``sbatch --signal=URG@N`` signals the
steps; under ``proctrack/cgroup`` only their direct children of slurmstepd get it (the inner
snakemake, which ignores SIGURG, and the relay, which passes it to every process of the run:
:mod:`vlrl.cluster.relay`); under ``proctrack/linuxproc`` every process of the steps. SIGURG is
ignored by default, so only the stage and the ranks act on it: they checkpoint and stop.
SIGUSR1 would kill snakemake, bash and torchrun (its default action), ending the job with no
checkpoint; ``--signal=B:...`` signals only the batch shell.

Torch-free (the grpo stage reads its stop time before the CLI pins threads); the trainer callback
that stops is :mod:`vlrl.cluster.timelimit`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vlrl.cluster.distributed import slurm_output
from vlrl.cluster.relay import STOP_SIGNALS, signal_descendants
from vlrl.core.errors import StageError

log = logging.getLogger(__name__)

STOP_AT_ENV = "VLRL_STOP_AT"
"""Seconds since the epoch at which a resumable stage stops and saves (set by the stage from
its Slurm job's time limit; a launcher that knows its own limit may set it too)."""


def parse_time_left(text: str) -> float | None:
    """Seconds in squeue's time left (``%L``: ``[days-][hours:]minutes:seconds``), or None when
    the job has no limit.

    >>> parse_time_left("1-02:03:04"), parse_time_left("05:00"), parse_time_left("UNLIMITED")
    (93784.0, 300.0, None)
    """
    text = text.strip()
    if not text or not text[0].isdigit():
        return None  # UNLIMITED, NOT_SET, INVALID
    days, _, clock = text.rpartition("-")
    seconds = 0
    for part in clock.split(":"):
        seconds = seconds * 60 + int(part)
    return float(seconds + 86400 * int(days or 0))


def job_seconds_left(env: Mapping[str, str] | None = None) -> float | None:
    """Seconds until the time limit of the Slurm job this process runs in; None outside Slurm
    or for a job without a limit.

    Raises:
        StageError: inside a Slurm job whose limit ``squeue`` cannot tell (not installed, as in
            a container without the Slurm client, or failing): a stage that runs on without
            knowing its limit is killed at it without a checkpoint.
    """
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None
    try:
        return parse_time_left(slurm_output(["squeue", "-h", "-j", job, "-o", "%L"]))
    except StageError as err:
        raise StageError(
            f"this stage runs in Slurm job {job} but cannot read its time limit: {err}. Inside "
            'a container, bind the Slurm client and its configuration in (README, "Run on a '
            'cluster"); to run without a limit, unset SLURM_JOB_ID'
        ) from err


def stop_time(margin_s: float) -> float | None:
    """When a resumable stage stops (seconds since the epoch): ``$VLRL_STOP_AT`` when set, else
    its Slurm job's limit less ``margin_s``; None when there is no limit."""
    if os.environ.get(STOP_AT_ENV):
        return float(os.environ[STOP_AT_ENV])
    left = job_seconds_left()
    if left is None:
        return None
    if left <= margin_s:
        log.warning(
            "the job has %.0f s left, within the stop margin of %.0f s: the stage stops after "
            "its first step and requeues, so every run of the job makes one step. Give the job "
            "more time (resources.<stage>.runtime) or lower the margin (grpo.stop_margin_s)",
            left,
            margin_s,
        )
    return time.time() + left - margin_s


REQUEUE_ADVICE = (
    "a job is requeueable when submitted with --requeue (profiles/slurm sets the plugin's "
    "`requeue: true` for that) or when the cluster's slurm.conf has JobRequeue=1 (the default); "
    "ask your site which applies"
)


def requeue_job(
    checkpoints: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    """Requeue the Slurm job this process runs in (it restarts from its batch script, here: the
    same rule, which resumes). Returns whether it did and, when not, why in a sentence (outside
    Slurm; Slurm refusing, its message quoted with what makes a job requeueable). With
    ``checkpoints``, the requeue is counted in its :data:`REQUEUES` record first (Slurm ends the
    job at once), and uncounted when Slurm refuses."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return False, "not a Slurm job"
    if checkpoints is None:
        return _requeue(job)
    record = read_requeues(checkpoints)
    write_requeues(checkpoints, {**record, "requeues": record["requeues"] + 1})
    requeued, why = _requeue(job)
    if not requeued:
        write_requeues(checkpoints, record)
    return requeued, why


def _requeue(job: str) -> tuple[bool, str]:
    """``scontrol requeue`` of ``job``: whether Slurm took it, and why not."""
    try:
        slurm_output(["scontrol", "requeue", job])
    except StageError as err:
        return False, f"Slurm refused to requeue job {job} ({err}); {REQUEUE_ADVICE}"
    return True, ""


REQUEUES = "vlrl_requeues.json"
"""Beside a stage's checkpoints: the global step each run of it started from (``starts``) and
how often it requeued its job (``requeues``); removed with the checkpoints."""


def read_requeues(checkpoints: Path) -> dict[str, Any]:
    """The :data:`REQUEUES` record of ``checkpoints`` (empty when there is none or it does not
    parse: a fresh count)."""
    try:
        record = json.loads((checkpoints / REQUEUES).read_text())
        return {"starts": [int(s) for s in record["starts"]], "requeues": int(record["requeues"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {"starts": [], "requeues": 0}


def write_requeues(checkpoints: Path, record: Mapping[str, Any]) -> None:
    """Write the :data:`REQUEUES` record (replaced whole: a kill leaves the old one or the new)."""
    tmp = checkpoints / f".{REQUEUES}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(checkpoints / REQUEUES)


def record_start(checkpoints: Path, step: int) -> dict[str, Any]:
    """Note in the :data:`REQUEUES` record that a run starts from ``step``; returns the record."""
    record = read_requeues(checkpoints)
    record = {**record, "starts": [*record["starts"], step]}
    write_requeues(checkpoints, record)
    return record


def requeue_refusal(
    record: Mapping[str, Any], reached: int | None, max_requeues: int
) -> str | None:
    """Why a run that stopped to resume later should not requeue its job, or None: when its
    newest checkpoint (step ``reached``) is not past the step it started from (the rerun would
    repeat it), or after ``max_requeues`` requeues. ``record``: :func:`read_requeues`.

    >>> requeue_refusal({"starts": [0, 4], "requeues": 1}, 8, 10) is None
    True
    """
    starts, requeues = record["starts"] or [0], record["requeues"]
    history = f"{requeues} requeues so far, the runs started at steps {starts}"
    advice = (
        "give the job more time (resources.grpo.runtime), lower grpo.stop_margin_s, or save "
        "more often (grpo.save_steps)"
    )
    if reached is None or reached <= starts[-1]:
        return (
            f"no checkpoint got past step {starts[-1]}, where this run started, so a rerun "
            f"would repeat it ({history}). To make progress, {advice}"
        )
    if requeues >= max_requeues:
        return (
            f"the job was requeued max_requeues = {max_requeues} times already ({history}). "
            f"Raise grpo.max_requeues and rerun to resume from step {reached}, or {advice}"
        )
    return None


SLURM_SIGNAL = "URG"
"""The signal Slurm sends before the time limit (:func:`signal_option`)."""

_requested: str | None = None


def signal_option(margin_s: int) -> str:
    """The sbatch option asking Slurm to send :data:`SLURM_SIGNAL` to every process of the job's
    steps ``margin_s`` seconds before its time limit (``slurm_extra`` of the plugin); Slurm
    sends it up to a minute early, and allows at most 65535 s.

    >>> signal_option(300)
    '--signal=URG@300'
    """
    return f"--signal={SLURM_SIGNAL}@{min(max(int(margin_s), 1), 65535)}"


def stop_requested() -> str | None:
    """The name of the first stop signal this process got inside :func:`stop_on_signals`,
    or None."""
    return _requested


@contextlib.contextmanager
def stop_on_signals(forward: bool = False, grace_s: float | None = None) -> Iterator[None]:
    """While the block runs, a signal of :data:`STOP_SIGNALS` asks the training to checkpoint
    and stop after its step (:func:`stop_requested`) instead of ending the process.

    Args:
        forward: also send SIGURG to every descendant of this process (torchrun and its ranks,
            which torchrun starts in sessions of their own), for a signal that reached this
            process alone (``kill``, or Slurm under ``proctrack/cgroup``:
            :mod:`vlrl.cluster.relay`).
        grace_s: after a first SIGTERM, raise SystemExit (status 143, as the CLI does on
            SIGTERM) once this long has passed, or at a second SIGTERM; None: never.
    """
    global _requested
    _requested = None
    terms = []

    def give_up(signum, frame):
        raise SystemExit(128 + signal.SIGTERM)

    def request(signum, frame):
        global _requested
        _requested = _requested or signal.Signals(signum).name
        if forward:
            signal_descendants(signal.SIGURG)
        if signum == signal.SIGTERM and grace_s is not None:
            terms.append(signum)
            if len(terms) > 1:
                give_up(signum, frame)
            signal.signal(signal.SIGALRM, give_up)
            signal.alarm(max(1, int(grace_s)))

    before = {sig: signal.signal(sig, request) for sig in STOP_SIGNALS}
    alarm = signal.getsignal(signal.SIGALRM)
    try:
        yield
    finally:
        if terms:
            signal.alarm(0)
        signal.signal(signal.SIGALRM, alarm)
        for sig, handler in before.items():
            signal.signal(sig, handler)
