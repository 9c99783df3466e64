"""The ``vllm`` backend: offline ``vllm.LLM.chat`` (GPU; vllm is an optional install)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from vlrl.config import InferConfig
from vlrl.errors import StageError


class VLLMGenerator:
    """Batched chat generation with vLLM; images are passed as PIL parts."""

    def __init__(self, model_dir: str, cfg: InferConfig, seed: int) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise StageError(
                "infer.backend is 'vllm' but vllm is not installed (GPU extra)"
            ) from exc
        self.llm = LLM(model=model_dir, seed=seed, limit_mm_per_prompt={"image": 4})
        self.params = SamplingParams(
            temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_new_tokens, seed=seed
        )

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str]:
        messages = [_with_pil(c, imgs) for c, imgs in zip(conversations, images, strict=True)]
        outputs = self.llm.chat(messages, self.params, use_tqdm=False)
        return [o.outputs[0].text for o in outputs]


def _with_pil(
    conversation: list[dict[str, Any]], images: list[Image.Image]
) -> list[dict[str, Any]]:
    """Replace ``{"type": "image"}`` placeholders by vLLM's ``image_pil`` parts, in order."""
    pending = iter(images)
    out = []
    for message in conversation:
        content = [
            {"type": "image_pil", "image_pil": next(pending)}
            if part.get("type") == "image"
            else part
            for part in message["content"]
        ]
        out.append({**message, "content": content})
    return out
