"""The DAG on a real Slurm cluster: `snakemake --profile profiles/slurm` submits every job with
sbatch, Slurm runs them, and the artifacts are those of a local run, bit for bit.

The cluster is the one-node Slurm that `.ci/slurm-up` starts on this machine (Debian's slurm-wlm,
munge, slurmdbd on MariaDB for sacct); CI runs it before `make test`. Where no cluster answers,
the tests skip and say why (pytest prints the reason: -ra); under ``CI=true`` they fail.

One Snakemake run submits two experiments: the shrunk default, and ``vlm_r1_rec_slurm``, the
3B REC recipe's way of asking for a cluster (no cpu_threads, ``resources`` for every stage, two
training processes) with the smoke variant's tiny model and data: a recipe that leaves a job's
cores to a ``--cores`` the Slurm profile does not set, or ranks that cannot meet inside a job,
fail here.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time

import pytest
import yaml
from recipe_fixtures import write_smoke_datasets
from scratch_project import SHRUNK_DEFAULT, Project
from slurm_cluster import (
    ON_SLURM,
    artifact_hashes,
    release_requeued,
    require_cluster,
    sacct_rows,
    wait_for_accounting,
)

pytestmark = pytest.mark.slow

EXP = "tiny_shapes"
EXP_FILE = f"config/experiments/{EXP}.yaml"
CLUSTER_EXP = "vlm_r1_rec_slurm"
GRPO_OUTPUT = f"results/{EXP}/grpo"


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    require_cluster()
    project = Project(tmp_path_factory.mktemp("slurm"))
    project.set_values(EXP_FILE, SHRUNK_DEFAULT, commit=False)  # (dvc-yaml below)
    write_smoke_datasets(project.root)
    (project.root / "params.yaml").write_text(yaml.safe_dump({"experiments": [EXP, CLUSTER_EXP]}))
    project("vlrl", "dvc-yaml")
    project("git", "add", "-A")
    project("git", "commit", "-qm", "the default and the cluster recipe")
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
    records = wait_for_accounting(submitted)
    assert {job: state for job, (state, _) in records.items()} == dict.fromkeys(
        submitted, "COMPLETED"
    )
    ran = sorted(re.match(r"rule_(\w+?)(_wildcards_|$)", c).group(1) for _, c in records.values())
    assert ran == sorted(rule for rule, n in rules.items() for _ in range(int(n)))


def test_the_artifacts_equal_a_local_runs(
    slurm_run: tuple[Project, str], built_default: Project
) -> None:
    """The shrunk default on Slurm and built here (tests/pipeline/conftest.py) hash the same."""
    project, _ = slurm_run
    on_slurm, here = artifact_hashes(project.root), artifact_hashes(built_default.root)
    assert any(name.startswith(f"results/{EXP}/grpo/") for name in here)
    assert {name: on_slurm.get(name) for name in here} == here  # (the Slurm run made more)


def test_after_the_slurm_run_dvc_and_snakemake_have_nothing_to_do(
    slurm_run: tuple[Project, str],
) -> None:
    project, _ = slurm_run
    assert "Nothing to be done" in project.snakemake("-n")
    assert "Data and pipelines are up to date" in project("dvc", "status")


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
        [*ON_SLURM, GRPO_OUTPUT],  # GRPO alone: what follows it is not under test
        cwd=project.root,
        env=project.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    released = release_requeued(proc)
    log = proc.stdout.read()
    assert proc.wait() == 0, log[-3000:]
    rows = sacct_rows("JobIDRaw,State,Comment,WorkDir", "-D", "-S", started)
    grpo = [
        (job, state)
        for job, state, comment, workdir in rows
        if comment == f"rule_grpo_wildcards_{EXP}" and workdir == str(project.root)
    ]
    history = [state for _, state in grpo]
    assert {job for job, _ in grpo} <= set(released), (grpo, released)
    assert history == ["REQUEUED", "COMPLETED"], history
    summary = json.loads((project.root / f"results/{EXP}/grpo/train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2
    assert hashlib.sha256(policy.read_bytes()).hexdigest() == uninterrupted


def test_the_cluster_recipe_ran_its_jobs_with_their_own_cpus_and_two_ranks(
    slurm_run: tuple[Project, str],
) -> None:
    """vlm_r1_rec_slurm sets no cpu_threads and the Slurm profile no --cores: each job holds the
    CPUs its resources name (sacct's AllocCPUS), and GRPO trained in two ranks that met."""
    project, _ = slurm_run
    cpus = {}
    for _, comment, alloc, state, workdir in sacct_rows(
        "JobIDRaw,Comment,AllocCPUS,State,WorkDir", "-S", "now-3hours"
    ):
        rule, _, wildcards = comment.removeprefix("rule_").partition("_wildcards_")
        if workdir == str(project.root) and wildcards.startswith(CLUSTER_EXP):
            cpus.setdefault(rule, set()).add((int(alloc), state))
    # (its data is the smoke variant's, the same records: vlrl.sharing runs it once)
    assert cpus["grpo"] == {(2, "COMPLETED")}, cpus  # resources.grpo.cpus
    assert cpus["infer"] == {(1, "COMPLETED")}, cpus  # resources.infer.cpus
    metrics = json.loads((project.root / f"results/{CLUSTER_EXP}/metrics.json").read_text())
    assert "grpo" in metrics["smoke_test"]
    grpo_log = (project.root / f"logs/grpo/{CLUSTER_EXP}.log").read_text()
    assert "grpo: 2 processes" in grpo_log and "[rank 1] " in grpo_log, grpo_log[-2000:]
