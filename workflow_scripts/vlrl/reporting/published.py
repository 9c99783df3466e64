"""Published numbers, ``config/reference/<paper>.yaml``, and how they stand against ours.

A reference file holds one paper's tables as it printed them: the paper, the evaluation
protocol it states (toolkit, prompt, judge; "not stated" where it does not say) and the vlrl
scoring protocol (:mod:`vlrl.scoring.protocols`) its numbers correspond to (``scoring``; absent:
unknown), its *columns*, each mapped to a vlrl benchmark and metric (``benchmark: null`` when
vlrl has no such benchmark: shown as "not evaluated here"), the scale the paper prints it on and
how its split, metric or protocol differs from ours; and its *rows*, each a model with its
source (table and row label), one value per column, and the columns whose number is not
comparable with ours at all (``not_comparable``: another subset or split, with why). Unknown
keys are errors naming the file and the dotted key; ``vlrl check`` validates every file
(:func:`reference_problems`).

An experiment links rows to its checkpoints in ``report.published``; the report then sets each
published number beside the reproduced one: the difference, and whether it lies inside the
reproduced number's interval. A number scored under another (or an unknown) protocol than the
reproduced one is marked as such, and a row's not-comparable number is shown but not compared
(:mod:`vlrl.reporting.versus`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from vlrl.config import ConfigProblems, KeyProblems, Section, load_named
from vlrl.core import paths
from vlrl.core.errors import ConfigError

ColumnScale = Literal["percent", "fraction", "raw"]
NOT_STATED = "not stated"


class Paper(Section):
    title: str
    arxiv: str | None = Field(None, pattern=r"^\d{4}\.\d{4,5}(v\d+)?$")
    url: str = Field(description="Where the tables are: the paper, or the README that has them.")
    code: str | None = Field(None, description="The released code (and commit) read beside it.")


class Protocol(Section):
    """How the paper says it evaluated; ``not stated`` where it does not say."""

    toolkit: str
    prompt: str
    judge: str
    scoring: str | None = Field(
        None,
        description="The vlrl scoring protocol (vlrl.scoring.protocols) these numbers were "
        "scored by; null: unknown, or none of vlrl's.",
    )


class Source(Section):
    table: str
    row: str = Field(description="The row's label as printed.")


class Column(Section):
    benchmark: str | None = Field(
        description="A config/benchmarks name; null: not a benchmark vlrl evaluates (or several: "
        "pooled)."
    )
    pooled: list[str] | None = Field(
        None,
        min_length=2,
        description="Benchmarks the paper prints as one accuracy: their items pooled, the mean "
        "of their accuracies weighted by their item counts (Vision-SR1's weighted_mmmu_pro). "
        "With benchmark null and metric accuracy.",
    )
    metric: str | list[str] = Field(
        "accuracy",
        description="The benchmark's metric (accuracy or one its yaml defines); a list: their "
        "sum (MME's total = perception + cognition).",
    )
    scale: ColumnScale = Field(
        description="How the paper prints it: percent (67.5), fraction (0.675) or raw (the "
        "benchmark's own scale: MME's 2306.0)."
    )
    differs: str | None = Field(
        None, description="How the published split, metric or protocol differs from ours."
    )

    @model_validator(mode="after")
    def _pooled_alone(self) -> Column:
        if self.pooled is not None and (self.benchmark is not None or self.metric != "accuracy"):
            raise KeyProblems(("pooled", "pools accuracies: set benchmark null, metric accuracy"))
        return self

    @property
    def benchmarks(self) -> list[str]:
        """The benchmarks the column's number is computed from."""
        return list(self.pooled) if self.pooled else [self.benchmark] if self.benchmark else []

    @property
    def metrics(self) -> list[str]:
        return [self.metric] if isinstance(self.metric, str) else list(self.metric)

    @property
    def metric_name(self) -> str:
        return "+".join(self.metrics)


class Row(Section):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    model: str
    source: Source
    protocol: Protocol | None = Field(None, description="Default: the file's protocol.")
    # int | float: a number printed without decimals keeps none (formatting.published).
    values: dict[str, int | float | None] = Field(
        description="Column → the number as printed; null: '–' in print."
    )
    not_comparable: dict[str, str] = Field(
        default_factory=dict,
        description="Column → why this row's number is not comparable with ours (another "
        "subset or split): shown, never compared.",
    )
    note: str | None = None


class Reference(Section):
    """One paper's published numbers (see the module docstring)."""

    paper: Paper
    protocol: Protocol | None = Field(None, description="The protocol of rows that state none.")
    columns: dict[str, Column] = Field(min_length=1)
    rows: list[Row] = Field(min_length=1)
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rows_fit_columns(self) -> Reference:
        problems, seen = [], set()
        for i, row in enumerate(self.rows):
            if row.id in seen:
                problems.append((f"rows.{i}.id", f"{row.id!r} is used by an earlier row"))
            seen.add(row.id)
            for column in row.values:
                if column not in self.columns:
                    known = sorted(self.columns)
                    problems.append((f"rows.{i}.values.{column}", f"not a column; known: {known}"))
            for column in row.not_comparable:
                if column not in self.columns:
                    known = sorted(self.columns)
                    why = f"not a column; known: {known}"
                    problems.append((f"rows.{i}.not_comparable.{column}", why))
                elif row.values.get(column) is None:
                    why = "the row has no number there"
                    problems.append((f"rows.{i}.not_comparable.{column}", why))
            if row.protocol is None and self.protocol is None:
                problems.append((f"rows.{i}.protocol", "missing, and the file states none"))
        if problems:
            raise KeyProblems(*problems)
        return self

    def row(self, row_id: str) -> Row:
        for row in self.rows:
            if row.id == row_id:
                return row
        raise KeyError(row_id)

    def protocol_of(self, row: Row) -> Protocol:
        protocol = row.protocol or self.protocol
        assert protocol is not None  # guaranteed by validation
        return protocol

    def protocols(self) -> list[tuple[str, Protocol]]:
        """``(dotted key, protocol)`` of the file's protocol and of every row's own."""
        found = [("protocol", self.protocol)] if self.protocol else []
        found += [(f"rows.{i}.protocol", r.protocol) for i, r in enumerate(self.rows) if r.protocol]
        return found


def reference_dir() -> Path:
    return paths.root() / "config" / "reference"


def reference_file(name: str) -> Path:
    """``config/reference/<name>.yaml``."""
    return reference_dir() / f"{name}.yaml"


def references() -> list[str]:
    """The names of the reference files, sorted."""
    return sorted(p.stem for p in reference_dir().glob("*.yaml"))


def load_reference(name: str) -> Reference:
    """Load and validate one reference file.

    Raises:
        ConfigError: naming the file when it is missing; a ConfigProblems with one
            ``<file>: <dotted key>: <what is wrong>`` line per problem.
    """
    return load_named(reference_file(name), Reference, "reference")


def reference_problems(name: str) -> list[str]:
    """Every problem of one reference file: its schema, a ``scoring`` that names no vlrl
    scoring protocol, and columns naming a benchmark that does not exist, a metric the
    benchmark does not define, or a scale its metric cannot have (a raw score printed as a
    percentage)."""
    from vlrl.scoring.protocols import PROTOCOLS

    try:
        ref = load_reference(name)
    except ConfigProblems as exc:
        return exc.problems
    except ConfigError as exc:
        return [str(exc)]
    path = reference_file(name)
    problems = [
        f"{path}: {key}.scoring: {protocol.scoring!r} is not a scoring protocol; "
        f"known: {sorted(PROTOCOLS)}"
        for key, protocol in ref.protocols()
        if protocol.scoring is not None and protocol.scoring not in PROTOCOLS
    ]
    for label, column in ref.columns.items():
        named = [("benchmark", column.benchmark)]
        named += [(f"pooled.{i}", b) for i, b in enumerate(column.pooled or [])]
        for key, bench in named:
            if bench is not None:
                where = f"{path}: columns.{label}"
                problems += _column_benchmark_problems(where, key, bench, column)
    return problems


def _column_benchmark_problems(where: str, key: str, name: str, column: Column) -> list[str]:
    """A column's benchmark ``name`` (under ``key``) exists, is valid and has the metric."""
    from vlrl.benchmarks import load_benchmark

    problems = []
    if not paths.benchmark_file(name).is_file():
        return [f"{where}.{key}: {name!r} has no file config/benchmarks/{name}.yaml"]
    try:
        bench = load_benchmark(name)
    except ConfigError:  # the benchmark file's own problems are reported for it
        return [f"{where}.{key}: config/benchmarks/{name}.yaml is invalid"]
    kinds = {"accuracy": "proportion", **{m.name: m.kind for m in bench.metrics}}
    for metric in column.metrics:
        if metric not in kinds:
            problems.append(
                f"{where}.metric: {metric!r} is not a metric of {name}; known: {list(kinds)}"
            )
        elif (kinds[metric] == "task_sum") != (column.scale == "raw"):
            problems.append(
                f"{where}.scale: {column.scale!r} does not fit {name}'s "
                f"{metric} (raw is for scores on the benchmark's own scale, such as MME's)"
            )
    return problems


def link_problems(links: list[Any], source: Path | str) -> list[str]:
    """Problems of an experiment's ``report.published``: a reference that does not exist or a
    row it does not have. (A reference file's own problems are reported for the file.)"""
    problems = []
    for i, link in enumerate(links):
        where = f"{source}: report.published.{i}"
        if not reference_file(link.reference).is_file():
            problems.append(
                f"{where}.reference: {link.reference!r} has no file "
                f"config/reference/{link.reference}.yaml; known: {references()}"
            )
            continue
        try:
            ref = load_reference(link.reference)
        except ConfigError:
            problems.append(f"{where}.reference: {reference_file(link.reference)} is invalid")
            continue
        ids = [row.id for row in ref.rows]
        for checkpoint, row_id in link.rows.items():
            if row_id not in ids:
                problems.append(
                    f"{where}.rows.{checkpoint}: no row {row_id!r} in "
                    f"config/reference/{link.reference}.yaml; known: {ids}"
                )
    return problems
