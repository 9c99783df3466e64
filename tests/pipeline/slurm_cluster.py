"""The one-node Slurm cluster of the pipeline tests (`.ci/slurm-up` starts it; CI runs it before
`make test`): whether one answers, the Snakemake command that submits to it, and what its
accounting says. Where no cluster answers the tests skip and say why; under ``CI=true`` they
fail (:func:`require_cluster`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from vlrl.workflow.slurm_polling import ENV as STATUS_CAP

ARTIFACTS = ("results", "resources", "reports")
UP_STATES = {"idle", "mixed", "allocated", "completing"}
"""sinfo's states (%T) of a node that takes jobs now or once its running ones end."""
ON_SLURM = [
    # a one-node test cluster answers at once: look at the jobs every few seconds, never the
    # plugin's up to 180 s between two looks while no job ends (vlrl.workflow.slurm_polling)
    *("env", f"{STATUS_CAP}=5"),
    *("snakemake", "--profile", "profiles/slurm"),
    *("--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "5"),
]


def no_cluster() -> str | None:
    """Why no Slurm cluster can run the test here, or None when one answers."""
    if not shutil.which("sbatch"):
        return "no Slurm here (sbatch not found): `.ci/slurm-up` (root, Debian) starts one"
    try:
        state = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30
        )
        accounting = subprocess.run(
            ["sacct", "-n", "-X", "-S", "now-1hour"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"Slurm does not answer ({err}): `.ci/slurm-up` starts a cluster"
    # a node running another job (mixed, allocated, completing) is up: the jobs queue
    if state.returncode or not set(state.stdout.split()) & UP_STATES:
        return f"no Slurm node up (sinfo: {(state.stdout + state.stderr).strip()!r})"
    if accounting.returncode:
        return f"sacct does not answer ({accounting.stderr.strip()!r}): slurmdbd is not up"
    return None


NO_CLUSTER = no_cluster()


def artifact_hashes(root: Path) -> dict[str, str]:
    """SHA-256 of every artifact file (results, resources, reports), by relative path."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for top in ARTIFACTS
        for path in sorted((root / top).rglob("*"))
        if path.is_file()
    }


def sacct(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """job id → (state, comment) as Slurm's accounting records them."""
    out = subprocess.run(
        [
            "sacct",
            "-X",
            "-n",
            "--parsable2",
            "--format=JobIDRaw,State,Comment",
            "-j",
            ",".join(job_ids),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    return {job: (state, comment) for job, state, comment in rows}


def sacct_rows(fields: str, *options: str) -> list[list[str]]:
    """sacct's job records (``-X``: the jobs, not their steps) with ``--format=fields``, one list
    of values per row; ``options`` select them (``-S <start>``, ``-D`` for requeued runs too)."""
    out = subprocess.run(
        ["sacct", "-X", "-n", "--parsable2", *options, f"--format={fields}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def wait_for_accounting(job_ids: list[str], timeout_s: float = 60) -> dict[str, tuple[str, str]]:
    """sacct's records of ``job_ids`` once every one is there (slurmdbd lags a little)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = sacct(job_ids)
        if set(found) >= set(job_ids) or time.monotonic() > deadline:
            return found
        time.sleep(1)


def require_cluster() -> None:
    """Skip (fail under ``CI=true``, where CI started a cluster) when no cluster answers."""
    if NO_CLUSTER:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {NO_CLUSTER}")
        pytest.skip(NO_CLUSTER)


def release_requeued(proc: subprocess.Popen) -> list[str]:
    """While ``proc`` runs: start at once every job Slurm holds back after a requeue (Slurm
    delays a requeued job about two minutes, reason BeginTime); returns their ids."""
    released: list[str] = []
    while proc.poll() is None:
        queue = subprocess.run(
            ["squeue", "-h", "-o", "%i %r"], capture_output=True, text=True
        ).stdout.split("\n")
        for job, _, reason in (line.partition(" ") for line in queue if line.strip()):
            if reason == "BeginTime":
                subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=True)
                released.append(job)
        time.sleep(2)
    return released
