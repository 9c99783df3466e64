"""Generation backends: ``hf`` (transformers generate), ``vllm`` (GPU), ``openai`` (any
OpenAI-compatible server). Each turns (conversation, images) pairs into response texts; the
``openai`` backend gives a :class:`vlrl.endpoints.Failure` instead where a request failed for good
(the local backends raise).

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.cluster`, :mod:`vlrl.endpoints`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from PIL import Image

from vlrl.config import InferConfig
from vlrl.core.errors import StageError

if TYPE_CHECKING:
    from vlrl.endpoints import Failure


class Generator(Protocol):
    """What every backend offers: one response text, or a failure, per conversation."""

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str | Failure]: ...


def generating_processes(cfg: InferConfig) -> int:
    """Processes to generate with: ``cfg.workers`` for the local ``hf`` backend, else one (vLLM
    and servers batch for themselves). The infer stage splits its items among them; the infer
    rule holds ``cpu_threads`` cores for each (``rules/common.smk``).

    >>> generating_processes(InferConfig(backend="hf", workers=2))
    2
    >>> generating_processes(InferConfig(backend="vllm", workers=2))
    1
    """
    return cfg.workers if cfg.backend == "hf" else 1


def make_generator(
    cfg: InferConfig,
    model_dir: str,
    seed: int,
    *,
    gpus: int = 1,
    max_images: int | None = None,
) -> Generator:
    """The backend ``cfg.backend`` for ``model_dir``. ``gpus`` (the infer job's
    ``resources.infer.gpus``) and ``max_images`` (the most images an item has) size the ``vllm``
    backend: its tensor parallelism and the images it admits per prompt; the others ignore
    them."""
    if cfg.backend == "hf":
        from vlrl.generation.hf import HFGenerator

        return HFGenerator(model_dir, cfg, seed)
    if cfg.backend == "vllm":
        from vlrl.generation.vllm import VLLMGenerator

        return VLLMGenerator(model_dir, cfg, seed, gpus=gpus, max_images=max_images)
    if cfg.backend == "openai":
        from vlrl.generation.openai import OpenAIGenerator

        return OpenAIGenerator(model_dir, cfg, seed)
    raise StageError(f"unknown generation backend {cfg.backend!r}")
