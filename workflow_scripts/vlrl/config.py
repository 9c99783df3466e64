"""Typed experiment configuration.

One experiment is one file, ``config/experiments/<name>.yaml``. Merge order (EasyR1 style):
model defaults below → the experiment file → ``--set key.sub=value`` overrides on the command
line. Unknown keys and wrong types are rejected with the file and the key named.

Each top-level section is read by exactly one stage family, and the DVC stage generated for it
lists that section as its params (see :mod:`vlrl.workflow.dvc_export`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vlrl import paths
from vlrl.errors import ConfigError


class Section(BaseModel):
    """Base for every config section: unknown keys are errors; assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


# --------------------------------------------------------------------------------------- data
class ShapesConfig(Section):
    """The synthetic shapes world (the embedded default's data)."""

    image_size: int = Field(112, ge=28, description="Square image side in pixels.")
    min_shapes: int = Field(1, ge=1)
    max_shapes: int = Field(4, ge=1, le=8)
    tasks: list[Literal["color", "count", "grounding", "caption", "arithmetic"]] = Field(
        default_factory=lambda: ["color", "count", "grounding", "caption", "arithmetic"]
    )
    n_train: int = Field(2000, ge=1, description="Training records (all tasks).")
    n_val: int = Field(100, ge=0)
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
            raise ValueError(
                "data.source is 'hub' but data.hub (repo_id, revision, converter) is missing"
            )
        return self


# --------------------------------------------------------------------------------- base model
class TinyModelConfig(Section):
    """Shape of the locally built tiny Qwen2.5-VL (random init)."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vision_depth: int = 2
    vision_hidden_size: int = 32
    vocab_size: int = Field(600, ge=300, description="Target BPE vocabulary size.")
    min_pixels: int = 56 * 56
    max_pixels: int = 112 * 112


class HubModelConfig(Section):
    repo_id: str
    revision: str = Field(description="Commit sha or tag; never a moving branch.")


class ModelConfig(Section):
    """A base model, ``config/models/<name>.yaml``: shared by experiments, built once under
    ``resources/models/<name>/``."""

    builder: Literal["tiny", "hf"] = "tiny"
    tiny: TinyModelConfig = Field(default_factory=TinyModelConfig)
    hf: HubModelConfig | None = None

    @model_validator(mode="after")
    def _hf_needs_repo(self) -> ModelConfig:
        if self.builder == "hf" and self.hf is None:
            raise ValueError(
                "base_model.builder is 'hf' but base_model.hf (repo_id, revision) is missing"
            )
        return self


# ---------------------------------------------------------------------------------------- sft
class SFTConfig(Section):
    enabled: bool = True
    finetuning_type: Literal["full", "lora"] = "full"
    freeze_vision_tower: bool = False
    max_samples: int | None = Field(None, description="Use at most this many training records.")
    num_train_epochs: float = 2.0
    learning_rate: float = 1e-5
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = 0.0
    cutoff_len: int = 1024
    lora_rank: int = 8
    image_max_pixels: int = 112 * 112
    image_min_pixels: int = 56 * 56
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Extra LLaMA-Factory train keys, passed through as is."
    )


# --------------------------------------------------------------------------------------- grpo
THINKING_REWARD = "sophiavl.thinking"
"""The reward-model reward: configured by ``grpo.reward_model``, not a plain registry function."""
SELF_REWARD_READERS = frozenset({"vision_sr1.visual", "vision_sr1.total"})
"""Rewards that read the ``self_reward_responses`` column the self_reward algorithm fills."""


class ThinkingRewardConfig(Section):
    """Where SophiaVL's thinking reward model is served and how it is queried (§A3).

    The key is read from ``os.environ[api_key_env]`` at call time and never stored.
    """

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. http://host:8000/v1.")
    model: str = Field(description="Served model name (released: thinking-reward-model).")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key.")
    concurrency: int = Field(8, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0)
    backoff_s: float = Field(0.5, ge=0)
    cache_dir: str | None = None
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
    query_threshold: float = 0.2
    skip_high: float = 0.9
    skip_low: float = 0.1
    correct_threshold: float = 0.5
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
    rewards: dict[str, float] = Field(
        default_factory=lambda: {"common.format": 0.5, "common.accuracy": 1.0},
        description="Reward name (see vlrl.rewards.REGISTRY) → weight.",
    )
    max_samples: int | None = Field(
        None, ge=1, description="Train on at most this many records (after the tasks filter)."
    )
    tasks: list[str] | None = Field(
        None,
        description="Train only on records whose task is one of these (None: every record). "
        "Tasks whose reward gives the policy no usable signal can be left out.",
    )
    max_steps: int = 100
    learning_rate: float = 1e-6
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    num_generations: int = Field(4, ge=2)
    max_completion_length: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    num_iterations: int = 1
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    freeze_vision: bool = False
    lora: bool = False
    lora_rank: int = 8
    lora_alpha: int = 16
    gradient_checkpointing: bool = False
    logging_steps: int = 5
    save_steps: int | None = Field(
        None, ge=1, description="Checkpoint every N steps (under results/<exp>/grpo_checkpoints)."
    )
    resume: bool = Field(
        True,
        description="Resume from the last checkpoint of an interrupted run of the same config.",
    )
    image_max_pixels: int = 112 * 112
    image_min_pixels: int = 56 * 56
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
        if self.algorithm == "trust_grpo":
            if self.trust is None:
                raise ValueError(
                    "grpo.algorithm is trust_grpo but grpo.trust (with reward_model: base_url, "
                    "model) is missing"
                )
            if THINKING_REWARD in self.rewards:
                raise ValueError(
                    f"grpo.rewards lists {THINKING_REWARD} under trust_grpo, which adds the "
                    "thinking reward itself; list only the outcome rewards"
                )
        if self.algorithm == "self_reward" and not visual:
            raise ValueError(
                "grpo.algorithm is self_reward but grpo.rewards has none of "
                f"{sorted(SELF_REWARD_READERS)}, which read the second pass"
            )
        if self.algorithm != "self_reward" and visual:
            raise ValueError(
                f"grpo.rewards lists {visual}, which need the second pass of "
                "grpo.algorithm: self_reward"
            )
        if THINKING_REWARD in self.rewards and self.reward_model is None:
            raise ValueError(
                f"grpo.rewards lists {THINKING_REWARD} but grpo.reward_model (base_url, model) "
                "is missing"
            )
        return self


# -------------------------------------------------------------------------------------- infer
class InferConfig(Section):
    backend: Literal["hf", "vllm", "openai"] = "hf"
    batch_size: int = 16
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    checkpoints: list[Literal["base", "sft", "grpo"]] = Field(
        default_factory=lambda: ["base", "sft", "grpo"],
        description="Which models of the experiment to evaluate on every benchmark.",
    )
    openai_base_url: str | None = None
    openai_model: str | None = None


# -------------------------------------------------------------------------------------- score
class JudgeConfig(Section):
    """An LLM judge behind any OpenAI-compatible endpoint. The key comes from the environment."""

    base_url: str
    model: str
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key.")
    mode: Literal["fallback", "always"] = Field(
        "fallback",
        description="fallback: judge only items the rules mark wrong; always: judge all.",
    )
    temperature: float = 0.0
    max_tokens: int = 16
    timeout_s: float = 60.0
    max_retries: int = 3
    concurrency: int = 4
    on_failure: Literal["error", "score_zero"] = Field(
        "error",
        description="A judge call that fails or a reply that does not parse: error (the stage "
        "fails) or score_zero (the item scores 0 and the failure is counted in the scores file).",
    )


class ScoreConfig(Section):
    iou_threshold: float = 0.5
    judge: JudgeConfig | None = None
    confidence: float = 0.95
    bootstrap_resamples: int = 2000


# ------------------------------------------------------------------------------------- report
class ReportConfig(Section):
    title: str | None = None


# --------------------------------------------------------------------------------- experiment
PromptName = Annotated[str, Field(description="A prompt format from vlrl.prompts.PROMPTS.")]


class ExperimentConfig(Section):
    """Everything one experiment needs. The name is the file stem, not a key."""

    description: str = ""
    seed: int = 0
    cpu_threads: int | None = Field(
        None,
        ge=1,
        description="CPU threads of each stage process (torch, and OMP/MKL for LLaMA-Factory). "
        "Results on CPU depend on it: set it for numbers that reproduce across machines' core "
        "counts and test runs. None: the machine's default.",
    )
    cpu_kernels: Literal["portable", "native"] = Field(
        "native",
        description="Which CPU kernels torch runs (vlrl/threads.py). portable: ATen's baseline "
        "kernels, MKL's processor-independent branch and oneDNN capped at SSE4.1, so every "
        "x86-64 CPU (Intel or AMD, AVX2 or AVX-512) computes the same bits; slower "
        "(docs/performance.md). native: the fastest kernels of the CPU at hand; results differ "
        "between CPUs. Changes the numbers either way.",
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

    @model_validator(mode="after")
    def _known_model(self) -> ExperimentConfig:
        # Prompt and reward names are checked one floor up (vlrl.workflow.check), so that this
        # module imports neither registry: config is below the code it configures.
        if not paths.model_file(self.base_model).is_file():
            known = sorted(p.stem for p in paths.model_file(self.base_model).parent.glob("*.yaml"))
            raise ValueError(
                f"base_model {self.base_model!r} has no config/models file; known: {known}"
            )
        return self

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


def load_experiment(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate ``config/experiments/<name>.yaml``.

    Raises:
        ConfigError: naming the file and every offending key when the file is missing, is not a
            mapping, has unknown keys or has values of the wrong type.
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


def _load_yaml_model(path: Path, model: type[BaseModel], overrides: list[str] | None = None) -> Any:
    try:
        tree = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(tree).__name__}")
    for key, value in parse_overrides(overrides or []):
        _set_dotted(tree, key, value)
    try:
        return model.model_validate(tree)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}"
            + (f" (got {err['input']!r})" if err["type"] != "missing" and "input" in err else "")
            for err in exc.errors()
        )
        raise ConfigError(f"{path}: {problems}") from None
