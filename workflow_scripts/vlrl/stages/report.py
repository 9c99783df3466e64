"""The ``report`` stage: tables, a plot and ``metrics.json`` for one experiment.

Inputs: ``results/<exp>/scores/<checkpoint>/<bench>.json`` for every checkpoint the experiment
evaluates (``cfg.checkpoints``, in the order base, sft, grpo) and every benchmark. A checkpoint
the experiment does not evaluate is simply absent; a missing scores file of one it does evaluate
is an error naming the file.

Outputs, in ``reports/<exp>/`` (written to a temporary directory, renamed into place):

- ``results.md`` / ``results.csv``: one row per checkpoint × benchmark: n, accuracy with its
  Wilson interval, and the same per task;
- ``comparisons.md`` / ``comparisons.csv``: paired differences on the same items between
  consecutive checkpoints (SFT − base, SFT+GRPO − SFT) and, with three, last − first: mean
  difference, percentile-bootstrap interval, McNemar's exact p and the discordant fraction;
- ``accuracy.png``: grouped bars per task and overall, checkpoints side by side, error bars =
  the intervals;
- ``index.html``: the tables and the plot in one self-contained page;

and ``results/<exp>/metrics.json`` for ``dvc exp show``:
``{bench: {checkpoint: {"accuracy", "ci_low", "ci_high", <metric>: value, <task>: accuracy}}}``
(the benchmark's own metrics, such as HallusionBench's fAcc, as its scores files hold them).

Every number is recomputed from the scores files' items (so the report cannot disagree with
them), with ``score.confidence``, ``score.bootstrap_resamples`` and the experiment's seed.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from vlrl import paths
from vlrl.config import ExperimentConfig
from vlrl.errors import StageError
from vlrl.files import atomic_dir, write_json
from vlrl.scoring.stats import paired_difference, summarize

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = (
    "description",
    "seed",
    "benchmarks",
    "score",
    "report",
    "infer.checkpoints",
    "sft.enabled",
    "grpo.enabled",
)

ORDER = ("base", "sft", "grpo")
#: Prefix of a benchmark metric's column in the results rows.
METRIC = "metric."
NO_COMPARISONS = "No comparisons: the experiment evaluates a single checkpoint."


def label(checkpoint: str, cfg: ExperimentConfig) -> str:
    """The checkpoint's name in tables: base, SFT, SFT+GRPO (GRPO when SFT is disabled)."""
    if checkpoint == "sft":
        return "SFT"
    if checkpoint == "grpo":
        return "SFT+GRPO" if cfg.sft.enabled else "GRPO"
    return checkpoint


def load_scores(exp: str, cfg: ExperimentConfig) -> dict[str, dict[str, dict[str, Any]]]:
    """``{bench: {checkpoint: scores}}`` for every evaluated checkpoint and benchmark."""
    checkpoints = sorted(cfg.checkpoints, key=ORDER.index)
    scores: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in cfg.benchmarks:
        scores[bench] = {}
        for checkpoint in checkpoints:
            path = paths.scores_file(exp, checkpoint, bench)
            if not path.is_file():
                raise StageError(
                    f"report: {path} does not exist; run `vlrl score {exp} {checkpoint} {bench}`"
                )
            try:
                data = json.loads(path.read_text())
            except ValueError as exc:
                raise StageError(f"report: {path} is not valid JSON: {exc}") from None
            if not isinstance(data, dict) or not data.get("items"):
                raise StageError(f"report: {path} has no scored items")
            scores[bench][checkpoint] = data
    return scores


def _correct_by_id(data: dict[str, Any]) -> dict[str, int]:
    return {str(item["id"]): int(item["correct"]) for item in data["items"]}


def results_rows(
    scores: dict[str, dict[str, dict[str, Any]]], cfg: ExperimentConfig
) -> list[dict[str, Any]]:
    """One row per benchmark × checkpoint: overall and per-task accuracy with intervals."""
    rows = []
    for bench, by_checkpoint in scores.items():
        tasks = sorted({item["task"] for data in by_checkpoint.values() for item in data["items"]})
        for checkpoint, data in by_checkpoint.items():
            summary = summarize(data["items"], cfg.score.confidence)
            row: dict[str, Any] = {
                "benchmark": bench,
                "checkpoint": checkpoint,
                "model": label(checkpoint, cfg),
                "n": summary["n"],
                "accuracy": summary["accuracy"],
                "ci_low": summary["ci_low"],
                "ci_high": summary["ci_high"],
            }
            for task in tasks:
                part = summary["per_task"].get(task)
                for key in ("n", "accuracy", "ci_low", "ci_high"):
                    row[f"{task}.{key}"] = part[key] if part else None
            # The benchmark's own metrics (fAcc, CircularEval, MME score...), as the score stage
            # computed them from these items.
            for name, metric in (data.get("metrics") or {}).items():
                if name != "accuracy":
                    row[f"{METRIC}{name}"] = metric["value"]
                    row[f"{METRIC}{name}.proportion"] = metric["n"] is not None
            rows.append(row)
    return rows


def comparison_pairs(checkpoints: list[str]) -> list[tuple[str, str]]:
    """``(a, b)`` pairs compared as a − b: consecutive checkpoints, plus last − first for three.

    >>> comparison_pairs(["base", "sft", "grpo"])
    [('sft', 'base'), ('grpo', 'sft'), ('grpo', 'base')]
    >>> comparison_pairs(["base", "grpo"])
    [('grpo', 'base')]
    """
    pairs = [(checkpoints[i + 1], checkpoints[i]) for i in range(len(checkpoints) - 1)]
    if len(checkpoints) >= 3:
        pairs.append((checkpoints[-1], checkpoints[0]))
    return pairs


def comparison_rows(
    exp: str, scores: dict[str, dict[str, dict[str, Any]]], cfg: ExperimentConfig
) -> list[dict[str, Any]]:
    """Paired differences on the same items (see the module docstring)."""
    rows = []
    for bench, by_checkpoint in scores.items():
        for a, b in comparison_pairs(list(by_checkpoint)):
            ca, cb = _correct_by_id(by_checkpoint[a]), _correct_by_id(by_checkpoint[b])
            if set(ca) != set(cb):
                only = sorted(set(ca) ^ set(cb))[:5]
                raise StageError(
                    f"report: {paths.scores_file(exp, a, bench)} and "
                    f"{paths.scores_file(exp, b, bench)} score different items (e.g. {only}); "
                    "a paired comparison needs the same items"
                )
            ids = sorted(ca)
            result = paired_difference(
                np.array([ca[i] for i in ids]),
                np.array([cb[i] for i in ids]),
                confidence=cfg.score.confidence,
                resamples=cfg.score.bootstrap_resamples,
                seed=cfg.seed,
            )
            rows.append(
                {
                    "benchmark": bench,
                    "comparison": f"{label(a, cfg)} − {label(b, cfg)}",
                    "a": a,
                    "b": b,
                    "n": result["n"],
                    "accuracy_a": result["mean_a"],
                    "accuracy_b": result["mean_b"],
                    "diff": result["diff"],
                    "ci_low": result["ci_low"],
                    "ci_high": result["ci_high"],
                    "p_mcnemar": result["p_value"],
                    "a_only": result["a_only"],
                    "b_only": result["b_only"],
                    "discordant_fraction": result["discordant_fraction"],
                }
            )
    return rows


def metrics(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """The flat-ish ``metrics.json`` tree from the results rows."""
    tree: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        entry = {k: row[k] for k in ("accuracy", "ci_low", "ci_high")}
        for key, value in row.items():
            if key.endswith(".accuracy") and value is not None:
                entry[key.removesuffix(".accuracy")] = value
            elif key.startswith(METRIC) and not key.endswith(".proportion"):
                entry[key.removeprefix(METRIC)] = value
        tree.setdefault(row["benchmark"], {})[row["checkpoint"]] = entry
    return tree


# --------------------------------------------------------------------------------- tables
def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _with_ci(acc: float | None, low: float | None, high: float | None) -> str:
    return "–" if acc is None else f"{_pct(acc)} [{_pct(low)}, {_pct(high)}]"


def _tasks(rows: list[dict[str, Any]]) -> list[str]:
    return [k.removesuffix(".accuracy") for k in rows[0] if k.endswith(".accuracy")]


def _metric_names(rows: list[dict[str, Any]]) -> list[str]:
    names = (k.removeprefix(METRIC) for r in rows for k in r if k.startswith(METRIC))
    return [n for n in dict.fromkeys(names) if not n.endswith(".proportion")]


def _metric_cell(row: dict[str, Any], name: str) -> str:
    value = row.get(f"{METRIC}{name}")
    if value is None:
        return "–"
    return _pct(value) if row[f"{METRIC}{name}.proportion"] else f"{value:.1f}"


def results_tables(rows: list[dict[str, Any]]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Per benchmark: header and body of the human-readable results table."""
    tables = {}
    for bench in dict.fromkeys(r["benchmark"] for r in rows):
        bench_rows = [r for r in rows if r["benchmark"] == bench]
        tasks = _tasks(bench_rows)
        names = _metric_names(bench_rows)
        header = ["model", "n", "overall", *names, *tasks]
        body = [
            [
                r["model"],
                str(r["n"]),
                _with_ci(r["accuracy"], r["ci_low"], r["ci_high"]),
                *(_metric_cell(r, name) for name in names),
                *(
                    _with_ci(r[f"{t}.accuracy"], r[f"{t}.ci_low"], r[f"{t}.ci_high"])
                    + ("" if r[f"{t}.n"] is None else f" (n={r[f'{t}.n']})")
                    for t in tasks
                ),
            ]
            for r in bench_rows
        ]
        tables[bench] = (header, body)
    return tables


def comparison_table(rows: list[dict[str, Any]], confidence: float) -> tuple[list, list]:
    level = f"{100 * confidence:g}%"
    header = [
        "benchmark",
        "comparison",
        "n",
        "accuracies",
        "difference (pts)",
        f"{level} CI (paired bootstrap)",
        "McNemar p",
        "discordant",
    ]
    body = [
        [
            r["benchmark"],
            r["comparison"],
            str(r["n"]),
            f"{_pct(r['accuracy_a'])} vs {_pct(r['accuracy_b'])}",
            f"{100 * r['diff']:+.1f}",
            f"[{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}]",
            f"{r['p_mcnemar']:.3g}",
            f"{_pct(r['discordant_fraction'])}% ({r['a_only']} vs {r['b_only']})",
        ]
        for r in rows
    ]
    return header, body


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table.

    >>> print(markdown_table(["a", "b"], [["1", "x|y"]]))
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """

    def cells(values: list[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    return "\n".join([cells(header), "|" + "---|" * len(header), *(cells(r) for r in body)])


def html_table(header: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def judge_notes(scores: dict[str, dict[str, dict[str, Any]]], cfg: ExperimentConfig) -> list[str]:
    """One line per scores file on how it was scored (rules, or which judge and its failures)."""
    notes = []
    for bench, by_checkpoint in scores.items():
        for checkpoint, data in by_checkpoint.items():
            judge = data.get("judge")
            what = f"{label(checkpoint, cfg)} on {bench}"
            if not judge:
                notes.append(f"{what}: rules only")
                continue
            notes.append(
                f"{what}: rules + judge `{judge.get('model')}` at {judge.get('base_url')} "
                f"(mode {judge.get('mode')}, prompt {judge.get('prompt_version', '?')}): "
                f"{judge.get('calls', 0)} calls, {judge.get('cache_hits', 0)} cached, "
                f"{judge.get('failures', 0)} failures"
                + (" scored 0" if judge.get("failures") else "")
            )
    return notes


# ------------------------------------------------------------------------------------ plot
def plot(rows: list[dict[str, Any]], confidence: float) -> bytes:
    """Grouped bars (PNG bytes): one panel per benchmark, groups = tasks + overall."""
    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    most_groups = max(len(_tasks([r for r in rows if r["benchmark"] == b])) + 1 for b in benches)
    fig = Figure(figsize=(max(6.0, 1.4 * most_groups + 2), 3.8 * len(benches)), dpi=120)
    axes = fig.subplots(len(benches), 1, squeeze=False)[:, 0]
    for ax, bench in zip(axes, benches, strict=True):
        bench_rows = [r for r in rows if r["benchmark"] == bench]
        groups = [*_tasks(bench_rows), "overall"]
        width = 0.8 / len(bench_rows)
        x = np.arange(len(groups))
        for j, r in enumerate(bench_rows):
            keys = [f"{g}." if g != "overall" else "" for g in groups]
            acc = np.array([_nan(r[f"{k}accuracy"]) for k in keys]) * 100
            low = np.array([_nan(r[f"{k}ci_low"]) for k in keys]) * 100
            high = np.array([_nan(r[f"{k}ci_high"]) for k in keys]) * 100
            bars = ax.bar(
                x + (j - (len(bench_rows) - 1) / 2) * width,
                acc,
                width,
                yerr=[acc - low, high - acc],
                capsize=3,
                label=r["model"],
            )
            for bar, value in zip(bars, acc, strict=True):  # value at the foot of its bar
                if not np.isnan(value) and value >= 6:
                    ax.text(
                        bar.get_x() + bar.get_width() / 2, 1.5, f"{value:.0f}", ha="center",
                        va="bottom", fontsize=8, color="white", fontweight="bold",
                    )  # fmt: skip
        ax.set_xticks(x, groups)
        ax.set_ylim(0, 118)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{bench}: accuracy with {100 * confidence:g}% CI")
        ax.legend(loc="upper center", fontsize=8, ncols=len(bench_rows), frameon=False)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


# ------------------------------------------------------------------------------------- run
def run(exp: str, cfg: ExperimentConfig) -> None:
    """Write the experiment's report (see the module docstring)."""
    scores = load_scores(exp, cfg)
    rows = results_rows(scores, cfg)
    comparisons = comparison_rows(exp, scores, cfg)
    level = f"{100 * cfg.score.confidence:g}%"
    title = cfg.report.title or exp
    notes = judge_notes(scores, cfg)
    tables = results_tables(rows)
    comp_header, comp_body = comparison_table(comparisons, cfg.score.confidence)
    png = plot(rows, cfg.score.confidence)

    legend = (
        f"Accuracy in %, with {level} Wilson intervals [low, high]; n = items scored. "
        "Per-task columns give the task's n."
    )
    results_md = [f"# {title}", ""]
    if cfg.description:
        results_md += [cfg.description, ""]
    results_md += [legend, ""]
    for bench, (header, body) in tables.items():
        results_md += [f"## {bench}", "", markdown_table(header, body), ""]
    results_md += ["## Scoring", "", *(f"- {n}" for n in notes), ""]
    comp_legend = (
        f"Paired differences a − b on the same items, in accuracy points: {level} percentile "
        f"bootstrap interval ({cfg.score.bootstrap_resamples} resamples, seed {cfg.seed}), "
        "McNemar's exact test on the discordant items, and the discordant fraction "
        "(items only a gets right vs only b)."
    )
    comparisons_md = [
        f"# {title} — paired comparisons",
        "",
        comp_legend,
        "",
        markdown_table(comp_header, comp_body) if comp_body else NO_COMPARISONS,
        "",
    ]
    page = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.3em .6em;text-align:right}th{background:#f3f3f3}"
        "td:first-child,td:nth-child(2){text-align:left}img{max-width:100%}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(cfg.description)}</p>" if cfg.description else "",
        f"<p>{html.escape(legend)}</p>",
    ]
    for bench, (header, body) in tables.items():
        page += [f"<h2>{html.escape(bench)}</h2>", html_table(header, body)]
    page += [
        "<h2>Accuracy</h2>",
        f"<img alt='accuracy per task and checkpoint' "
        f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>",
        "<h2>Paired comparisons</h2>",
        f"<p>{html.escape(comp_legend)}</p>",
        html_table(comp_header, comp_body) if comp_body else f"<p>{NO_COMPARISONS}</p>",
        "<h2>Scoring</h2><ul>",
        *(f"<li>{html.escape(n)}</li>" for n in notes),
        "</ul></body></html>",
    ]

    with atomic_dir(paths.report_dir(exp)) as tmp:
        (tmp / "results.md").write_text("\n".join(results_md))
        pd.DataFrame(rows).to_csv(tmp / "results.csv", index=False)
        (tmp / "comparisons.md").write_text("\n".join(comparisons_md))
        pd.DataFrame(comparisons).to_csv(tmp / "comparisons.csv", index=False)
        (tmp / "accuracy.png").write_bytes(png)
        (tmp / "index.html").write_text("\n".join(page))
    write_json(paths.metrics_file(exp), metrics(rows))
    for bench, (_, body) in tables.items():
        for line in body:
            log.info("report: %s %s: %s (n=%s)", bench, line[0], line[2], line[1])
    for r in comparisons:
        log.info(
            "report: %s %s: %+.1f pts [%+.1f, %+.1f], McNemar p=%.3g",
            r["benchmark"],
            r["comparison"],
            100 * r["diff"],
            100 * r["ci_low"],
            100 * r["ci_high"],
            r["p_mcnemar"],
        )
    log.info("report: wrote %s and %s", paths.report_dir(exp), paths.metrics_file(exp))
