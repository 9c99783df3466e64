"""Every path a stage touches, derived from the experiment name in one place.

Functions accept wildcard strings too (``data_dir("{exp}")``), so Snakemake rules use the same
declarations as the stages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, get_args

LAUNCHER = "workflow_scripts/vlrl.sh"
"""How rules and DVC stages run ``vlrl``: this checkout's .venv, else the one on PATH."""


ROOT_MARKERS = ("params.yaml", "Snakefile")
"""What makes a folder the project root: :func:`find_root` looks for these files."""


def root() -> Path:
    """The project root: ``$VLRL_ROOT``, else the nearest folder at or above the current one
    that holds ``params.yaml`` and the Snakefile (as git finds ``.git``, so ``vlrl`` works from
    a subfolder), else the current directory."""
    if os.environ.get("VLRL_ROOT"):
        return Path(os.environ["VLRL_ROOT"]).resolve()
    here = Path(".").resolve()
    return find_root(here) or here


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding every :data:`ROOT_MARKERS` file, or None.

    >>> find_root(Path(__file__).parent) == Path(__file__).parents[3]
    True
    """
    for folder in (start, *start.parents):
        if all((folder / name).is_file() for name in ROOT_MARKERS):
            return folder
    return None


def user_cache() -> Path:
    """vlrl's cache in the user's home, shared by every checkout: ``$XDG_CACHE_HOME/vlrl``,
    else ``~/.cache/vlrl``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "vlrl"


def _rel(*parts: str) -> Path:
    return Path(*parts)


# configuration ---------------------------------------------------------------------------
def experiment_file(exp: str) -> Path:
    return root() / "config" / "experiments" / f"{exp}.yaml"


def model_file(name: str) -> Path:
    return root() / "config" / "models" / f"{name}.yaml"


def benchmark_file(bench: str) -> Path:
    return root() / "config" / "benchmarks" / f"{bench}.yaml"


def dataset_file(name: str) -> Path:
    return root() / "config" / "datasets" / f"{name}.yaml"


# shared resources ------------------------------------------------------------------------
def model_resource(name: str) -> Path:
    return _rel("resources", "models", name)


def dataset_resource(name: str) -> Path:
    return _rel("resources", "datasets", name)


# per-experiment artifacts -----------------------------------------------------------------
def results_dir(exp: str) -> Path:
    return _rel("results", exp)


def data_dir(exp: str) -> Path:
    return results_dir(exp) / "data"


def sft_dir(exp: str) -> Path:
    return results_dir(exp) / "sft"


def grpo_dir(exp: str) -> Path:
    return results_dir(exp) / "grpo"


GRPO_DVCLIVE = "dvclive"
"""The grpo output's dvclive directory (the training log)."""


def grpo_curves_dir(exp: str) -> Path:
    """The step-wise GRPO curves dvclive writes (one TSV per logged value): what ``dvc plots``
    and the report draw."""
    return grpo_dir(exp) / GRPO_DVCLIVE / "plots" / "metrics"


GRPO_FINAL = "final"
"""The trained policy's subdirectory of the grpo output (a LoRA adapter with ``grpo.lora``)."""


def grpo_final_dir(exp: str) -> Path:
    return grpo_dir(exp) / GRPO_FINAL


def grpo_checkpoints_dir(exp: str) -> Path:
    """Intermediate GRPO checkpoints: outside the stage's atomic output so a killed run can
    resume; not a DVC or Snakemake output; removed when the stage succeeds."""
    return results_dir(exp) / "grpo_checkpoints"


def deepspeed_file(name: str) -> Path:
    return root() / "config" / "deepspeed" / f"{name}.json"


def merged_model_dir(exp: str) -> Path:
    return results_dir(exp) / "model"


Checkpoint = Literal["base", "sft", "grpo"]
"""A model an experiment evaluates: the base model, the SFT output, or the merged GRPO policy."""

CHECKPOINTS: tuple[Checkpoint, ...] = get_args(Checkpoint)
"""Every checkpoint name, in training order.

>>> CHECKPOINTS
('base', 'sft', 'grpo')
"""


def checkpoint_model_dir(exp: str, checkpoint: Checkpoint, base_model: str) -> Path:
    """The model directory ``checkpoint`` of experiment ``exp`` stands for.

    >>> checkpoint_model_dir("e", "grpo", "tiny").as_posix()
    'results/e/model'
    """
    if checkpoint == "base":
        return model_resource(base_model)
    if checkpoint == "sft":
        return sft_dir(exp)
    if checkpoint == "grpo":
        return merged_model_dir(exp)
    raise ValueError(f"unknown checkpoint {checkpoint!r}; known: {list(CHECKPOINTS)}")


def predictions_file(exp: str, checkpoint: str, bench: str) -> Path:
    return results_dir(exp) / "predictions" / checkpoint / f"{bench}.jsonl"


def scores_file(exp: str, checkpoint: str, bench: str) -> Path:
    return results_dir(exp) / "scores" / checkpoint / f"{bench}.json"


def rescored_file(exp: str, protocol: str, checkpoint: str, bench: str) -> Path:
    """Scores of existing predictions under another protocol (``vlrl rescore``; not tracked)."""
    return results_dir(exp) / "rescored" / protocol / checkpoint / f"{bench}.json"


def stage_params_file(exp: str, stage: str) -> Path:
    """The resolved values of the config keys ``stage`` reads (``vlrl.workflow.resolve``)."""
    return results_dir(exp) / "params" / f"{stage}.yaml"


def model_params_file(name: str) -> Path:
    """The resolved values of the model config keys base_model reads."""
    return _rel("resources", "params", f"{name}.yaml")  # not in models/: no model named so


def dataset_params_file(name: str) -> Path:
    """The resolved values of the dataset config keys the download stage reads."""
    return _rel("resources", "params", "datasets", f"{name}.yaml")


def metrics_file(exp: str) -> Path:
    return results_dir(exp) / "metrics.json"


def report_dir(exp: str) -> Path:
    return _rel("reports", exp)


def log_file(stage: str, *names: str) -> Path:
    """``logs/<stage>/<name>/.../<last>.log`` for one job of a stage."""
    *dirs, last = names
    return _rel("logs", stage, *dirs, f"{last}.log")


def server_log_dir(stage: str, *names: str) -> Path:
    """``logs/<stage>/<name>/.../<last>/``: the logs of the servers one job of a stage starts
    (beside the job's own log, :func:`log_file`)."""
    return _rel("logs", stage, *names)
