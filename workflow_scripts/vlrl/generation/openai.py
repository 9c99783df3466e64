"""The ``openai`` backend: any OpenAI-compatible server (``vllm serve``, ``transformers serve``,
hosted APIs), configured by ``infer.openai`` (:class:`vlrl.config.OpenAIGenerationConfig`).

Requests go through :class:`vlrl.endpoints.EndpointClient`: bounded concurrency, retries with
backoff, the key from ``$infer.openai.api_key_env``, replies cached under ``cache_dir`` when it
is set. Images travel as base64 PNG data URLs. A request that fails for good comes back as a
:class:`vlrl.endpoints.Failure`, which the infer stage records as the item's ``error``: it never
becomes an empty or made-up response. With ``infer.openai.serve`` the infer stage starts the
server for the generation (:func:`vlrl.serving.servers.serving`) and passes this backend the started
config.
"""

from __future__ import annotations

import base64
import io
import logging
from typing import Any

from PIL import Image

from vlrl.config import InferConfig
from vlrl.core.errors import StageError
from vlrl.endpoints import EndpointCache, EndpointClient, Failure

log = logging.getLogger(__name__)

PROMPT_VERSION = "openai-chat-v1"
"""Part of the cache key: bump it when :meth:`OpenAIGenerator.body` changes how it asks."""
MAX_LOGGED = 10


def image_part(img: Image.Image) -> dict[str, Any]:
    """An ``image_url`` content part holding ``img`` as a PNG data URL."""
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}}


class OpenAIGenerator:
    """Chat completions from ``infer.openai``'s server, one per conversation.

    Args:
        model_dir: the checkpoint; its path is the served model name unless
            ``infer.openai.model`` names one.
        cfg: the infer section (decoding parameters and ``openai``).
        seed: sent with every request (servers that honour it then sample reproducibly).
    """

    def __init__(self, model_dir: str, cfg: InferConfig, seed: int) -> None:
        if cfg.openai is None:
            raise StageError("infer.backend is 'openai' but infer.openai is not set")
        self.cfg, self.seed = cfg, seed
        endpoint = cfg.openai
        self.model = endpoint.model or model_dir
        cache = (
            EndpointCache(endpoint.cache_dir, endpoint.cache_max_entries)
            if endpoint.cache_dir
            else None
        )
        self.client = EndpointClient(endpoint, PROMPT_VERSION, cache, label="infer openai")
        self.client.api_key()  # a missing required key fails before the first batch

    def body(self, conversation: list[dict[str, Any]], images: list[Image.Image]) -> dict:
        """The request for one conversation; its image parts, in order, carry ``images``."""
        pending = iter(images)
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
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.cfg.max_new_tokens,
            "temperature": self.cfg.temperature,
            "top_p": self.cfg.top_p,
            "seed": self.seed,
        }

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str | Failure]:
        """One response per conversation, in order; a :class:`Failure` where none came."""
        bodies = [self.body(c, i) for c, i in zip(conversations, images, strict=True)]
        results = self.client.complete(bodies)
        failed = [(i, r) for i, r in enumerate(results) if isinstance(r, Failure)]
        for index, failure in failed[:MAX_LOGGED]:
            log.warning("infer openai: item %d of the batch failed: %s", index, failure)
        if failed:
            log.warning(
                "infer openai: %d of %d requests failed; they are recorded as errors",
                len(failed),
                len(results),
            )
        return [r if isinstance(r, Failure) else r.value for r in results]
