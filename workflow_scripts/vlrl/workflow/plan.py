"""``vlrl plan <experiment>``: what a run will do and cost, before anything runs.

- the stages, as Snakemake's dry run decides them: to run (and why) or cached;
- the downloads (datasets, base model), their pinned source and size where known, and what
  blocks them (an unpinned revision: ``vlrl pin``; a user-provided folder that is missing);
- the disk the run needs: downloads, the models it writes, GRPO's checkpoints;
- the servers it needs (judge, reward model, generation endpoint), started or to be running;
- a compute and memory estimate derived from the recipe (:mod:`vlrl.workflow.cost`), every
  assumption stated, next to the hardware and time the source reports (``reported:``);
- the values the public sources leave unknown (``unknown:``) and the declared deviations.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlrl.core import paths
from vlrl.workflow.dag import Planned, planned_jobs
from vlrl.workflow.dvc_export import stage_name
from vlrl.workflow.plan_text import render, rows

__all__ = ["Plan", "make_plan", "render", "rows"]


@dataclass(frozen=True)
class Download:
    """One thing the run fetches (or copies from a user-provided folder)."""

    kind: str
    name: str
    source: str
    size_bytes: int | None
    state: str
    """``present``, ``to fetch``, or what blocks it."""

    @property
    def blocked(self) -> bool:
        return self.state not in ("present", "to fetch", "built locally")


@dataclass(frozen=True)
class Server:
    """An OpenAI-compatible endpoint the run talks to."""

    key: str
    how: str


@dataclass
class Plan:
    """Everything :func:`render` prints."""

    experiment: str
    jobs: list[Planned]
    downloads: list[Download]
    disk: list[tuple[str, float | None, str]]
    servers: list[Server]
    estimate: Any = None
    reported: Any = None
    unknown: dict[str, str] = field(default_factory=dict)
    deviations: dict[str, str] = field(default_factory=dict)
    preview: Any = None
    """Why each stage to run runs, in the user's terms (:class:`vlrl.workflow.preview.Preview`)."""
    tracked: bool = True
    """Whether dvc.yaml has the experiment (it is in params.yaml)."""
    stale: list[str] = field(default_factory=list)
    """Stages whose dvc.yaml entry no longer matches the DAG (:func:`preview.stale`)."""
    measured: dict[str, float] = field(default_factory=dict)
    """Seconds each job took when Snakemake last ran it here (:func:`measured_seconds`)."""

    @property
    def to_run(self) -> list[Planned]:
        return [p for p in self.jobs if p.needed]


def downloads(cfg: Any) -> list[Download]:
    """The base model and every dataset the experiment reads (records and benchmarks)."""
    from vlrl.benchmarks import load_benchmark
    from vlrl.config import load_dataset, load_model
    from vlrl.config.data import DATA_SPLITS

    found = []
    model = load_model(cfg.base_model)
    present = (paths.model_resource(cfg.base_model) / "config.json").is_file()
    if model.hf is None:
        found.append(Download("model", cfg.base_model, "tiny (built here)", None, "built locally"))
    else:
        rev = model.hf.revision
        state = "present" if present else "to fetch"
        if rev is None:
            state = f"UNPINNED ({model.hf.unpinned}): run `vlrl pin {cfg.base_model}` online"
        source = f"{model.hf.repo_id}@{rev[:12] if rev else '?'}"
        found.append(Download("model", cfg.base_model, source, model.size_bytes, state))
    names = [s.dataset for split in DATA_SPLITS for s in getattr(cfg.data, split)]
    names += [d for b in cfg.benchmarks if (d := load_benchmark(b).dataset) is not None]
    for name in dict.fromkeys(names):
        ds = load_dataset(name)
        present = paths.dataset_resource(name).is_dir()
        if ds.local is not None:
            folder = paths.root() / ds.local
            state = "present" if present else "to fetch"
            if not present and not folder.is_dir():
                state = f"USER-PROVIDED, missing: put its files in {ds.local} (see its description)"
            found.append(Download("dataset", name, f"local {ds.local}", ds.size_bytes, state))
            continue
        state = "present" if present else "to fetch"
        if ds.revision is None:
            state = f"UNPINNED: run `vlrl pin {name}` online first"
        repository = ds.repo_id if ds.git is None else f"git {ds.git}"
        source = f"{repository}@{ds.revision[:12] if ds.revision else '?'}"
        found.append(Download("dataset", name, source, ds.size_bytes, state))
    return found


def servers(cfg: Any) -> list[Server]:
    """Every endpoint the experiment configures, with its dotted key."""
    from vlrl.config.base import Section
    from vlrl.config.endpoints import EndpointConfig

    found: list[Server] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, EndpointConfig):
            if node.serve is not None:
                model = node.serve.model or "the checkpoint evaluated"
                how = f"started by the stage: {node.serve.backend} serve {model}"
            else:
                how = f"must be running at {node.base_url} (model {node.model})"
            found.append(Server(where, how))
            return
        if isinstance(node, Section):
            for name in type(node).model_fields:
                walk(getattr(node, name), f"{where}.{name}" if where else name)

    walk(cfg, "")
    return found


def disk(
    cfg: Any, params: int | None, found: list[Download]
) -> list[tuple[str, float | None, str]]:
    """``(what, bytes or None, basis)`` of the disk the run fills."""
    rows: list[tuple[str, float | None, str]] = []
    known = [d.size_bytes for d in found if d.size_bytes is not None]
    unknown = [d.name for d in found if d.size_bytes is None and d.state != "built locally"]
    basis = "the sizes the configs state" + (
        f"; not stated: {', '.join(unknown)}" if unknown else ""
    )
    rows.append(("downloads", float(sum(known)) if known else None, basis))
    if params is None:
        rows.append(("models written", None, "parameter count unknown"))
        return rows
    written = [
        name
        for name, on in (
            ("sft", cfg.sft.enabled),
            ("grpo", cfg.grpo.enabled),
            ("merged", cfg.grpo.enabled),
        )
        if on
    ]
    rows.append(
        (
            "models written",
            len(written) * params * 2.0,
            f"{len(written)} full copies ({', '.join(written)}) x {params:,} parameters x 2 "
            "bytes (bf16)",
        )
    )
    if cfg.grpo.enabled and cfg.grpo.save_steps:
        keep = cfg.grpo.save_total_limit
        rows.append(
            (
                "GRPO checkpoints",
                keep * params * 14.0,
                f"save_total_limit {keep} x {params:,} parameters x 14 bytes (bf16 weights + "
                "fp32 AdamW moments and master weights, as DeepSpeed saves them); removed at "
                "the end",
            )
        )
    return rows


def make_plan(exp: str) -> Plan:
    """The plan of experiment ``exp`` (validated first).

    Raises:
        ConfigError: the experiment is invalid, or Snakemake cannot build its DAG.
    """
    from vlrl.config import load_model
    from vlrl.workflow import preview
    from vlrl.workflow.check import load_checked
    from vlrl.workflow.resolve import experiments_listed

    cfg = load_checked(exp)
    before = preview.snapshot()  # the DAG build rewrites the params files of changed configs
    times = _times(before)
    with _quiet("vlrl.workflow.resolve"):  # one "wrote" line per params file is noise here
        jobs = planned_jobs([str(paths.report_dir(exp))], config={"experiments": [exp]})
    found = downloads(cfg)
    model = load_model(cfg.base_model)
    estimate = _estimate(cfg, model, _train_records(cfg, exp))
    params = getattr(estimate, "parameters", None) or model.parameters
    plan = Plan(
        experiment=exp,
        jobs=jobs,
        downloads=found,
        disk=disk(cfg, params, found),
        servers=servers(cfg),
        estimate=estimate,
        reported=cfg.reported,
        unknown=dict(cfg.unknown),
        deviations=dict(cfg.deviations),
        preview=preview.explain(jobs, before),
        tracked=(tracked := exp in experiments_listed()),
        stale=preview.stale(jobs) if tracked else [],
        measured=measured_seconds(jobs),
    )
    restore_params_files(before, times)
    return plan


def measured_seconds(jobs: list[Planned]) -> dict[str, float]:
    """``{job name: seconds}`` of the jobs whose rule has Snakemake time them (``benchmark:``,
    ``logs/timings/``) and that a Snakemake run on this machine has timed: its last run's wall
    time (the ``s`` column); a file that does not read as one is left out."""
    found = {}
    for item in jobs:
        path = item.job.benchmark and paths.root() / item.job.benchmark
        if not path or not path.is_file():
            continue
        try:
            rows = list(csv.DictReader(path.open(), delimiter="\t"))
            found[stage_name(item.job)] = float(rows[-1]["s"])
        except (OSError, KeyError, IndexError, ValueError):
            continue
    return found


def _times(texts: dict[str, str]) -> dict[str, tuple[int, int]]:
    """``(atime, mtime)`` in ns of each file of a :func:`vlrl.workflow.preview.snapshot`."""
    found = {}
    for name in texts:
        stat = (paths.root() / name).stat()
        found[name] = (stat.st_atime_ns, stat.st_mtime_ns)
    return found


def restore_params_files(texts: dict[str, str], times: dict[str, tuple[int, int]]) -> None:
    """Put the params files back as they were before the plan's DAG build rewrote them (text
    and time) and remove the ones it created: a plan changes nothing, so an edit previewed and
    then undone leaves neither tool anything to rerun (Snakemake compares file times)."""
    from vlrl.workflow import preview

    for name in preview.params_files():
        path = paths.root() / name
        if str(name) not in texts:
            path.unlink(missing_ok=True)
        elif path.read_text() != texts[str(name)]:
            path.write_text(texts[str(name)])
            os.utime(path, ns=times[str(name)])


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Raise ``logger``'s level to WARNING for the block."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


def _estimate(cfg: Any, model: Any, records: int | None) -> Any:
    from vlrl.benchmarks import load_benchmark
    from vlrl.config import load_dataset
    from vlrl.workflow import cost, cost_model

    def size(dataset: str | None) -> tuple[int, int] | None:
        """(height, width) of the dataset's typical picture, when its config states it."""
        stated = load_dataset(dataset).image_size if dataset else None
        return (stated[1], stated[0]) if stated else None

    train = [size(s.dataset) for s in cfg.data.train]
    typical = next((s for s in train if s is not None), None)
    benches = []
    for name in cfg.benchmarks:
        bench = load_benchmark(name)
        items = bench.max_items
        if bench.subsample is not None:
            items = min(items, bench.subsample.n) if items else bench.subsample.n
        if items is None and bench.loader == "experiment_split" and cfg.data.source == "shapes":
            items = getattr(cfg.data.shapes, f"n_{bench.split}", None)
        benches.append(cost_model.Benchmark(name, items, bench.max_new_tokens, size(bench.dataset)))
    return cost.estimate(
        cfg,
        model,
        sft_records=records,
        grpo_records=records,
        benchmarks=benches,
        assumptions=cost_model.Assumptions(image_size=typical),
    )


def _train_records(cfg: Any, exp: str) -> int | None:
    """Training records when known before the run: the shapes world's size, or the data stage's
    output when it exists."""
    if cfg.data.source == "shapes":
        return cfg.data.shapes.n_train
    return _count_lines(paths.data_dir(exp) / "train.jsonl")


def _count_lines(path: Path) -> int | None:
    if not path.is_file():
        return None
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())
