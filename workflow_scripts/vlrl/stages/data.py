"""The ``data`` stage: the experiment's canonical records under ``results/<exp>/data/``.

Outputs (written to a temporary directory, renamed into place only when everything succeeded):

- ``train.jsonl``, ``val.jsonl``, ``test.jsonl``: one :class:`~vlrl.records.Record` per line,
  image paths relative to the directory;
- ``images/<split>/*.png``;
- ``report.json`` and ``report.md``: records per split and task, rows rejected and why.

Every record is checked (:func:`vlrl.records.check_record`: images open, boxes lie inside them)
before it is written; an invalid row is left out and named in the report.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from vlrl import paths
from vlrl.config import ExperimentConfig
from vlrl.data import shapes
from vlrl.errors import DataError, StageError
from vlrl.files import atomic_dir, write_json, write_jsonl
from vlrl.records import Record, check_record, parse_record

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = ("seed", "data")

SPLITS = ("train", "val", "test")
# Generation order: the held-out split first, so that train excludes its questions.
GENERATION_ORDER = ("test", "val", "train")
MAX_LISTED_INVALID = 20


def load_records(path: Path) -> list[Record]:
    """Read and validate a canonical JSONL file; image paths are relative to its directory.

    Raises:
        DataError: naming ``file:line`` for the first row that is not JSON, not a valid record,
            or whose image is missing or unreadable or whose box lies outside its image.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such records file")
    records = []
    with path.open() as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: not valid JSON: {exc.msg}") from None
            if not isinstance(raw, dict):
                raise DataError(
                    f"{where}: a record must be a JSON object, got {type(raw).__name__}"
                )
            records.append(parse_record(raw, path.parent, where))
    return records


def validate(records: list[Record], base_dir: Path, split: str) -> tuple[list[Record], list[str]]:
    """Check every record against the files under ``base_dir``; return (valid, problems)."""
    valid, problems = [], []
    for record in records:
        try:
            valid.append(check_record(record, base_dir, f"{split}/{record.id}"))
        except DataError as exc:
            problems.append(str(exc))
    return valid, problems


def _split_report(records: list[Record], stats: shapes.SplitStats, invalid: list[str]) -> dict:
    rejected = dict(sorted(stats.rejected.items()))
    if invalid:
        rejected["invalid"] = len(invalid)
    return {
        "records": len(records),
        "tasks": dict(sorted(Counter(r.task or "" for r in records).items())),
        "problem_types": dict(sorted(Counter(r.problem_type for r in records).items())),
        "rejected": rejected,
        "invalid_examples": invalid[:MAX_LISTED_INVALID],
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
    for name, s in splits.items():
        for problem in s["invalid_examples"]:
            lines.append(f"- {name}: {problem}")
    lines += [
        "",
        "Duplicates are candidates whose scene and question already occurred (in an earlier",
        "split or the same one); they were drawn again, so every split has its full size.",
        "",
    ]
    return "\n".join(lines)


def _run_shapes(exp: str, cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    shapes_cfg = cfg.data.shapes
    sizes = {"train": shapes_cfg.n_train, "val": shapes_cfg.n_val, "test": shapes_cfg.n_test}
    seen: set[str] = set()
    split_reports: dict[str, dict] = {}
    for split in GENERATION_ORDER:
        started = time.perf_counter()
        stats = shapes.SplitStats()
        records = shapes.generate_split(
            shapes_cfg, split, sizes[split], cfg.seed, out, exclude=seen, stats=stats
        )
        seen |= stats.keys
        valid, invalid = validate(records, out, split)
        for problem in invalid:
            log.warning("rejected: %s", problem)
        write_jsonl(out / f"{split}.jsonl", (r.model_dump() for r in valid))
        split_reports[split] = _split_report(valid, stats, invalid)
        log.info(
            "%s: %d records in %.1fs (rejected: %s)",
            split,
            len(valid),
            time.perf_counter() - started,
            split_reports[split]["rejected"] or "none",
        )
    return {
        "experiment": exp,
        "source": "shapes",
        "seed": cfg.seed,
        "image_size": shapes_cfg.image_size,
        "splits": {split: split_reports[split] for split in SPLITS},
    }


def run(exp: str, cfg: ExperimentConfig) -> None:
    """Generate or convert the experiment's data into ``paths.data_dir(exp)``, atomically."""
    source = cfg.data.source
    if source == "hub":
        hub = cfg.data.hub
        raise StageError(
            f"data.source 'hub' ({hub.repo_id if hub else '?'} via converter "
            f"{hub.converter if hub else '?'!r}) is not implemented yet; use data.source: shapes"
        )
    if source != "shapes":
        raise StageError(f"data.source {source!r} is unknown; known: shapes, hub")
    final = paths.data_dir(exp)
    log.info("data %s: generating the shapes world (seed %d) into %s", exp, cfg.seed, final)
    started = time.perf_counter()
    with atomic_dir(final) as tmp:
        report = _run_shapes(exp, cfg, tmp)
        write_json(tmp / "report.json", report)
        (tmp / "report.md").write_text(render_markdown(report))
    log.info("data %s: done in %.1fs", exp, time.perf_counter() - started)
