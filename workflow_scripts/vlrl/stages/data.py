"""The ``data`` stage: the experiment's canonical records under ``results/<exp>/data/``.

Outputs (written to a temporary directory, renamed into place only when everything succeeded):

- ``train.jsonl``, ``val.jsonl``, ``test.jsonl`` (and ``sft_train.jsonl`` when the experiment
  lists SFT's own records): one :class:`~vlrl.items.records.Record` per line, image paths relative
  to the directory (with ``data.source: datasets``, paths into the downloaded datasets'
  ``records/images/``: the pictures are not copied);
- ``images/<split>/*.png``;
- ``report.json`` and ``report.md``: records per split and task, candidates rejected and why.

Every row of every split is checked before anything is published (:mod:`vlrl.data.validate`:
schema, non-empty answer, images that decode, boxes inside them, option letters). One bad row
stops the stage with one error that lists every bad row (``file:line``, id, what is wrong), and
the output directory is left as it was.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from vlrl.config import ExperimentConfig
from vlrl.config.data import DATA_SPLITS, DataSource
from vlrl.core import paths
from vlrl.core.errors import DataError, StageError
from vlrl.core.files import atomic_dir, read_jsonl, write_json, write_jsonl
from vlrl.data import shapes
from vlrl.data.formats import RECORDS_DIR
from vlrl.data.validate import (
    Checked,
    Row,
    check_rows,
    listing,
    rows_of_file,
    rows_of_records,
)
from vlrl.items.records import Record

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
# Generation order: the held-out split first, so that train excludes its questions.
GENERATION_ORDER = ("test", "val", "train")


def load_records(path: Path) -> list[Record]:
    """Read and validate a canonical JSONL file; image paths are relative to its directory.

    Raises:
        DataError: listing every bad row (``file:line``, id, what is wrong; see
            :mod:`vlrl.data.validate`) when any row is bad.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such records file")
    checked = check_rows(rows_of_file(path), path.parent)
    if checked.problems:
        raise DataError(checked.summary(str(path)))
    return checked.records


def _invalid_data_error(exp: str, checked: dict[str, Checked]) -> StageError:
    """One error naming every bad row of every split."""
    bad = {split: c for split, c in checked.items() if c.problems}
    counts = ", ".join(f"{split} {len(c.problems)} of {c.rows}" for split, c in bad.items())
    problems = [p for c in bad.values() for p in c.problems]
    title = (
        f"data {exp}: {len(problems)} invalid rows ({counts}); "
        f"nothing was written to {paths.data_dir(exp)}:"
    )
    return StageError("\n".join([title, *listing(problems)]))


def _split_report(records: list[Record], stats: shapes.SplitStats) -> dict:
    return {
        "records": len(records),
        "tasks": dict(sorted(Counter(r.task or "" for r in records).items())),
        "problem_types": dict(sorted(Counter(r.problem_type for r in records).items())),
        "rejected": dict(sorted(stats.rejected.items())),
        # Kept for the report's schema: an invalid row now stops the stage instead.
        "invalid_examples": [],
        "resampled_scenes": dict(sorted(stats.resampled.items())),
    }


def render_markdown(report: dict[str, Any]) -> str:
    """The human-readable twin of ``report.json``."""
    splits = report["splits"]
    tasks = sorted({t for s in splits.values() for t in s["tasks"]})
    lines = [
        f"# Data: {report['experiment']}",
        "",
        f"Source: `{report['source']}`, seed {report['seed']}.",
        "",
        "| split | records | " + " | ".join(tasks) + " |",
        "|---|---:|" + "---:|" * len(tasks),
    ]
    for name, s in splits.items():
        counts = " | ".join(str(s["tasks"].get(t, 0)) for t in tasks)
        lines.append(f"| {name} | {s['records']} | {counts} |")
    lines += ["", "## Rejected rows", ""]
    reasons = sorted({r for s in splits.values() for r in s["rejected"]})
    if not reasons:
        lines.append("None.")
    else:
        lines += ["| split | " + " | ".join(reasons) + " |", "|---|" + "---:|" * len(reasons)]
        for name, s in splits.items():
            lines.append(
                f"| {name} | " + " | ".join(str(s["rejected"].get(r, 0)) for r in reasons) + " |"
            )
    if report["source"] == "shapes":
        lines += [
            "",
            "Duplicates are candidates whose scene and question already occurred (in an earlier",
            "split or the same one); they were drawn again, so every split has its full size.",
        ]
    else:
        lines += ["", "Sources per split: report.json (splits.<split>.sources)."]
    return "\n".join([*lines, ""])


def _run_shapes(exp: str, cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    shapes_cfg = cfg.data.shapes
    sizes = {"train": shapes_cfg.n_train, "val": shapes_cfg.n_val, "test": shapes_cfg.n_test}
    seen: set[str] = set()
    split_reports: dict[str, dict] = {}
    checked: dict[str, Checked] = {}
    for split in GENERATION_ORDER:
        started = time.perf_counter()
        stats = shapes.SplitStats()
        teacher = shapes_cfg.teacher if split == "train" else None
        records = shapes.generate_split(
            shapes_cfg,
            split,
            sizes[split],
            cfg.seed,
            out,
            exclude=seen,
            stats=stats,
            teacher=teacher,
        )
        seen |= stats.keys
        # Rows named by the line they take in the published file, images by their published place.
        final = paths.data_dir(exp)
        rows = rows_of_records(records, final / f"{split}.jsonl")
        checked[split] = check_rows(rows, out, shown_dir=final)
        valid = checked[split].records
        write_jsonl(out / f"{split}.jsonl", (r.model_dump() for r in valid))
        split_reports[split] = _split_report(valid, stats)
        if teacher is not None:
            # SFT's demonstrations: the teacher's answers to the train questions (same images).
            taught_rows = rows_of_records(stats.taught, final / "sft_train.jsonl")
            checked["sft_train"] = check_rows(taught_rows, out, shown_dir=final)
            taught = checked["sft_train"].records
            write_jsonl(out / "sft_train.jsonl", (r.model_dump() for r in taught))
            split_reports["sft_train"] = _split_report(taught, shapes.SplitStats())
        log.info(
            "%s: %d records in %.1fs (%d invalid; rejected candidates: %s)",
            split,
            len(valid),
            time.perf_counter() - started,
            len(checked[split].problems),
            split_reports[split]["rejected"] or "none",
        )
    if any(c.problems for c in checked.values()):
        raise _invalid_data_error(exp, checked)
    return {
        "experiment": exp,
        "source": "shapes",
        "seed": cfg.seed,
        "image_size": shapes_cfg.image_size,
        "splits": {split: split_reports[split] for split in DATA_SPLITS if split in split_reports},
    }


def _source_file(source: DataSource) -> Path:
    return paths.dataset_resource(source.dataset) / RECORDS_DIR / f"{source.split}.jsonl"


def _drawn(source: DataSource, seed: int) -> list[dict[str, Any]]:
    """The rows of one source, ``max_samples`` of them drawn with ``seed`` (in file order)."""
    path = _source_file(source)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.jsonl"))
        raise StageError(
            f"data: {path} does not exist: dataset {source.dataset!r} has no converted split "
            f"{source.split!r} (its record files: {known}); check data.*.split"
        )
    rows = read_jsonl(path)
    if source.max_samples is not None and source.max_samples < len(rows):
        keep = sorted(random.Random(seed).sample(range(len(rows)), source.max_samples))
        rows = [rows[i] for i in keep]
    return rows


def _run_datasets(exp: str, cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    """Each split from its sources' converted records: image paths rewritten relative to the
    output directory (the pictures stay in the dataset, not copied), ids prefixed by their
    dataset when a split mixes several, every row checked."""
    final = paths.data_dir(exp)
    split_reports: dict[str, dict] = {}
    checked: dict[str, Checked] = {}
    for split in DATA_SPLITS:
        sources = getattr(cfg.data, split)
        if not sources and split == "sft_train":
            continue
        rows: list[dict[str, Any]] = []
        for source in sources:
            base = _source_file(source).parent
            for row in _drawn(source, cfg.seed):
                row = dict(row)
                row["images"] = [
                    os.path.relpath(base / image, final) for image in row.get("images", [])
                ]
                if len(sources) > 1:
                    row["id"] = f"{source.dataset}/{source.split}/{row.get('id')}"
                rows.append(row)
        where = final / f"{split}.jsonl"
        # The output's temporary directory is a sibling of ``final``: the same relative paths
        # reach the datasets from both.
        checked[split] = check_rows(
            (Row(f"{where}:{i + 1}", row) for i, row in enumerate(rows)), out, shown_dir=final
        )
        valid = checked[split].records
        write_jsonl(out / f"{split}.jsonl", (r.model_dump() for r in valid))
        split_reports[split] = _split_report(valid, shapes.SplitStats())
        split_reports[split]["sources"] = [s.model_dump() for s in sources]
        log.info("%s: %d records from %s", split, len(valid), [s.dataset for s in sources])
    if any(c.problems for c in checked.values()):
        raise _invalid_data_error(exp, checked)
    return {
        "experiment": exp,
        "source": "datasets",
        "seed": cfg.seed,
        "splits": split_reports,
    }


def _dataset_names(cfg: ExperimentConfig) -> list[str]:
    """The datasets the experiment's splits read, in order of first mention."""
    names = [s.dataset for split in DATA_SPLITS for s in getattr(cfg.data, split)]
    return list(dict.fromkeys(names))


def run(exp: str, cfg: ExperimentConfig) -> None:
    """Generate or convert the experiment's data into ``paths.data_dir(exp)``, atomically."""
    source = cfg.data.source
    final = paths.data_dir(exp)
    if source == "datasets":
        log.info("data %s: records of %s into %s", exp, _dataset_names(cfg), final)
        with atomic_dir(final) as tmp:
            report = _run_datasets(exp, cfg, tmp)
            write_json(tmp / "report.json", report)
            (tmp / "report.md").write_text(render_markdown(report))
        return
    log.info("data %s: generating the shapes world (seed %d) into %s", exp, cfg.seed, final)
    started = time.perf_counter()
    with atomic_dir(final) as tmp:
        report = _run_shapes(exp, cfg, tmp)
        write_json(tmp / "report.json", report)
        (tmp / "report.md").write_text(render_markdown(report))
    log.info("data %s: done in %.1fs", exp, time.perf_counter() - started)
