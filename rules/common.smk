# Shared by all the .smk files: experiment configs, what each stage depends on, and the get_*
# input functions. Paths come from vlrl.core.paths, the one declaration the stages use too (its
# functions accept wildcard strings: paths.data_dir("{exp}")).
#
# What a stage depends on is derived from its code, never listed here (vlrl.workflow.stage_deps):
# its source files are the modules vlrl/stages/<rule>.py imports, and its config is the file of
# resolved values (defaults included) of the keys that module declares in READS
# (vlrl.workflow.resolve). Both are inputs of the stage's jobs.
#
# Each job runs `workflow_scripts/vlrl.sh <stage> ...` (vlrl.core.paths.LAUNCHER), i.e. the vlrl command
# of this checkout's .venv, else the one on PATH, so neither tool depends on the caller's PATH;
# every rule's shell command is written by vlrl() below.
#
# No rules live here (snakemake --lint: functions and rules in separate files).

import functools
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError

from vlrl import benchmarks, sharing
from vlrl.cluster.preemption import signal_option
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.workflow import cores, resolve
from vlrl.workflow.check import load_checked
from vlrl.workflow.stage_deps import code_files
from vlrl.workflow.slurm_polling import cap_status_interval, status_interval_cap
from vlrl.workflow.slurm_preempted import report_preempted_as_failed

# On a Slurm cluster, a job cancelled by preemption (PreemptMode=CANCEL) fails and is retried
# instead of being waited on for ever (vlrl.workflow.slurm_preempted); $VLRL_SLURM_STATUS_MAX_S
# bounds the wait between two looks at the jobs (vlrl.workflow.slurm_polling).
report_preempted_as_failed()
try:
    cap_status_interval(status_interval_cap())
except ValueError as error:
    raise WorkflowError(str(error)) from None


wildcard_constraints:
    exp=r"[^/]+",
    model=r"[^/]+",
    dataset=r"[^/]+",
    bench=r"[^/]+",
    checkpoint="|".join(paths.CHECKPOINTS),


def rel(path):
    """A path relative to the working directory (the project root), as a string."""
    return os.path.relpath(path) if os.path.isabs(path) else str(path)


def vlrl(*args):
    """A rule's shell command: `vlrl <args>` through vlrl.core.paths.LAUNCHER, its output into the
    job's log file (`vlrl dvc-yaml` drops that redirection from DVC's cmd)."""
    return f"{paths.LAUNCHER} {' '.join(args)} > {{log}} 2>&1"


def code(stage):
    """The source files stage <stage> runs (inputs of its jobs, deps of its DVC stages)."""
    return code_files(stage)


def grpo_code(wildcards):
    """The source files an experiment's GRPO runs: of the reward families, only those of the
    rewards it lists (vlrl.workflow.stage_deps.code_modules), so editing a reward reruns the
    experiments that use it."""
    return code_files("grpo", rewards=list(experiment(wildcards.exp).grpo.rewards))


@functools.cache
def experiment(name):
    """The validated config of one experiment (raises ConfigError naming the file and key)."""
    return load_checked(name)


@functools.cache
def _resolved_experiment(name):
    return resolve.resolved_experiment(name)


def stage_params(stage):
    """Input function: results/<exp>/params/<stage>.yaml, the resolved values of the config keys
    the stage reads, brought up to date as the DAG is built (rewritten only when they change,
    so its time tells Snakemake, and its hash DVC, exactly when the stage must rerun)."""
    if stage in resolve.RESOURCE_STAGES:
        wildcard = resolve.RESOURCE_STAGES[stage].wildcard
        return lambda wildcards: resolve.ensure(stage, getattr(wildcards, wildcard))
    return lambda wildcards: resolve.ensure(stage, wildcards.exp, _resolved_experiment(wildcards.exp))


def total_cores():
    """Snakemake's core count (--cores), None when the run sets none (the Slurm profile)."""
    try:
        return workflow.cores
    except WorkflowError:
        return None


def job_threads(stage):
    """Cores a job of ``stage`` holds (vlrl.workflow.cores): resources.<stage>.cpus, else
    cpu_threads per process of a node, else the machine's for training and inference (one
    core for the rest). With cpu_threads pinned, `snakemake --cores N` runs jobs side by side up
    to N cores."""
    return lambda wildcards: cores.stage_threads(experiment(wildcards.exp), stage, total_cores())


def stage_resources(stage):
    """The resources of a job of ``stage``: the experiment's ``resources.<stage>``, in the names
    snakemake-executor-plugin-slurm turns into sbatch options (the profile adds partition and
    account). Unset values (None) fall away: ``cpus`` then defaults to the job's threads.

    GPUs are asked per node (``gres: gpu:N``). A job on several nodes runs the stage on its
    first node outside a job step (``mpi``, one task per node), and the stage starts one
    launcher per node with srun (vlrl.cluster.distributed).
    """

    def need(wildcards):
        return getattr(experiment(wildcards.exp).resources, stage)

    def multi_node(value):
        return lambda wildcards: value if need(wildcards).nodes > 1 else None

    return {
        "nodes": lambda wildcards: need(wildcards).nodes,
        "mem_mb": lambda wildcards: need(wildcards).mem_mb,
        "runtime": lambda wildcards: need(wildcards).runtime,
        "cpus_per_task": lambda wildcards: need(wildcards).cpus,
        "gres": lambda wildcards: f"gpu:{need(wildcards).gpus}" if need(wildcards).gpus else None,
        "mpi": multi_node("srun"),
        "tasks": lambda wildcards: need(wildcards).nodes if need(wildcards).nodes > 1 else None,
        "tasks_per_gpu": multi_node(0),  # the plugin would otherwise read tasks per GPU
        # GRPO checkpoints and requeues on SIGURG, which Slurm sends stop_margin_s before the
        # time limit (vlrl.cluster.preemption.signal_option: why SIGURG and not USR1)
        "slurm_extra": lambda wildcards: (
            signal_option(experiment(wildcards.exp).grpo.stop_margin_s)
            if stage == "grpo"
            else None
        ),
    }


# input functions -------------------------------------------------------------------------
def get_base_model(wildcards):
    """resources/models/<base_model of the experiment>."""
    return str(paths.model_resource(experiment(wildcards.exp).base_model))


def get_data(wildcards):
    """The experiment's records: results/<exp>/data, or an ancestor's that is the same
    (vlrl.sharing: a child reads what its parent computed when it would compute the same)."""
    return str(sharing.data_dir(wildcards.exp))


def get_grpo_output(wildcards):
    """The GRPO output the experiment's merge reads (its own, or an ancestor's)."""
    return str(sharing.grpo_dir(wildcards.exp))


def get_predictions(wildcards):
    """The predictions a score job reads (its own, or an ancestor's)."""
    return str(sharing.predictions_file(wildcards.exp, wildcards.checkpoint, wildcards.bench))


def get_grpo_init(wildcards):
    """The model GRPO starts from: the SFT output, or the base model when SFT is disabled."""
    cfg = experiment(wildcards.exp)
    return str(sharing.policy_start_dir(wildcards.exp, cfg.sft.enabled, cfg.base_model))


def get_checkpoint_model(wildcards):
    """The model directory a checkpoint name stands for (vlrl.sharing.checkpoint_model_dir)."""
    cfg = experiment(wildcards.exp)
    return str(sharing.checkpoint_model_dir(wildcards.exp, wildcards.checkpoint, cfg.base_model))


def get_benchmark_inputs(wildcards):
    """The files a benchmark's items come from, and its config file."""
    return [
        *(str(p) for p in benchmarks.benchmark_inputs(wildcards.exp, wildcards.bench)),
        *(rel(f) for f in benchmarks.benchmark_files(wildcards.bench)),
    ]


def get_scores(wildcards):
    """Every scores file of the experiment: its checkpoints × its benchmarks."""
    cfg = experiment(wildcards.exp)
    return [
        str(sharing.scores_file(wildcards.exp, checkpoint, bench))
        for checkpoint in cfg.checkpoints
        for bench in cfg.benchmarks
    ]


def get_data_datasets(wildcards):
    """The downloaded datasets the experiment's records come from (data.source: datasets)."""
    from vlrl.config.data import DATA_SPLITS

    cfg = experiment(wildcards.exp)
    names = [s.dataset for split in DATA_SPLITS for s in getattr(cfg.data, split)]
    names = list(dict.fromkeys(names))
    for name in names:
        resolve.ensure("download", name)
    return [str(paths.dataset_resource(name)) for name in names]


def get_local_dataset(wildcards):
    """The folder of a user-provided dataset (config key local), so that editing its files
    reruns the download; nothing while it is missing (the DAG still builds, for `vlrl plan`, and
    the download stage says which folder to fill)."""
    from pathlib import Path

    from vlrl.config import load_dataset

    local = load_dataset(wildcards.dataset).local
    return [local] if local is not None and Path(local).is_dir() else []


def get_report_predictions(wildcards):
    """The predictions behind the scores: the report's sample gallery shows their answers."""
    cfg = experiment(wildcards.exp)
    return [
        str(sharing.predictions_file(wildcards.exp, checkpoint, bench))
        for checkpoint in cfg.checkpoints
        for bench in cfg.benchmarks
    ]


def get_report_benchmarks(wildcards):
    """What the report reads of each benchmark: where its images are, and its config file."""
    cfg = experiment(wildcards.exp)
    files = []
    for bench in cfg.benchmarks:
        files += [str(p) for p in benchmarks.benchmark_inputs(wildcards.exp, bench)]
        files += [rel(f) for f in benchmarks.benchmark_files(bench)]
    return list(dict.fromkeys(files))


def get_report_curves(wildcards):
    """The GRPO output, whose dvclive training curves the report draws, when the experiment
    evaluates the GRPO model (else none: the report then has no curves section)."""
    cfg = experiment(wildcards.exp)
    return [str(sharing.grpo_dir(wildcards.exp))] if "grpo" in cfg.checkpoints else []


def get_report_published(wildcards):
    """The published tables the experiment links (report.published: config/reference/)."""
    from vlrl.reporting.published import reference_file

    cfg = experiment(wildcards.exp)
    return list(dict.fromkeys(rel(reference_file(link.reference)) for link in cfg.report.published))


def get_report_training(wildcards):
    """The records an experiment trains on: the report's answer prior (vlrl.reporting.blind)
    answers each test item with their most common answer; none when it trains nothing."""
    cfg = experiment(wildcards.exp)
    return [str(sharing.data_dir(wildcards.exp))] if cfg.sft.enabled or cfg.grpo.enabled else []


def get_report_parent_scores(wildcards):
    """A child's report pairs its scores with its parent's (extends:): the parent's scores files
    of the benchmarks and checkpoints both evaluate; none for an experiment with no parent."""
    from vlrl.reporting.experiments import parent_pairs

    cfg = experiment(wildcards.exp)
    if not cfg.extends:
        return []
    pairs = parent_pairs(wildcards.exp, cfg, experiment(cfg.extends))
    return list(dict.fromkeys(str(parent_file) for *_, parent_file in pairs))


def get_report_provenance(wildcards):
    """What the report's provenance reads: the resolved params of the base model and of the
    benchmarks' datasets, brought up to date as for their own stages."""
    from vlrl.reporting.provenance import inputs

    cfg = experiment(wildcards.exp)
    datasets = [benchmarks.load_benchmark(bench).dataset for bench in cfg.benchmarks]
    datasets = [name for name in datasets if name is not None]
    resolve.ensure("base_model", cfg.base_model)
    for name in datasets:
        resolve.ensure("download", name)
    return inputs(cfg.base_model, datasets)


def get_reports(wildcards):
    """The reports of every experiment in params.yaml (the default target)."""
    return [str(paths.report_dir(exp)) for exp in config["experiments"]]


# Fail at parse time, with the file and key named, when an experiment of params.yaml is invalid
# or, on a run without a core count (Slurm), leaves a job's cores unsized.
for _exp in config["experiments"]:
    cores.require_core_counts(_exp, experiment(_exp), total_cores())
