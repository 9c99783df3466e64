"""How many cores each job of an experiment holds: the rules' ``threads``.

One number serves two schedulers. Run locally, Snakemake runs jobs side by side up to
``--cores``; on Slurm, a job's threads are its ``--cpus-per-task`` unless the experiment states
``resources.<stage>.cpus``. In order:

1. ``resources.<stage>.cpus``: what the experiment asks for each node of the job (a GPU recipe's
   way: 64 CPUs beside 8 GPUs);
2. ``cpu_threads`` x the stage's processes per node (the CPU recipes' way: each process pins
   that many threads);
3. the whole machine (``--cores``) for a training or inference job, one core for the others.

The third needs a core count, which a local run has (``--cores all``) and a Slurm run has not
(the Slurm profile sets none: the cluster decides). An experiment that runs a stage sized by
neither of the first two is then refused when the DAG is built, naming the keys to set
(:func:`unsized_stages`), never when the job is about to start.
"""

from __future__ import annotations

from vlrl.cluster.distributed import node_cpus, processes_per_node
from vlrl.config import ExperimentConfig
from vlrl.core.errors import ConfigError
from vlrl.generation import generating_processes

WHOLE_MACHINE_STAGES = ("sft", "grpo", "infer")
"""Stages that, sized by nothing else, take every core of the machine."""


def processes(cfg: ExperimentConfig, stage: str) -> int:
    """Processes of one node a job of ``stage`` runs: training ranks (one per GPU, else the
    stage's CPU ``processes``), the hf backend's generating workers, else one.

    >>> from vlrl.config import load_experiment
    >>> cfg = load_experiment("tiny_shapes")
    >>> processes(cfg, "grpo"), processes(cfg, "score")
    (2, 1)
    """
    if stage == "sft":
        return processes_per_node(cfg.resources.sft, cfg.sft.processes)
    if stage == "grpo":
        return processes_per_node(cfg.resources.grpo, cfg.grpo.processes, cfg.grpo.server_gpus)
    if stage == "infer":
        return generating_processes(cfg.infer)
    return 1


def stage_threads(cfg: ExperimentConfig, stage: str, cores: int | None) -> int:
    """The threads of a job of ``stage`` (see the module docstring); ``cores``: Snakemake's core
    count, None when the run has none (Slurm).

    >>> from vlrl.config import load_experiment
    >>> stage_threads(load_experiment("tiny_shapes"), "grpo", cores=None)  # 1 thread x 2
    2
    >>> stage_threads(load_experiment("vlm_r1_rec"), "grpo", cores=None)  # resources.grpo.cpus
    64

    Raises:
        ConfigError: a training or inference stage sized by nothing, and no core count.
    """
    resources = getattr(cfg.resources, stage)
    if resources.cpus is None and stage not in WHOLE_MACHINE_STAGES:
        return 1
    # the rule each node's srun of the stage follows too
    cpus = node_cpus(resources, processes(cfg, stage), cfg.cpu_threads)
    if cpus is not None:
        return cpus
    if cores is None:
        raise ConfigError(_unsized_message([stage]))
    return cores


def stages_run(cfg: ExperimentConfig) -> list[str]:
    """The stages of :data:`WHOLE_MACHINE_STAGES` the experiment runs.

    >>> from vlrl.config import load_experiment
    >>> stages_run(load_experiment("vlm_r1_rec"))  # no SFT
    ['grpo', 'infer']
    """
    runs = {"sft": cfg.sft.enabled, "grpo": cfg.grpo.enabled, "infer": bool(cfg.benchmarks)}
    return [stage for stage in WHOLE_MACHINE_STAGES if runs[stage]]


def unsized_stages(cfg: ExperimentConfig) -> list[str]:
    """The stages the experiment runs whose core count only a ``--cores`` could give.

    >>> from vlrl.config import load_experiment
    >>> unsized_stages(load_experiment("vlm_r1_rec"))
    []
    >>> unsized_stages(load_experiment("tiny_shapes").model_copy(update={"cpu_threads": None}))
    ['sft', 'grpo', 'infer']
    """
    return [
        stage
        for stage in stages_run(cfg)
        if getattr(cfg.resources, stage).cpus is None and cfg.cpu_threads is None
    ]


def require_core_counts(name: str, cfg: ExperimentConfig, cores: int | None) -> None:
    """Refuse, when the DAG is built, an experiment whose jobs could not be sized without a core
    count (``cores`` None: a Slurm run); nothing when ``cores`` is known.

    Raises:
        ConfigError: naming the experiment, its stages and the keys that would size them.
    """
    unsized = unsized_stages(cfg) if cores is None else []
    if unsized:
        raise ConfigError(f"experiment {name}: {_unsized_message(unsized)}")


def _unsized_message(stages: list[str]) -> str:
    keys = ", ".join(f"resources.{stage}.cpus" for stage in stages)
    return (
        f"no core count for the {'/'.join(stages)} job(s): this run sets no --cores (the Slurm "
        f"profile leaves the cores to the cluster), and the experiment sets neither {keys} (the "
        "CPUs of each node of the job) nor cpu_threads (threads per process). Set "
        f"{keys.split(', ')[0]}, or run with --cores N"
    )
