"""The ``openai`` backend: any OpenAI-compatible server (``vllm serve``, ``transformers serve``,
hosted APIs). Images travel as base64 PNG data URLs; the key comes from ``$OPENAI_API_KEY``."""

from __future__ import annotations

import asyncio
import base64
import io
import os
from typing import Any

from PIL import Image

from vlrl.config import InferConfig
from vlrl.errors import StageError


def image_part(img: Image.Image) -> dict[str, Any]:
    """An ``image_url`` content part holding ``img`` as a PNG data URL."""
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


class OpenAIGenerator:
    """Concurrent chat completions; a failed request raises (never an empty prediction)."""

    def __init__(self, model_dir: str, cfg: InferConfig, seed: int, concurrency: int = 8) -> None:
        if not cfg.openai_base_url:
            raise StageError("infer.backend is 'openai' but infer.openai_base_url is not set")
        self.cfg, self.seed, self.concurrency = cfg, seed, concurrency
        self.model = cfg.openai_model or model_dir

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str]:
        return asyncio.run(self._generate_all(conversations, images))

    async def _generate_all(self, conversations, images) -> list[str]:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=self.cfg.openai_base_url, api_key=os.environ.get("OPENAI_API_KEY", "EMPTY")
        )
        limit = asyncio.Semaphore(self.concurrency)

        async def one(conversation, imgs) -> str:
            pending = iter(imgs)
            messages = [
                {
                    **m,
                    "content": [
                        image_part(next(pending)) if p.get("type") == "image" else p
                        for p in m["content"]
                    ],
                }
                for m in conversation
            ]
            async with limit:
                reply = await client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    max_tokens=self.cfg.max_new_tokens,
                    temperature=self.cfg.temperature,
                    top_p=self.cfg.top_p,
                    seed=self.seed,
                )
            return reply.choices[0].message.content or ""

        async with client:
            return await asyncio.gather(
                *(one(c, i) for c, i in zip(conversations, images, strict=True))
            )
