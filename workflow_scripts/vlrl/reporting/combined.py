"""Benchmarks shown as one number, as a paper prints them (``report.combined``).

A combined number is the accuracy of its benchmarks' items pooled: the mean of their
accuracies weighted by their scored items, i.e. their correct items over all their scored items
(Vision-SR1's ``weighted_mmmu_pro``: zli12321/Vision-SR1 @ 4480e08, Evaluation/eval_result.py
``add_weighted_subset``, lines 228-243), with the Wilson interval of that proportion. Its rows
have the results rows' fields (``benchmark`` is the combined name, ``combines`` its benchmarks
joined by ``+``), so that they go to ``results.csv``, ``metrics.json`` and the summary beside
their parts, and stand for a published column pooled from the same benchmarks
(:mod:`vlrl.reporting.versus`). Unscored items are left out, as they are of each part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from vlrl.reporting import formatting as fmt
from vlrl.reporting.tables import scored_by

COMBINES = "combines"
"""The field of a combined row that names its benchmarks, joined by ``+``."""


def pooled_row(rows: list[dict[str, Any] | None], confidence: float) -> dict[str, Any] | None:
    """The accuracy of several benchmarks' results rows with their items pooled (the mean of
    their accuracies weighted by their item counts), its Wilson interval at ``confidence``;
    None when one of them is missing.

    >>> row = pooled_row([{"n": 100, "accuracy": 0.5}, {"n": 300, "accuracy": 0.1}], 0.95)
    >>> row["n"], row["accuracy"]
    (400, 0.2)
    """
    from vlrl.scoring.stats import proportion_ci

    if not rows or any(r is None for r in rows):
        return None
    n = sum(r["n"] for r in rows)
    correct = sum(round(r["accuracy"] * r["n"]) for r in rows)  # counts of 0/1 verdicts
    low, high = proportion_ci(correct, n, confidence)
    return {"n": n, "accuracy": correct / n, "ci_low": low, "ci_high": high}


def combined_rows(
    results: list[dict[str, Any]], combined: Mapping[str, Sequence[str]], confidence: float
) -> list[dict[str, Any]]:
    """One results row per combined number (name → its benchmarks) × checkpoint, in the
    checkpoints' order: the pooled accuracy (:func:`pooled_row`), the counts of its parts
    summed (unscored, failed generations, judge failures), their judges, and their scoring
    protocol when they share one. A checkpoint without a row of every part gets none.

    >>> rows = [{"benchmark": "a", "checkpoint": "base", "model": "base", "n": 10,
    ...          "accuracy": 0.2}, {"benchmark": "b", "checkpoint": "base", "model": "base",
    ...          "n": 30, "accuracy": 0.6}]
    >>> (row,) = combined_rows(rows, {"ab": ["a", "b"]}, 0.95)
    >>> row["benchmark"], row["combines"], row["n"], row["accuracy"]
    ('ab', 'a+b', 40, 0.5)
    """
    ours = {(r["benchmark"], r["checkpoint"]): r for r in results}
    checkpoints = list(dict.fromkeys(r["checkpoint"] for r in results))
    rows = []
    for name, benchmarks in combined.items():
        for checkpoint in checkpoints:
            parts = [ours.get((b, checkpoint)) for b in benchmarks]
            pooled = pooled_row(parts, confidence)
            if pooled is None:
                continue
            found = [p for p in parts if p is not None]
            protocols = {p.get("protocol") for p in found}
            judges = [p["judge"] for p in found if p.get("judge")]
            rows.append(
                {
                    "benchmark": name,
                    "checkpoint": checkpoint,
                    "model": found[0]["model"],
                    **pooled,
                    "headline": "accuracy",
                    "protocol": protocols.pop() if len(protocols) == 1 else None,
                    **{k: _total(found, k) for k in _COUNTS},
                    "judge": "; ".join(dict.fromkeys(judges)) or None,
                    COMBINES: "+".join(benchmarks),
                }
            )
    return rows


_COUNTS = ("unscored", "generation_failures", "judge_failures")


def _total(rows: list[dict[str, Any]], key: str) -> int:
    return sum(r.get(key) or 0 for r in rows)


def parts(row: Mapping[str, Any]) -> list[str]:
    """The benchmarks of a combined row; none for a benchmark's own row.

    >>> parts({"combines": "a+b"}), parts({"benchmark": "a"})
    (['a', 'b'], [])
    """
    combines = row.get(COMBINES)
    return combines.split("+") if isinstance(combines, str) and combines else []


def combined_table(rows: list[dict[str, Any]], name: str) -> pd.DataFrame:
    """One combined number's table (``rows``: the results rows and the combined rows): per
    checkpoint its accuracy with its interval, n scored and unscored, then each part's accuracy
    and n, and how its items were scored."""
    table = []
    for r in (r for r in rows if r["benchmark"] == name and parts(r)):
        mine = {p["benchmark"]: p for p in rows if p["checkpoint"] == r["checkpoint"]}
        cells = {
            "model": r["model"],
            "accuracy (headline)": fmt.with_interval(r["accuracy"], r["ci_low"], r["ci_high"]),
            "n": fmt.count(r["n"]),
            "unscored": fmt.count(r["unscored"]),
        }
        for bench in parts(r):
            part = mine[bench]
            cell = fmt.with_interval(part["accuracy"], part["ci_low"], part["ci_high"])
            cells[bench] = f"{cell} (n={fmt.count(part['n'])})"
        cells["scored by"] = scored_by(r)
        table.append(cells)
    return pd.DataFrame(table)
