"""The DAG on a real Slurm cluster: `snakemake --profile profiles/slurm` submits every job with
sbatch, Slurm runs them, and the artifacts are those of a local run, bit for bit.

The cluster is the one-node Slurm that `.ci/slurm-up` starts on this machine (Debian's slurm-wlm,
munge, slurmdbd on MariaDB for sacct); CI runs it before `make test`. Where no cluster answers,
the tests skip and say why (pytest prints the reason: -ra); under ``CI=true`` they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from scratch_project import SHRUNK_DEFAULT, Project

pytestmark = pytest.mark.slow

EXP = "tiny_shapes"
EXP_FILE = f"config/experiments/{EXP}.yaml"
ARTIFACTS = ("results", "resources", "reports")
ON_SLURM = [
    *("snakemake", "--profile", "profiles/slurm"),
    # a one-node test cluster answers at once: look at the jobs every few seconds
    *("--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "5"),
]


def _no_cluster() -> str | None:
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
    if state.returncode or "idle" not in state.stdout.split():
        return f"no idle Slurm node (sinfo: {(state.stdout + state.stderr).strip()!r})"
    if accounting.returncode:
        return f"sacct does not answer ({accounting.stderr.strip()!r}): slurmdbd is not up"
    return None


NO_CLUSTER = _no_cluster()


def _hashes(root: Path) -> dict[str, str]:
    """SHA-256 of every artifact file (results, resources, reports), by relative path."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for top in ARTIFACTS
        for path in sorted((root / top).rglob("*"))
        if path.is_file()
    }


def _sacct(job_ids: list[str]) -> dict[str, tuple[str, str]]:
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


def _wait_for_accounting(job_ids: list[str], timeout_s: float = 60) -> dict[str, tuple[str, str]]:
    """sacct's records of ``job_ids`` once every one is there (slurmdbd lags a little)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = _sacct(job_ids)
        if set(found) >= set(job_ids) or time.monotonic() > deadline:
            return found
        time.sleep(1)


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    if NO_CLUSTER:
        # CI starts a cluster (.ci/run); there, no cluster is a failure, never a silent skip
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {NO_CLUSTER}")
        pytest.skip(NO_CLUSTER)
    project = Project(tmp_path_factory.mktemp("slurm"))
    project.set_values(EXP_FILE, SHRUNK_DEFAULT)
    log = project(*ON_SLURM)
    return project, log


def test_every_job_went_through_sbatch_and_completed(slurm_run: tuple[Project, str]) -> None:
    project, log = slurm_run
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    planned = project.snakemake("-n", "--forceall", "--quiet", "rules")
    rules = dict(re.findall(r"^(\w+)\s+(\d+)$", planned, flags=re.MULTILINE))
    rules.pop("total")
    rules.pop("all")  # the target rule runs no command: nothing to submit
    assert len(submitted) == sum(map(int, rules.values())), log[-3000:]
    records = _wait_for_accounting(submitted)
    assert {job: state for job, (state, _) in records.items()} == dict.fromkeys(
        submitted, "COMPLETED"
    )
    ran = sorted(re.match(r"rule_(\w+?)(_wildcards_|$)", c).group(1) for _, c in records.values())
    assert ran == sorted(rule for rule, n in rules.items() for _ in range(int(n)))


def test_the_artifacts_equal_a_local_runs(
    slurm_run: tuple[Project, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    project, _ = slurm_run
    local = Project(tmp_path_factory.mktemp("local"))
    local.set_values(EXP_FILE, SHRUNK_DEFAULT)
    local.snakemake()
    on_slurm, here = _hashes(project.root), _hashes(local.root)
    assert any(name.startswith(f"results/{EXP}/grpo/") for name in here)
    assert on_slurm == here


def test_after_the_slurm_run_dvc_and_snakemake_have_nothing_to_do(
    slurm_run: tuple[Project, str],
) -> None:
    project, _ = slurm_run
    assert "Nothing to be done" in project.snakemake("-n")
    assert "Data and pipelines are up to date" in project("dvc", "status")


def _release_requeued(proc: subprocess.Popen) -> list[str]:
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


def test_a_grpo_job_at_its_time_limit_is_requeued_and_resumes(
    slurm_run: tuple[Project, str],
) -> None:
    """GRPO with a one-minute limit: the first run stops after step 1 (a checkpoint), requeues
    its Slurm job, and the requeued run resumes there and finishes; the policy is the one the
    uninterrupted run of the first test trained, bit for bit."""
    project, _ = slurm_run
    policy = project.root / f"results/{EXP}/grpo/final/model.safetensors"
    uninterrupted = hashlib.sha256(policy.read_bytes()).hexdigest()
    # stop_margin_s 55 of a 60 s limit: the stage stops after its first step, whatever the
    # machine's speed (max_steps 2: the resumed run's one step is the last, which never stops)
    project.set_values(EXP_FILE, {"resources.grpo.runtime": 1, "grpo.stop_margin_s": 55})
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    proc = subprocess.Popen(
        ON_SLURM,
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    released = _release_requeued(proc)
    log = proc.stdout.read()
    assert proc.wait() == 0, log[-3000:]
    rows = subprocess.run(
        [
            *("sacct", "-D", "-X", "-n", "--parsable2", "-S", started),
            "--format=JobIDRaw,State,Comment,WorkDir",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    grpo = [row.split("|") for row in rows if f"|rule_grpo_wildcards_{EXP}|" in row]
    grpo = [(job, state) for job, state, _, workdir in grpo if workdir == str(project.root)]
    history = [state for _, state in grpo]
    assert {job for job, _ in grpo} <= set(released), (grpo, released)
    assert history == ["REQUEUED", "COMPLETED"], history
    summary = json.loads((project.root / f"results/{EXP}/grpo/train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2
    assert hashlib.sha256(policy.read_bytes()).hexdigest() == uninterrupted
