"""A GRPO job signalled on a real Slurm cluster checkpoints, requeues and resumes to the policy of
an uninterrupted run, bit for bit.

The signal is Slurm's stop signal, SIGURG (:func:`vlrl.cluster.preemption.signal_option`), sent as
``scancel --signal=URG <job>`` does to every process of the job's steps: what
``sbatch --signal=URG@<s>`` sends before the time limit, and preemption under
``PreemptParameters=send_user_signal``. The job also carries that option through the plugin's
``slurm_extra``, as ``stage_resources`` gives it. The cluster is `.ci/slurm-up`'s
(tests/pipeline/slurm_cluster.py).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from scratch_project import SHRUNK_DEFAULT, Project
from slurm_cluster import ON_SLURM, release_requeued, require_cluster, wait_for_accounting

from vlrl.cluster.preemption import signal_option

pytestmark = pytest.mark.slow

EXP = "tiny_shapes"
EXP_FILE = f"config/experiments/{EXP}.yaml"
STEPS = 6


def _grpo_job(root: Path) -> str | None:
    """The id of this project's running GRPO job, or None."""
    queue = subprocess.run(
        ["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k|%Z"], capture_output=True, text=True
    ).stdout
    for job, comment, workdir in (line.split("|") for line in queue.splitlines() if line):
        if comment.startswith(f"rule_grpo_wildcards_{EXP}") and workdir == str(root):
            return job
    return None


def _signal_after_step_one(root: Path, sent: list[str]) -> None:
    """Once the GRPO job has saved its step-1 checkpoint: ``scancel --signal=URG`` it."""
    first = root / f"results/{EXP}/grpo_checkpoints/checkpoint-1/trainer_state.json"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        job = _grpo_job(root) if first.is_file() else None
        if job:
            subprocess.run(["scancel", "--signal=URG", job], check=True)
            sent.append(job)
            return
        time.sleep(0.2)


def test_a_signalled_grpo_job_checkpoints_requeues_and_resumes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    require_cluster()
    project = Project(tmp_path_factory.mktemp("preempted"))
    project.set_values(EXP_FILE, {**SHRUNK_DEFAULT, "grpo.max_steps": STEPS, "grpo.save_steps": 1})
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    extra = f"grpo:slurm_extra='{signal_option(60)}'"
    proc = subprocess.Popen(
        [*ON_SLURM, "--set-resources", extra],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sent: list[str] = []
    signaller = threading.Thread(target=_signal_after_step_one, args=(project.root, sent))
    signaller.start()
    released = release_requeued(proc)
    signaller.join()
    log = proc.stdout.read()
    assert proc.wait() == 0, log[-3000:]
    assert sent, "the GRPO job never reached step 1"

    def sacct(*fields: str) -> str:
        return subprocess.run(
            ["sacct", "-D", "-X", "-S", started, *fields], capture_output=True, text=True
        ).stdout

    # the record of a preempted and resumed job (pytest -s shows it)
    print(sacct("--format=JobIDRaw,JobName%40,Comment%40,State,Start,End"))
    rows = sacct("-n", "--parsable2", "--format=JobIDRaw,State,Comment,WorkDir").splitlines()
    grpo = [
        (job, state)
        for job, state, comment, workdir in (row.split("|") for row in rows)
        if comment == f"rule_grpo_wildcards_{EXP}" and workdir == str(project.root)
    ]
    assert [state for _, state in grpo] == ["REQUEUED", "COMPLETED"], rows
    assert {job for job, _ in grpo} == {sent[0]} and sent[0] in released, (grpo, sent, released)
    assert wait_for_accounting([sent[0]])[sent[0]][0] == "COMPLETED"

    summary = json.loads((project.root / f"results/{EXP}/grpo/train_summary.json").read_text())
    resumed = int(summary["resumed_from"].rsplit("-", 1)[1])
    assert 1 < resumed < STEPS and summary["steps"] == STEPS, summary["resumed_from"]
    assert not (project.root / f"results/{EXP}/grpo_checkpoints").exists()

    # the same GRPO stage, uninterrupted, on a copy of the project as the Slurm run left it
    local = Project(tmp_path_factory.mktemp("uninterrupted"), copy_of=project)
    policy = f"results/{EXP}/grpo/final/model.safetensors"
    local("mv", f"results/{EXP}/grpo", "grpo.signalled")
    local("workflow_scripts/vlrl.sh", "grpo", EXP)
    assert (
        json.loads((local.root / f"results/{EXP}/grpo/train_summary.json").read_text())[
            "resumed_from"
        ]
        is None
    )
    digest = [hashlib.sha256((p.root / policy).read_bytes()).hexdigest() for p in (project, local)]
    assert digest[0] == digest[1]
