"""OpenAI-compatible endpoints (a judge, a reward model, a generation server) and the servers
the pipeline starts for them."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from vlrl.config.base import HttpUrlText, KeyProblems, Section


class ServeConfig(Section):
    """A server the pipeline starts for the stage that needs it and stops after it, also when the
    stage fails (:func:`vlrl.serving.servers.serving`): ``vllm serve`` on GPUs, ``transformers
    serve`` on CPU, on 127.0.0.1, run from the project root, logging under ``logs/``."""

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
        "[--dtype, bfloat16], or vllm's [--max-model-len, 8192]); a flag given here replaces "
        "the default vlrl would pass.",
    )
    gpus: NonNegativeInt = Field(
        0,
        description="GPUs of the stage's node the server takes for itself: the last ones "
        "visible (CUDA_VISIBLE_DEVICES), the training ranks keep the others. 0: it shares the "
        "stage's GPUs. One-node stages only.",
    )
    gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        le=1,
        description="vllm: the fraction of each of its GPUs' memory the server takes. None: 0.9; "
        "a vllm server sharing a training stage's GPUs (gpus: 0) must set it.",
    )
    max_model_len: PositiveInt | None = Field(
        None,
        description="vllm: cap on prompt + reply tokens (--max-model-len). None: the model's "
        "max_position_embeddings, passed for a vision-language model.",
    )
    images_per_prompt: PositiveInt = Field(
        4,
        description="vllm, a vision-language model (config.json with vision_config): the most "
        "images one request may carry (--limit-mm-per-prompt).",
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
    and stops, :func:`vlrl.serving.servers.serving`) is set. The key is read from
    ``os.environ[api_key_env]`` at call time and never stored.

    >>> EndpointConfig(serve={"model": "resources/models/judge"}).base_url is None
    True
    """

    MODEL_FROM_STAGE: ClassVar[bool] = False
    """Whether the consumer supplies the model when none is named (infer.openai: the checkpoint)."""

    base_url: HttpUrlText | None = Field(
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
        "serve:<backend>:<model>@<fingerprint of the weights and reply-changing arguments>, so "
        "that its replies are found again whatever port it got, and never for other weights.",
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
                        "is set by the pipeline for a server it starts "
                        "(serve:<backend>:<model>@<fp>); leave it unset with serve",
                    )
                )
            if self.serve.model is None and not self.MODEL_FROM_STAGE:
                problems.append(("serve.model", "is not set: name the model to serve"))
        elif self.model is None and not self.MODEL_FROM_STAGE:
            problems.append(("model", "is not set: name the served model (base_url is set)"))
        if problems:
            raise KeyProblems(*problems)
        return self
