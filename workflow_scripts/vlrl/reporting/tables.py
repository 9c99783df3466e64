"""The tables a person reads: data frames of text, one cell per number formatted by
:mod:`vlrl.reporting.formatting`. The templates lay them out as Markdown or HTML; the numbers
themselves go to the CSV files unformatted.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from vlrl.reporting import formatting as fmt
from vlrl.reporting.formatting import DASH, Scale
from vlrl.reporting.frames import Evaluation, metric_names, metric_of, tasks_of


def scored_by(row: dict[str, Any]) -> str:
    """How a results row's items were decided: rules, or rules and which judge (its model and
    prompt version); failed generations scored 0 are counted.

    >>> scored_by({"judge": None, "generation_failures": 0})
    'rules'
    >>> scored_by({"judge": "j (prompt v1)", "generation_failures": 2})
    'rules + judge j (prompt v1); 2 failed generations scored 0'
    """
    text = "rules" if not row.get("judge") else f"rules + judge {row['judge']}"
    failures = row.get("generation_failures") or 0
    return text + (f"; {failures} failed generations scored 0" if failures else "")


def _metric_cell(row: dict[str, Any], name: str, scale: Scale) -> str:
    return fmt.with_interval(*metric_of(row, name), scale)


def results_table(rows: list[dict[str, Any]], ev: Evaluation) -> pd.DataFrame:
    """One benchmark's results: the headline metric first, then accuracy, the other metrics,
    the counts, each task's accuracy, and how the items were scored."""
    rows = [r for r in rows if r["benchmark"] == ev.bench]
    metrics = list(dict.fromkeys([ev.config.headline, "accuracy", *metric_names(rows)]))
    table = []
    for r in rows:
        cells = {"model": r["model"]}
        for name in metrics:
            head = f"{name} (headline)" if name == ev.config.headline else name
            cells[head] = _metric_cell(r, name, ev.scale(name))
        cells["n"] = fmt.count(r["n"])
        cells["unscored"] = fmt.count(r["unscored"])
        for task in tasks_of(rows):
            n = r[f"{task}.n"]
            cell = fmt.with_interval(
                r[f"{task}.accuracy"], r[f"{task}.ci_low"], r[f"{task}.ci_high"]
            )
            cells[task] = cell if fmt.missing(n) else f"{cell} (n={fmt.count(n)})"
        cells["scored by"] = scored_by(r)
        table.append(cells)
    return pd.DataFrame(table)


def comparisons_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Paired comparisons, one row per benchmark × pair of checkpoints."""
    return pd.DataFrame(
        [
            {
                "benchmark": r["benchmark"],
                "comparison": r["comparison"],
                "n paired": fmt.count(r["n"]),
                "unscored, left out": fmt.count(r["excluded"]),
                "accuracies": f"{fmt.value(r['accuracy_a'])} vs {fmt.value(r['accuracy_b'])}",
                "difference (pts)": fmt.signed(r["diff"]),
                f"{fmt.level(confidence)} CI (paired bootstrap)": fmt.signed_interval(
                    r["ci_low"], r["ci_high"]
                ),
                "McNemar p": fmt.p_value(r["p_mcnemar"]),
                "discordant": fmt.share(r["discordant_fraction"], r["a_only"], r["b_only"]),
                "scored by": "rules" if not r["judge"] else f"rules + judge {r['judge']}",
            }
            for r in rows
        ]
    )


def source(r: dict[str, Any]) -> str:
    """Where a published number comes from: paper (arXiv id), table, row.

    >>> source({"paper": "P", "arxiv": "2505.1", "table": "Table 1", "row": "M-7B"})
    'P (arXiv 2505.1), Table 1, row "M-7B"'
    """
    arxiv = f" (arXiv {r['arxiv']})" if r.get("arxiv") else ""
    return f'{r["paper"]}{arxiv}, {r["table"]}, row "{r["row"]}"'


def protocol(r: dict[str, Any]) -> str:
    """The protocol a published number was measured with, as the paper states it."""
    return f"toolkit: {r['toolkit']}; prompt: {r['prompt']}; judge: {r['judge']}"


def versus_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Reproduced vs published, for the published numbers of benchmarks evaluated here."""
    table = []
    for r in rows:
        if not r["evaluated"]:
            continue
        scale = r["scale"]
        table.append(
            {
                "benchmark": r["benchmark"],
                "metric": r["metric"],
                "ours": r["model"],
                f"reproduced [{fmt.level(confidence)} CI]": fmt.with_interval(
                    r["reproduced"], r["ci_low"], r["ci_high"], scale
                ),
                "published": fmt.published(r["published_as_printed"]),
                "Δ (ours − published)": fmt.signed(r["delta"], scale),
                "published inside our CI": fmt.yes_no(r["inside_interval"]),
                "published model": r["published_model"],
                "source": source(r),
                "protocol": protocol(r),
                "differs from ours": r["differs"] or DASH,
            }
        )
    return pd.DataFrame(table)


def not_evaluated_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Published numbers linked to the experiment whose benchmark it does not evaluate."""
    return pd.DataFrame(
        [
            {
                "column": r["column"],
                "benchmark": r["benchmark"] or "none in vlrl",
                "published": fmt.published(r["published_as_printed"]),
                "published model": r["published_model"],
                "linked to": r["model"],
                "source": source(r),
                "protocol": protocol(r),
            }
            for r in rows
            if not r["evaluated"]
        ]
    )


def _scale(evaluations: list[Evaluation], bench: str, metric: str) -> Scale:
    ev = next(e for e in evaluations if e.bench == bench)
    raw = any(ev.scale(m) == "raw" for m in metric.split("+"))
    return "raw" if raw else "percent"


def summary_table(
    results: list[dict[str, Any]],
    versus: list[dict[str, Any]],
    evaluations: list[Evaluation],
    columns: list[tuple[str, str]],
) -> pd.DataFrame:
    """The paper's layout: one row per model (our checkpoints, then the linked published
    rows), one column per benchmark metric (each benchmark's headline first)."""
    heads = {c: f"{c[0]} {c[1]}" for c in columns}
    table = []
    for checkpoint in dict.fromkeys(r["checkpoint"] for r in results):
        mine = {r["benchmark"]: r for r in results if r["checkpoint"] == checkpoint}
        cells = {"model": f"{next(iter(mine.values()))['model']} (reproduced)"}
        for bench, metric in columns:
            row = mine.get(bench)
            parts = metric.split("+")
            values = [metric_of(row, m)[0] for m in parts] if row else [None]
            total = None if any(fmt.missing(v) for v in values) else sum(values)
            cells[heads[(bench, metric)]] = fmt.value(total, _scale(evaluations, bench, metric))
        judges = [f"{r['judge']} on {b}" for b, r in mine.items() if r.get("judge")]
        cells["judge"] = "; ".join(judges) or "none (rules)"
        table.append(cells)
    published: dict[tuple[str, str], dict[str, Any]] = {}
    for r in versus:
        key = (r["reference"], r["row_id"])
        entry = published.setdefault(
            key, {"model": f"{r['published_model']} ({r['reference']}, {r['table']})"}
        )
        entry.setdefault("judge", r["judge"])
        if r["evaluated"] and (r["benchmark"], r["metric"]) in heads:
            entry[heads[(r["benchmark"], r["metric"])]] = fmt.published(r["published_as_printed"])
    for entry in published.values():
        cells = {h: entry.get(h, DASH) for h in heads.values()}
        table.append({"model": entry["model"], **cells, "judge": f"as published: {entry['judge']}"})
    return pd.DataFrame(table)
