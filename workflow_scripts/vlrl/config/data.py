"""What an experiment starts from: its records (the shapes world or a hub dataset), the
datasets its benchmarks read (``config/datasets/``) and base models (``config/models/``)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, PositiveInt, model_validator

from vlrl.config.base import COMMIT_SHA, KeyProblems, Section, order_problems

ShapesTask = Literal["color", "count", "grounding", "caption", "arithmetic"]
SHAPES_TASKS: tuple[str, ...] = get_args(ShapesTask)
"""The questions the shapes world asks (:mod:`vlrl.data.shapes` generates them)."""


class ShapesConfig(Section):
    """The synthetic shapes world (the embedded default's data)."""

    image_size: int = Field(112, ge=28, description="Square image side in pixels.")
    min_shapes: int = Field(1, ge=1)
    max_shapes: int = Field(4, ge=1, le=8)
    tasks: list[ShapesTask] = Field(default_factory=lambda: list(SHAPES_TASKS))
    n_train: int = Field(2000, ge=1, description="Training records (all tasks).")
    n_val: int = Field(100, ge=1)
    n_test: int = Field(400, ge=1)


class HubDatasetConfig(Section):
    """A dataset downloaded from the Hugging Face hub at a pinned revision."""

    repo_id: str
    revision: str = Field(description="Commit sha or tag; never a moving branch.")
    converter: str = Field(description="Name of the converter to canonical records.")
    allow_patterns: list[str] | None = None


class DataConfig(Section):
    source: Literal["shapes", "hub"] = "shapes"
    shapes: ShapesConfig = Field(default_factory=ShapesConfig)
    hub: HubDatasetConfig | None = None

    @model_validator(mode="after")
    def _hub_needs_settings(self) -> DataConfig:
        if self.source == "hub" and self.hub is None:
            raise KeyProblems(
                (
                    "hub",
                    "data.source is 'hub' but data.hub (repo_id, revision, converter) is missing",
                )
            )
        # Checked here, not on ShapesConfig: the generator takes a bare ShapesConfig and reports
        # these itself (tests/data/test_shapes.py builds such worlds).
        shapes = self.shapes
        problems = [
            (f"shapes.{key}", why)
            for key, why in order_problems(shapes, "min_shapes", "max_shapes")
        ]
        if not shapes.tasks:
            problems.append(
                ("shapes.tasks", f"is empty; name at least one of {list(SHAPES_TASKS)}")
            )
        if problems:
            raise KeyProblems(*problems)
        return self


class TinyModelConfig(Section):
    """Shape of the locally built tiny Qwen2.5-VL (random init)."""

    hidden_size: PositiveInt = 64
    intermediate_size: PositiveInt = 128
    num_hidden_layers: PositiveInt = 2
    num_attention_heads: PositiveInt = 4
    num_key_value_heads: PositiveInt = 2
    vision_depth: PositiveInt = 2
    vision_hidden_size: PositiveInt = 32
    vocab_size: int = Field(600, ge=300, description="Target BPE vocabulary size.")
    min_pixels: PositiveInt = 56 * 56
    max_pixels: PositiveInt = 112 * 112

    @model_validator(mode="after")
    def _shapes_agree(self) -> TinyModelConfig:
        problems = []
        heads, kv = self.num_attention_heads, self.num_key_value_heads
        if self.hidden_size % heads:
            problems.append(
                (
                    "hidden_size",
                    f"{self.hidden_size} is not a multiple of num_attention_heads ({heads})",
                )
            )
        elif (self.hidden_size // heads) % 2:
            problems.append(
                (
                    "hidden_size",
                    f"gives an odd head size {self.hidden_size // heads} (hidden_size / "
                    "num_attention_heads); the rotary embedding needs an even one",
                )
            )
        if heads % kv:
            problems.append(
                ("num_attention_heads", f"{heads} is not a multiple of num_key_value_heads ({kv})")
            )
        problems += order_problems(self, "min_pixels", "max_pixels")
        if problems:
            raise KeyProblems(*problems)
        return self


class HubModelConfig(Section):
    repo_id: str
    revision: str = Field(
        pattern=COMMIT_SHA,
        description="A full 40-character lower-case commit sha; never a branch or tag, which move.",
    )


class ModelConfig(Section):
    """A base model, ``config/models/<name>.yaml``: shared by experiments, built once under
    ``resources/models/<name>/``."""

    builder: Literal["tiny", "hf"] = "tiny"
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig)
    hf: HubModelConfig | None = None

    @model_validator(mode="after")
    def _hf_needs_repo(self) -> ModelConfig:
        if self.builder == "hf" and self.hf is None:
            raise KeyProblems(
                (
                    "hf",
                    "base_model.builder is 'hf' but base_model.hf (repo_id, revision) is missing",
                )
            )
        return self


class DatasetConfig(Section):
    """A dataset or benchmark from the Hugging Face hub, ``config/datasets/<name>.yaml``: fetched
    once by the download stage into ``resources/datasets/<name>/``, shared by every benchmark
    (and experiment) that names it."""

    description: str = ""
    repo_id: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="The hub repository, owner/name.",
    )
    revision: str = Field(
        pattern=COMMIT_SHA,
        description="A full 40-character lower-case commit sha; never a branch or tag, which move.",
    )
    repo_type: Literal["dataset", "model"] = "dataset"
    allow_patterns: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None,
        min_length=1,
        description="Glob patterns of the files to fetch (huggingface_hub's allow_patterns, "
        "e.g. data/val-*.parquet); None: every file of the repository.",
    )
    format: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The hub schema of the files (a module of vlrl.data.formats): the download "
        "stage converts them into records/<split>.jsonl. None: the files are used as they are.",
    )
