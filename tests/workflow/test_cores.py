"""The cores each job holds (vlrl.workflow.cores), and a Slurm run without a core count: every
experiment sizes its jobs, and one that does not is refused before a job is submitted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vlrl.config import StageResources, load_experiment
from vlrl.core.errors import ConfigError
from vlrl.workflow import cores
from vlrl.workflow.dag import dag_jobs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SLURM_RECIPE = "vlm_r1_rec_slurm"


def _with(exp: str, cpu_threads: int | None, **resources: StageResources):
    cfg = load_experiment(exp)
    sized = cfg.resources.model_copy(update=resources)
    return cfg.model_copy(update={"cpu_threads": cpu_threads, "resources": sized})


@pytest.mark.parametrize(
    ("cpu_threads", "cpus", "cores_given", "expected"),
    [
        (1, 6, None, 6),  # resources.grpo.cpus first
        (3, None, None, 6),  # then cpu_threads x 2 processes
        (None, None, 16, 16),  # then the machine's cores (a local run)
        (None, 5, 16, 5),
    ],
)
def test_a_training_job_holds_its_cpus_else_threads_per_process_else_the_machine(
    cpu_threads, cpus, cores_given, expected
) -> None:
    cfg = _with("tiny_shapes", cpu_threads, grpo=StageResources(cpus=cpus))
    assert cfg.grpo.processes == 2
    assert cores.stage_threads(cfg, "grpo", cores_given) == expected


def test_the_short_stages_hold_one_core_unless_sized() -> None:
    cfg = _with("tiny_shapes", None, score=StageResources(cpus=3))
    assert cores.stage_threads(cfg, "score", None) == 3
    assert cores.stage_threads(cfg, "report", None) == 1
    assert cores.stage_threads(cfg, "merge", None) == 1


def test_without_a_core_count_an_unsized_stage_names_the_keys_to_set() -> None:
    cfg = _with("tiny_shapes", None)
    assert cores.unsized_stages(cfg) == ["sft", "grpo", "infer"]
    with pytest.raises(ConfigError) as err:
        cores.require_core_counts("tiny_shapes", cfg, None)
    message = str(err.value)
    assert message.startswith("experiment tiny_shapes: no core count for the sft/grpo/infer job")
    for key in ("resources.sft.cpus", "resources.grpo.cpus", "resources.infer.cpus"):
        assert key in message
    assert "cpu_threads" in message and "--cores N" in message
    cores.require_core_counts("tiny_shapes", cfg, 4)  # a local run has its cores
    with pytest.raises(ConfigError, match="the grpo job"):
        cores.stage_threads(cfg, "grpo", None)


def test_a_stage_the_experiment_does_not_run_needs_no_size() -> None:
    cfg = _with("vlm_r1_rec", None, grpo=StageResources(cpus=None))  # no SFT, GRPO unsized
    assert cores.unsized_stages(cfg) == ["grpo"]
    benchmarks_only = load_experiment("qwen2.5_vl_3b_benchmarks")
    assert cores.stages_run(benchmarks_only) == ["infer"]


def test_every_experiment_builds_its_dag_on_slurm_with_its_own_sizes() -> None:
    """The DAG of every experiment as the Slurm profile builds it (no --cores): each sft, grpo
    and infer job holds the experiment's resources.<stage>.cpus, else cpu_threads x its
    processes; none falls back on a core count the run does not have."""
    experiments = sorted(p.stem for p in (ROOT / "config" / "experiments").glob("*.yaml"))
    jobs = dag_jobs(config={"experiments": experiments}, cores=None)
    checked = set()
    for job in jobs:
        if job.rule not in cores.WHOLE_MACHINE_STAGES:
            continue
        cfg = load_experiment(job.wildcards["exp"])
        want = getattr(cfg.resources, job.rule).cpus
        if want is None:
            want = cfg.cpu_threads * cores.processes(cfg, job.rule)
        assert job.resources["_cores"] == want, (job.rule, job.wildcards)
        checked.add(job.wildcards["exp"])
    assert {SLURM_RECIPE, "vlm_r1_rec", "qwen2.5_vl_3b_benchmarks", "tiny_shapes"} <= checked


def test_the_slurm_recipe_is_the_gpu_recipes_way_of_asking_shrunk() -> None:
    """What the Slurm test runs: no cpu_threads, every stage the recipe sizes sized, more than
    one training process; the model and data of the smoke variant."""
    cfg, recipe = load_experiment(SLURM_RECIPE), load_experiment("vlm_r1_rec")
    assert cfg.cpu_threads is None and recipe.cpu_threads is None
    assert cores.processes(cfg, "grpo") > 1
    for stage in ("data", "grpo", "merge", "infer"):
        assert getattr(recipe.resources, stage) != StageResources(), stage
        assert getattr(cfg.resources, stage) != StageResources(), stage
    assert cfg.base_model == load_experiment("vlm_r1_rec_smoke").base_model


def test_a_slurm_run_of_an_unsized_experiment_stops_before_submitting(tmp_path: Path) -> None:
    """`snakemake --profile profiles/slurm` (no --cores) of an experiment whose GRPO job has no
    size: Snakemake stops while it reads the workflow, naming the key, before any sbatch."""
    for item in ("Snakefile", "rules", "config", "params.yaml", "profiles"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / item)
    recipe = tmp_path / "config" / "experiments" / f"{SLURM_RECIPE}.yaml"
    text = recipe.read_text()
    sized = "  grpo: {cpus: 2, mem_mb: 8000, runtime: 30}\n"
    assert sized in text
    recipe.write_text(text.replace(sized, "  grpo: {mem_mb: 8000, runtime: 30}\n"))
    config_arg = ("--config", f"experiments=[{SLURM_RECIPE}]")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        [str(BIN / "snakemake"), "--profile", "profiles/slurm", *config_arg],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = out.stdout + out.stderr
    assert out.returncode != 0, log
    assert f"experiment {SLURM_RECIPE}: no core count for the grpo job(s)" in log, log
    assert "resources.grpo.cpus" in log
    assert "submitted" not in log and "sbatch" not in log, log


def test_each_stage_counts_the_processes_of_its_own_kind() -> None:
    """SFT and GRPO sized differently (ranks per GPU, less a server's GPUs, or CPU processes);
    inference's generating workers; one process for the rest."""
    cfg = _with("tiny_shapes", 1, sft=StageResources(gpus=4), grpo=StageResources(gpus=8))
    grpo = cfg.grpo.model_copy(update={"use_vllm": True, "vllm_mode": "server"})
    cfg = cfg.model_copy(update={"grpo": grpo})
    assert cfg.grpo.server_gpus == 1
    assert cores.processes(cfg, "sft") == 4
    assert cores.processes(cfg, "grpo") == 7  # the TRL vLLM server takes the last GPU
    assert cores.processes(cfg, "infer") == cfg.infer.workers == 2
    assert [cores.processes(cfg, stage) for stage in ("data", "merge", "score")] == [1, 1, 1]
    on_cpu = load_experiment("tiny_shapes").model_copy(
        update={"infer": cfg.infer.model_copy(update={"workers": 3})}
    )
    assert (cores.processes(on_cpu, "sft"), cores.processes(on_cpu, "infer")) == (2, 3)


def test_the_unsized_message_names_every_key_whole() -> None:
    cfg = _with("tiny_shapes", None)
    with pytest.raises(ConfigError) as err:
        cores.require_core_counts("tiny_shapes", cfg.model_copy(update={"benchmarks": []}), None)
    assert str(err.value) == (
        "experiment tiny_shapes: no core count for the sft/grpo job(s): this run sets no "
        "--cores (the Slurm profile leaves the cores to the cluster), and the experiment sets "
        "neither resources.sft.cpus, resources.grpo.cpus (the CPUs of each node of the job) nor "
        "cpu_threads (threads per process). Set resources.sft.cpus, or run with --cores N"
    )
