"""The vlrl command: one subcommand per pipeline stage, plus workflow tools.

Snakemake rules and DVC stages both call exactly these commands. Run it anywhere in the
checkout: it finds the project root (the folder holding params.yaml and the Snakefile) above
the current folder, as git finds .git.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer
from rich.logging import RichHandler

from vlrl.cli import support as cli_support
from vlrl.cli.output import console
from vlrl.cli.support import SetCommand
from vlrl.core.errors import VlrlError
from vlrl.core.paths import CHECKPOINTS

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
err = console(stderr=True)
log = logging.getLogger("vlrl")

Exp = Annotated[
    str,
    typer.Argument(metavar="EXPERIMENT", help="Experiment name (config/experiments/<name>.yaml)."),
]
Bench = Annotated[
    str,
    typer.Argument(metavar="BENCHMARK", help="Benchmark name (config/benchmarks/<name>.yaml)."),
]
Checkpoint = Annotated[
    str,
    typer.Argument(
        metavar="CHECKPOINT",
        help=f"Which model of the experiment: {', '.join(CHECKPOINTS[:-1])} or {CHECKPOINTS[-1]}.",
    ),
]
Overrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        metavar="KEY=VALUE...",
        help="Override config keys, values read as YAML: --set grpo.max_steps=10 seed=1 (several "
        "after one --set, or --set again).",
    ),
]


def _version(value: bool) -> None:
    if value:
        _warn_other_checkout()
        print(cli_support.version_line())
        raise typer.Exit()


@app.callback()
def _setup(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug messages.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version, the checkout the code runs from and its commit.",
        ),
    ] = False,
) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[_log_handler()])
    cli_support.enter_root()
    _warn_other_checkout()


def _log_handler() -> logging.Handler:
    """Rich's log lines in a terminal; elsewhere (a job's log file, a pipe) one plain line per
    record, which rich would wrap at 80 columns mid-path."""
    if err.is_terminal:
        return RichHandler(console=err, show_path=False, rich_tracebacks=True)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
    return handler


LOG_FORMAT = "[%(asctime)s] %(levelname)-7s %(message)s"
"""A log record off a terminal: time, level, message, on one line."""


def _warn_other_checkout() -> None:
    warning = cli_support.other_checkout()
    if warning:
        err.print(f"[bold yellow]warning:[/] {warning}", soft_wrap=True)


def fail(exc: VlrlError, escape: bool = False, soft_wrap: bool = False) -> None:
    """Print a user error as one red line (with a hint when no project root was found) and exit
    with status 2."""
    from rich.markup import escape as escaped

    text = escaped(str(exc)) if escape else str(exc)
    err.print(f"[bold red]error:[/] {text}{cli_support.root_hint()}", soft_wrap=soft_wrap)
    sys.exit(2)


def run_or_fail(fn, *args, **kwargs):
    """Run a stage; user errors become one red line and exit code 2, not a traceback."""
    try:
        return fn(*args, **kwargs)
    except VlrlError as exc:
        fail(exc)


def _stage(name: str, cfg, *args) -> None:
    """Run stage ``name`` with a loaded config: pin CPU kernels and threads first (before the
    stage's module imports torch), then ``vlrl.stages.<name>.run(*args, cfg, ...)``.

    With ``VLRL_CHECK_READS=1`` the stage sees its config through a recorder, and reading a
    key that :mod:`vlrl.config.reads` does not declare for it fails the command (see
    :mod:`vlrl.workflow.reads`): such a key would be missing from the stage's params. Keys it
    reads only to size its launch (``LAUNCH_READS``: CPUs and memory of each node's srun task),
    which cannot change its result, are not params.
    """
    import importlib
    import os

    from vlrl.cluster.threads import pin_cpu_kernels, pin_cpu_threads

    _raise_on_sigterm()
    pin_cpu_kernels(getattr(cfg, "cpu_kernels", None))
    pin_cpu_threads(getattr(cfg, "cpu_threads", None))
    module = importlib.import_module(f"vlrl.stages.{name}")
    # a resumable stage in a Slurm job reruns in a job step of its own
    status = run_or_fail(cli_support.run_in_job_step, module, cfg, sys.argv[1:])
    if status is not None:
        sys.exit(status)
    if os.environ.get("VLRL_CHECK_READS") != "1":
        run_or_fail(module.run, args[0], cfg, *args[1:])
        return
    from vlrl.config.reads import allowed_reads
    from vlrl.workflow.reads import RecordingConfig, undeclared

    seen: set[str] = set()
    run_or_fail(module.run, args[0], RecordingConfig(cfg, seen), *args[1:])
    missing = undeclared(seen, allowed_reads(name))
    if missing:
        err.print(
            f"[bold red]error:[/] stage {name} read config keys it does not declare: "
            f"{missing}; add them to STAGE_READS[{name!r}] in vlrl/config/reads.py"
        )
        sys.exit(3)


def _raise_on_sigterm() -> None:
    """Make SIGTERM (Snakemake cancelling a job, a cluster's time limit, ``kill``) end the stage
    as Ctrl-C does, with an exception: the stage's temporary output is removed and the processes
    it started (LLaMA-Factory, inference workers) are stopped, instead of left running. Exit
    status 143, as for a process killed by SIGTERM."""
    import signal

    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: cleanup must not be interrupted
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def _experiment(exp: str, overrides: list[str] | None):
    from vlrl import sharing
    from vlrl.config import load_experiment

    try:
        if overrides:
            _refuse_tracked_overrides(exp, overrides)
        # Which ancestor's outputs the stage may read depends on the values it runs with.
        sharing.use_overrides(exp, overrides)
        return load_experiment(exp, overrides)
    except VlrlError as exc:
        fail(exc)


def _refuse_tracked_overrides(exp: str, overrides: list[str]) -> None:
    """``--set`` on an experiment whose outputs dvc.yaml tracks would leave files that neither
    tool's records describe: refuse, and say what does the same safely."""
    from vlrl.core import paths
    from vlrl.core.errors import ConfigError

    dvc_yaml = paths.root() / "dvc.yaml"
    if dvc_yaml.is_file() and f"--{exp}:" in dvc_yaml.read_text():
        sets = " ".join(
            f"-S '{paths.experiment_file(exp).relative_to(paths.root())}:{o}'" for o in overrides
        )
        raise ConfigError(
            f"--set would overwrite outputs of experiment {exp}, which dvc.yaml tracks, with a "
            f"config no file describes. Run the variant as a DVC experiment (`dvc exp run {sets}`) "
            f"or copy config/experiments/{exp}.yaml to a new experiment and edit that"
        )


@app.command(cls=SetCommand)
def data(exp: Exp, set_: Overrides = None) -> None:
    """Generate or convert the experiment's data into canonical records."""
    _stage("data", _experiment(exp, set_), exp)


@app.command("base-model")
def base_model(
    model: Annotated[
        str, typer.Argument(metavar="MODEL", help="Model name (config/models/<name>.yaml).")
    ],
) -> None:
    """Build or download a base model into resources/models/<name>/."""
    from vlrl.config import load_model

    try:
        cfg = load_model(model)
    except VlrlError as exc:
        fail(exc)
    _stage("base_model", cfg, model)


@app.command()
def download(
    dataset: Annotated[
        str, typer.Argument(metavar="DATASET", help="Dataset name (config/datasets/<name>.yaml).")
    ],
) -> None:
    """Fetch a dataset at its pinned revision into resources/datasets/<name>/."""
    from vlrl.config import load_dataset

    try:
        cfg = load_dataset(dataset)
    except VlrlError as exc:
        fail(exc)
    _stage("download", cfg, dataset)


@app.command(cls=SetCommand)
def sft(exp: Exp, set_: Overrides = None) -> None:
    """Cold-start SFT with LLaMA-Factory (runs in the sft environment)."""
    _stage("sft", _experiment(exp, set_), exp)


@app.command(cls=SetCommand)
def grpo(exp: Exp, set_: Overrides = None) -> None:
    """GRPO with TRL on the SFT model."""
    _stage("grpo", _experiment(exp, set_), exp)


@app.command(cls=SetCommand)
def merge(exp: Exp, set_: Overrides = None) -> None:
    """Write a standalone HF model from the final GRPO checkpoint."""
    _stage("merge", _experiment(exp, set_), exp)


@app.command(cls=SetCommand)
def infer(exp: Exp, checkpoint: Checkpoint, bench: Bench, set_: Overrides = None) -> None:
    """Generate predictions of one model of the experiment on one benchmark."""
    _stage("infer", _experiment(exp, set_), exp, checkpoint, bench)


@app.command(cls=SetCommand)
def score(exp: Exp, checkpoint: Checkpoint, bench: Bench, set_: Overrides = None) -> None:
    """Score predictions under the benchmark's scoring protocol (and a judge where it uses one)."""
    _stage("score", _experiment(exp, set_), exp, checkpoint, bench)


@app.command(cls=SetCommand)
def report(exp: Exp, set_: Overrides = None) -> None:
    """Tables, plots and metrics.json for the experiment."""
    from vlrl.workflow import stage_deps

    # The report's provenance fingerprints its own code, as the workflow derives it.
    root = stage_deps.source_root().parent
    _stage("report", _experiment(exp, set_), exp, stage_deps.code_files("report", root), root)
