"""The tables a person reads: data frames of text, one cell per number formatted by
:mod:`vlrl.reporting.formatting`. The templates lay them out as Markdown or HTML; the numbers
themselves go to the CSV files unformatted. Also the report's lead (:func:`lead_lines`): the
paired comparisons' numbers, told in a line per benchmark.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from vlrl.reporting import formatting as fmt
from vlrl.reporting.formatting import DASH, Scale
from vlrl.reporting.frames import Evaluation, metric_names, metric_of, tasks_of
from vlrl.reporting.labels import label


def scored_by(row: dict[str, Any]) -> str:
    """How a results row's items were decided: rules, or rules and which judge (its model and
    prompt version); failed generations scored 0 are counted.

    >>> scored_by({"judge": None, "generation_failures": 0})
    'rules'
    >>> scored_by({"judge": "j (prompt v1)", "generation_failures": 2, "judge_failures": 1,
    ...            "protocol": "vision_sr1"})
    'vision_sr1 rules + judge j (prompt v1); 1 judge failure; 2 failed generations scored 0'
    """
    rules = f"{row['protocol']} rules" if row.get("protocol") else "rules"
    text = rules if not row.get("judge") else f"{rules} + judge {row['judge']}"
    judge_failures = row.get("judge_failures") or 0
    if judge_failures:
        text += f"; {judge_failures} judge failure{'s' if judge_failures > 1 else ''}"
    failures = row.get("generation_failures") or 0
    return text + (f"; {failures} failed generations scored 0" if failures else "")


def _left_out(row: dict[str, Any] | None, metric: str) -> str:
    """`` (k unscored)`` after a headline whose row has unscored items, with the groups a group
    metric left out; empty when there are none.

    >>> _left_out({"unscored": 2, "metric.CircularEval.left_out": 1}, "CircularEval")
    ' (2 unscored, 1 group left out)'
    >>> _left_out({"unscored": 0}, "accuracy")
    ''
    """
    if not row or not row.get("unscored"):
        return ""
    groups = row.get(f"metric.{metric}.left_out") or 0
    extra = f", {_groups_left_out(groups)}" if groups else ""
    return f" ({row['unscored']} unscored{extra})"


def _groups_left_out(n: int) -> str:
    """How many groups a group metric left out (a member unscored).

    >>> _groups_left_out(1), _groups_left_out(3)
    ('1 group left out', '3 groups left out')
    """
    return f"{fmt.count(n)} group{'s' if n > 1 else ''} left out"


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
            if r.get(f"metric.{name}.left_out"):
                cells[head] += f" ({_groups_left_out(r[f'metric.{name}.left_out'])})"
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


def effect(subject: str, r: dict[str, Any], against: str | None = None) -> str:
    """What ``subject`` did to accuracy in a paired comparison row (:func:`comparisons_table`'s
    rows), as its interval says: added (above zero), lost (below), or a change not
    distinguishable from zero (the interval holds it). ``against`` names the other checkpoint
    and puts the interval in.

    >>> effect("RL", {"diff": 0.123, "ci_low": 0.091, "ci_high": 0.154})
    'RL added +12.3 points'
    >>> effect("SFT", {"diff": 0.38, "ci_low": 0.35, "ci_high": 0.411}, "base")
    'SFT added +38.0 points over base [+35.0, +41.1]'
    >>> effect("RL", {"diff": -0.02, "ci_low": -0.031, "ci_high": -0.009})
    'RL lost 2.0 points'
    >>> effect("SFT", {"diff": 0.004, "ci_low": -0.005, "ci_high": 0.013}, "base")
    "SFT's change over base, +0.4 points [-0.5, +1.3], is not distinguishable from zero"
    """
    ci = f" {fmt.signed_interval(r['ci_low'], r['ci_high'])}" if against else ""
    if r["ci_low"] > 0:
        return f"{subject} added {fmt.signed(r['diff'])} points" + (
            f" over {against}{ci}" if against else ""
        )
    if r["ci_high"] < 0:
        return f"{subject} lost {fmt.value(-r['diff'])} points" + (
            f" against {against}{ci}" if against else ""
        )
    over = f" over {against}" if against else ""
    diff = fmt.signed(r["diff"])
    return f"{subject}'s change{over}, {diff} points{ci}, is not distinguishable from zero"


def lead_lines(
    rows: list[dict[str, Any]], sft_enabled: bool, confidence: float
) -> list[dict[str, str]]:
    """The report's first lines, one per benchmark that has a comparison: what RL (GRPO) added
    over the checkpoint it was trained from, with both accuracies, the paired interval,
    McNemar's p and n, then what SFT added over base; SFT's alone when there is no GRPO
    checkpoint, and the first comparison when neither step stands alone (SFT+GRPO − base with
    no SFT checkpoint). ``rows`` are :func:`vlrl.reporting.frames.comparison_rows`' (the
    numbers of comparisons.md); each line is ``{"benchmark", "lead", "rest"}``: ``lead`` is
    set in bold, ``rest`` follows it."""
    lines = []
    for bench in dict.fromkeys(r["benchmark"] for r in rows):
        pairs = {(r["a"], r["b"]): r for r in rows if r["benchmark"] == bench}
        rl = pairs.get(("grpo", "sft" if sft_enabled else "base"))
        sft = pairs.get(("sft", "base"))
        main = rl or sft or next(iter(pairs.values()))
        subject = "RL" if main is rl else "SFT" if main is sft else label(main["a"], sft_enabled)
        a, b = label(main["a"], sft_enabled), label(main["b"], sft_enabled)
        left_out = f", {fmt.count(main['excluded'])} unscored left out" if main["excluded"] else ""
        rest = (
            f" on {bench} ({a} {fmt.value(main['accuracy_a'])}% vs {b}"
            f" {fmt.value(main['accuracy_b'])}%, paired {fmt.level(confidence)} interval"
            f" {fmt.signed_interval(main['ci_low'], main['ci_high'])}, McNemar"
            f" {fmt.p_stated(main['p_mcnemar'])}, n = {fmt.count(main['n'])}{left_out})"
        )
        if sft is not None and main is not sft:
            rest += f"; {effect('SFT', sft, label('base', sft_enabled))}"
        lines.append({"benchmark": bench, "lead": effect(subject, main), "rest": rest + "."})
    return lines


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


OTHER_PROTOCOL = "≠ protocol"
"""The mark of a difference between numbers scored under different (or unknown) protocols."""
NOT_COMPARED = "not compared"
"""What stands for a difference with a number the reference marks not comparable."""


def scoring(r: dict[str, Any]) -> str:
    """The vlrl scoring protocols of a published number and of ours: ``= name`` when they are
    the same, else both named (an unknown published one as ``unknown``).

    >>> scoring({"published_protocol": "vision_sr1", "reproduced_protocol": "vision_sr1"})
    '= vision_sr1'
    >>> scoring({"published_protocol": None, "reproduced_protocol": "vlrl"})
    '≠: published unknown, ours vlrl'
    """
    published = r["published_protocol"] or "unknown"
    ours = r["reproduced_protocol"] or "unknown"
    if r["published_protocol"] and published == ours:
        return f"= {ours}"
    return f"≠: published {published}, ours {ours}"


def compared(cell: str, r: dict[str, Any]) -> str:
    """A difference (or interval test) as far as it compares: ``not compared`` for a number
    the reference marks not comparable, bracketed and marked when the protocols differ.

    >>> r = {"not_comparable": None, "same_protocol": False}
    >>> compared("+1.2", r), compared("+1.2", {**r, "same_protocol": True})
    ('(+1.2) ≠ protocol', '+1.2')
    >>> compared("+1.2", {**r, "not_comparable": "all ten subsets"})
    'not compared'
    """
    if r["not_comparable"]:
        return NOT_COMPARED
    if cell == DASH or r["same_protocol"]:
        return cell
    return f"({cell}) {OTHER_PROTOCOL}"


def _differs(r: dict[str, Any]) -> str:
    parts = [f"not comparable: {r['not_comparable']}" if r["not_comparable"] else None]
    return "; ".join(p for p in [*parts, r["differs"]] if p) or DASH


def versus_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Reproduced vs published, for the published numbers of benchmarks evaluated here. A
    difference is marked ``≠ protocol`` when the published number's scoring protocol is
    unknown or not ours (the "scoring protocol" column names both), and is ``not compared``
    for a number the reference marks not comparable (why: "differs from ours")."""
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
                "Δ (ours − published)": compared(fmt.signed(r["delta"], scale), r),
                "published inside our CI": compared(fmt.yes_no(r["inside_interval"]), r),
                "scoring protocol": scoring(r),
                "published model": r["published_model"],
                "source": source(r),
                "protocol": protocol(r),
                "differs from ours": _differs(r),
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
    ev = next((e for e in evaluations if e.bench == bench), None)
    if ev is None:  # a combined number (report.combined): an accuracy
        return "percent"
    raw = any(ev.scale(m) == "raw" for m in metric.split("+"))
    return "raw" if raw else "percent"


def summary_table(
    results: list[dict[str, Any]],
    versus: list[dict[str, Any]],
    evaluations: list[Evaluation],
    columns: list[tuple[str, str]],
) -> pd.DataFrame:
    """The paper's layout: one row per model (our checkpoints, then the linked published
    rows), one column per benchmark metric (each benchmark's headline first; a combined
    number's accuracy, its rows among ``results``), then the judge and the scoring protocol
    (ours per benchmark; the paper's, or unknown). A published number the reference marks not
    comparable is shown as ``(not comparable)``."""
    heads = {c: f"{c[0]} {c[1]}" for c in columns}
    benches = {ev.bench for ev in evaluations}
    table = []
    for checkpoint in dict.fromkeys(r["checkpoint"] for r in results):
        mine = {r["benchmark"]: r for r in results if r["checkpoint"] == checkpoint}
        cells = {"model": f"{next(iter(mine.values()))['model']} (reproduced)"}
        for bench, metric in columns:
            row = mine.get(bench)
            parts = metric.split("+")
            values = [metric_of(row, m)[0] for m in parts] if row else [None]
            total = None if any(fmt.missing(v) for v in values) else sum(values)
            cells[heads[(bench, metric)]] = fmt.value(
                total, _scale(evaluations, bench, metric)
            ) + _left_out(row, metric)
        judges = [
            f"{r['judge']} on {b}" for b, r in mine.items() if r.get("judge") and b in benches
        ]
        cells["judge"] = "; ".join(judges) or "none (rules)"
        cells["scoring protocol"] = _protocols_of(evaluations, checkpoint)
        table.append(cells)
    published: dict[tuple[str, str], dict[str, Any]] = {}
    for r in versus:
        key = (r["reference"], r["row_id"])
        entry = published.setdefault(
            key, {"model": f"{r['published_model']} ({r['reference']}, {r['table']})"}
        )
        entry.setdefault("judge", r["judge"])
        entry.setdefault("scoring", r["published_protocol"] or "unknown")
        if r["evaluated"] and (r["benchmark"], r["metric"]) in heads:
            cell = fmt.published(r["published_as_printed"])
            mark = " (not comparable)" if r["not_comparable"] else ""
            entry[heads[(r["benchmark"], r["metric"])]] = cell + mark
    for entry in published.values():
        cells = {h: entry.get(h, DASH) for h in heads.values()}
        judge = f"as published: {entry['judge']}"
        table.append(
            {"model": entry["model"], **cells, "judge": judge, "scoring protocol": entry["scoring"]}
        )
    return pd.DataFrame(table)


def _protocols_of(evaluations: list[Evaluation], checkpoint: str) -> str:
    """The scoring protocols of a checkpoint's scores: one name when all agree, else each with
    its benchmarks (``vlrl on a, b; vision_sr1 on c``)."""
    by: dict[str, list[str]] = {}
    for ev in evaluations:
        if checkpoint in ev.scores:
            by.setdefault(ev.scores[checkpoint].protocol, []).append(ev.bench)
    if len(by) <= 1:
        return next(iter(by), DASH)
    return "; ".join(f"{name} on {', '.join(benches)}" for name, benches in by.items())
