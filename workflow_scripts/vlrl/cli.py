"""The ``vlrl`` command: one subcommand per pipeline stage, plus workflow tools.

Snakemake rules and DVC stages both call exactly these commands.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.logging import RichHandler

from vlrl.errors import VlrlError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
err = Console(stderr=True)
log = logging.getLogger("vlrl")

Exp = Annotated[str, typer.Argument(help="Experiment name (config/experiments/<name>.yaml).")]
Bench = Annotated[str, typer.Argument(help="Benchmark name (config/benchmarks/<name>.yaml).")]
Checkpoint = Annotated[
    str, typer.Argument(help="Which model of the experiment: base, sft or grpo.")
]
Overrides = Annotated[
    list[str] | None, typer.Option("--set", "-s", help="Override a config key: grpo.max_steps=10.")
]


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
    )


def _run(fn, *args, **kwargs) -> None:
    """Run a stage; user errors become one red line and exit code 2, not a traceback."""
    try:
        fn(*args, **kwargs)
    except VlrlError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)


def _cfg(exp: str, overrides: list[str] | None):
    from vlrl.config import load_experiment
    from vlrl.threads import pin_cpu_threads

    cfg = load_experiment(exp, overrides)
    pin_cpu_threads(cfg.cpu_threads)
    return cfg


@app.command()
def data(exp: Exp, set_: Overrides = None) -> None:
    """Generate or convert the experiment's data into canonical records."""
    from vlrl.stages import data as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_)))


@app.command("base-model")
def base_model(
    model: Annotated[str, typer.Argument(help="Model name (config/models/<name>.yaml).")],
) -> None:
    """Build or download a base model into resources/models/<name>/."""
    from vlrl.stages import base_model as stage

    _run(stage.run, model)


@app.command()
def sft(exp: Exp, set_: Overrides = None) -> None:
    """Cold-start SFT with LLaMA-Factory (runs in the sft environment)."""
    from vlrl.stages import sft as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_)))


@app.command()
def grpo(exp: Exp, set_: Overrides = None) -> None:
    """GRPO with TRL on the SFT model."""
    from vlrl.stages import grpo as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_)))


@app.command()
def merge(exp: Exp, set_: Overrides = None) -> None:
    """Write a standalone HF model from the final GRPO checkpoint."""
    from vlrl.stages import merge as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_)))


@app.command()
def infer(exp: Exp, checkpoint: Checkpoint, bench: Bench, set_: Overrides = None) -> None:
    """Generate predictions of one model of the experiment on one benchmark."""
    from vlrl.stages import infer as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_), checkpoint, bench))


@app.command()
def score(exp: Exp, checkpoint: Checkpoint, bench: Bench, set_: Overrides = None) -> None:
    """Score predictions with rules (and an LLM judge if configured)."""
    from vlrl.stages import score as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_), checkpoint, bench))


@app.command()
def report(exp: Exp, set_: Overrides = None) -> None:
    """Tables, plots and metrics.json for the experiment."""
    from vlrl.stages import report as stage

    _run(lambda: stage.run(exp, _cfg(exp, set_)))


@app.command("check")
def check() -> None:
    """Validate params.yaml and every experiment, model and benchmark file."""
    from vlrl.workflow import check as wf

    _run(wf.check_all)


@app.command("dvc-yaml")
def dvc_yaml(
    check_only: Annotated[bool, typer.Option("--check", help="Fail if dvc.yaml is stale.")] = False,
) -> None:
    """Generate dvc.yaml from the Snakemake DAG (the one declaration of the pipeline)."""
    from vlrl.workflow import dvc_export

    _run(dvc_export.main, check_only)


if __name__ == "__main__":
    app()
