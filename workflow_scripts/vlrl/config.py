"""Typed experiment configuration.

One experiment is one file, ``config/experiments/<name>.yaml``. Merge order (EasyR1 style):
model defaults below → the experiment file → ``--set key.sub=value`` overrides on the command
line. Unknown keys, wrong types, values out of their range or set, duplicate YAML keys and keys
that disagree with each other are rejected, each problem on a line naming the file and the dotted
key.

Each top-level section is read by exactly one stage family, and the DVC stage generated for it
lists that section as its params (see :mod:`vlrl.workflow.dvc_export`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from vlrl import paths
from vlrl.errors import ConfigError

Probability = Annotated[float, Field(ge=0, le=1)]
"""A probability or a fraction, in [0, 1]."""
TopP = Annotated[float, Field(gt=0, le=1)]
"""Nucleus sampling mass, in (0, 1]: 1 keeps every token, 0 would keep none (vLLM refuses it)."""
COMMIT_SHA = r"^[0-9a-f]{40}$"
"""A full lower-case commit id, the only hub revision that cannot move."""


class KeyProblems(ValueError):
    """Raised by a validator: what is wrong, at dotted keys relative to the model it validates
    (the loader prefixes the section's own key), so that every error names its key."""

    def __init__(self, *problems: tuple[str, str]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{key}: {why}" for key, why in problems))


class ConfigProblems(ConfigError):
    """Every problem found in config files, one ``<file>: <dotted key>: <what is wrong>`` line
    each (``problems``)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Section(BaseModel):
    """Base for every config section: unknown keys are errors; assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def _order_problems(section: Any, low: str, high: str) -> list[tuple[str, str]]:
    """``[(low, why)]`` when the section's ``low`` bound exceeds its ``high`` one, else ``[]``."""
    lo, hi = getattr(section, low), getattr(section, high)
    return [(low, f"{lo} is above {high} ({hi})")] if lo > hi else []


# --------------------------------------------------------------------------------------- data
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
            for key, why in _order_problems(shapes, "min_shapes", "max_shapes")
        ]
        if not shapes.tasks:
            problems.append(
                ("shapes.tasks", f"is empty; name at least one of {list(SHAPES_TASKS)}")
            )
        if problems:
            raise KeyProblems(*problems)
        return self


# --------------------------------------------------------------------------------- base model
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
        problems += _order_problems(self, "min_pixels", "max_pixels")
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


# ------------------------------------------------------------------------------------ dataset
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


# ---------------------------------------------------------------------------------------- sft
class SFTConfig(Section):
    enabled: bool = True
    finetuning_type: Literal["full", "lora"] = "full"
    freeze_vision_tower: bool = False
    max_samples: int | None = Field(
        None, ge=1, description="Use at most this many training records."
    )
    num_train_epochs: PositiveFloat = 2.0
    learning_rate: PositiveFloat = 1e-5
    per_device_train_batch_size: PositiveInt = 8
    gradient_accumulation_steps: PositiveInt = 1
    processes: PositiveInt = Field(
        1,
        description="Data-parallel training processes (LLaMA-Factory under torchrun; gloo on "
        "CPU), each with cpu_threads threads and per_device_train_batch_size records per step.",
    )
    lr_scheduler_type: str = "cosine"
    warmup_ratio: Probability = 0.0
    cutoff_len: PositiveInt = 1024
    missing_reasoning: Literal["stop", "drop"] = Field(
        "stop",
        description="Train records without a reasoning target: stop (name them) or drop them "
        "(their count goes to the output's vlrl_sft/dropped.json).",
    )
    gradient_checkpointing: bool = Field(
        True,
        description="Recompute activations in the backward pass (LLaMA-Factory's default): less "
        "memory for more compute. Same weights either way; off is faster when memory is ample.",
    )
    lora_rank: PositiveInt = 8
    image_max_pixels: PositiveInt = 112 * 112
    image_min_pixels: PositiveInt = 56 * 56
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Extra LLaMA-Factory train keys, passed through as is."
    )

    @model_validator(mode="after")
    def _pixels(self) -> SFTConfig:
        problems = _order_problems(self, "image_min_pixels", "image_max_pixels")
        if problems:
            raise KeyProblems(*problems)
        return self


# --------------------------------------------------------------------------------------- grpo
THINKING_REWARD = "sophiavl.thinking"
"""The reward-model reward: configured by ``grpo.reward_model``, not a plain registry function."""
SELF_REWARD_READERS = frozenset({"vision_sr1.visual", "vision_sr1.total"})
"""Rewards that read the ``self_reward_responses`` column the self_reward algorithm fills."""


# ---------------------------------------------------------------------------------- endpoints
class ServeConfig(Section):
    """A server the pipeline starts for the stage that needs it and stops after it, also when the
    stage fails (:func:`vlrl.servers.serving`): ``vllm serve`` on GPUs, ``transformers serve`` on
    CPU, on 127.0.0.1, run from the project root, logging under ``logs/``."""

    model: str | None = Field(
        None,
        description="The model to serve: a local directory (relative to the project root, or "
        "absolute) or a hub id (read from the local hub cache: the server runs with "
        "HF_HUB_OFFLINE=1 unless the environment sets it). None (infer.openai only): the "
        "checkpoint being evaluated.",
    )
    backend: Literal["auto", "transformers", "vllm"] = Field(
        "auto",
        description="auto: vllm when torch sees a CUDA device, else transformers (CPU).",
    )
    port: int | None = Field(
        None, ge=1, le=65535, description="Port on 127.0.0.1 (None: a free one)."
    )
    startup_timeout_s: PositiveFloat = Field(
        600.0, description="How long the server may take to answer /health (model load included)."
    )
    args: list[str] = Field(
        default_factory=list,
        description="Extra command-line arguments of the server, passed as they are (e.g. "
        "[--dtype, bfloat16], or vllm's [--max-model-len, 8192]).",
    )

    @field_validator("args", mode="before")
    @classmethod
    def _numbers_as_text(cls, args: Any) -> Any:
        """``[--max-model-len, 8192]`` as YAML reads it: numbers are arguments too."""
        if isinstance(args, list):
            return [
                str(a) if isinstance(a, int | float) and not isinstance(a, bool) else a
                for a in args
            ]
        return args


class EndpointConfig(Section):
    """One OpenAI-compatible endpoint, as :class:`vlrl.endpoints.EndpointClient` calls it: the
    judge, the thinking reward model and the ``openai`` generation backend share these keys.

    Exactly one of ``base_url`` (a server that is running) and ``serve`` (one the pipeline starts
    and stops, :func:`vlrl.servers.serving`) is set. The key is read from
    ``os.environ[api_key_env]`` at call time and never stored.

    >>> EndpointConfig(serve={"model": "resources/models/judge"}).base_url is None
    True
    """

    MODEL_FROM_STAGE: ClassVar[bool] = False
    """Whether the consumer supplies the model when none is named (infer.openai: the checkpoint)."""

    base_url: str | None = Field(
        None,
        description="OpenAI-compatible base URL of a running server, e.g. http://host:8000/v1 "
        "(or serve).",
    )
    serve: ServeConfig | None = Field(
        None, description="A server the pipeline starts for the stage and stops after it."
    )
    endpoint_id: str | None = Field(
        None,
        description="What the reply cache and the scores file call this endpoint. None: base_url "
        "without credentials; for a server started from serve the pipeline sets "
        "serve:<backend>:<model>, so that its replies are found again whatever port it got.",
    )
    model: str | None = Field(
        None,
        description="Served model name (required with base_url; with serve, None: the served "
        "model).",
    )
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key.")
    api_key_required: bool = Field(
        False,
        description="true: refuse to call when api_key_env is unset (hosted APIs); false: call "
        "without a key when it is unset (local servers).",
    )
    concurrency: PositiveInt = Field(8, description="Requests in flight at once.")
    timeout_s: PositiveFloat = Field(60.0, description="Per request.")
    max_retries: NonNegativeInt = Field(
        3, description="Retries of a transient failure (timeout, 408/409/429/5xx, bad body…)."
    )
    backoff_s: NonNegativeFloat = Field(
        0.5, description="Wait before the first retry; doubles per retry, at most 30 s."
    )
    cache_max_entries: PositiveInt = Field(
        100_000,
        description="Replies kept in the endpoint's cache; the least recently used go beyond it.",
    )

    @model_validator(mode="after")
    def _one_endpoint(self) -> EndpointConfig:
        problems = []
        if self.base_url is not None and self.serve is not None:
            problems.append(
                (
                    "serve",
                    "set either base_url (a running server) or serve (one the pipeline starts), "
                    "not both",
                )
            )
        elif self.base_url is None and self.serve is None:
            problems.append(
                (
                    "base_url",
                    "is not set: set base_url (a running server) or serve (one the pipeline "
                    "starts, with serve.model)",
                )
            )
        elif self.serve is not None:
            if self.endpoint_id is not None:
                problems.append(
                    (
                        "endpoint_id",
                        "is set by the pipeline for a server it starts (serve:<backend>:<model>); "
                        "leave it unset with serve",
                    )
                )
            if self.serve.model is None and not self.MODEL_FROM_STAGE:
                problems.append(("serve.model", "is not set: name the model to serve"))
        elif self.model is None and not self.MODEL_FROM_STAGE:
            problems.append(("model", "is not set: name the served model (base_url is set)"))
        if problems:
            raise KeyProblems(*problems)
        return self


class ThinkingRewardConfig(EndpointConfig):
    """Where SophiaVL's thinking reward model is served and how it is queried (§A3)."""

    model: str | None = Field(
        None,
        description="Served model name (released: thinking-reward-model); with serve, None: the "
        "served model.",
    )
    cache_dir: str | None = Field(None, description="Where replies are cached (None: nowhere).")
    on_failure: Literal["missing", "score_zero"] = Field(
        "missing",
        description="A failed call or unparseable reply: missing (None, TRL ignores the sample; "
        "trust_grpo drops the whole group) or score_zero (0.0, the released behaviour). Both are "
        "counted and logged.",
    )


class TrustGRPOSettings(Section):
    """SophiaVL-R1 Trust-GRPO (reference/sophiavl-satori.md §A1 paper, §A2 released code).

    ``released`` (default): groups whose outcome scores are all ≥ ``skip_high`` or all ≤
    ``skip_low`` get no thinking reward and no queries; only responses with outcome ≥
    ``query_threshold`` are scored; the trust factor applies only when some response is correct.
    ``paper``: every response is scored and the trust factor always applies (Eq. 1-6).
    """

    variant: Literal["released", "paper"] = "released"
    alpha: float = Field(0.3, ge=0, description="Weight of the thinking reward (hard-coded 0.3).")
    T: float | None = Field(
        None,
        gt=0,
        description="Annealing temperature in exp(-step/T). None: 500 (released config default; "
        "the released fullsets.yaml sets 12000) for released, max_steps for paper.",
    )
    query_threshold: Probability = 0.2
    skip_high: Probability = 0.9
    skip_low: Probability = 0.1
    correct_threshold: Probability = 0.5
    reward_model: ThinkingRewardConfig


class SelfRewardSettings(Section):
    """Vision-SR1 self-reward (reference/vision-sr1-easyr1.md §1.2): a second, image-free pass of
    the policy answers from its own description; no gradient flows through it."""

    missing_description: Literal["whole_response", "empty"] = Field(
        "whole_response",
        description="A response without <description>: released code sends the whole response "
        "(which can leak the boxed answer, §1.3 note); 'empty' sends an empty description.",
    )


class GRPOConfig(Section):
    enabled: bool = True
    algorithm: Literal["grpo", "trust_grpo", "self_reward"] = Field(
        "grpo",
        description="grpo (TRL as is), trust_grpo (SophiaVL-R1), self_reward (Vision-SR1).",
    )
    trust: TrustGRPOSettings | None = Field(None, description="Settings of trust_grpo.")
    self_reward: SelfRewardSettings = Field(default_factory=SelfRewardSettings)
    reward_model: ThinkingRewardConfig | None = Field(
        None,
        description="Endpoint for the sophiavl.thinking reward when it is listed in rewards "
        "(plain weighted reward, no trust logic).",
    )
    rewards: dict[str, FiniteFloat] = Field(
        default_factory=lambda: {"common.format": 0.5, "common.accuracy": 1.0},
        min_length=1,
        description="Reward name (see vlrl.rewards.REGISTRY) → weight.",
    )
    max_samples: int | None = Field(
        None, ge=1, description="Train on at most this many records (after the tasks filter)."
    )
    tasks: list[str] | None = Field(
        None,
        min_length=1,
        description="Train only on records whose task is one of these (None: every record). "
        "Tasks whose reward gives the policy no usable signal can be left out. With shapes data, "
        "each must be one of data.shapes.tasks.",
    )
    max_steps: PositiveInt = 100
    learning_rate: PositiveFloat = 1e-6
    per_device_train_batch_size: PositiveInt = Field(
        8, description="Completions per process per step (generation batch: x processes)."
    )
    gradient_accumulation_steps: PositiveInt = 1
    processes: PositiveInt = Field(
        1,
        description="Data-parallel training processes (torchrun; gloo on CPU), each with "
        "cpu_threads threads; each generates and trains on its share of the completions.",
    )
    num_generations: int = Field(4, ge=2)
    max_completion_length: PositiveInt = 64
    temperature: PositiveFloat = 1.0
    top_p: TopP = 1.0
    beta: NonNegativeFloat = 0.0
    epsilon: PositiveFloat = 0.2
    epsilon_high: PositiveFloat | None = None
    num_iterations: PositiveInt = 1
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    freeze_vision: bool = False
    lora: bool = False
    lora_rank: PositiveInt = 8
    lora_alpha: PositiveInt = 16
    gradient_checkpointing: bool = False
    logging_steps: PositiveInt = 5
    save_steps: int | None = Field(
        None, ge=1, description="Checkpoint every N steps (under results/<exp>/grpo_checkpoints)."
    )
    save_total_limit: int = Field(
        2,
        ge=1,
        description="Keep only the newest N checkpoints of a run (all are removed when it ends).",
    )
    resume: bool = Field(
        True,
        description="Resume from the last checkpoint of an interrupted run of the same config.",
    )
    stop_margin_s: NonNegativeInt = Field(
        300,
        description="How long before its Slurm job's time limit (resources.grpo.runtime) a run "
        "stops and saves a checkpoint, besides two of its longest steps: enough to write one. "
        "The job is then requeued and resumes.",
    )
    image_max_pixels: PositiveInt = 112 * 112
    image_min_pixels: PositiveInt = 56 * 56
    use_vllm: bool = Field(False, description="Generate rollouts with vLLM (needs vllm, a GPU).")
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    vllm_tensor_parallel_size: int = Field(1, ge=1)
    deepspeed: Literal["zero2", "zero3"] | None = Field(
        None, description="A DeepSpeed config of config/deepspeed/ (needs deepspeed and a GPU)."
    )

    @model_validator(mode="after")
    def _algorithm_settings(self) -> GRPOConfig:
        visual = sorted(set(self.rewards) & SELF_REWARD_READERS)
        problems = []
        if self.algorithm == "trust_grpo":
            if self.trust is None:
                problems.append(
                    (
                        "trust",
                        "grpo.algorithm is trust_grpo but grpo.trust (with reward_model: "
                        "base_url, model) is missing",
                    )
                )
            if THINKING_REWARD in self.rewards:
                problems.append(
                    (
                        "rewards",
                        f"grpo.rewards lists {THINKING_REWARD} under trust_grpo, which adds the "
                        "thinking reward itself; list only the outcome rewards",
                    )
                )
        if self.algorithm == "self_reward" and not visual:
            problems.append(
                (
                    "rewards",
                    "grpo.algorithm is self_reward but grpo.rewards has none of "
                    f"{sorted(SELF_REWARD_READERS)}, which read the second pass",
                )
            )
        if self.algorithm != "self_reward" and visual:
            problems.append(
                (
                    "rewards",
                    f"grpo.rewards lists {visual}, which need the second pass of "
                    "grpo.algorithm: self_reward",
                )
            )
        if THINKING_REWARD in self.rewards and self.reward_model is None:
            problems.append(
                (
                    "reward_model",
                    f"grpo.rewards lists {THINKING_REWARD} but grpo.reward_model (base_url, "
                    "model) is missing",
                )
            )
        # TRL 1.16 GRPOConfig: generation_batch_size = per_device_train_batch_size x processes x
        # steps_per_generation (= gradient_accumulation_steps) must hold whole groups of
        # num_generations completions.
        batch = self.per_device_train_batch_size * self.processes * self.gradient_accumulation_steps
        if batch % self.num_generations:
            problems.append(
                (
                    "per_device_train_batch_size",
                    "per_device_train_batch_size x processes x gradient_accumulation_steps = "
                    f"{batch} "
                    f"completions per step is not a multiple of num_generations "
                    f"({self.num_generations}); TRL generates whole groups of num_generations",
                )
            )
        problems += _order_problems(self, "image_min_pixels", "image_max_pixels")
        if problems:
            raise KeyProblems(*problems)
        return self


# -------------------------------------------------------------------------------------- infer
class OpenAIGenerationConfig(EndpointConfig):
    """The server the ``openai`` generation backend asks (``vllm serve``, hosted APIs); with
    ``serve`` and no ``serve.model``, the pipeline serves the checkpoint being evaluated."""

    MODEL_FROM_STAGE: ClassVar[bool] = True

    model: str | None = Field(
        None, description="Served model name (None: the checkpoint's model directory)."
    )
    cache_dir: str | None = Field(None, description="Where replies are cached (None: nowhere).")


class InferConfig(Section):
    backend: Literal["hf", "vllm", "openai"] = "hf"
    batch_size: PositiveInt = 16
    workers: int = Field(
        1,
        ge=1,
        description="hf backend: processes that split the items, whole batches each, "
        "cpu_threads threads apiece (CPU). The responses do not depend on it.",
    )
    max_new_tokens: PositiveInt = Field(
        2048,
        description="Generation budget (a benchmark's max_new_tokens wins): R1-style answers "
        "reason first, so the default is VLMEvalKit's Qwen2VLChat budget, as Vision-SR1 also "
        "evaluates; a short budget truncates the reasoning before the answer.",
    )
    temperature: NonNegativeFloat = Field(0.0, description="0: greedy decoding.")
    top_p: TopP = 1.0
    checkpoints: list[Literal["base", "sft", "grpo"]] = Field(
        default_factory=lambda: ["base", "sft", "grpo"],
        description="Which models of the experiment to evaluate on every benchmark.",
    )
    openai: OpenAIGenerationConfig | None = Field(
        None, description="The server of the openai backend (base_url, model, retries, cache)."
    )

    @model_validator(mode="after")
    def _openai_needs_endpoint(self) -> InferConfig:
        if self.backend == "openai" and self.openai is None:
            raise KeyProblems(
                (
                    "openai",
                    "infer.backend is 'openai' but infer.openai (base_url, model) is not set",
                )
            )
        return self


# -------------------------------------------------------------------------------------- score
class JudgeConfig(EndpointConfig):
    """An LLM judge behind any OpenAI-compatible endpoint. The key comes from the environment."""

    model: str | None = Field(
        None, description="Served model name of the judge (with serve, None: the served model)."
    )
    mode: Literal["fallback", "always"] = Field(
        "fallback",
        description="fallback: judge only items the rules mark wrong; always: judge all.",
    )
    temperature: NonNegativeFloat = 0.0
    max_tokens: PositiveInt = 16
    concurrency: PositiveInt = Field(4, description="Judge calls in flight at once.")
    backoff_s: NonNegativeFloat = Field(
        1.0, description="Wait before the first retry; doubles per retry, at most 30 s."
    )
    on_failure: Literal["unscored", "error", "score_zero"] = Field(
        "unscored",
        description="A judge call that fails or a reply that does not parse: unscored (the item "
        "counts neither right nor wrong: left out of every accuracy, counted as unscored in the "
        "scores file and the report), error (the stage fails, naming the items) or score_zero "
        "(the item scores 0, as some released evaluation scripts do, and the failure is "
        "counted).",
    )


class ScoreConfig(Section):
    iou_threshold: Annotated[float, Field(gt=0, le=1)] = 0.5
    judge: JudgeConfig | None = None
    generation_failures: Literal["error", "score_zero"] = Field(
        "error",
        description="Predictions the infer stage recorded as failed (the openai backend got no "
        "response): error (the stage fails, naming them) or score_zero (each scores 0 with "
        "method 'failed', and the scores file counts them).",
    )
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    bootstrap_resamples: PositiveInt = 2000


# ------------------------------------------------------------------------------------- report
class ReportConfig(Section):
    """The report stage: its title, the published numbers it sets beside the reproduced ones,
    and the sample gallery of its HTML page."""

    class Published(Section):
        """Rows of a published table (``config/reference/<reference>.yaml``) linked to the
        experiment's checkpoints, e.g. ``{base: qwen2_5_vl_7b, grpo: sophiavl_r1_7b}``.
        ``vlrl check`` checks that the file and its rows exist."""

        reference: str = Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            description="A file of config/reference/, without .yaml.",
        )
        rows: dict[Literal["base", "sft", "grpo"], str] = Field(
            min_length=1, description="Checkpoint → the id of a row of that file."
        )

    class Gallery(Section):
        """Sample items of each benchmark shown in the HTML report, every checkpoint's answer
        beside the others' (drawn with the experiment's seed, disagreements first)."""

        n: NonNegativeInt = Field(6, description="Items per benchmark; 0: no gallery.")
        reasoning_chars: PositiveInt = Field(
            600, description="Reasoning shown per answer; longer reasoning is cut there."
        )
        thumbnail_px: int = Field(256, ge=32, le=1024, description="Longest side of an image.")

    title: str | None = None
    published: list[Published] = Field(
        default_factory=list,
        description="Published rows set beside this experiment's checkpoints in the report.",
    )
    gallery: Gallery = Field(default_factory=Gallery)


# ---------------------------------------------------------------------------------- resources
class StageResources(Section):
    """What one job of a stage needs. On Slurm these become the job's sbatch request (the
    profile adds only partition and account); run locally, ``gpus`` and ``nodes`` drive the
    launch all the same: one training process per GPU, under torchrun.
    """

    gpus: NonNegativeInt = Field(
        0,
        description="GPUs per node (Slurm: --gres=gpu:N). Training runs one process per GPU; "
        "0: CPU (sft.processes / grpo.processes set the CPU processes).",
    )
    nodes: PositiveInt = Field(
        1,
        description="Nodes of the job (sft and grpo only): more than one launches one torchrun "
        "per node through srun, with the rendezvous on the first node.",
    )
    cpus: PositiveInt | None = Field(
        None, description="CPUs per node (Slurm: --cpus-per-task). None: the job's threads."
    )
    mem_mb: PositiveInt = Field(4000, description="Memory per node in MB (Slurm: --mem).")
    runtime: PositiveInt = Field(
        60,
        description="Time limit in minutes (Slurm: --time). GRPO stops before it, leaving a "
        "checkpoint that the requeued job (or the rerun) resumes.",
    )


DISTRIBUTED_STAGES = ("sft", "grpo")
"""The stages that may span GPUs and nodes (data-parallel training)."""


class ResourcesConfig(Section):
    """Resources per stage of the experiment (the shared base_model and download jobs take
    the profile's defaults). The results depend on ``gpus`` and ``nodes`` of the training
    stages (they set the process count), not on the rest."""

    data: StageResources = Field(default_factory=StageResources)
    sft: StageResources = Field(default_factory=StageResources)
    grpo: StageResources = Field(default_factory=StageResources)
    merge: StageResources = Field(default_factory=StageResources)
    infer: StageResources = Field(default_factory=StageResources)
    score: StageResources = Field(default_factory=StageResources)
    report: StageResources = Field(default_factory=StageResources)

    @model_validator(mode="after")
    def _one_node_unless_training(self) -> ResourcesConfig:
        problems = [
            (f"{stage}.nodes", f"{stage} runs on one node; only {DISTRIBUTED_STAGES} span nodes")
            for stage in type(self).model_fields
            if stage not in DISTRIBUTED_STAGES and getattr(self, stage).nodes > 1
        ]
        if problems:
            raise KeyProblems(*problems)
        return self


def processes_per_node(resources: StageResources, cpu_processes: int) -> int:
    """Training processes per node: one per GPU, else ``cpu_processes`` (CPU data parallelism).

    >>> processes_per_node(StageResources(gpus=8), 1), processes_per_node(StageResources(), 2)
    (8, 2)
    """
    return resources.gpus or cpu_processes


# --------------------------------------------------------------------------------- experiment
PromptName = Annotated[str, Field(description="A prompt format from vlrl.prompts.PROMPTS.")]


class ExperimentConfig(Section):
    """Everything one experiment needs. The name is the file stem, not a key."""

    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    cpu_threads: int | None = Field(
        None,
        ge=1,
        description="CPU threads of each stage process (torch, and OMP/MKL for LLaMA-Factory). "
        "Results on CPU depend on it: set it for numbers that reproduce across machines' core "
        "counts and test runs. None: the machine's default.",
    )
    cpu_kernels: Literal["portable", "avx2", "native"] = Field(
        "native",
        description="Which CPU kernels torch runs (vlrl/threads.py). portable: ATen's baseline "
        "kernels, MKL's processor-independent branch and oneDNN capped at SSE4.1, so every "
        "x86-64 CPU (Intel or AMD, AVX2 or AVX-512) computes the same bits; slower "
        "(docs/performance.md). avx2: the same with ATen's AVX2 kernels: the same bits on every "
        "x86-64 CPU with AVX2 (x86-64-v3, AVX-512 ones included), faster. native: the fastest "
        "kernels of the CPU at hand; results differ between CPUs. Changes the numbers either way.",
    )
    prompt: PromptName = "think_answer"
    data: DataConfig = Field(default_factory=DataConfig)
    base_model: str = Field(description="A model name from config/models/.")
    sft: SFTConfig = Field(default_factory=SFTConfig)
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    infer: InferConfig = Field(default_factory=InferConfig)
    benchmarks: list[str] = Field(description="Benchmark names from config/benchmarks/.")
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

    @property
    def checkpoints(self) -> list[str]:
        """The models this experiment evaluates, dropping stages the experiment disables."""
        enabled = {"base": True, "sft": self.sft.enabled, "grpo": self.grpo.enabled}
        return [c for c in self.infer.checkpoints if enabled[c]]


# ------------------------------------------------------------------------------------ loading
def _set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {key!r} is not a section")
    node[keys[-1]] = value


def parse_overrides(overrides: list[str]) -> list[tuple[str, Any]]:
    """Parse ``key.sub=value`` strings; values are read as YAML (``1e-5``, ``true``, ``[a, b]``).

    >>> parse_overrides(["grpo.learning_rate=1e-5", "sft.enabled=false"])
    [('grpo.learning_rate', 1e-05), ('sft.enabled', False)]
    """
    parsed = []
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw)
        # YAML 1.1 reads 1e-5 as a string; users mean a number.
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = float(value)
        parsed.append((key.strip(), value))
    return parsed


def apply_overrides(tree: dict[str, Any], overrides: list[str] | None) -> dict[str, Any]:
    """``tree`` with the ``key.sub=value`` overrides set in it (in place).

    >>> apply_overrides({"grpo": {"beta": 0.0}}, ["grpo.beta=0.04", "seed=1"])
    {'grpo': {'beta': 0.04}, 'seed': 1}
    """
    for key, value in parse_overrides(overrides or []):
        _set_dotted(tree, key, value)
    return tree


def load_experiment(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate ``config/experiments/<name>.yaml``.

    Raises:
        ConfigError: naming the file when it is missing or not YAML; a :class:`ConfigProblems`
            with one line per problem, each naming the file and the dotted key, when it is not a
            mapping, repeats a key, has unknown keys, values of the wrong type or out of their
            range, or keys that disagree.
    """
    path = paths.experiment_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path}: no such experiment {name!r}; known: {known}")
    return load_experiment_file(path, overrides)


def load_experiment_file(path: Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Validate one experiment file (see :func:`load_experiment`)."""
    return _load_yaml_model(path, ExperimentConfig, overrides)


def load_model(name: str) -> ModelConfig:
    """Load and validate ``config/models/<name>.yaml``."""
    path = paths.model_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path}: no such model {name!r}; known: {known}")
    return _load_yaml_model(path, ModelConfig)


def load_dataset(name: str) -> DatasetConfig:
    """Load and validate ``config/datasets/<name>.yaml``."""
    path = paths.dataset_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path}: no such dataset {name!r}; known: {known}")
    return _load_yaml_model(path, DatasetConfig)


def parse_yaml(path: Path) -> tuple[Any, list[str]]:
    """The YAML file ``path`` parsed, and one problem line per key repeated in one mapping (the
    tree keeps its last value, as PyYAML does), naming the file, the dotted key and both lines.

    Raises:
        ConfigError: the file is missing or not YAML.
    """
    try:
        loader = yaml.SafeLoader(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        repeated = [
            f"{path}: {key}: duplicate key (lines {first} and {again}); YAML would keep only "
            "the last value"
            for key, first, again in _repeated_keys(node, (), set())
        ]
        return loader.construct_document(node), repeated
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Any:
    """The YAML file ``path`` parsed; a repeated key is an error (PyYAML would keep the last
    value silently).

    Raises:
        ConfigError: the file is missing or not YAML; a :class:`ConfigProblems` naming the file,
            the dotted key and both lines of each repeated key.
    """
    tree, repeated = parse_yaml(path)
    if repeated:
        raise ConfigProblems(repeated)
    return tree


def _repeated_keys(
    node: yaml.Node, where: tuple[str, ...], seen: set[int]
) -> list[tuple[str, int, int]]:
    """``(dotted key, first line, repeated line)`` of every key ``node`` holds twice in a
    mapping, at any depth (lines count from 1)."""
    if id(node) in seen:  # an alias: its node was checked where it was anchored
        return []
    seen.add(id(node))
    found = []
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key in first:
                found.append((".".join((*where, key)), first[key], line))
            elif key is not None:
                first[key] = line
            found += _repeated_keys(value_node, (*where, key or "?"), seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _repeated_keys(item, (*where, str(index)), seen)
    return found


def validation_problems(exc: ValidationError, source: Path | str) -> list[str]:
    """One ``<source>: <dotted key>: <what is wrong>`` line per error of ``exc``.

    >>> try:
    ...     InferConfig.model_validate({"batch_size": -1, "top_p": 1.5})
    ... except ValidationError as exc:
    ...     print("\\n".join(validation_problems(exc, "e.yaml")))
    e.yaml: batch_size: Input should be greater than 0 (got -1)
    e.yaml: top_p: Input should be less than or equal to 1 (got 1.5)
    """
    lines = []
    for err in exc.errors():
        where = [str(p) for p in err["loc"]]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, KeyProblems):
            lines += [
                f"{source}: {'.'.join(p for p in (*where, key) if p) or '<top>'}: {why}"
                for key, why in cause.problems
            ]
            continue
        got = f" (got {err['input']!r})" if err["type"] != "missing" and "input" in err else ""
        lines.append(f"{source}: {'.'.join(where) or '<top>'}: {err['msg']}{got}")
    return lines


def _load_yaml_model(path: Path, model: type[BaseModel], overrides: list[str] | None = None) -> Any:
    tree, problems = parse_yaml(path)
    tree = {} if tree is None else tree
    if not isinstance(tree, dict):
        problems.append(f"{path}: <top>: must be a mapping, got {type(tree).__name__}")
        raise ConfigProblems(problems)
    apply_overrides(tree, overrides)
    try:
        cfg = model.model_validate(tree)
    except ValidationError as exc:
        problems += validation_problems(exc, path)
    if problems:
        raise ConfigProblems(problems)
    return cfg
