"""``vlrl compare A B``: did the change help? Every benchmark and checkpoint both experiments
evaluate, paired on the same items (:mod:`vlrl.reporting.experiments`), with A's
``score.confidence``, ``score.bootstrap_resamples`` and seed."""

from __future__ import annotations

from typing import Any

from vlrl.config import load_experiment
from vlrl.reporting import experiments
from vlrl.reporting import formatting as fmt

SHOWN = {
    "benchmark": "benchmark",
    "model": "model",
    "accuracy_a": "A",
    "accuracy_b": "B",
    "difference": "A − B (pts)",
    "interval": "interval",
    "p": "McNemar p",
    "n": "n",
}
"""The table's columns (``--format table``); CSV, JSON and Markdown have every field."""


def compare(a: str, b: str) -> list[dict[str, Any]]:
    """The rows of :func:`vlrl.reporting.experiments.compare_rows` for ``a`` − ``b``."""
    cfg_a, cfg_b = load_experiment(a), load_experiment(b)
    return experiments.compare_rows(a, b, cfg_a, cfg_b, cfg_a.score, cfg_a.seed)


def display(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the table's cells as text (percent, signed points, intervals)."""
    shown = []
    for r in rows:
        shared = r["shared"]
        shown.append(
            {
                "benchmark": r["benchmark"],
                "model": r["model"],
                "accuracy_a": "shared" if shared else fmt.value(r["accuracy_a"]),
                "accuracy_b": "shared" if shared else fmt.value(r["accuracy_b"]),
                "difference": "-" if shared else fmt.signed(r["diff"]),
                "interval": "-" if shared else fmt.signed_interval(r["ci_low"], r["ci_high"]),
                "p": "-" if shared else fmt.p_value(r["p_mcnemar"]),
                "n": "-" if shared else fmt.count(r["n"]),
            }
        )
    return shown
