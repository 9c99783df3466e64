# Shared by all the .smk files: experiment configs, the code each stage runs, the config sections it
# reads, and the get_* input functions. Paths come from vlrl.paths, the one declaration the stages
# use too (its functions accept wildcard strings: paths.data_dir("{exp}")).
#
# No rules live here (snakemake --lint: functions and rules in separate files).

import functools
import os
from pathlib import Path

import yaml

from vlrl import benchmarks, paths
from vlrl.config import ExperimentConfig, load_experiment, load_model


wildcard_constraints:
    exp=r"[^/]+",
    model=r"[^/]+",
    bench=r"[^/]+",
    checkpoint=r"base|sft|grpo",


CODE_ROOT = Path("workflow_scripts", "vlrl")

# The source files each stage runs, as globs under workflow_scripts/vlrl/. They are inputs of the
# stage's jobs (and deps of its DVC stages), so editing a stage's code reruns it in both tools.
# Shared plumbing (config.py, paths.py, files.py, cli.py) is left out on purpose: an edit there
# would rerun every stage; changing a default in config.py therefore needs --forcerun / dvc repro -f.
STAGE_CODE = {
    "data": ["stages/data.py", "data/**/*.py", "records.py"],
    # The tiny tokenizer is trained on the shapes corpus and every prompt format's instruction.
    "base_model": ["stages/base_model.py", "models/**/*.py", "data/shapes.py", "prompts.py"],
    "sft": ["stages/sft.py", "data/convert.py", "prompts.py", "records.py"],
    "grpo": [
        "stages/grpo.py",
        "algorithms/**/*.py",
        "data/convert.py",
        "prompts.py",
        "records.py",
        "rewards/**/*.py",
        "answers.py",
        "endpoints.py",
    ],
    "merge": ["stages/merge.py"],
    "infer": [
        "stages/infer.py",
        "generation/**/*.py",
        "prompts.py",
        "records.py",
        "benchmarks.py",
    ],
    "score": ["stages/score.py", "scoring/**/*.py", "answers.py", "benchmarks.py", "endpoints.py"],
    "report": ["stages/report.py", "report/**/*.py", "templates/*"],
}

# Top-level sections of config/experiments/<exp>.yaml each stage reads. They become the stage's
# `params:` (see experiment_params), so Snakemake (rerun trigger "params") and DVC (`params:` in
# the generated dvc.yaml) rerun a stage exactly when a section it reads changes.
STAGE_SECTIONS = {
    "data": ["seed", "data"],
    "sft": ["seed", "cpu_threads", "prompt", "sft"],
    "grpo": ["seed", "cpu_threads", "prompt", "grpo"],
    # merge reads no values: LoRA vs full fine-tune follows the files of the grpo checkpoint.
    "merge": [],
    "infer": ["seed", "cpu_threads", "prompt", "infer"],
    "score": ["score"],
    "report": ["report", "benchmarks", "infer"],
}


def rel(path):
    """A path relative to the working directory (the project root), as a string."""
    return os.path.relpath(path) if os.path.isabs(path) else str(path)


def code(stage):
    """The source files of one stage (sorted, relative to the project root)."""
    files = set()
    for pattern in STAGE_CODE[stage]:
        files.update(p for p in CODE_ROOT.glob(pattern) if p.is_file() and p.suffix != ".pyc")
    return sorted(str(p) for p in files)


@functools.cache
def experiment(name):
    """The validated config of one experiment (raises ConfigError naming the file and key)."""
    return load_experiment(name)


@functools.cache
def _yaml_top(path):
    return yaml.safe_load(Path(path).read_text()) or {}


def _sections_of(path, sections):
    """{file: {section: value}} for the declared sections present in the file."""
    top = _yaml_top(path)
    return {rel(path): {key: top[key] for key in sections if key in top}}


def experiment_params(stage):
    """The `config` param of a stage's rule: the experiment sections it reads, with their values.

    The keys are what `vlrl dvc-yaml` writes as the DVC stage's params (DVC rejects keys absent
    from the file, hence only sections the file sets); the values make Snakemake rerun the job
    when one of them changes.
    """
    sections = STAGE_SECTIONS[stage]
    unknown = sorted(set(sections) - set(ExperimentConfig.model_fields))
    if unknown:
        raise ValueError(f"STAGE_SECTIONS[{stage!r}] names unknown sections {unknown}")
    return lambda wildcards: _sections_of(paths.experiment_file(wildcards.exp), sections)


def model_params(wildcards):
    """The `config` param of base_model: every top-level key of config/models/<model>.yaml."""
    load_model(wildcards.model)  # validate first: the error names the file and the key
    path = paths.model_file(wildcards.model)
    return _sections_of(path, list(_yaml_top(path)))


def stage_threads(wildcards):
    """Cores a training or inference job holds: the experiment's cpu_threads, else all cores.

    With cpu_threads pinned, `snakemake --cores N` runs up to N such jobs side by side.
    """
    return experiment(wildcards.exp).cpu_threads or workflow.cores


# input functions -------------------------------------------------------------------------
def get_base_model(wildcards):
    """resources/models/<base_model of the experiment>."""
    return str(paths.model_resource(experiment(wildcards.exp).base_model))


def get_grpo_init(wildcards):
    """The model GRPO starts from: the SFT output, or the base model when SFT is disabled."""
    if experiment(wildcards.exp).sft.enabled:
        return str(paths.sft_dir(wildcards.exp))
    return get_base_model(wildcards)


def get_checkpoint_model(wildcards):
    """The model directory a checkpoint name stands for."""
    if wildcards.checkpoint == "base":
        return get_base_model(wildcards)
    if wildcards.checkpoint == "sft":
        return str(paths.sft_dir(wildcards.exp))
    return str(paths.merged_model_dir(wildcards.exp))


def get_benchmark_inputs(wildcards):
    """The files a benchmark's items come from, and its config file."""
    return [
        *(str(p) for p in benchmarks.benchmark_inputs(wildcards.exp, wildcards.bench)),
        rel(paths.benchmark_file(wildcards.bench)),
    ]


def get_scores(wildcards):
    """Every scores file of the experiment: its checkpoints × its benchmarks."""
    cfg = experiment(wildcards.exp)
    return [
        str(paths.scores_file(wildcards.exp, checkpoint, bench))
        for checkpoint in cfg.checkpoints
        for bench in cfg.benchmarks
    ]


def get_reports(wildcards):
    """The reports of every experiment in params.yaml (the default target)."""
    return [str(paths.report_dir(exp)) for exp in config["experiments"]]


# Fail at parse time, with the file and key named, when an experiment of params.yaml is invalid.
for _exp in config["experiments"]:
    experiment(_exp)
