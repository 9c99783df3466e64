"""The ``vlrl`` workflow tools: rescore, protocols, compare, show, plan, pin, check, resolve and
dvc-yaml (commands that run no stage). Registered on :data:`vlrl.cli.commands.app`."""

from __future__ import annotations

from typing import Annotated

import typer

from vlrl.cli.commands import Exp, Overrides, app, fail, run_or_fail
from vlrl.cli.output import Format, FormatOption, console
from vlrl.cli.support import SetCommand
from vlrl.core.errors import VlrlError


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
    format_: FormatOption = Format.table,
) -> None:
    """Rescore existing predictions under another scoring protocol (no new inference) into
    results/<exp>/rescored/<protocol>/, and print each headline beside the stage's."""
    from vlrl.cli.output import emit
    from vlrl.workflow import rescoring

    rows = run_or_fail(rescoring.rescore_rows, exp, protocol, checkpoint, bench)
    emit(rows, format_, title=f"{exp}: rescored under {protocol}")
    if format_ is Format.table:
        console().print(f"rescored files: {rescoring.rescored_dir(exp, protocol)}/")


@app.command()
def protocols(
    bench: Annotated[
        str | None, typer.Argument(metavar="BENCHMARK", help="Only this benchmark's.")
    ] = None,
    format_: FormatOption = Format.table,
) -> None:
    """List the scoring protocols (name, judge use, source) and which benchmarks support each."""
    from vlrl.cli.output import emit
    from vlrl.workflow import rescoring

    rows = run_or_fail(rescoring.protocol_rows, bench)
    emit(rows, format_, rescoring.PROTOCOL_HEADINGS, title="scoring protocols")


@app.command()
def compare(
    a: Annotated[str, typer.Argument(metavar="A", help="The experiment that changed something.")],
    b: Annotated[str, typer.Argument(metavar="B", help="The one to compare it with (its parent).")],
    format_: FormatOption = Format.table,
) -> None:
    """Did a change help? Each benchmark and checkpoint both experiments evaluate, paired on the
    same items: A − B in points, its paired bootstrap interval, McNemar's p, and a sentence.
    Checkpoints both read from one shared output are marked shared."""
    from vlrl.cli.output import emit
    from vlrl.workflow import compare as wf

    rows = run_or_fail(wf.compare, a, b)
    if format_ is not Format.table:
        emit(rows, format_)
        return
    emit(wf.display(a, rows), format_, title=f"A = {a}, B = {b}")
    out = console()
    for row in rows:
        out.print(f"- {row['sentence']}", highlight=False)


@app.command(cls=SetCommand)
def show(
    exp: Exp,
    set_: Overrides = None,
    only_set: Annotated[
        bool,
        typer.Option(
            "--only-set",
            help="Only the values the experiment's own file or a --set sets: what differs from "
            "its parent (or, with no parent, from the schema's defaults).",
        ),
    ] = False,
    format_: FormatOption = Format.table,
) -> None:
    """Print the experiment's resolved config, each value with where it comes from: the file and
    line that set it (and the source cited there), a --set, a derivation or the default. Fails,
    naming every problem, on an invalid config (as vlrl check would)."""
    from vlrl.cli.output import emit
    from vlrl.workflow import show as wf

    if format_ is Format.table:
        run_or_fail(lambda: print(wf.render(exp, set_, only_set)))
    else:
        emit(run_or_fail(wf.rows, exp, set_, only_set), format_)


@app.command()
def plan(exp: Exp, format_: FormatOption = Format.table) -> None:
    """Before anything runs: a one-screen summary (stages to run, downloads, disk, servers,
    GPU-hours and wall time with the hardware assumed, peak memory), then the details: the stages
    that would run (Snakemake's dry run; `dvc repro` runs the same) and why (a config key with
    the value the stage last ran with and the new one, a code file, an input), the downloads,
    the disk, the servers, and the estimate with its assumptions, next to what the paper
    reports. Writes nothing. --format csv|json|md: one row per job."""
    from vlrl.cli.output import emit
    from vlrl.workflow import plan as wf

    planned = run_or_fail(wf.make_plan, exp)
    if format_ is Format.table:
        print(wf.render(planned))
    else:
        emit(wf.rows(planned), format_)


@app.command()
def pin(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME", help="An unpinned dataset or model (config/datasets/, config/models/)."
        ),
    ],
) -> None:
    """Resolve an unpinned hub revision (or a git dataset's HEAD commit) once, online
    (HF_HUB_OFFLINE=0), and write it into the config file: every later run downloads exactly
    that commit."""
    from vlrl.workflow import pin as wf

    run_or_fail(lambda: print(f"{(p := wf.pin(name)).file}: {p.repo_id} pinned at {p.revision}"))


@app.command("check")
def check() -> None:
    """Validate params.yaml and every experiment, model and benchmark file; list every problem
    (one line each, naming the file and the dotted key) and exit 2 if there is any."""
    from vlrl.workflow import check as wf

    try:
        wf.check_all()
    except VlrlError as exc:
        # Problems quote values such as [count, arithmetic], which are not markup.
        fail(exc, escape=True, soft_wrap=True)


@app.command()
def resolve(
    check: Annotated[
        bool, typer.Option(help="Also fail when dvc.yaml is stale (what `dvc repro` runs).")
    ] = True,
) -> None:
    """Write every experiment's resolved config (DVC's params) and check dvc.yaml is current."""
    from vlrl.workflow import dvc_export
    from vlrl.workflow import resolve as wf

    run_or_fail(wf.main)
    if check:
        run_or_fail(dvc_export.main, True)


@app.command("dvc-yaml")
def dvc_yaml(
    check_only: Annotated[bool, typer.Option("--check", help="Fail if dvc.yaml is stale.")] = False,
) -> None:
    """Generate dvc.yaml from the Snakemake DAG (the one declaration of the pipeline)."""
    from vlrl.workflow import dvc_export

    run_or_fail(dvc_export.main, check_only)
