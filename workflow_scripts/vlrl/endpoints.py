"""One chat completion from an OpenAI-compatible endpoint, retried on transient errors.

The LLM judge (``vlrl.scoring.judge``) and the thinking reward model
(``vlrl.rewards.thinking``) both call endpoints this way. Connection errors, timeouts, 429 and
5xx are retried with exponential backoff (tenacity); any other error, or the last transient one,
is raised as :class:`CallFailed` with the number of attempts, so the caller can report it and
never score it. The ``openai`` client's own retries are turned off by the callers: here each
attempt is counted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import openai
import tenacity

log = logging.getLogger(__name__)

RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)
"""Transient failures: connection errors and timeouts (a subclass), 429 and 5xx."""

MAX_BACKOFF_S = 30.0


class CallFailed(Exception):
    """An endpoint call that failed for good: ``error`` is the last error, after ``attempts``."""

    def __init__(self, error: openai.OpenAIError, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


async def complete(
    client: openai.AsyncOpenAI,
    body: dict[str, Any],
    *,
    max_retries: int,
    backoff_s: float,
    on_attempt: Callable[[], None] = lambda: None,
    label: str = "endpoint",
) -> str:
    """The reply text of ``client.chat.completions.create(**body)`` ('' when it has none).

    Transient errors are retried ``max_retries`` times, waiting ``backoff_s · 2^k`` seconds
    (at most 30) before retry ``k + 1``; ``on_attempt`` runs before every HTTP request.

    Raises:
        CallFailed: with the last error and the number of attempts made.
    """
    attempts = 0
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(max_retries + 1),
        wait=tenacity.wait_exponential(multiplier=backoff_s, max=MAX_BACKOFF_S),
        retry=tenacity.retry_if_exception_type(RETRYABLE),
        before_sleep=lambda state: log.debug(
            "%s: %s; retry %d in %.2fs",
            label,
            type(state.outcome.exception()).__name__,
            state.attempt_number,
            state.next_action.sleep,
        ),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                attempts += 1
                on_attempt()
                response = await client.chat.completions.create(**body)
    except openai.OpenAIError as exc:
        raise CallFailed(exc, attempts) from exc
    if not response.choices:
        return ""
    return response.choices[0].message.content or ""
