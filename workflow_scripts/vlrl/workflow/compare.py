"""``vlrl compare A B``: did the change help? Every benchmark and checkpoint both experiments
evaluate, paired on the same items (:mod:`vlrl.reporting.experiments`), with A's
``score.confidence``, ``score.bootstrap_resamples`` and seed."""

from __future__ import annotations

from typing import Any

from vlrl.config import load_experiment
from vlrl.reporting import experiments


def compare(a: str, b: str) -> list[dict[str, Any]]:
    """The rows of :func:`vlrl.reporting.experiments.compare_rows` for ``a`` − ``b``."""
    cfg_a, cfg_b = load_experiment(a), load_experiment(b)
    return experiments.compare_rows(a, b, cfg_a, cfg_b, cfg_a.score, cfg_a.seed)


def display(a: str, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The rows as the table's cells (:func:`vlrl.reporting.experiments.cells`), at A's
    confidence."""
    return experiments.cells(rows, load_experiment(a).score.confidence)
