"""The ``vlrl rescore`` and ``vlrl protocols`` tools: existing predictions under another
scoring protocol, beside what the score stage wrote; and the protocols each benchmark supports.

A tool, not a stage: its output (``results/<exp>/rescored/``) is a scratch comparison that
neither Snakemake nor DVC tracks.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vlrl.benchmarks import load_benchmark
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.items.predictions import Scores
from vlrl.scoring.protocols import PROTOCOLS
from vlrl.stages import score as stage


def _headline(scores: Scores) -> str:
    metric = scores.metrics[scores.headline]
    return f"{100 * metric.value:.1f}" if metric.n is not None else f"{metric.value:.2f}"


def rescore_and_show(
    exp: str, protocol: str, checkpoints: list[str] | None, benches: list[str] | None
) -> None:
    """Rescore ``exp``'s predictions under ``protocol`` and print a table: per benchmark and
    checkpoint, the headline under the stage's protocol and under ``protocol``, and how many
    verdicts changed."""
    pairs = stage.rescore(exp, load_experiment(exp), protocol, checkpoints, benches)
    table = Table(title=f"{exp}: rescored under {protocol}")
    for column in ("benchmark", "checkpoint", "metric", "stage (protocol)", "rescored",
                   "verdicts changed"):  # fmt: skip
        table.add_column(column, justify="right" if column in {"rescored", "verdicts changed"}
                         else "left")  # fmt: skip
    for new, old in pairs:
        changed = "-"
        if old is not None:
            before = {item.id: item.correct for item in old.items}
            changed = str(sum(before.get(item.id) != item.correct for item in new.items))
        table.add_row(
            new.benchmark,
            new.checkpoint,
            new.headline,
            f"{_headline(old)} ({old.protocol})" if old else "not scored",
            _headline(new),
            changed,
        )
    Console().print(table)
    Console().print(f"rescored files: {paths.results_dir(exp) / 'rescored' / protocol}/")


def show_protocols(bench: str | None = None) -> None:
    """Print every scoring protocol (judge use, source) with the benchmarks that support it
    (``*``: the benchmark's default), or only ``bench``'s."""
    names = sorted(p.stem for p in paths.benchmark_file("x").parent.glob("*.yaml"))
    configs = {name: load_benchmark(name) for name in ([bench] if bench else names)}
    table = Table(title="scoring protocols")
    for column in ("protocol", "judge", "source", "benchmarks (* default)"):
        table.add_column(column)
    for name, protocol in sorted(PROTOCOLS.items()):
        users = [b for b, c in configs.items() if name in c.protocols]
        if bench and not users:
            continue
        marked = [f"{b}*" if configs[b].protocol == name else b for b in users]
        table.add_row(name, protocol.judge, protocol.source, ", ".join(marked) or "-")
    Console().print(table)
