"""Benchmarks: ``config/benchmarks/<name>.yaml`` names a loader, and optionally a prompt and a
cap on items. Scoring rules follow each item's ``problem_type`` (see :mod:`vlrl.scoring`).

Loaders:

- ``experiment_split``: a held-out split of the experiment's own data (the shapes world);
- ``records``: a file of canonical records (:mod:`vlrl.records`, images relative to the file)
  in a dataset the download stage fetched (``dataset:``, a ``config/datasets/`` name), so the
  DAG runs download → infer → score → report. Every row is checked before any is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from vlrl import paths
from vlrl.config import KeyProblems, Section, _load_yaml_model
from vlrl.errors import ConfigError, DataError
from vlrl.records import Record, read_records


class BenchmarkConfig(Section):
    """One benchmark."""

    description: str = ""
    loader: Literal["experiment_split", "records"] = Field(
        "experiment_split",
        description="experiment_split: a held-out split of the experiment's data. records: a "
        "canonical records file of a downloaded dataset (dataset, file).",
    )
    split: Literal["train", "val", "test"] = "test"
    dataset: str | None = Field(
        None,
        pattern=r"^[^/]+$",
        description="records: the dataset (config/datasets/<name>.yaml) the file is in.",
    )
    file: str | None = Field(
        None,
        min_length=1,
        description="records: the records file, relative to the dataset's directory.",
    )
    prompt: str | None = Field(None, description="Prompt format; default: the experiment's.")
    max_items: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _records_need_a_file(self) -> BenchmarkConfig:
        problems = []
        if self.loader == "records":
            problems += [
                (key, "loader 'records' needs it")
                for key in ("dataset", "file")
                if getattr(self, key) is None
            ]
            if self.file is not None and (
                Path(self.file).is_absolute() or ".." in Path(self.file).parts
            ):
                problems.append(("file", f"{self.file!r} must be a path inside the dataset"))
        else:
            problems += [
                (key, f"only loader 'records' reads it, not {self.loader!r}")
                for key in ("dataset", "file")
                if getattr(self, key) is not None
            ]
        if problems:
            raise KeyProblems(*problems)
        return self


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
    assert cfg.dataset is not None  # guaranteed by BenchmarkConfig validation
    return [paths.dataset_resource(cfg.dataset)]


def load_items(exp: str, bench: str) -> tuple[list[Record], Path]:
    """The benchmark's records and the directory their image paths are relative to.

    Raises:
        ConfigError: the file the benchmark reads does not exist (its stage has not run).
        DataError: (``records``) listing every bad row of the file by ``file:line`` and id.
    """
    cfg = load_benchmark(bench)
    if cfg.loader == "experiment_split":
        base = paths.data_dir(exp)
        path = base / f"{cfg.split}.jsonl"
        if not path.is_file():
            raise ConfigError(f"benchmark {bench}: {path} does not exist; run the data stage first")
        return read_records(path, cfg.max_items), base
    from vlrl.data.validate import check_rows, rows_of_file

    assert cfg.dataset is not None and cfg.file is not None  # BenchmarkConfig validation
    path = paths.dataset_resource(cfg.dataset) / cfg.file
    if not path.is_file():
        raise ConfigError(
            f"benchmark {bench}: {path} does not exist; run `vlrl download {cfg.dataset}` "
            f"first, or check file: in {paths.benchmark_file(bench)}"
        )
    checked = check_rows(rows_of_file(path), path.parent)
    if checked.problems:
        raise DataError(checked.summary(f"benchmark {bench}: {path}"))
    return checked.records[: cfg.max_items], path.parent
