"""Published numbers beside reproduced ones: one row per linked published number.

``report.published`` links rows of reference files (:mod:`vlrl.reporting.published`) to the
experiment's checkpoints. For each linked row and each of its numbers, :func:`versus_rows`
gives the reproduced value of the same benchmark metric (its interval when it has one), the
published value on the same scale, the difference (reproduced − published) and whether the
published value lies inside the reproduced interval, with where the number comes from: the
paper, table, row, and the protocol it was measured with. A published column whose benchmark
vlrl does not evaluate (no benchmark, or not one of this experiment's) is kept, marked as not
evaluated here. A column ``pooled`` from several benchmarks (Vision-SR1's MMMU-Pro: three
settings, weighted by their item counts) is their accuracy over all their items: the row of the
experiment's combined number of the same benchmarks (``report.combined``,
:mod:`vlrl.reporting.combined`) when it declares one, under its name.

Two marks keep a difference from passing for a plain comparison: ``same_protocol`` is False when
the published number's vlrl scoring protocol (the reference's ``scoring``) is unknown or is not
the one the reproduced scores file was scored by (its ``protocol``); and a number the reference
marks ``not_comparable`` (another subset or split) is shown beside ours with its reason, but
gets no difference and no interval test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlrl.reporting.combined import parts, pooled_row
from vlrl.reporting.frames import Evaluation, metric_of
from vlrl.reporting.labels import label
from vlrl.reporting.published import Column, Reference, load_reference

COLUMNS = [
    "benchmark", "metric", "checkpoint", "model", "evaluated", "reproduced", "ci_low", "ci_high",
    "published", "published_as_printed", "scale", "delta", "inside_interval", "reference",
    "paper", "arxiv", "column", "row_id", "table", "row", "published_model", "toolkit", "prompt",
    "judge", "differs", "published_protocol", "reproduced_protocol", "same_protocol",
    "not_comparable",
]  # fmt: skip
"""The fields of :func:`versus_rows`' rows, in order (published.csv's columns, also when the
experiment links no published number)."""


def linked(links: list[Any], checkpoints: list[str]) -> list[tuple[str, Reference, str, str]]:
    """``(reference name, reference, checkpoint, row id)`` for every link of an evaluated
    checkpoint, in the order of ``report.published`` then of the checkpoints."""
    loaded: dict[str, Reference] = {}
    found = []
    for link in links:
        ref = loaded.setdefault(link.reference, load_reference(link.reference))
        for checkpoint in checkpoints:
            if checkpoint in link.rows:
                found.append((link.reference, ref, checkpoint, link.rows[checkpoint]))
    return found


def _stored(published: float, column: Column) -> float:
    """A published number on our storage scale (fractions for proportions)."""
    return published / 100 if column.scale == "percent" else published


def _reproduced(row: dict[str, Any] | None, column: Column) -> tuple[Any, Any, Any]:
    """Our value of the column's metric, with its interval (none for a sum of metrics)."""
    if row is None:
        return None, None, None
    if len(column.metrics) == 1:
        return metric_of(row, column.metrics[0])
    values = [metric_of(row, m)[0] for m in column.metrics]
    return (None if None in values else sum(values)), None, None


def versus_rows(
    links: list[Any],
    results: list[dict[str, Any]],
    evaluations: list[Evaluation],
    sft_enabled: bool,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One row per linked published number (see the module docstring), by benchmark in the
    experiment's order (then as linked), those not evaluated here last. A pooled column's
    number is their pooled accuracy (:func:`~vlrl.reporting.combined.pooled_row`, interval at
    ``confidence``): the combined row of ``results`` of the same benchmarks, under its name,
    when there is one; else computed here, its benchmark their names joined by ``+``."""
    ours = {(r["benchmark"], r["checkpoint"]): r for r in results}
    scored_by = {
        (ev.bench, checkpoint): scores.protocol
        for ev in evaluations
        for checkpoint, scores in ev.scores.items()
    }
    benches = {ev.bench for ev in evaluations}
    checkpoints = list(dict.fromkeys(r["checkpoint"] for r in results))
    rows = []
    for name, ref, checkpoint, row_id in linked(links, checkpoints):
        published_row = ref.row(row_id)
        protocol = ref.protocol_of(published_row)
        for column_label, published in published_row.values.items():
            if published is None:
                continue
            column = ref.columns[column_label]
            members = column.benchmarks
            evaluated = bool(members) and all(b in benches for b in members)
            if not evaluated:
                row = None
            elif column.pooled:
                row = _combined(results, members, checkpoint) or pooled_row(
                    [ours.get((b, checkpoint)) for b in members], confidence
                )
            else:
                row = ours.get((column.benchmark, checkpoint))
            value, low, high = _reproduced(row, column)
            bench = column.benchmark
            if column.pooled:
                bench = row["benchmark"] if row and parts(row) else "+".join(members)
            stored = _stored(published, column)
            # Another subset or split: ours is shown, but no difference is meaningful.
            reason = published_row.not_comparable.get(column_label)
            compared = reason is None and value is not None
            inside = None if low is None or high is None else bool(low <= stored <= high)
            protocols = {scored_by.get((b, checkpoint)) for b in members}
            reproduced_protocol = protocols.pop() if len(protocols) == 1 else None
            rows.append(
                {
                    "benchmark": bench,
                    "metric": column.metric_name,
                    "checkpoint": checkpoint,
                    "model": label(checkpoint, sft_enabled),
                    "evaluated": evaluated,
                    "reproduced": value,
                    "ci_low": low,
                    "ci_high": high,
                    "published": stored,
                    "published_as_printed": published,
                    "scale": column.scale,
                    "delta": value - stored if compared else None,
                    "inside_interval": inside if reason is None else None,
                    "reference": name,
                    "paper": ref.paper.title,
                    "arxiv": ref.paper.arxiv,
                    "column": column_label,
                    "row_id": row_id,
                    "table": published_row.source.table,
                    "row": published_row.source.row,
                    "published_model": published_row.model,
                    "toolkit": protocol.toolkit,
                    "prompt": protocol.prompt,
                    "judge": protocol.judge,
                    "differs": column.differs,
                    "published_protocol": protocol.scoring,
                    "reproduced_protocol": reproduced_protocol,
                    "same_protocol": (
                        None
                        if reproduced_protocol is None
                        else protocol.scoring == reproduced_protocol
                    ),
                    "not_comparable": reason,
                }
            )
    position: dict[str, float] = {ev.bench: i for i, ev in enumerate(evaluations)}
    for r in results:  # a combined number after its last benchmark
        if parts(r) and all(b in position for b in parts(r)):
            position[r["benchmark"]] = max(position[b] for b in parts(r)) + 0.5
    return sorted(rows, key=lambda r: position.get(r["benchmark"], len(position)))


def _combined(
    results: list[dict[str, Any]], members: list[str], checkpoint: str
) -> dict[str, Any] | None:
    """The checkpoint's combined row (:mod:`vlrl.reporting.combined`) of the benchmarks
    ``members``, in any order; None when the experiment combines them in none."""
    return next(
        (
            r
            for r in results
            if r["checkpoint"] == checkpoint and parts(r) and set(parts(r)) == set(members)
        ),
        None,
    )


def summary_columns(
    evaluations: list[Evaluation],
    versus: list[dict[str, Any]],
    combined: Mapping[str, Sequence[str]] | None = None,
) -> list[tuple[str, str]]:
    """The paper-layout table's ``(benchmark, metric)`` columns: each benchmark's headline
    metric, then the other metrics its linked published numbers are on (MME's sum); each
    combined number (name → its benchmarks, ``report.combined``) as ``(name, "accuracy")``
    after the last of its benchmarks."""
    columns = []
    seen: set[str] = set()
    for ev in evaluations:
        columns.append((ev.bench, ev.config.headline))
        for row in versus:
            if row["benchmark"] == ev.bench and row["evaluated"]:
                columns.append((ev.bench, row["metric"]))
        seen.add(ev.bench)
        for name, benchmarks in (combined or {}).items():
            if ev.bench in benchmarks and seen.issuperset(benchmarks):
                columns.append((name, "accuracy"))
    return list(dict.fromkeys(columns))
