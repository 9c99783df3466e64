"""The ``vlrl rescore`` and ``vlrl protocols`` tools: existing predictions under another
scoring protocol, beside what the score stage wrote; and the protocols each benchmark supports.

A tool, not a stage: its output (``results/<exp>/rescored/``) is a scratch comparison that
neither Snakemake nor DVC tracks.
"""

from __future__ import annotations

from vlrl.benchmarks import load_benchmark
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.items.predictions import Scores
from vlrl.scoring.protocols import PROTOCOLS
from vlrl.stages import score as stage


def _headline(scores: Scores) -> str:
    metric = scores.metrics[scores.headline]
    return f"{100 * metric.value:.1f}" if metric.n is not None else f"{metric.value:.2f}"


def rescored_dir(exp: str, protocol: str):
    """Where ``vlrl rescore`` writes ``exp``'s files rescored under ``protocol``."""
    return paths.results_dir(exp) / "rescored" / protocol


def rescore_rows(
    exp: str, protocol: str, checkpoints: list[str] | None, benches: list[str] | None
) -> list[dict[str, str]]:
    """Rescore ``exp``'s predictions under ``protocol``: per benchmark and checkpoint, the
    headline under the stage's protocol and under ``protocol``, and how many verdicts changed."""
    pairs = stage.rescore(exp, load_experiment(exp), protocol, checkpoints, benches)
    rows = []
    for new, old in pairs:
        changed = "-"
        if old is not None:
            before = {item.id: item.correct for item in old.items}
            changed = str(sum(before.get(item.id) != item.correct for item in new.items))
        rows.append(
            {
                "benchmark": new.benchmark,
                "checkpoint": new.checkpoint,
                "metric": new.headline,
                "stage (protocol)": f"{_headline(old)} ({old.protocol})" if old else "not scored",
                "rescored": _headline(new),
                "verdicts changed": changed,
            }
        )
    return rows


PROTOCOL_HEADINGS = {
    "protocol": "protocol",
    "judge": "judge",
    "source": "source",
    "benchmarks": "benchmarks (* default)",
}
"""The fields of :func:`protocol_rows` and their headings in ``vlrl protocols``' table."""


def protocol_rows(bench: str | None = None) -> list[dict[str, str]]:
    """Every scoring protocol (judge use, source) with the benchmarks that support it
    (``*``: the benchmark's default), or only ``bench``'s."""
    names = sorted(p.stem for p in paths.benchmark_file("x").parent.glob("*.yaml"))
    configs = {name: load_benchmark(name) for name in ([bench] if bench else names)}
    rows = []
    for name, protocol in sorted(PROTOCOLS.items()):
        users = [b for b, c in configs.items() if name in c.protocols]
        if bench and not users:
            continue
        marked = [f"{b}*" if configs[b].protocol == name else b for b in users]
        rows.append(
            {
                "protocol": name,
                "judge": protocol.judge,
                "source": protocol.source,
                "benchmarks": ", ".join(marked) or "-",
            }
        )
    return rows
