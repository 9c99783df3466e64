"""``sophiavl.thinking``: SophiaVL-R1's thinking reward model behind any OpenAI-compatible
endpoint (kxfan2002/SophiaVL-R1 @ a818494, ``verl/workers/reward/custom.py``).

The request body is :func:`vlrl.rewards.sophiavl.thinking_request` (generic system turn, the
decoded prompt plus the full response, the sample's first image as a base64 PNG data URL,
``temperature: 0.0``); the reply is parsed with :func:`~vlrl.rewards.sophiavl.parse_thinking_score`.

Differences from the released client, which are deliberate:

- Requests go through :class:`vlrl.endpoints.EndpointClient`: concurrently (bounded by
  ``cfg.concurrency``; the released code is sequential), with timeouts, connection errors,
  408/409/429/5xx and malformed bodies retried ``cfg.max_retries`` times with exponential
  backoff, the key read from ``os.environ[cfg.api_key_env]`` at call time (never stored, so
  never pickled) and scrubbed from logged errors and cached replies.
- Failures are never scored silently. A call that still fails, or a reply in which no extractor
  of ``parse_thinking_score`` matches, gives None for that sample (TRL: not applicable) with
  ``on_failure="missing"``, or 0.0 with ``on_failure="score_zero"`` (the released behaviour);
  either way ``failures`` is counted and a warning with the count is logged.
- Cache: replies with a parsed score are kept under ``cfg.cache_dir`` (at most
  ``cfg.cache_max_entries``; :class:`vlrl.endpoints.EndpointCache`), keyed by endpoint, model,
  :data:`CACHE_VERSION` and the request body. Failures are not cached.
- A reward model with ``serve`` (no ``base_url``) is started by the grpo stage before training
  (:func:`vlrl.serving.servers.serving`), which hands this reward the started config; one that is
  not started is refused (:class:`~vlrl.endpoints.EndpointClient`).

The Trust-GRPO group logic (skip rule, querying only when the outcome score is ≥ 0.2, the trust
weight, annealing) is not here: this callable scores every completion it is given.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vlrl.config import ThinkingRewardConfig
from vlrl.endpoints import EndpointCache, EndpointClient, Failure
from vlrl.rewards.common import completion_text
from vlrl.rewards.sophiavl import (
    _SCORE_EXTRACTORS,
    THINKING_REWARD,
    decoded_chat_prompt,
    parse_thinking_score,
    thinking_request,
)

log = logging.getLogger(__name__)

NAME = THINKING_REWARD
CACHE_VERSION = "sophiavl-thinking-v1"
"""Part of the cache key: bump it when the request text or the parsing change."""

MAX_LOGGED = 10


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


def score_of(reply: str) -> float:
    """:func:`parse_score_or_none`, raising where it gives None (the endpoint client's ``parse``).

    >>> score_of("<answer>0.4</answer>")
    0.4
    """
    score = parse_score_or_none(reply)
    if score is None:
        raise ValueError(f"reply has no score: {reply[:200]!r}")
    return score


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
    """``sophiavl.thinking``: an async TRL reward function, in [0, 1] or None.

    Reads ``prompts`` and, when present, the ``images`` (or ``image``) column; the first image
    of a row is sent. Picklable (the endpoint client holds no connection between calls).
    Counters (``calls`` = requests sent, ``attempts`` = HTTP requests incl. retries,
    ``failures``, ``cache_hits``) accumulate over the object's life.

    >>> import pickle
    >>> r = ThinkingReward(ThinkingRewardConfig(base_url="http://127.0.0.1:1/v1", model="m"))
    >>> pickle.loads(pickle.dumps(r)).__name__
    'sophiavl.thinking'
    """

    def __init__(self, cfg: ThinkingRewardConfig) -> None:
        self.cfg = cfg
        self.__name__ = NAME
        cache = EndpointCache(cfg.cache_dir, cfg.cache_max_entries) if cfg.cache_dir else None
        self.client = EndpointClient(cfg, CACHE_VERSION, cache, label=NAME)

    @property
    def calls(self) -> int:
        return self.client.stats.calls

    @property
    def attempts(self) -> int:
        return self.client.stats.attempts

    @property
    def failures(self) -> int:
        return self.client.stats.failures

    @property
    def cache_hits(self) -> int:
        return self.client.stats.cache_hits

    def stats(self) -> dict[str, Any]:
        """Counters and where the model is served (never the key)."""
        meta = self.client.metadata()
        return {k: meta[k] for k in ("base_url", "model", *asdict(self.client.stats))}

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
        failed_before = self.failures
        results = await self.client.acomplete(bodies, parse=score_of)
        failed_as = 0.0 if self.cfg.on_failure == "score_zero" else None
        scores: list[float | None] = []
        failed = 0
        for index, result in enumerate(results):
            if isinstance(result, Failure):
                failed += 1
                # The first failures of the reward's life in full, the rest only with --verbose.
                level = logging.WARNING if failed_before + failed <= MAX_LOGGED else logging.DEBUG
                log.log(level, "%s: sample %d failed: %s", NAME, index, result)
                scores.append(failed_as)
            else:
                scores.append(result.value)
        if failed:
            log.warning(
                "%s: %d of %d samples failed (scored as %s); totals: %d failures, %d calls, "
                "%d cache hits",
                NAME,
                failed,
                len(bodies),
                failed_as,
                self.failures,
                self.calls,
                self.cache_hits,
            )
        return scores


def get_thinking_reward(cfg: ThinkingRewardConfig | dict[str, Any]) -> ThinkingReward:
    """A configured ``sophiavl.thinking`` reward (validates the config eagerly, and checks that
    the key is set when ``api_key_required``: a missing key fails here, not at the first step).

    >>> get_thinking_reward({"base_url": "http://127.0.0.1:1/v1", "model": "m"}).cfg.concurrency
    8
    """
    if not isinstance(cfg, ThinkingRewardConfig):
        cfg = ThinkingRewardConfig.model_validate(cfg)
    reward = ThinkingReward(cfg)
    reward.client.api_key()
    return reward
