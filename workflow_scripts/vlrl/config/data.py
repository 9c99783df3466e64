"""What an experiment starts from: its records (the shapes world or a hub dataset), the
datasets its benchmarks read (``config/datasets/``) and base models (``config/models/``)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, PositiveInt, model_validator

from vlrl.config.base import COMMIT_SHA, KeyProblems, Section, order_problems

ShapesTask = Literal["color", "count", "grounding", "caption", "arithmetic"]
SHAPES_TASKS: tuple[str, ...] = get_args(ShapesTask)
"""The questions the shapes world asks (:mod:`vlrl.data.shapes` generates them)."""


ShapesColor = Literal["red", "green", "blue", "yellow", "purple", "orange"]


class ShapesTeacher(Section):
    """An imperfect teacher whose demonstrations SFT learns from (``sft_train.jsonl``).

    Its detector misses each shape of the ``misses`` colours with probability ``miss_rate``; it
    describes, counts and answers the scene it saw. GRPO's reward and every held-out split keep
    the true answers: the cold start imitates the teacher, RL can exceed it."""

    misses: list[ShapesColor] = Field(
        default_factory=list, description="Colours the teacher's detector can miss (empty: none)."
    )
    miss_rate: float = Field(
        1.0, ge=0.0, le=1.0, description="Probability that it misses each shape of those colours."
    )


class ShapesConfig(Section):
    """The synthetic shapes world (the embedded default's data)."""

    image_size: int = Field(112, ge=28, description="Square image side in pixels.")
    min_shapes: int = Field(1, ge=1)
    max_shapes: int = Field(4, ge=1, le=8)
    tasks: list[ShapesTask] = Field(default_factory=lambda: list(SHAPES_TASKS))
    n_train: int = Field(2000, ge=1, description="Training records (all tasks).")
    n_val: int = Field(100, ge=1)
    n_test: int = Field(400, ge=1)
    teacher: ShapesTeacher | None = Field(
        None,
        description="SFT learns from this imperfect teacher's answers (sft_train.jsonl) instead "
        "of the true ones; None: SFT trains on the true train split.",
    )


class DataSource(Section):
    """Records of a downloaded dataset: ``records/<split>.jsonl`` of
    ``config/datasets/<dataset>.yaml`` once its format converted it (the download stage)."""

    dataset: str = Field(description="A dataset name from config/datasets/ (with a format).")
    split: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="Which of its converted record files: records/<split>.jsonl.",
    )
    max_samples: int | None = Field(
        None,
        ge=1,
        description="Keep at most this many records, drawn with the experiment's seed (None: all).",
    )


DATA_SPLITS = ("train", "sft_train", "val", "test")
"""What the data stage writes from downloaded datasets: GRPO's train (SFT's too unless
sft_train is set), SFT's own cold-start records, and the held-out splits."""


class DataConfig(Section):
    source: Literal["shapes", "datasets"] = Field(
        "shapes",
        description="shapes: generate the synthetic world. datasets: the records of downloaded "
        "datasets (config/datasets/, converted by their format), listed per split.",
    )
    shapes: ShapesConfig = Field(default_factory=ShapesConfig)
    train: list[DataSource] = Field(
        default_factory=list, description="GRPO's records (and SFT's unless sft_train is set)."
    )
    sft_train: list[DataSource] = Field(
        default_factory=list,
        description="The SFT stage's own records (a cold-start set); empty: SFT trains on train.",
    )
    val: list[DataSource] = Field(default_factory=list)
    test: list[DataSource] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sources_agree(self) -> DataConfig:
        problems = []
        listed = [split for split in DATA_SPLITS if getattr(self, split)]
        if self.source == "datasets" and not self.train:
            problems.append(("train", "data.source is datasets: list the train records"))
        if self.source == "shapes" and listed:
            problems += [
                (split, "is read only with data.source: datasets; shapes generates its splits")
                for split in listed
            ]
        # Checked here, not on ShapesConfig: the generator takes a bare ShapesConfig and reports
        # these itself (tests/data/test_shapes.py builds such worlds).
        shapes = self.shapes
        problems += [
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
    revision: str | None = Field(
        None,
        pattern=COMMIT_SHA,
        description="A full 40-character lower-case commit sha; never a branch or tag, which move. "
        "None only with unpinned: `vlrl pin <model>` then resolves it once, online.",
    )
    unpinned: str | None = Field(
        None,
        min_length=1,
        description="Why no public commit could be cited (the revision is then unset); a run "
        "never downloads an unpinned revision.",
    )

    @model_validator(mode="after")
    def _pinned_or_why(self) -> HubModelConfig:
        if self.revision is None and self.unpinned is None:
            raise KeyProblems(
                (
                    "revision",
                    "is missing: pin a 40-hex commit, or say why none could be found in unpinned "
                    "(then `vlrl pin <model>` resolves it once, online)",
                )
            )
        if self.revision is not None and self.unpinned is not None:
            raise KeyProblems(("unpinned", "the revision is pinned: remove unpinned"))
        return self


class AttentionHeads(Section):
    """A model's attention heads as its ``config.json`` states them: tensor parallelism (vLLM)
    shards them over the GPUs of one engine."""

    text: PositiveInt = Field(description="num_attention_heads of the language model")
    text_kv: PositiveInt = Field(description="num_key_value_heads of the language model")
    vision: PositiveInt | None = Field(None, description="vision_config.num_heads")


class TextShape(Section):
    """The language model's shape as its ``config.json`` states it: what vlrl plan's memory and
    FLOPs estimate reads (activations, logits) for this model, not another's."""

    hidden_size: PositiveInt
    num_hidden_layers: PositiveInt
    intermediate_size: PositiveInt
    vocab_size: PositiveInt


class ModelConfig(Section):
    """A base model, ``config/models/<name>.yaml``: shared by experiments, built once under
    ``resources/models/<name>/``."""

    description: str = ""
    builder: Literal["tiny", "hf"] = "tiny"
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig)
    hf: HubModelConfig | None = None
    parameters: int | None = Field(
        None,
        ge=1,
        description="The model's parameter count, as its model card states it (for vlrl plan's "
        "compute and memory estimate; the tiny model's is counted from its shape).",
    )
    size_bytes: int | None = Field(
        None, ge=0, description="What the download weighs, where the hub page states it."
    )
    attention_heads: AttentionHeads | None = Field(
        None,
        description="The hub model's attention heads (its config.json), which vlrl check holds "
        "every vLLM engine's tensor parallelism to; the tiny model's come from its shape.",
    )

    text_shape: TextShape | None = Field(
        None,
        description="The hub model's language-model shape (its config.json) for vlrl plan's "
        "estimate; the tiny model's comes from its own config. Unset: Qwen2.5-VL-3B's, said so.",
    )

    def heads(self) -> AttentionHeads | None:
        """The model's attention heads: stated for a hub model, from its shape for the tiny one."""
        if self.builder == "tiny":
            return AttentionHeads(
                text=self.tiny.num_attention_heads, text_kv=self.tiny.num_key_value_heads
            )
        return self.attention_heads

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
    """A dataset or benchmark, ``config/datasets/<name>.yaml``: fetched once by the download
    stage into ``resources/datasets/<name>/``, shared by every benchmark (and experiment) that
    names it. From one of three sources: the Hugging Face hub at a pinned revision (``repo_id``
    + ``revision``), a public git repository at a pinned commit (``git`` + ``revision``: a
    benchmark published only on GitHub, such as LogicVista), or a local folder of user-provided
    files (``local``: data never released, such as VLM-R1's D³ detection set). A hub or git
    dataset without a public commit to cite says why in ``unpinned`` instead of ``revision``."""

    description: str = ""
    repo_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="The hub repository, owner/name.",
    )
    revision: str | None = Field(
        None,
        pattern=COMMIT_SHA,
        description="The commit of the hub repository or of the git repository: a full "
        "40-character lower-case commit sha; never a branch or tag, which move. None only with "
        "unpinned: `vlrl pin <dataset>` then resolves it once, online.",
    )
    unpinned: str | None = Field(
        None,
        min_length=1,
        description="Why no public commit of the repository could be cited (the revision is then "
        "unset). A run never downloads an unpinned revision: `vlrl pin <dataset>` resolves the "
        "current commit (the hub's, or the git repository's HEAD) once, online, and writes it "
        "here as revision.",
    )
    git: str | None = Field(
        None,
        pattern=r"^[^\s-]\S*$",
        description="A public git repository instead of the hub: its URL (https://…, file://…) "
        "or a folder path (relative to the project root); the download stage writes the files "
        "of commit revision (allow_patterns applies) through a bare cache repository "
        "($VLRL_GIT_CACHE, else ~/.cache/vlrl/git), then converts them.",
    )
    local: str | None = Field(
        None,
        min_length=1,
        description="A folder of user-provided files instead of the hub, relative to the project "
        "root (or absolute): copied as they are (allow_patterns applies), then converted.",
    )
    repo_type: Literal["dataset", "model"] = "dataset"
    allow_patterns: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None,
        min_length=1,
        description="Glob patterns of the files to fetch (huggingface_hub's allow_patterns, "
        "e.g. data/val-*.parquet; the same for git and local); None: every file of the "
        "repository.",
    )
    format: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The hub schema of the files (a module of vlrl.data.formats): the download "
        "stage converts them into records/<split>.jsonl. None: the files are used as they are.",
    )
    bad_rows: Literal["stop", "report"] = Field(
        "stop",
        description="Rows the format's converter cannot convert: stop (the stage fails naming "
        "every one) or report (left out, each listed with its id and why in "
        "records/rejected.jsonl and counted in records/report.json).",
    )
    size_bytes: int | None = Field(
        None,
        ge=0,
        description="What the download weighs, where the hub page states it (for vlrl plan).",
    )
    image_size: tuple[PositiveInt, PositiveInt] | None = Field(
        None,
        description="A typical picture's [width, height] in pixels, where the source states it: "
        "vlrl plan counts image tokens from it (unknown, it takes the pixel budget's bound).",
    )
    expected_rows: dict[str, int] | None = Field(
        None,
        description="Rows each raw file must hold (file → count), for a format that checks them "
        "(vlm_r1_rec_train): replaces the released counts it knows, e.g. for a fixture.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        problems = []
        sources = [key for key in ("repo_id", "git", "local") if getattr(self, key) is not None]
        if len(sources) != 1:
            problems.append(
                (
                    sources[0] if sources else "repo_id",
                    "set exactly one of repo_id (a hub dataset), git (a git repository) and "
                    f"local (a folder); {' and '.join(sources) if sources else 'none'} set",
                )
            )
        elif self.local is not None:
            problems += [
                (key, "is for hub and git datasets; this one is local")
                for key in ("revision", "unpinned")
                if getattr(self, key) is not None
            ]
        elif self.revision is None and self.unpinned is None:
            problems.append(
                (
                    "revision",
                    "is missing: pin a 40-hex commit, or say why none could be found in unpinned "
                    "(then `vlrl pin <dataset>` resolves it once, online)",
                )
            )
        elif self.revision is not None and self.unpinned is not None:
            problems.append(("unpinned", "the revision is pinned: remove unpinned"))
        if problems:
            raise KeyProblems(*problems)
        return self
