"""The evaluation stages: inference, scoring (rules and the LLM judge) and the report."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, model_validator

from vlrl.config.base import KeyProblems, Section, TopP, UniqueList
from vlrl.config.endpoints import EndpointConfig
from vlrl.core.paths import CHECKPOINTS, Checkpoint


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
    max_new_tokens: PositiveInt | None = Field(
        None,
        description="Generation budget (a benchmark's max_new_tokens wins). None: GRPO's "
        "max_completion_length when the experiment trains with GRPO (evaluate with the budget "
        "it trained with), else 2048, VLMEvalKit's Qwen2VLChat budget, as Vision-SR1 also "
        "evaluates (R1-style answers reason first; a short budget cuts the reasoning).",
    )
    temperature: NonNegativeFloat = Field(0.0, description="0: greedy decoding.")
    top_p: TopP = 1.0
    prompt: str | None = Field(
        None,
        description="A prompt format every benchmark is asked in, instead of its own (a "
        "benchmark config sets its paper's evaluation prompt): for a model trained to answer in "
        "another format, as VLM-R1's SFT baseline is evaluated with its own template. None: each "
        "benchmark's prompt, else the experiment's.",
    )
    checkpoints: Annotated[list[Checkpoint], UniqueList] = Field(
        default_factory=lambda: list(CHECKPOINTS),
        min_length=1,
        description="Which models of the experiment to evaluate on every benchmark.",
    )
    openai: OpenAIGenerationConfig | None = Field(
        None, description="The server of the openai backend (base_url, model, retries, cache)."
    )
    vllm_args: dict[str, Any] = Field(
        default_factory=dict,
        description="vllm backend: engine arguments of vllm.LLM that win over vlrl's (e.g. "
        "enforce_eager: true skips torch.compile and CUDA graphs, minutes on a CPU; "
        "max_model_len, gpu_memory_utilization).",
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


class JudgeConfig(EndpointConfig):
    """An LLM judge behind any OpenAI-compatible endpoint. The key comes from the environment."""

    model: str | None = Field(
        None, description="Served model name of the judge (with serve, None: the served model)."
    )
    mode: Literal["fallback", "always"] = Field(
        "fallback",
        description="For benchmarks whose scoring protocol may use a judge: fallback judges "
        "only items the rules mark wrong (a failed call keeps the rule verdict and is counted); "
        "always judges all.",
    )
    benchmarks: dict[str, Literal["fallback", "always"]] = Field(
        default_factory=dict,
        description="Benchmark → judge mode, whatever its scoring protocol says: the way to "
        "judge a benchmark whose reference scoring is rules only (never judged otherwise).",
    )
    temperature: NonNegativeFloat = 0.0
    max_tokens: PositiveInt = 16
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Request fields beyond OpenAI's that the server understands, sent as they "
        "are (part of the cache key), e.g. vLLM's structured outputs, {structured_outputs: "
        "{choice: ['0', '1']}}, which hold a judge to a verdict.",
    )
    concurrency: PositiveInt = Field(4, description="Judge calls in flight at once.")
    backoff_s: NonNegativeFloat = Field(
        1.0, description="Wait before the first retry; doubles per retry, at most 30 s."
    )
    on_failure: Literal["unscored", "error", "score_zero"] = Field(
        "unscored",
        description="A judge call that fails or a reply that does not parse, in mode always "
        "(in mode fallback the item keeps its rule verdict, and the failure is counted): "
        "unscored (the item counts neither right nor wrong: left out of every accuracy, and of "
        "every group metric its group, counted in the scores file and the report), error (the "
        "stage fails, naming the items; in either mode) or score_zero (the item scores 0, as "
        "some released evaluation scripts do, and the failure is counted).",
    )


class ScoreConfig(Section):
    iou_threshold: Annotated[float, Field(gt=0, le=1)] = 0.5
    protocol: dict[str, str] = Field(
        default_factory=dict,
        description="Benchmark → the scoring protocol it is scored by, one its config lists "
        "(default: its first, the protocol of its reference scorer). vlrl check checks both.",
    )
    judge: JudgeConfig | None = None
    generation_failures: Literal["error", "score_zero"] = Field(
        "error",
        description="Predictions the infer stage recorded as failed (the openai backend got no "
        "response): error (the stage fails, naming them) or score_zero (each scores 0 with "
        "method 'failed', and the scores file counts them).",
    )
    confidence: Annotated[float, Field(gt=0, lt=1)] = 0.95
    bootstrap_resamples: PositiveInt = 2000


class ReportConfig(Section):
    """The report stage: its title, benchmarks it also shows as one number, the published
    numbers it sets beside the reproduced ones, and the sample gallery of its HTML page."""

    class Published(Section):
        """Rows of a published table (``config/reference/<reference>.yaml``) linked to the
        experiment's checkpoints, e.g. ``{base: qwen2_5_vl_7b, grpo: sophiavl_r1_7b}``.
        ``vlrl check`` checks that the file and its rows exist."""

        reference: str = Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            description="A file of config/reference/, without .yaml.",
        )
        rows: dict[Checkpoint, str] = Field(
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

    class Combined(Section):
        """Benchmarks the report also shows as one number, as a paper prints them: their
        accuracy over all their items, i.e. the mean of their accuracies weighted by their
        scored items (Vision-SR1's ``weighted_mmmu_pro``). Shown beside its parts, in
        ``metrics.json``, and matched to a published column ``pooled`` from the same
        benchmarks. Each benchmark must be one of the experiment's."""

        benchmarks: Annotated[list[str], UniqueList] = Field(
            min_length=2, description="The experiment's benchmarks it combines."
        )
        weights: Literal["items"] = Field(
            "items",
            description="items: each benchmark's accuracy weighted by its scored items (the "
            "correct items over all items); the one rule so far.",
        )

    title: str | None = None
    combined: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")], Combined] = (
        Field(
            default_factory=dict,
            description="Name → benchmarks the report also shows as one number (their "
            "item-weighted accuracy), e.g. {mmmu_pro: {benchmarks: [mmmu_pro_standard4, "
            "mmmu_pro_standard10, mmmu_pro_vision]}}.",
        )
    )
    published: list[Published] = Field(
        default_factory=list,
        description="Published rows set beside this experiment's checkpoints in the report.",
    )
    gallery: Gallery = Field(default_factory=Gallery)
