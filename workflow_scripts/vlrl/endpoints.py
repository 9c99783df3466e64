"""One chat completion from an OpenAI-compatible endpoint, retried on transient errors.

The LLM judge (``vlrl.scoring.judge``) and the thinking reward model
(``vlrl.rewards.thinking``) both call endpoints this way. Connection errors, timeouts, 429 and
5xx are retried with exponential backoff (tenacity); any other error, or the last transient one,
is raised as :class:`CallFailed` with the number of attempts, so the caller can report it and
never score it. The ``openai`` client's own retries are turned off by the callers: here each
attempt is counted. Both keep what an endpoint answered in an :class:`EndpointCache`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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


def redact_url(url: str) -> str:
    """``url`` without user info or query (where credentials sometimes hide).

    >>> redact_url("https://user:secret@api.example.com/v1?key=abc")
    'https://api.example.com/v1'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class EndpointCache:
    """Endpoint results on disk, one JSON file per key (``<dir>/<key[:2]>/<key>.json``).

    Writes go through at once and are atomic (a uniquely named temporary file renamed into
    place), so concurrent jobs sharing the directory never see a half-written entry. An entry
    that does not parse or that :meth:`valid` rejects is a miss. Callers choose the key (a
    sha256 of everything that determines the result).

    >>> import tempfile
    >>> cache = EndpointCache(Path(tempfile.mkdtemp()) / "cache")
    >>> key = "ab" * 32
    >>> cache.get(key) is None
    True
    >>> cache.put(key, {"verdict": 1, "reply": "1"})
    >>> cache.get(key)["verdict"]
    1
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def _file(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None when absent or unreadable (a bad file is a miss)."""
        path = self._file(key)
        try:
            entry = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("%s: ignoring unreadable %s: %s", type(self).__name__, path, exc)
            return None
        return entry if isinstance(entry, dict) and self.valid(entry) else None

    def valid(self, entry: dict[str, Any]) -> bool:
        """Whether a stored entry holds a usable result; subclasses say what that is."""
        return True

    def put(self, key: str, entry: dict[str, Any]) -> None:
        path = self._file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump({"key": key, **entry}, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
