"""A GRPO job signalled or preempted on a real Slurm cluster checkpoints, requeues and resumes to
the policy of an uninterrupted run, bit for bit.

The cluster is `.ci/slurm-up`'s (tests/pipeline/slurm_cluster.py), configured as production
clusters are: ``proctrack/cgroup``, so a signal to a job step reaches only the step's first
process (vlrl.cluster.relay passes it on), and preemption by QOS in both modes.

- Slurm's stop signal, SIGURG (:func:`vlrl.cluster.preemption.signal_option`), sent as
  ``scancel --signal=URG <job>`` does to the job's steps: what ``sbatch --signal=URG@<s>`` sends
  before the time limit. The job also carries that option through the plugin's ``slurm_extra``,
  as ``stage_resources`` gives it.
- Preemption: a ``vlrl-high`` job takes the node from the GRPO job of QOS ``vlrl-low``
  (PreemptMode=REQUEUE) or ``vlrl-low-cancel`` (PreemptMode=CANCEL): SIGTERM, then 60 s of
  GraceTime.

The signalled and the preempted GRPO jobs run in ``make cluster`` (each needs the whole node,
which ``make pipeline``'s other jobs share), one after the other, from the one SFT model and
uninterrupted policy the module builds; the relay test below runs in ``make pipeline``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from scratch_project import SHRUNK_DEFAULT, Project
from slurm_cluster import ON_SLURM, release_requeued, require_cluster, wait_for_accounting

from vlrl.cluster.distributed import RELAY
from vlrl.cluster.preemption import signal_option

pytestmark = pytest.mark.slow

EXP = "tiny_shapes"
EXP_FILE = f"config/experiments/{EXP}.yaml"
STEPS = 10
VALUES = {
    **SHRUNK_DEFAULT,
    "grpo.max_steps": STEPS,
    "grpo.save_steps": 1,
    # two ranks under torchrun, in sessions of their own: the signal must reach both
    "grpo.processes": 2,
    # steps of about a second, so that the signal lands in the middle of the run
    "grpo.max_completion_length": 48,
}


def _grpo_job(root: Path) -> str | None:
    """The id of this project's running GRPO job, or None."""
    queue = subprocess.run(
        ["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k|%Z"], capture_output=True, text=True
    ).stdout
    for job, comment, workdir in (line.split("|") for line in queue.splitlines() if line):
        if comment.startswith(f"rule_grpo_wildcards_{EXP}") and workdir == str(root):
            return job
    return None


def _signal_after_step_one(root: Path, sent: list[str], over: threading.Event) -> None:
    """Once the GRPO job has saved its step-1 checkpoint: ``scancel --signal=URG`` it."""
    job = _after_step_one(root, over)
    if job:
        subprocess.run(["scancel", "--signal=URG", job], check=True)
        sent.append(job)
        _keep_the_stopped_runs_log(root)


def _after_step_one(root: Path, over: threading.Event) -> str | None:
    """The GRPO job, once it has saved its step-1 checkpoint (None once Snakemake is over)."""
    first = root / f"results/{EXP}/grpo_checkpoints/checkpoint-1/trainer_state.json"
    while not over.is_set():
        job = _grpo_job(root) if first.is_file() else None
        if job:
            return job
        time.sleep(0.2)
    return None


def _preempt_after_step_one(root: Path, sent: list[str], over: threading.Event) -> None:
    """Once the GRPO job has saved its step-1 checkpoint: a ``vlrl-high`` job asking for the
    whole node preempts it."""
    job = _after_step_one(root, over)
    if job:
        cpus = subprocess.run(
            ["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, check=True
        ).stdout.split()[0]
        high = ["sbatch", "--parsable", "--qos=vlrl-high", f"--cpus-per-task={cpus}"]
        high += ["--mem=500", "--time=5", "--job-name=preemptor", "--output=/dev/null"]
        out = subprocess.run([*high, "--wrap=sleep 5"], capture_output=True, text=True, check=True)
        sent += [job, out.stdout.strip()]
        _keep_the_stopped_runs_log(root)


STOPPED_LOG = "grpo.stopped.log"
POLICY = f"results/{EXP}/grpo/final/model.safetensors"


def _keep_the_stopped_runs_log(root: Path) -> None:
    """Copy the GRPO log aside once the interrupted run has stopped (the resumed run writes the
    log anew): when it says it requeues its job, or after a minute."""
    log = root / f"logs/grpo/{EXP}.log"
    deadline = time.monotonic() + 60
    text = ""
    while time.monotonic() < deadline:
        text = log.read_text() if log.is_file() else ""
        if "requeuing the Slurm job" in text or "not requeued" in text:
            time.sleep(1)  # the ranks' last lines
            text = log.read_text()
            break
        time.sleep(0.2)
    (root / STOPPED_LOG).write_text(text)


def _run_interrupted(project: Project, resources: list[str], interrupt, sent: list[str]) -> str:
    """Snakemake on the cluster (with ``--set-resources``) while ``interrupt(root, sent,
    over)`` runs beside; returns its log."""
    proc = subprocess.Popen(
        # GRPO and what it needs: the jobs after it are not under test
        [*ON_SLURM, "--set-resources", *resources, "--", f"results/{EXP}/grpo"],
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    over = threading.Event()
    signaller = threading.Thread(target=interrupt, args=(project.root, sent, over))
    signaller.start()
    released = release_requeued(proc)
    over.set()
    signaller.join()
    log = proc.stdout.read()
    assert proc.wait() == 0, log[-3000:]
    assert sent, "the GRPO job never reached step 1"
    sent.append(",".join(released))
    return log


def _grpo_records(project: Project, started: str) -> list[tuple[str, str]]:
    """sacct's (job, state) of each run of the project's GRPO jobs since ``started``, requeued
    runs included; prints the whole record (pytest -s shows it)."""

    def sacct(*fields: str) -> str:
        return subprocess.run(
            ["sacct", "-D", "-X", "-S", started, *fields], capture_output=True, text=True
        ).stdout

    print(sacct("--format=JobIDRaw,JobName%30,QOS%16,State,Start,End"))
    rows = sacct("-n", "--parsable2", "--format=JobIDRaw,State,Comment,WorkDir").splitlines()
    return [
        (job, state)
        for job, state, comment, workdir in (row.split("|") for row in rows)
        if comment == f"rule_grpo_wildcards_{EXP}" and workdir == str(project.root)
    ]


def _stopped_ranks(project: Project, why: str) -> set[str]:
    """The ranks whose own log says they stopped ``why`` (``on SIGURG``: the signal reached them,
    not only the all-reduced decision of another rank)."""
    log = (project.root / STOPPED_LOG).read_text()
    # a rank's line may follow a progress bar's carriage return
    return set(re.findall(rf"(\[rank \d+\]) stopping after step \d+ of \d+ {why}", log))


@pytest.fixture(scope="module")
def trained_to_sft(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    """The preemption tests' project with its data and SFT built here (GRPO is under test, not
    the stages before it), and the SHA-256 of the policy its GRPO stage trains uninterrupted (run
    here on a copy): each test takes a copy and runs GRPO on the cluster, interrupted."""
    require_cluster()
    project = Project(tmp_path_factory.mktemp("preempted-base"))
    project.shrink(VALUES)
    project.snakemake(f"results/{EXP}/sft")
    local = Project(tmp_path_factory.mktemp("uninterrupted"), copy_of=project)
    local("workflow_scripts/vlrl.sh", "grpo", EXP)
    summary = json.loads((local.root / f"results/{EXP}/grpo/train_summary.json").read_text())
    assert summary["resumed_from"] is None and summary["steps"] == STEPS, summary
    return project, hashlib.sha256((local.root / POLICY).read_bytes()).hexdigest()


@pytest.mark.cluster
def test_a_signalled_grpo_job_checkpoints_requeues_and_resumes(
    tmp_path_factory: pytest.TempPathFactory, trained_to_sft: tuple[Project, str]
) -> None:
    """Two ranks under torchrun (each in a session of its own) below the relay: the signal
    Slurm gives the step's first process alone reaches both."""
    base, uninterrupted = trained_to_sft
    project = Project(tmp_path_factory.mktemp("preempted"), copy_of=base)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    sent: list[str] = []
    log = _run_interrupted(
        project, [f"grpo:slurm_extra='{signal_option(60)}'"], _signal_after_step_one, sent
    )
    grpo = _grpo_records(project, started)
    assert [state for _, state in grpo] == ["REQUEUED", "COMPLETED"], grpo
    assert {job for job, _ in grpo} == {sent[0]} and sent[0] in sent[-1].split(","), (grpo, sent)
    assert wait_for_accounting([sent[0]])[sent[0]][0] == "COMPLETED"
    assert _stopped_ranks(project, "on SIGURG") == {"[rank 0]", "[rank 1]"}, log[-3000:]
    assert "relay: SIGURG: asked" in (project.root / STOPPED_LOG).read_text()
    _resumed_to_the_uninterrupted_policy(project, uninterrupted)


@pytest.mark.cluster
@pytest.mark.parametrize(("qos", "mode"), [("vlrl-low", "REQUEUE"), ("vlrl-low-cancel", "CANCEL")])
def test_a_preempted_grpo_job_resumes_in_either_preempt_mode(
    tmp_path_factory: pytest.TempPathFactory,
    trained_to_sft: tuple[Project, str],
    qos: str,
    mode: str,
) -> None:
    """The preemption's SIGTERM reaches the relay; the ranks checkpoint within the GraceTime and
    the stage requeues its job; under CANCEL, a job the grace was too short for would end
    PREEMPTED, which fails and is retried (vlrl.workflow.slurm_preempted), never waited on."""
    mode_of = subprocess.run(
        ["sacctmgr", "-n", "-P", "show", "qos", qos, "format=PreemptMode"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert mode_of.upper() == mode, f"QOS {qos} has PreemptMode {mode_of!r}: rerun .ci/slurm-up"
    base, uninterrupted = trained_to_sft
    project = Project(tmp_path_factory.mktemp(f"preempted-{mode.lower()}"), copy_of=base)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    sent: list[str] = []
    resources = [f"grpo:slurm_extra='{signal_option(60)}'", f"grpo:qos={qos}"]
    _run_interrupted(project, resources, _preempt_after_step_one, sent)
    grpo = _grpo_records(project, started)
    preemptor = wait_for_accounting([sent[1]])[sent[1]][0]
    assert preemptor == "COMPLETED", preemptor
    assert grpo[-1][1] == "COMPLETED" and len(grpo) >= 2, grpo
    assert {state for _, state in grpo[:-1]} <= {"REQUEUED", "PREEMPTED"}, grpo
    stopped = (project.root / STOPPED_LOG).read_text()
    assert _stopped_ranks(project, "on SIGURG") == {"[rank 0]", "[rank 1]"}, stopped[-3000:]
    # the preemption's SIGTERM, which Slurm gave the step's first process alone
    assert "relay: SIGTERM: asked" in stopped
    _resumed_to_the_uninterrupted_policy(project, uninterrupted)


PREEMPTED_WORKFLOW = """
from vlrl.workflow.slurm_preempted import report_preempted_as_failed

report_preempted_as_failed()


rule hold:
    output:
        "done.txt",
    shell:
        # the first attempt outlasts the QOS's grace time (it ignores the SIGTERM), so Slurm
        # ends it PREEMPTED; the retry finishes
        "if [ -e first.attempt ]; then touch {output}; else touch first.attempt; sleep 300; fi"
"""


@pytest.mark.cluster
def test_a_job_cancelled_by_preemption_is_retried_not_waited_on(tmp_path: Path) -> None:
    """PreemptMode=CANCEL with a job that cannot stop within the grace time: Slurm ends it
    PREEMPTED, which snakemake-executor-plugin-slurm 2.8.0 would report as running for ever
    (vlrl.workflow.slurm_preempted); Snakemake's retry runs the rule again and the workflow
    ends."""
    require_cluster()
    (tmp_path / "Snakefile").write_text(PREEMPTED_WORKFLOW)
    cpus = subprocess.run(
        ["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    cmd = [
        *("snakemake", "--executor", "slurm", "--jobs", "1", "--retries", "1"),
        *("--slurm-init-seconds-before-status-checks", "2", "--latency-wait", "5"),
        *("--default-resources", "mem_mb=500", "runtime=10"),
        *("--set-resources", "hold:qos=vlrl-low-cancel", f"hold:cpus_per_task={cpus}"),
    ]
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "first.attempt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.5)
    high = ["sbatch", "--parsable", "--qos=vlrl-high", f"--cpus-per-task={cpus}", "--mem=500"]
    subprocess.run([*high, "--time=5", "--output=/dev/null", "--wrap=sleep 5"], check=True)
    try:
        out, _ = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("Snakemake still waits on the preempted job after 10 minutes")
    assert proc.returncode == 0, out[-3000:]
    assert (tmp_path / "done.txt").is_file()
    rows = subprocess.run(
        ["sacct", "-X", "-n", "--parsable2", "-S", started, "--format=JobIDRaw,QOS,State,WorkDir"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    hold = [row.split("|")[2] for row in rows if row.endswith(f"|{tmp_path}")]
    print("\n".join(rows))
    assert hold == ["PREEMPTED", "COMPLETED"], rows
    assert "was preempted and cancelled (PreemptMode=CANCEL): reported as failed" in out


def test_a_signal_to_each_steps_first_process_reaches_every_rank_of_two_groups(
    tmp_path: Path,
) -> None:
    """Two node tasks (one srun, two tasks: the launch of a 2-node stage), each a relay over a
    launcher whose two ranks run in sessions of their own: ``scancel --signal=URG`` reaches
    the tasks alone (proctrack/cgroup), and through them all four ranks."""
    require_cluster()
    log = tmp_path / "signals.txt"
    # Each rank says when its handler is in place: a signal sent before that is ignored
    # (SIGURG's default), and on a busy node a rank's interpreter starts slowly.
    rank = (
        "import os, signal, sys, time; "
        "signal.signal(signal.SIGURG, lambda s, f: open(sys.argv[1], 'a').write("
        "os.environ['SLURM_PROCID'] + ':' + sys.argv[2] + chr(10))); "
        "open(sys.argv[1] + '.ready', 'a').write(sys.argv[2] + chr(10)); time.sleep(300)"
    )
    launcher = (
        "import subprocess, sys, time; "
        "[subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], str(r)], "
        "start_new_session=True) for r in (0, 1)]; time.sleep(120)"
    )
    script = tmp_path / "job.sh"
    python = sys.executable
    script.write_text(
        "#!/bin/sh\n"
        f"srun --ntasks=2 --cpus-per-task=1 {python} -m {RELAY} -- "
        f"{python} -c {shlex.quote(launcher)} {shlex.quote(rank)} {log}\n"
    )
    job = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "-n",
            "2",
            "-c",
            "1",
            "--mem=1000",
            "-t",
            "5",
            "-o",
            "/dev/null",
            str(script),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    ready = log.with_name(log.name + ".ready")
    try:
        deadline = time.monotonic() + 600  # the job may wait for the other tests' jobs first
        while time.monotonic() < deadline:
            if ready.exists() and len(ready.read_text().split()) == 4:
                break
            time.sleep(0.5)
        assert ready.exists() and len(ready.read_text().split()) == 4, (
            f"the job's 4 ranks did not start within 10 minutes: {_processes_of(job)}"
        )
        subprocess.run(["scancel", "--signal=URG", job], check=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = sorted(log.read_text().split()) if log.exists() else []
            if len(got) == 4:
                break
            time.sleep(0.2)
        assert got == ["0:0", "0:1", "1:0", "1:1"]
    finally:
        subprocess.run(["scancel", job], check=False)


def _processes_of(job: str) -> list[str]:
    """The processes of Slurm job ``job`` on this node (scontrol listpids)."""
    out = subprocess.run(["scontrol", "listpids", job], capture_output=True, text=True).stdout
    return out.splitlines()[1:]


def _resumed_to_the_uninterrupted_policy(project: Project, uninterrupted: str) -> None:
    """The interrupted run resumed from a checkpoint between its first and last steps, removed
    its checkpoints, and trained the policy of the uninterrupted run, bit for bit."""
    summary = json.loads((project.root / f"results/{EXP}/grpo/train_summary.json").read_text())
    resumed = int(summary["resumed_from"].rsplit("-", 1)[1])
    assert 1 < resumed < STEPS and summary["steps"] == STEPS, summary["resumed_from"]
    assert not (project.root / f"results/{EXP}/grpo_checkpoints").exists()
    assert hashlib.sha256((project.root / POLICY).read_bytes()).hexdigest() == uninterrupted
