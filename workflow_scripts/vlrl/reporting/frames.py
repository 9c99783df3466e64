"""The report's numbers: what it reads of each benchmark, one results row per benchmark ×
checkpoint, paired comparisons between checkpoints, and ``metrics.json``.

Every number is recomputed from the scores files' items (so the report cannot disagree with
them). An *unscored* item (its ``correct`` is None: the judge gave no verdict) counts neither as
right nor as wrong: it is left out of every accuracy, and a paired comparison pairs only the
items scored in both checkpoints; the counts of such items are columns of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlrl import sharing
from vlrl.benchmarks import BenchmarkConfig, load_benchmark
from vlrl.core.errors import StageError
from vlrl.items.predictions import Scores, items_as_dicts, read_scores
from vlrl.reporting.formatting import Scale
from vlrl.reporting.labels import label, ordered
from vlrl.scoring.stats import paired_difference, summarize

METRIC = "metric."
"""Prefix of a benchmark metric's columns in the results rows (``metric.CircularEval``)."""


@dataclass(frozen=True)
class Evaluation:
    """One benchmark of the experiment: its config and each checkpoint's scores, in order."""

    bench: str
    config: BenchmarkConfig
    scores: dict[str, Scores]

    def scale(self, metric: str) -> Scale:
        """How the metric is shown: on the benchmark's own scale for a ``task_sum`` (MME's
        score), as a percentage otherwise (every other metric is a fraction)."""
        kinds = {spec.name: spec.kind for spec in self.config.metrics}
        return "raw" if kinds.get(metric) == "task_sum" else "percent"

    def judged(self, checkpoint: str) -> str | None:
        """``"<judge model> (prompt <version>)"`` when a judge decided any item of the
        checkpoint's scores, else None."""
        scores = self.scores[checkpoint]
        if scores.judge is None or not any(i.method == "judge" for i in scores.items):
            return None
        return f"{scores.judge.model} (prompt {scores.judge.prompt_version})"


def load(exp: str, benchmarks: list[str], checkpoints: list[str]) -> list[Evaluation]:
    """The scores of every checkpoint on every benchmark; a missing or malformed file is an
    error naming it."""
    evaluations = []
    for bench in benchmarks:
        scores = {}
        for checkpoint in ordered(checkpoints):
            path = sharing.scores_file(exp, checkpoint, bench)
            if not path.is_file():
                raise StageError(
                    f"report: {path} does not exist; run `vlrl score {exp} {checkpoint} {bench}`"
                )
            scores[checkpoint] = read_scores(path, "report")
        evaluations.append(Evaluation(bench, load_benchmark(bench), scores))
    return evaluations


def results_rows(
    evaluations: list[Evaluation], confidence: float, sft_enabled: bool
) -> list[dict[str, Any]]:
    """One row per benchmark × checkpoint: n scored, overall and per-task accuracy with
    Wilson intervals, the benchmark's metrics as the score stage computed them, the counts of
    unscored items and of failed generations, and the judge, if one scored any item."""
    rows = []
    for ev in evaluations:
        tasks = sorted({item.task for s in ev.scores.values() for item in s.items})
        for checkpoint, scores in ev.scores.items():
            scored = [item for item in scores.items if item.scored]
            if not scored:
                raise StageError(
                    f"report: {sharing.scores_file(scores.experiment, checkpoint, ev.bench)} "
                    "has no scored item"
                )
            summary = summarize(items_as_dicts(scored), confidence)
            row: dict[str, Any] = {
                "benchmark": ev.bench,
                "checkpoint": checkpoint,
                "model": label(checkpoint, sft_enabled),
                "n": summary["n"],
                "accuracy": summary["accuracy"],
                "ci_low": summary["ci_low"],
                "ci_high": summary["ci_high"],
            }
            for task in tasks:
                part = summary["per_task"].get(task)
                for key in ("n", "accuracy", "ci_low", "ci_high"):
                    row[f"{task}.{key}"] = part[key] if part else None
            for name, metric in scores.metrics.items():
                if name != "accuracy":
                    row[f"{METRIC}{name}"] = metric.value
                    row[f"{METRIC}{name}.ci_low"] = metric.ci_low
                    row[f"{METRIC}{name}.ci_high"] = metric.ci_high
                    if metric.left_out:
                        row[f"{METRIC}{name}.left_out"] = metric.left_out
            row["headline"] = ev.config.headline
            row["protocol"] = scores.protocol
            row["unscored"] = len(scores.items) - len(scored)
            row["generation_failures"] = scores.generation_failures
            row["judge"] = ev.judged(checkpoint)
            row["judge_failures"] = scores.judge.failures if scores.judge else 0
            rows.append(row)
    return rows


def tasks_of(rows: list[dict[str, Any]]) -> list[str]:
    """The per-task columns of results rows (one benchmark's).

    >>> tasks_of([{"accuracy": 1, "color.accuracy": 1, "count.accuracy": 0}])
    ['color', 'count']
    """
    return [k.removesuffix(".accuracy") for k in rows[0] if k.endswith(".accuracy")]


def metric_names(rows: list[dict[str, Any]]) -> list[str]:
    """The benchmark metrics of results rows, in their order.

    >>> metric_names([{"metric.fAcc": 0.5, "metric.fAcc.ci_low": 0.4, "metric.qAcc": 0.3}])
    ['fAcc', 'qAcc']
    """
    names = (k.removeprefix(METRIC) for r in rows for k in r if k.startswith(METRIC))
    return [n for n in dict.fromkeys(names) if not n.endswith((".ci_low", ".ci_high", ".left_out"))]


def metric_of(row: dict[str, Any], name: str) -> tuple[Any, Any, Any]:
    """``(value, ci_low, ci_high)`` of a metric (``accuracy`` or a benchmark metric) in a
    results row; Nones when the row has no such metric."""
    if name == "accuracy":
        return row["accuracy"], row["ci_low"], row["ci_high"]
    key = f"{METRIC}{name}"
    return row.get(key), row.get(f"{key}.ci_low"), row.get(f"{key}.ci_high")


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


def paired(a: tuple[Path, Scores], b: tuple[Path, Scores], score: Any, seed: int) -> dict[str, Any]:
    """The paired difference a − b of two scores files (``(path, scores)``) on the items both
    scored: ``n``, ``accuracy_a``/``accuracy_b``, ``diff``, its percentile-bootstrap interval
    ``ci_low``/``ci_high`` (``score.bootstrap_resamples`` resamples, ``score.confidence``,
    ``seed``), McNemar's exact ``p_mcnemar``, ``a_only``/``b_only``/``discordant_fraction``, and
    the items left out because one side is unscored (``unscored_a``/``unscored_b``,
    ``excluded``). Files that score different items, or no item in common, are an error naming
    both."""
    (file_a, scores_a), (file_b, scores_b) = a, b
    ca = {i.id: i.correct for i in scores_a.items}
    cb = {i.id: i.correct for i in scores_b.items}
    if set(ca) != set(cb):
        only = sorted(set(ca) ^ set(cb))[:5]
        raise StageError(
            f"{file_a} and {file_b} score different items (e.g. {only}); a paired comparison "
            "needs the same items"
        )
    ids = sorted(i for i in ca if ca[i] is not None and cb[i] is not None)
    if not ids:
        raise StageError(f"no item is scored in both {file_a} and {file_b}; nothing to pair")
    result = paired_difference(
        np.array([ca[i] for i in ids]),
        np.array([cb[i] for i in ids]),
        confidence=score.confidence,
        resamples=score.bootstrap_resamples,
        seed=seed,
    )
    return {
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
        "unscored_a": sum(v is None for v in ca.values()),
        "unscored_b": sum(v is None for v in cb.values()),
        "excluded": len(ca) - len(ids),
    }


def comparison_rows(
    exp: str, evaluations: list[Evaluation], cfg_score: Any, seed: int, sft_enabled: bool
) -> list[dict[str, Any]]:
    """Paired differences a − b (:func:`paired`) between the experiment's checkpoints
    (:func:`comparison_pairs`), per benchmark, with the judges that decided any item."""
    rows = []
    for ev in evaluations:
        for a, b in comparison_pairs(list(ev.scores)):
            try:
                stats = paired(
                    (sharing.scores_file(exp, a, ev.bench), ev.scores[a]),
                    (sharing.scores_file(exp, b, ev.bench), ev.scores[b]),
                    cfg_score,
                    seed,
                )
            except StageError as exc:
                raise StageError(f"report: {ev.bench}: {exc}") from None
            judges = [j for j in (ev.judged(a), ev.judged(b)) if j]
            rows.append(
                {
                    "benchmark": ev.bench,
                    "comparison": f"{label(a, sft_enabled)} − {label(b, sft_enabled)}",
                    "a": a,
                    "b": b,
                    **stats,
                    "judge": "; ".join(dict.fromkeys(judges)) or None,
                }
            )
    return rows


def metrics_tree(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``metrics.json`` for ``dvc exp show``, flat-ish:
    ``{bench: {checkpoint: {"accuracy", "ci_low", "ci_high", <task>: accuracy, <metric>}}}``.

    >>> metrics_tree([{"benchmark": "b", "checkpoint": "base", "accuracy": 0.5, "ci_low": 0.4,
    ...                "ci_high": 0.6, "t.n": 2, "t.accuracy": 0.5, "metric.fAcc": 0.25,
    ...                "metric.fAcc.ci_low": 0.1, "unscored": 0}])
    {'b': {'base': {'accuracy': 0.5, 'ci_low': 0.4, 'ci_high': 0.6, 't': 0.5, 'fAcc': 0.25}}}
    """
    tree: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        entry = {k: row[k] for k in ("accuracy", "ci_low", "ci_high")}
        for key, value in row.items():
            if key.endswith(".accuracy") and value is not None:
                entry[key.removesuffix(".accuracy")] = value
            elif key.startswith(METRIC) and not key.endswith((".ci_low", ".ci_high")):
                entry[key.removeprefix(METRIC)] = value
        tree.setdefault(row["benchmark"], {})[row["checkpoint"]] = entry
    return tree
