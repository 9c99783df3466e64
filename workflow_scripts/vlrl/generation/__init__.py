"""Generation backends: ``hf`` (transformers generate), ``vllm`` (GPU), ``openai`` (any
OpenAI-compatible server). Each turns (conversation, images) pairs into response texts.
"""

from __future__ import annotations

from typing import Any, Protocol

from PIL import Image

from vlrl.config import InferConfig
from vlrl.errors import StageError


class Generator(Protocol):
    """What every backend offers."""

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str]: ...


def make_generator(cfg: InferConfig, model_dir: str, seed: int) -> Generator:
    """The backend ``cfg.backend`` for ``model_dir``."""
    if cfg.backend == "hf":
        from vlrl.generation.hf import HFGenerator

        return HFGenerator(model_dir, cfg, seed)
    if cfg.backend == "vllm":
        from vlrl.generation.vllm import VLLMGenerator

        return VLLMGenerator(model_dir, cfg, seed)
    if cfg.backend == "openai":
        from vlrl.generation.openai import OpenAIGenerator

        return OpenAIGenerator(model_dir, cfg, seed)
    raise StageError(f"unknown generation backend {cfg.backend!r}")
