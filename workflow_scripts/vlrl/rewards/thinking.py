"""``sophiavl.thinking``: SophiaVL-R1's thinking reward model behind any OpenAI-compatible
endpoint (reference/sophiavl-satori.md §A3).

The request body is :func:`vlrl.rewards.sophiavl.thinking_request` (generic system turn, the
decoded prompt plus the full response, the sample's first image as a base64 PNG data URL,
``temperature: 0.0``); the reply is parsed with :func:`~vlrl.rewards.sophiavl.parse_thinking_score`.

Differences from the released client, which are deliberate:

- Concurrency: requests go out concurrently through ``openai.AsyncOpenAI`` (its own retries off),
  bounded by an ``asyncio.Semaphore(cfg.concurrency)``; the released code is sequential.
- Retries: connection errors, timeouts, 429 and 5xx are retried ``cfg.max_retries`` times with
  exponential backoff (``backoff_s · 2^k``, at most 30 s; :func:`vlrl.endpoints.complete`);
  other HTTP errors are not retried.
- Failures are never scored silently. A call that still fails, or a reply in which no extractor
  of ``parse_thinking_score`` matches, gives None for that sample (TRL: not applicable) with
  ``on_failure="missing"``, or 0.0 with ``on_failure="score_zero"`` (the released behaviour);
  either way ``failures`` is counted and a warning with the count is logged.
- Cache: one JSON file per parsed score under ``cfg.cache_dir`` (write-through, atomic, via
  :class:`vlrl.endpoints.EndpointCache`), keyed by the sha256 of the request body. Failures are
  not cached.
- The API key is read from ``os.environ[cfg.api_key_env]`` at call time, is sent as a bearer
  token, is never stored on the object (so never pickled) and is scrubbed from logged errors and
  cached replies.

The Trust-GRPO group logic (skip rule, querying only when the outcome score is ≥ 0.2, the trust
weight, annealing; §A2) is not here: this callable scores every completion it is given.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from vlrl.config import THINKING_REWARD, ThinkingRewardConfig
from vlrl.endpoints import CallFailed, EndpointCache, complete, redact_url
from vlrl.rewards.common import completion_text
from vlrl.rewards.sophiavl import (
    _SCORE_EXTRACTORS,
    decoded_chat_prompt,
    parse_thinking_score,
    thinking_request,
)

log = logging.getLogger(__name__)

NAME = THINKING_REWARD
CACHE_VERSION = "sophiavl-thinking-v1"
"""Part of the cache key: bump it when the request text or the parsing change."""

MAX_LOGGED = 10


class ThinkingCache(EndpointCache):
    """Thinking scores in :class:`vlrl.endpoints.EndpointCache` storage (atomic, write-through)."""

    def valid(self, entry: dict[str, Any]) -> bool:
        """A stored entry is usable when it holds a score in [0, 1]."""
        score = entry.get("score")
        return not isinstance(score, bool) and isinstance(score, int | float) and 0 <= score <= 1


def parse_score_or_none(reply: str | None) -> float | None:
    """:func:`parse_thinking_score`, but None when no extractor matches or the number does not
    parse (where the released code scores 0).

    >>> parse_score_or_none("<answer>0.7</answer>"), parse_score_or_none("no score")
    (0.7, None)
    >>> parse_score_or_none("</think><answer>2.3.4</answer>"), parse_score_or_none(None)
    (None, None)
    """
    if not reply:
        return None
    for pattern, convert in _SCORE_EXTRACTORS:
        match = pattern.search(reply)
        if match:
            try:
                convert(match.group(1))
            except ValueError:
                return None
            return parse_thinking_score(reply)
    return None


def request_key(body: dict[str, Any]) -> str:
    """sha256 of the request body and :data:`CACHE_VERSION` (never the key or the URL)."""
    blob = json.dumps({"version": CACHE_VERSION, "body": body}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def image_png_b64(image: Any) -> str | None:
    """A sample's first image as base64 PNG: a PIL image, a path, raw bytes, a ``{"bytes"}`` or
    ``{"path"}`` dict, or a list of those (the first is used). None when there is none.

    >>> image_png_b64(None), image_png_b64([])
    (None, None)
    """
    if isinstance(image, list | tuple):
        return image_png_b64(image[0]) if image else None
    if image is None:
        return None
    from PIL import Image

    if isinstance(image, dict):
        image = image.get("bytes") or image.get("path")
        if image is None:
            return None
    if isinstance(image, bytes):
        image = Image.open(io.BytesIO(image))
    elif isinstance(image, str | Path):
        with Image.open(image) as opened:
            opened.load()
            image = opened.copy()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def prompt_text(prompt: Any) -> str:
    """The decoded prompt custom.py sends: conversational prompts through
    :func:`decoded_chat_prompt`, plain strings as they are.

    >>> prompt_text("Q?"), prompt_text([{"role": "user", "content": "Q?"}])[-13:]
    ('Q?', 'Q?\\nassistant\\n')
    """
    if isinstance(prompt, str):
        return prompt
    return decoded_chat_prompt(list(prompt))


class ThinkingReward:
    """``sophiavl.thinking`` (§A3): an async TRL reward function, in [0, 1] or None.

    Reads ``prompts`` and, when present, the ``images`` (or ``image``) column; the first image
    of a row is sent. Picklable: the client and the semaphore are made per call. Counters
    (``calls`` = requests sent, ``attempts`` = HTTP requests incl. retries, ``failures``,
    ``cache_hits``) accumulate over the object's life.

    >>> import pickle
    >>> r = ThinkingReward(ThinkingRewardConfig(base_url="http://127.0.0.1:1/v1", model="m"))
    >>> pickle.loads(pickle.dumps(r)).__name__
    'sophiavl.thinking'
    """

    def __init__(self, cfg: ThinkingRewardConfig) -> None:
        self.cfg = cfg
        self.__name__ = NAME
        self.calls = 0
        self.attempts = 0
        self.failures = 0
        self.cache_hits = 0

    @property
    def cache(self) -> ThinkingCache | None:
        return ThinkingCache(self.cfg.cache_dir) if self.cfg.cache_dir else None

    def stats(self) -> dict[str, Any]:
        """Counters and where the model is served (never the key)."""
        return {
            "base_url": redact_url(self.cfg.base_url),
            "model": self.cfg.model,
            "calls": self.calls,
            "attempts": self.attempts,
            "failures": self.failures,
            "cache_hits": self.cache_hits,
        }

    async def __call__(
        self, completions: list[Any], prompts: list[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        """Score a batch (TRL contract); results are in the order of ``completions``."""
        if prompts is None:
            prompts = [""] * len(completions)
        images = kwargs.get("images", kwargs.get("image"))
        if images is None:
            images = [None] * len(completions)
        bodies = [
            thinking_request(self.cfg.model, prompt_text(p), completion_text(c), image_png_b64(im))
            for c, p, im in zip(completions, prompts, images, strict=True)
        ]
        secret = os.environ.get(self.cfg.api_key_env) or ""
        cache = self.cache
        semaphore = asyncio.Semaphore(self.cfg.concurrency)
        httpx_log = logging.getLogger("httpx")
        if httpx_log.level == logging.NOTSET:  # one INFO line per request
            httpx_log.setLevel(logging.WARNING)
        client = openai.AsyncOpenAI(
            base_url=self.cfg.base_url,
            api_key=secret or "EMPTY",
            timeout=self.cfg.timeout_s,
            max_retries=0,
        )
        failed_before = self.failures

        async def one(index: int, body: dict[str, Any]) -> float | None:
            async with semaphore:
                score, error = await self._score_one(client, cache, body, secret)
            if score is not None:
                return score
            self.failures += 1
            level = logging.WARNING if self.failures <= MAX_LOGGED else logging.DEBUG
            log.log(level, "%s: sample %d failed: %s", NAME, index, error)
            return 0.0 if self.cfg.on_failure == "score_zero" else None

        async with client:
            scores = list(await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies))))
        failed = self.failures - failed_before
        if failed:
            log.warning(
                "%s: %d of %d samples failed (scored as %s); totals: %d failures, %d calls, "
                "%d cache hits",
                NAME,
                failed,
                len(bodies),
                "0.0" if self.cfg.on_failure == "score_zero" else "None",
                self.failures,
                self.calls,
                self.cache_hits,
            )
        return scores

    async def _score_one(
        self,
        client: openai.AsyncOpenAI,
        cache: ThinkingCache | None,
        body: dict[str, Any],
        secret: str,
    ) -> tuple[float | None, str | None]:
        key = request_key(body)
        if cache is not None and (entry := cache.get(key)) is not None:
            self.cache_hits += 1
            return float(entry["score"]), None
        self.calls += 1
        try:
            reply = await self._call(client, body)
        except CallFailed as failed:
            exc = failed.error
            status = getattr(exc, "status_code", None)
            head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
            text = f"{head} after {failed.attempts} attempt(s): {str(exc)[:300]}"
            return None, _scrub(text, secret)
        reply = _scrub(reply, secret)
        score = parse_score_or_none(reply)
        if score is None:
            return None, f"reply has no score: {reply[:200]!r}"
        if cache is not None:
            cache.put(
                key,
                {
                    "model": self.cfg.model,
                    "version": CACHE_VERSION,
                    "reply": reply,
                    "score": score,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                },
            )
        return score, None

    async def _call(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> str:
        def counted() -> None:
            self.attempts += 1

        return await complete(
            client,
            body,
            max_retries=self.cfg.max_retries,
            backoff_s=self.cfg.backoff_s,
            on_attempt=counted,
            label=NAME,
        )


def _scrub(text: str, secret: str) -> str:
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text


def get_thinking_reward(cfg: ThinkingRewardConfig | dict[str, Any]) -> ThinkingReward:
    """A configured ``sophiavl.thinking`` reward (validates the config eagerly).

    >>> get_thinking_reward({"base_url": "http://127.0.0.1:1/v1", "model": "m"}).cfg.concurrency
    8
    """
    if not isinstance(cfg, ThinkingRewardConfig):
        cfg = ThinkingRewardConfig.model_validate(cfg)
    return ThinkingReward(cfg)
