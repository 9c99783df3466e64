"""Benchmarks: ``config/benchmarks/<name>.yaml`` names a loader, and optionally a prompt and a
cap on items. Scoring rules follow each item's ``problem_type`` (see :mod:`vlrl.scoring`).

Loaders:

- ``experiment_split``: a held-out split of the experiment's own data (the shapes world);
- ``records``: a file of canonical records (:mod:`vlrl.items.records`, images relative to the file)
  in a dataset the download stage fetched (``dataset:``, a ``config/datasets/`` name), so the
  DAG runs download → infer → score → report. Every row is checked before any is used.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.sharing`,
:mod:`vlrl.scoring`, :mod:`vlrl.data`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from vlrl import sharing
from vlrl.config import KeyProblems, Section, load_named
from vlrl.config.base import UniqueList
from vlrl.config.reading import unknown_hint
from vlrl.core import paths
from vlrl.core.errors import ConfigError, DataError
from vlrl.items.records import Record, read_records
from vlrl.scoring.measures import WemathMeasure


class Subsample(Section):
    """A seeded subset, drawn as VLM-R1's ``test_rec_r1.py`` does: ``random.seed(seed);
    random.shuffle(items); items[:n]``."""

    n: int = Field(ge=1)
    seed: int = 42


class MetricSpec(Section):
    """A benchmark metric beyond accuracy (the mean of the items' 0/1 verdicts), computed from the
    per-item verdicts by :mod:`vlrl.scoring.metrics`:

    - ``all_correct``: the share of groups (the items sharing ``groups[group]``) whose items are
      all correct: HallusionBench fAcc / qAcc, MMBench CircularEval, MME acc+;
    - ``macro_mean``: the mean over the values of ``groups[by]`` (or over tasks) of their accuracy
      (MMStar's lmms-eval average);
    - ``mean_of``: the mean of the metrics named in ``of`` (``accuracy`` included);
    - ``mean_score``: the mean of the items' continuous scores (MM-Vet's graded judge);
    - ``task_accuracy``: the accuracy over the items of ``tasks`` alone, with its interval
      (MathVerse's Vision Only rows, a leaderboard's column);
    - ``task_sum``: ``scale`` × the sum over ``tasks`` (default: all) of the per-task values of
      the metrics in ``of`` (MME: 100 × Σ (acc + acc+));
    - ``wemath_four_dimensional``: the We-Math ``measure`` (``score_strict``, ``score_loose``,
      ``IK``, ``IG``, ``CM_strict``, ``CM_loose``, ``RM_strict``, ``RM_loose``) over the composite
      problems ``groups[group]``, whose questions ``groups[step]`` names (``2steps_1`` …
      ``3steps_multi``): :func:`vlrl.scoring.metrics.wemath_four_dimensional`;
    - ``coco_ap``: COCO AP@[.5:.95] of the detection items of ``tasks`` (None: all), every box
      scored 1; with ``nms``, OVDEval's NMS-AP (its suppression against the ground truth
      first): VLM-R1's Tables 3-4;
    - ``greedy_precision`` / ``greedy_recall``: VLM-R1's greedy precision / recall at IoU 0.5
      over the boxes of the detection items of ``tasks`` (VLM-R1's Table 3 GP / GR).
    """

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_+]*$")
    kind: Literal[
        "all_correct",
        "macro_mean",
        "mean_of",
        "mean_score",
        "task_accuracy",
        "task_sum",
        "wemath_four_dimensional",
        "coco_ap",
        "greedy_precision",
        "greedy_recall",
    ]
    group: str | None = Field(
        None, description="all_correct / wemath_four_dimensional: the groups key of a group."
    )
    by: str | None = Field(None, description="macro_mean: a groups key; None: the task.")
    of: list[str] = Field(default_factory=list, description="mean_of / task_sum: metric names.")
    tasks: list[str] | None = Field(
        None,
        description="task_sum: the tasks summed (None: all); task_accuracy, coco_ap, "
        "greedy_precision, greedy_recall: the tasks counted (None: all).",
    )
    scale: float = Field(1.0, gt=0)
    step: str | None = Field(
        None, description="wemath_four_dimensional: the groups key naming an item's step."
    )
    measure: WemathMeasure | None = Field(
        None, description="wemath_four_dimensional: which of We-Math's numbers."
    )
    nms: bool = Field(
        False, description="coco_ap: OVDEval's NMS against the ground truth first (NMS-AP)."
    )

    @model_validator(mode="after")
    def _kind_needs(self) -> MetricSpec:
        if self.name == "accuracy":
            raise KeyProblems(("name", "'accuracy' is always computed; choose another name"))
        if self.kind == "all_correct" and self.group is None:
            raise KeyProblems(("group", "kind 'all_correct' needs the groups key"))
        if self.kind == "task_accuracy" and not self.tasks:
            raise KeyProblems(("tasks", "kind 'task_accuracy' needs the tasks it counts"))
        if self.nms and self.kind != "coco_ap":
            raise KeyProblems(("nms", f"only kind 'coco_ap' reads it, not {self.kind!r}"))
        if self.kind in {"mean_of", "task_sum"} and not self.of:
            raise KeyProblems(("of", f"kind {self.kind!r} needs the metrics it combines"))
        if self.kind == "wemath_four_dimensional":
            missing = [key for key in ("group", "step", "measure") if getattr(self, key) is None]
            if missing:
                raise KeyProblems(
                    *((key, "kind 'wemath_four_dimensional' needs it") for key in missing)
                )
        return self


class BenchmarkJudge(Section):
    """How a judge asks about this benchmark's items (when its scoring protocol, or the
    experiment's ``score.judge.benchmarks``, has them judged)."""

    prompt: str | None = Field(
        None,
        description="A judge prompt of vlrl.scoring.judge_prompts.PROMPTS (e.g. mmvet, the "
        "MM-Vet grader); None: the prompt of each item's answer type.",
    )


class BenchmarkConfig(Section):
    """One benchmark: where its items come from, how they are asked and how they are scored."""

    description: str = ""
    blank_images_of: str | None = Field(
        None,
        pattern=r"^[^/]+$",
        description="This benchmark is the named one with every image replaced by a uniform "
        "gray image of the same size and mode (the model gets the same image tokens and no "
        "content): what each checkpoint answers without looking. Every other key comes from "
        "that benchmark; only description may be set beside it. The report pairs the two.",
    )
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
    subsample: Subsample | None = Field(
        None, description="A seeded subset of the items (VLM-R1's 2,000 per REC split)."
    )
    max_new_tokens: int | None = Field(
        None, ge=1, description="Generation budget; default: the experiment's infer.max_new_tokens."
    )
    iou_threshold: float | None = Field(
        None, ge=0, le=1, description="Grounding; default: the experiment's score.iou_threshold."
    )
    box_frame: Literal["original", "model_input"] = Field(
        "original",
        description="Grounding: the pixel frame of the model's boxes. original: the image as "
        "stored; model_input: the image as the processor resized it (Qwen2.5-VL answers in it), "
        "rescaled to the original before IoU as VLM-R1's test_rec_r1.py does (x / input_width "
        "* image_width, the input frame from image_grid_thw x patch size).",
    )
    relaxed_tolerance: float | None = Field(
        None,
        ge=0,
        le=1,
        description="ChartQA's relaxed accuracy: a number within this relative error of the "
        "reference is correct, any other answer must equal it (case-insensitive).",
    )
    protocols: Annotated[list[str], UniqueList] = Field(
        default_factory=lambda: ["vlrl"],
        min_length=1,
        description="The scoring protocols (vlrl.scoring.protocols) this benchmark supports; "
        "the first is its default, the one its reference scorer follows. An experiment picks "
        "another with score.protocol.<benchmark>; vlrl rescore compares them.",
    )
    family: Literal["mathvista", "dynamath"] | None = Field(
        None,
        description="The benchmark family whose own rule a toolkit protocol applies (VLMEvalKit "
        "scores MathVista with its mathvista.py rule and DynaMath with dynamath.py's, not its "
        "generic one).",
    )
    judge: BenchmarkJudge | None = Field(
        None, description="How a judge asks about its items (prompt)."
    )
    metrics: list[MetricSpec] = Field(default_factory=list)
    headline: str = Field("accuracy", description="The metric the tables lead with.")

    @property
    def protocol(self) -> str:
        """The default scoring protocol: the first of ``protocols``."""
        return self.protocols[0]

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
        names = ["accuracy"]
        for i, metric in enumerate(self.metrics):
            if metric.name in names:
                problems.append((f"metrics.{i}.name", f"{metric.name!r} is defined twice"))
            unknown = [m for m in metric.of if m not in names]
            if unknown:
                problems.append((f"metrics.{i}.of", f"{unknown} are not metrics defined before"))
            names.append(metric.name)
        if self.headline not in names:
            problems.append(("headline", f"{self.headline!r} is not one of {names}"))
        if problems:
            raise KeyProblems(*problems)
        return self


def protocol_for(bench: str, cfg: BenchmarkConfig, chosen: dict[str, str]) -> str:
    """The scoring protocol ``bench`` is scored by: the experiment's choice
    (``score.protocol``, here ``chosen``) or the benchmark's default.

    Raises:
        ConfigError: the chosen protocol is not one the benchmark supports.
    """
    name = chosen.get(bench, cfg.protocol)
    if name not in cfg.protocols:
        raise ConfigError(
            f"score.protocol.{bench}: {name!r} is not a protocol benchmark {bench} supports "
            f"({paths.benchmark_file(bench)}: protocols {cfg.protocols})"
        )
    return name


def load_benchmark(name: str) -> BenchmarkConfig:
    """Load and validate ``config/benchmarks/<name>.yaml``; a ``blank_images_of`` benchmark
    comes back as the one it blanks, with its own name there and its own description."""
    path = paths.benchmark_file(name)
    cfg = load_named(path, BenchmarkConfig, "benchmark")
    if cfg.blank_images_of is None:
        return cfg
    others = sorted(cfg.model_fields_set - {"description", "blank_images_of"})
    if others:
        raise ConfigError(
            f"{path}: {', '.join(others)}: a blank_images_of benchmark takes every key but "
            f"description from {cfg.blank_images_of!r}; remove them"
        )
    seeing_path = paths.benchmark_file(cfg.blank_images_of)
    if not seeing_path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        hint = unknown_hint(cfg.blank_images_of, known, f"{path.parent}/")
        raise ConfigError(
            f"{path}: blank_images_of: {cfg.blank_images_of!r} has no file {seeing_path}{hint}"
        )
    seeing = load_named(seeing_path, BenchmarkConfig, "benchmark")
    if seeing.blank_images_of is not None:
        raise ConfigError(
            f"{path}: blank_images_of: {cfg.blank_images_of!r} blanks images itself; name the "
            f"benchmark that shows them ({seeing.blank_images_of!r})"
        )
    return seeing.model_copy(
        update={
            "blank_images_of": cfg.blank_images_of,
            "description": cfg.description or f"{cfg.blank_images_of}, every image blanked",
        }
    )


def benchmark_files(name: str) -> list[Path]:
    """The config files a benchmark is read from: its own, and the one it blanks (if it is a
    ``blank_images_of`` benchmark)."""
    own = paths.benchmark_file(name)
    seeing = load_benchmark(name).blank_images_of
    return [own] if seeing is None else [own, paths.benchmark_file(seeing)]


def benchmark_inputs(exp: str, bench: str) -> list[Path]:
    """Files the benchmark's items come from (declared as workflow inputs)."""
    cfg = load_benchmark(bench)
    if cfg.loader == "experiment_split":
        return [sharing.data_dir(exp)]
    assert cfg.dataset is not None  # guaranteed by BenchmarkConfig validation
    return [paths.dataset_resource(cfg.dataset)]


def items_file(exp: str, cfg: BenchmarkConfig) -> Path:
    """The records file a benchmark reads; its images are relative to the file's directory."""
    if cfg.loader == "experiment_split":
        return sharing.data_dir(exp) / f"{cfg.split}.jsonl"
    assert cfg.dataset is not None and cfg.file is not None  # BenchmarkConfig validation
    return paths.dataset_resource(cfg.dataset) / cfg.file


def load_items(exp: str, bench: str) -> tuple[list[Record], Path]:
    """The benchmark's records and the directory their image paths are relative to.

    Raises:
        ConfigError: the file the benchmark reads does not exist (its stage has not run).
        DataError: (``records``) listing every bad row of the file by ``file:line`` and id.
    """
    cfg = load_benchmark(bench)
    path = items_file(exp, cfg)
    if cfg.loader == "experiment_split":
        if not path.is_file():
            raise ConfigError(f"benchmark {bench}: {path} does not exist; run the data stage first")
        records = read_records(path)
    else:
        from vlrl.data.validate import check_rows, rows_of_file

        assert cfg.dataset is not None  # BenchmarkConfig validation
        if not path.is_file():
            raise ConfigError(
                f"benchmark {bench}: {path} does not exist; run `vlrl download {cfg.dataset}` "
                f"first, or check file: in {paths.benchmark_file(bench)}"
            )
        checked = check_rows(rows_of_file(path), path.parent)
        if checked.problems:
            raise DataError(checked.summary(f"benchmark {bench}: {path}"))
        records = checked.records
    if cfg.subsample is not None:
        records = subsample(records, cfg.subsample.n, cfg.subsample.seed)
    return records[: cfg.max_items], path.parent


def subsample(items: list, n: int, seed: int) -> list:
    """VLM-R1's REC subset (``src/eval/test_rec_r1.py``): ``random.seed(seed)``, shuffle, the
    first ``n``; the global ``random`` state is left as it was.

    >>> subsample(list(range(10)), 3, 42)
    [7, 3, 2]
    """
    import random

    state = random.getstate()
    try:
        random.seed(seed)
        shuffled = list(items)
        random.shuffle(shuffled)
    finally:
        random.setstate(state)
    return shuffled[:n]
