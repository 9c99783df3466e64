"""One experiment, ``config/experiments/<name>.yaml``: every section, and the checks across
sections."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, ValidationInfo, field_validator, model_validator

from vlrl.config.base import KeyProblems, Section, UniqueList, order_problems
from vlrl.config.data import SHAPES_TASKS, DataConfig
from vlrl.config.evaluation import InferConfig, ReportConfig, ScoreConfig
from vlrl.config.resources import DISTRIBUTED_STAGES, ResourcesConfig
from vlrl.config.training import GRPOConfig, SFTConfig
from vlrl.core import paths

CpuKernels = Literal["portable", "avx2", "native"]
"""Values of the key ``cpu_kernels`` (what each pins: :mod:`vlrl.cluster.threads`)."""

PromptName = Annotated[str, Field(description="A prompt format from vlrl.items.prompts.PROMPTS.")]

#: The generation budget of an experiment without GRPO: VLMEvalKit's Qwen2VLChat max_new_tokens.
EVAL_MAX_NEW_TOKENS = 2048

DERIVED: dict[str, str] = {
    "sft.image_max_pixels": "image_pixels.max",
    "sft.image_min_pixels": "image_pixels.min",
    "grpo.image_max_pixels": "image_pixels.max",
    "grpo.image_min_pixels": "image_pixels.min",
    "infer.max_new_tokens": "grpo.max_completion_length",
}
"""Keys whose value, when unset, follows from another key: one declaration per fact (the pixel
budget of SFT and GRPO; the generation budget GRPO trained with, evaluated with)."""


class ImagePixels(Section):
    """The pixel budget of each image (Qwen2.5-VL's processor resizes into it), shared by SFT and
    GRPO unless a stage sets its own."""

    min: PositiveInt = 56 * 56
    max: PositiveInt = 112 * 112

    @model_validator(mode="after")
    def _ordered(self) -> ImagePixels:
        problems = order_problems(self, "min", "max")
        if problems:
            raise KeyProblems(*problems)
        return self


class ReportedCompute(Section):
    """What the paper (or its repository) reports a run of this recipe took: shown by
    ``vlrl plan`` next to vlrl's own estimate."""

    hardware: str = Field(description="The GPUs (and nodes) reported, e.g. 8x A100-80GB.")
    time: str = Field("not reported", description="The wall-clock time reported, as stated.")
    source: str = Field(description="Where it is stated: repository file and commit, or §.")


class ExperimentConfig(Section):
    """Everything one experiment needs. The name is the file stem, not a key."""

    description: str = ""
    extends: str | None = Field(
        None,
        description="The experiment this one is a diff of (config/experiments/<name>.yaml): its "
        "keys are this file's defaults, mappings merged key by key (grpo.rewards, "
        "score.protocol, report.combined and resources replaced whole), lists and values "
        "replaced.",
    )
    unknown: dict[str, str] = Field(
        default_factory=dict,
        description="Dotted key → why its value is not known from the public sources (the value "
        "set is then a stated guess, shown as such by vlrl show and vlrl check).",
    )
    deviations: dict[str, str] = Field(
        default_factory=dict,
        description="Where this recipe knowingly differs from its source: a dotted key or a "
        "short name → what differs and why.",
    )
    reported: ReportedCompute | None = Field(
        None, description="The hardware and time the source reports for this recipe."
    )
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    cpu_threads: int | None = Field(
        None,
        ge=1,
        description="CPU threads of each stage process (torch, and OMP/MKL for LLaMA-Factory). "
        "Results on CPU depend on it: set it for numbers that reproduce across machines' core "
        "counts and test runs. None: the machine's default.",
    )
    cpu_kernels: CpuKernels = Field(
        "native",
        description="Which CPU kernels torch runs (vlrl/cluster/threads.py). portable: ATen's "
        "baseline "
        "kernels, MKL's processor-independent branch and oneDNN capped at SSE4.1, so every "
        "x86-64 CPU (Intel or AMD, AVX2 or AVX-512) computes the same bits; slower "
        "(docs/performance.md). avx2: the same with ATen's AVX2 kernels: the same bits on every "
        "x86-64 CPU with AVX2 (x86-64-v3, AVX-512 ones included), faster. native: the fastest "
        "kernels of the CPU at hand; results differ between CPUs. Changes the numbers either way.",
    )
    prompt: PromptName = "think_answer"
    image_pixels: ImagePixels = Field(default_factory=ImagePixels)
    data: DataConfig = Field(default_factory=DataConfig)
    base_model: str = Field(description="A model name from config/models/.")
    sft: SFTConfig = Field(default_factory=SFTConfig)
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    infer: InferConfig = Field(default_factory=InferConfig)
    benchmarks: Annotated[list[str], UniqueList] = Field(
        min_length=1, description="Benchmark names from config/benchmarks/."
    )
    score: ScoreConfig = Field(default_factory=ScoreConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)
    resources: ResourcesConfig = Field(
        default_factory=ResourcesConfig,
        description="What each stage's job needs: GPUs, nodes, CPUs, memory, time limit.",
    )

    # Field validators, not model validators: each runs even when another section is invalid,
    # so that one load reports every problem. Prompt, reward and benchmark names are checked one
    # floor up (vlrl.workflow.check), so that this module imports no registry: config is below
    # the code it configures.
    @field_validator("base_model")
    @classmethod
    def _known_model(cls, name: str) -> str:
        if not paths.model_file(name).is_file():
            known = sorted(p.stem for p in paths.model_file(name).parent.glob("*.yaml"))
            raise KeyProblems(("", f"{name!r} has no config/models file; known: {known}"))
        return name

    @field_validator("grpo")
    @classmethod
    def _tasks_are_generated(cls, grpo: GRPOConfig, info: ValidationInfo) -> GRPOConfig:
        """With shapes data, every GRPO task must be one the data stage generates: a typo would
        silently train on the other tasks only. (Hub task labels come from the converter.)"""
        data = info.data.get("data")
        if grpo.tasks is None or data is None or data.source != "shapes":
            return grpo
        problems = []
        for task in grpo.tasks:
            if task not in SHAPES_TASKS:
                problems.append(
                    ("tasks", f"{task!r} is not a shapes task; known: {list(SHAPES_TASKS)}")
                )
            elif task not in data.shapes.tasks:
                problems.append(
                    (
                        "tasks",
                        f"{task!r} is not in data.shapes.tasks {data.shapes.tasks}, so no "
                        "training record has it",
                    )
                )
        if problems:
            raise KeyProblems(*problems)
        return grpo

    @field_validator("report")
    @classmethod
    def _combined_are_evaluated(cls, report: ReportConfig, info: ValidationInfo) -> ReportConfig:
        """A combined number is of benchmarks the experiment evaluates, under a name that is
        not one of them (its rows sit beside theirs)."""
        benchmarks = info.data.get("benchmarks")
        if benchmarks is None:  # invalid itself, and reported so
            return report
        problems = []
        for name, combined in report.combined.items():
            if name in benchmarks:
                why = "is one of the experiment's benchmarks; name the combined number otherwise"
                problems.append((f"combined.{name}", why))
            for i, bench in enumerate(combined.benchmarks):
                if bench not in benchmarks:
                    why = f"{bench!r} is not one of the experiment's benchmarks {benchmarks}"
                    problems.append((f"combined.{name}.benchmarks.{i}", why))
        if problems:
            raise KeyProblems(*problems)
        return report

    @field_validator("resources")
    @classmethod
    def _launch_agrees(cls, resources: ResourcesConfig, info: ValidationInfo) -> ResourcesConfig:
        """With GPUs a training stage runs one process per GPU, so its CPU process count must be
        left at 1. (GRPO's batch then holds whole groups on any number of processes: its check
        per process, in GRPOConfig, carries over.)"""
        problems = []
        for stage in DISTRIBUTED_STAGES:
            section, need = info.data.get(stage), getattr(resources, stage)
            if section is not None and need.gpus and section.processes > 1:
                problems.append(
                    (
                        f"{stage}.gpus",
                        f"{need.gpus} GPUs run one process each; {stage}.processes "
                        f"({section.processes}) sets CPU processes: leave it at 1",
                    )
                )
        infer = info.data.get("infer")
        if infer is not None and infer.backend == "hf" and resources.infer.gpus > 1:
            problems.append(
                (
                    "infer.gpus",
                    f"the hf backend generates on one GPU, not {resources.infer.gpus}; use "
                    "infer.backend: vllm to spread a model over several",
                )
            )
        if problems:
            raise KeyProblems(*problems)
        return resources

    @model_validator(mode="after")
    def _derived(self) -> ExperimentConfig:
        """Fill the keys of :data:`DERIVED` left unset from the keys they follow."""
        for section in (self.sft, self.grpo):
            if section.image_max_pixels is None:
                section.image_max_pixels = self.image_pixels.max
            if section.image_min_pixels is None:
                section.image_min_pixels = self.image_pixels.min
        if self.infer.max_new_tokens is None:
            self.infer.max_new_tokens = (
                self.grpo.max_completion_length if self.grpo.enabled else EVAL_MAX_NEW_TOKENS
            )
        problems = [
            (f"unknown.{key}", "is not a key of the experiment")
            for key in self.unknown
            if not _has_key(self, key)
        ]
        need, reserved = self.resources.grpo, self.grpo.server_gpus
        if need.gpus:
            ranks = need.gpus - reserved
            world, where = ranks * need.nodes, f"{ranks} GPUs x {need.nodes} node(s)"
            if reserved:
                where += f" (of {need.gpus}: {reserved} for its servers)"
        else:
            world, where = self.grpo.processes, f"{self.grpo.processes} process(es)"
        problems += [(f"grpo.{key}", why) for key, why in self.grpo.group_problems(world, where)]
        for stage, section in (("sft", self.sft), ("grpo", self.grpo)):
            problems += [
                (f"{stage}.{key}", why)
                for key, why in order_problems(section, "image_min_pixels", "image_max_pixels")
            ]
        if problems:
            raise KeyProblems(*problems)
        return self

    @property
    def checkpoints(self) -> list[str]:
        """The models this experiment evaluates, dropping stages the experiment disables."""
        enabled = {"base": True, "sft": self.sft.enabled, "grpo": self.grpo.enabled}
        return [c for c in self.infer.checkpoints if enabled[c]]


def _has_key(cfg: ExperimentConfig, dotted: str) -> bool:
    """Whether ``dotted`` names a key of the config (a section, a field, a mapping's entry)."""
    node: object = cfg
    for part in dotted.split("."):
        if isinstance(node, dict):
            if part not in node:
                return False
            node = node[part]
        elif isinstance(node, Section) and part in type(node).model_fields:
            node = getattr(node, part)
        else:
            return False
    return True
