"""Benchmarks: ``config/benchmarks/<name>.yaml`` names a loader, and optionally a prompt and a
cap on items. Scoring rules follow each item's ``problem_type`` (see :mod:`vlrl.scoring`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from vlrl import paths
from vlrl.config import Section, _load_yaml_model
from vlrl.errors import ConfigError
from vlrl.records import Record, read_records


class BenchmarkConfig(Section):
    """One benchmark."""

    description: str = ""
    loader: Literal["experiment_split"] = Field(
        "experiment_split",
        description="experiment_split: a held-out split of the experiment's data.",
    )
    split: Literal["train", "val", "test"] = "test"
    prompt: str | None = Field(None, description="Prompt format; default: the experiment's.")
    max_items: int | None = None


def load_benchmark(name: str) -> BenchmarkConfig:
    path = paths.benchmark_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path}: no such benchmark {name!r}; known: {known}")
    return _load_yaml_model(path, BenchmarkConfig)


def benchmark_inputs(exp: str, bench: str) -> list[Path]:
    """Files the benchmark's items come from (declared as workflow inputs)."""
    cfg = load_benchmark(bench)
    if cfg.loader == "experiment_split":
        return [paths.data_dir(exp)]
    raise ConfigError(f"benchmark {bench}: unknown loader {cfg.loader}")


def load_items(exp: str, bench: str) -> tuple[list[Record], Path]:
    """The benchmark's records and the directory their image paths are relative to."""
    cfg = load_benchmark(bench)
    base = paths.data_dir(exp)
    path = base / f"{cfg.split}.jsonl"
    if not path.is_file():
        raise ConfigError(f"benchmark {bench}: {path} does not exist; run the data stage first")
    return read_records(path, cfg.max_items), base
