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
from rich.console import Console
from rich.logging import RichHandler

from vlrl.cli import support as cli_support
from vlrl.cli.support import SetCommand
from vlrl.core.errors import VlrlError
from vlrl.core.paths import CHECKPOINTS

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
err = Console(stderr=True)
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
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
    )
    cli_support.enter_root()
    _warn_other_checkout()


def _warn_other_checkout() -> None:
    warning = cli_support.other_checkout()
    if warning:
        err.print(f"[bold yellow]warning:[/] {warning}", soft_wrap=True)


def _fail(exc: VlrlError, escape: bool = False, soft_wrap: bool = False) -> None:
    """Print a user error as one red line (with a hint when no project root was found) and exit
    with status 2."""
    from rich.markup import escape as escaped

    text = escaped(str(exc)) if escape else str(exc)
    err.print(f"[bold red]error:[/] {text}{cli_support.root_hint()}", soft_wrap=soft_wrap)
    sys.exit(2)


def _run(fn, *args, **kwargs):
    """Run a stage; user errors become one red line and exit code 2, not a traceback."""
    try:
        return fn(*args, **kwargs)
    except VlrlError as exc:
        _fail(exc)


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
    status = _run(cli_support.run_in_job_step, module, cfg, sys.argv[1:])
    if status is not None:
        sys.exit(status)
    if os.environ.get("VLRL_CHECK_READS") != "1":
        _run(module.run, args[0], cfg, *args[1:])
        return
    from vlrl.config.reads import allowed_reads
    from vlrl.workflow.reads import RecordingConfig, undeclared

    seen: set[str] = set()
    _run(module.run, args[0], RecordingConfig(cfg, seen), *args[1:])
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
        _fail(exc)


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
        _fail(exc)
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
        _fail(exc)
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


@app.command()
def rescore(
    exp: Exp,
    protocol: Annotated[
        str,
        typer.Option(
            "--protocol", "-p", metavar="PROTOCOL", help="A scoring protocol (vlrl protocols)."
        ),
    ],
    checkpoint: Annotated[
        list[str] | None,
        typer.Option("--checkpoint", "-c", metavar="CHECKPOINT", help="Only these models."),
    ] = None,
    bench: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", metavar="BENCHMARK", help="Only these benchmarks."),
    ] = None,
) -> None:
    """Rescore existing predictions under another scoring protocol (no new inference) into
    results/<exp>/rescored/<protocol>/, and print each headline beside the stage's."""
    from vlrl.workflow import rescoring

    _run(rescoring.rescore_and_show, exp, protocol, checkpoint, bench)


@app.command()
def protocols(
    bench: Annotated[
        str | None, typer.Argument(metavar="BENCHMARK", help="Only this benchmark's.")
    ] = None,
) -> None:
    """List the scoring protocols (name, judge use, source) and which benchmarks support each."""
    from vlrl.workflow import rescoring

    _run(rescoring.show_protocols, bench)


@app.command(cls=SetCommand)
def show(
    exp: Exp,
    set_: Overrides = None,
    only_set: Annotated[
        bool, typer.Option("--only-set", help="Leave out the keys at the schema's default.")
    ] = False,
) -> None:
    """Print the experiment's resolved config, each value with where it comes from: the file and
    line that set it (and the source cited there), a --set, a derivation or the default."""
    from vlrl.workflow import show as wf

    _run(lambda: print(wf.render(exp, set_, only_set)))


@app.command()
def plan(exp: Exp) -> None:
    """Before anything runs: the stages that would run (Snakemake's dry run; `dvc repro` runs
    the same) and why (a config key with the value the stage last ran with and the new one, a
    code file, an input), the downloads and their sizes, the disk, the servers, and a GPU-hours
    and memory estimate with its assumptions, next to what the paper reports."""
    from vlrl.workflow import plan as wf

    _run(lambda: print(wf.render(wf.make_plan(exp))))


@app.command()
def pin(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME", help="An unpinned dataset or model (config/datasets/, config/models/)."
        ),
    ],
) -> None:
    """Resolve an unpinned hub revision once, online (HF_HUB_OFFLINE=0), and write it into the
    config file: every later run downloads exactly that commit."""
    from vlrl.workflow import pin as wf

    _run(lambda: print(f"{(p := wf.pin(name)).file}: {p.repo_id} pinned at {p.revision}"))


@app.command("check")
def check() -> None:
    """Validate params.yaml and every experiment, model and benchmark file; list every problem
    (one line each, naming the file and the dotted key) and exit 2 if there is any."""
    from vlrl.workflow import check as wf

    try:
        wf.check_all()
    except VlrlError as exc:
        # Problems quote values such as [count, arithmetic], which are not markup.
        _fail(exc, escape=True, soft_wrap=True)


@app.command()
def resolve(
    check: Annotated[
        bool, typer.Option(help="Also fail when dvc.yaml is stale (what `dvc repro` runs).")
    ] = True,
) -> None:
    """Write every experiment's resolved config (DVC's params) and check dvc.yaml is current."""
    from vlrl.workflow import dvc_export
    from vlrl.workflow import resolve as wf

    _run(wf.main)
    if check:
        _run(dvc_export.main, True)


@app.command("dvc-yaml")
def dvc_yaml(
    check_only: Annotated[bool, typer.Option("--check", help="Fail if dvc.yaml is stale.")] = False,
) -> None:
    """Generate dvc.yaml from the Snakemake DAG (the one declaration of the pipeline)."""
    from vlrl.workflow import dvc_export

    _run(dvc_export.main, check_only)


def _prose(text: str) -> str:
    """``text`` with each paragraph on one line: typer's rich help keeps a docstring's line
    breaks, which then break lines mid-sentence in the list of commands."""
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


app.info.help = _prose(__doc__)
for _info in app.registered_commands:
    _info.help = _prose(_info.help or _info.callback.__doc__ or "")
