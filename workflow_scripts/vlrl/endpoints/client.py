"""The endpoint client: requests in flight bounded per endpoint (:mod:`vlrl.endpoints.bound`),
retries with backoff, the cache, and a :class:`~vlrl.endpoints.replies.Failure` for every request
that fails for good."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import openai

from vlrl.core.errors import ConfigError
from vlrl.endpoints.bound import endpoint_bound
from vlrl.endpoints.cache import EndpointCache
from vlrl.endpoints.replies import (
    MAX_BACKOFF_S,
    NO_KEY,
    RETRY_STATUSES,
    Answer,
    EndpointStats,
    Failure,
    FailureKind,
    MissingAPIKey,
    T,
    clip,
    endpoint_name,
    quiet_http_clients,
    redact_url,
    scrub,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig


@dataclass(frozen=True)
class _Problem:
    """What went wrong with one attempt; ``detail`` whole and unscrubbed (``quote``: a body,
    shown as its ``repr``)."""

    kind: FailureKind
    what: str
    detail: str
    retryable: bool
    status: int | None = None
    quote: bool = False


def _text(reply: str) -> str:
    return reply


def reply_content(data: Any) -> str | None:
    """``choices[0].message.content`` of a chat-completion body when it is a string, else None.

    >>> reply_content({"choices": [{"message": {"content": "1"}}]}), reply_content({"id": "x"})
    ('1', None)
    """
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


class EndpointClient:
    """Batches of chat completions from one endpoint (see the module docstring).

    Picklable (for TRL's reward functions and spawned workers): the ``openai.AsyncOpenAI``
    client and the key exist only while a batch runs, and the bound on requests in flight is the
    process's, shared with every other client of the same endpoint
    (:func:`~vlrl.endpoints.bound.endpoint_bound`). ``stats`` accumulates over the object's
    life.

    Args:
        cfg: the endpoint's settings (:class:`vlrl.config.EndpointConfig` or a subclass).
        prompt_version: the caller's version of how it builds bodies and parses replies; part of
            the cache key, so bumping it never reuses an older reply.
        cache: where usable replies are kept (None: nowhere).
        label: names the caller in log lines and errors.

    >>> import pickle
    >>> from vlrl.config import EndpointConfig
    >>> client = EndpointClient(EndpointConfig(base_url="http://127.0.0.1:1/v1", model="m"), "v1")
    >>> pickle.loads(pickle.dumps(client)).stats
    EndpointStats(calls=0, attempts=0, failures=0, cache_hits=0)
    """

    def __init__(
        self,
        cfg: EndpointConfig,
        prompt_version: str,
        cache: EndpointCache | None = None,
        label: str = "endpoint",
    ) -> None:
        self.cfg = cfg
        self.prompt_version = prompt_version
        self.cache = cache
        self.label = label
        self.stats = EndpointStats()

    def api_key(self) -> str | None:
        """The key from ``$api_key_env`` now (None when unset and not required).

        Raises:
            MissingAPIKey: naming the variable, when it is unset and ``api_key_required``.
        """
        value = os.environ.get(self.cfg.api_key_env) or None
        if value is None and self.cfg.api_key_required:
            raise MissingAPIKey(
                f"{self.label}: the API key for {redact_url(self.cfg.base_url)} is read from "
                f"${self.cfg.api_key_env}, which is not set (api_key_required is true)"
            )
        return value

    def metadata(self) -> dict[str, Any]:
        """Where the endpoint is and what was asked of it (never the key)."""
        return {
            "base_url": endpoint_name(self.cfg),
            "model": self.cfg.model,
            "prompt_version": self.prompt_version,
            **asdict(self.stats),
        }

    def complete(
        self,
        bodies: Sequence[dict[str, Any]],
        parse: Callable[[str], T] = _text,
        progress: Callable[[], None] | None = None,
    ) -> list[Answer[T] | Failure]:
        """:meth:`acomplete` from synchronous code (runs its own event loop)."""
        return asyncio.run(self.acomplete(bodies, parse, progress))

    async def acomplete(
        self,
        bodies: Sequence[dict[str, Any]],
        parse: Callable[[str], T] = _text,
        progress: Callable[[], None] | None = None,
    ) -> list[Answer[T] | Failure]:
        """One result per body of ``POST /chat/completions``, in order; at most
        ``cfg.concurrency`` requests in flight at the endpoint, counting those of every other
        client of it in this process (other prompt versions, other callers, other event loops).

        Args:
            bodies: request bodies (``model``, ``messages``, decoding parameters), each passed
                to ``chat.completions.create``.
            parse: turns a reply text into the caller's value; a ``ValueError`` it raises makes
                the result a ``unparsable`` :class:`Failure` with the error's text.
            progress: called once per finished body.

        A config without ``base_url`` (``serve`` set, its server not started: see
        :func:`vlrl.serving.servers.unstarted`) answers from the cache alone.

        Raises:
            MissingAPIKey: before any request (see :meth:`api_key`). Nothing the endpoint does
                raises.
            ConfigError: without ``base_url``, when a body has no usable cached reply.
        """
        if self.cfg.base_url is None:
            return self._from_cache_only(bodies, parse, progress)
        secret = self.api_key()
        secrets = (secret, urlsplit(self.cfg.base_url).password)
        bound = endpoint_bound(self.cfg)
        quiet_http_clients()
        client = openai.AsyncOpenAI(
            base_url=self.cfg.base_url,
            api_key=secret or NO_KEY,
            timeout=self.cfg.timeout_s,
            max_retries=0,  # retries are ours, so that each attempt is counted and backed off
        )

        async def one(body: dict[str, Any]) -> Answer[T] | Failure:
            result = self._cached(body, parse)
            if result is None:
                async with bound.slot(self.cfg.concurrency):
                    result = await self._ask(client, body, parse, secrets)
            if isinstance(result, Failure):
                self.stats.failures += 1
            if progress is not None:
                progress()
            return result

        async with client:
            return list(await asyncio.gather(*(one(body) for body in bodies)))

    def _key(self, body: dict[str, Any]) -> str:
        return EndpointCache.key(
            self.cfg.base_url,
            str(body.get("model")),
            self.prompt_version,
            body,
            self.cfg.endpoint_id,
        )

    def uncached(self, bodies: Sequence[dict[str, Any]], parse: Callable[[str], T] = _text) -> int:
        """How many of ``bodies`` have no usable cached reply: the requests a run would send
        (0: it needs no server)."""
        return sum(self._lookup(body, parse) is None for body in bodies)

    def _from_cache_only(
        self,
        bodies: Sequence[dict[str, Any]],
        parse: Callable[[str], T],
        progress: Callable[[], None] | None,
    ) -> list[Answer[T] | Failure]:
        if self.cache is not None and self.cfg.endpoint_id is None:  # no URL either: no key
            raise ConfigError(
                f"{self.label}: serve is set but its server is not started, and the config has "
                "no endpoint_id to find its cached replies by; name it with "
                "vlrl.serving.commands.unstarted(...), or run the calls inside "
                "vlrl.serving.servers.serving(...), which starts it"
            )
        answers = [self._lookup(body, parse) for body in bodies]
        missing = sum(answer is None for answer in answers)
        if missing:
            raise ConfigError(
                f"{self.label}: serve is set but its server is not started, and {missing} of "
                f"{len(bodies)} requests have no cached reply; run the calls inside "
                "vlrl.serving.servers.serving(...), which starts it and sets base_url"
            )
        self.stats.cache_hits += len(answers)
        if progress is not None:
            for _ in answers:
                progress()
        return [answer for answer in answers if answer is not None]  # all of them

    def _lookup(self, body: dict[str, Any], parse: Callable[[str], T]) -> Answer[T] | None:
        """The cached reply to ``body`` when there is a usable one (counted nowhere)."""
        if self.cache is None or (entry := self.cache.get(self._key(body))) is None:
            return None
        reply = entry.get("reply")
        if not isinstance(reply, str):
            return None
        try:
            value = parse(reply)
        except ValueError:  # stored by an older parser: ask again
            return None
        return Answer(value, reply, attempts=0, cached=True)

    def _cached(self, body: dict[str, Any], parse: Callable[[str], T]) -> Answer[T] | None:
        answer = self._lookup(body, parse)
        if answer is not None:
            self.stats.cache_hits += 1
        return answer

    async def _ask(
        self,
        client: openai.AsyncOpenAI,
        body: dict[str, Any],
        parse: Callable[[str], T],
        secrets: Sequence[str | None],
    ) -> Answer[T] | Failure:
        self.stats.calls += 1
        attempts = 0
        while True:
            attempts += 1
            self.stats.attempts += 1
            outcome = await self._attempt(client, body)
            if isinstance(outcome, str):
                break
            if not outcome.retryable or attempts > self.cfg.max_retries:
                # Scrubbed whole, then cut: a cut first could leave a piece of the key.
                detail = scrub(outcome.detail, secrets)
                detail = clip(repr(detail) if outcome.quote else detail)
                message = f"{outcome.kind}: {outcome.what} after {attempts} attempt(s): {detail}"
                message += self._key_hint(outcome.status)
                return Failure(outcome.kind, scrub(message, secrets), attempts, outcome.status)
            delay = min(self.cfg.backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)
            log.debug("%s: %s; retry %d in %.2fs", self.label, outcome.what, attempts, delay)
            await asyncio.sleep(delay)
        reply = scrub(outcome, secrets)
        try:
            value = parse(reply)
        except ValueError as exc:
            message = scrub(f"unparsable: {exc}", secrets)
            return Failure("unparsable", message, attempts, text=reply)
        if self.cache is not None:
            self.cache.put(
                self._key(body),
                {
                    "endpoint": endpoint_name(self.cfg),
                    "model": body.get("model"),
                    "prompt_version": self.prompt_version,
                    "reply": reply,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                },
            )
        return Answer(value, reply, attempts)

    async def _attempt(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> str | _Problem:
        """One HTTP request: the reply text, or what went wrong."""
        try:
            raw = await client.chat.completions.with_raw_response.create(**body)
        except openai.APITimeoutError as exc:  # before APIConnectionError: a subclass of it
            return _Problem("timeout", type(exc).__name__, str(exc), retryable=True)
        except openai.APIConnectionError as exc:
            cause = f" ({exc.__cause__})" if exc.__cause__ else ""
            return _Problem("connection", type(exc).__name__, f"{exc}{cause}", retryable=True)
        except openai.APIStatusError as exc:
            status = exc.status_code
            retryable = status in RETRY_STATUSES or status >= 500
            what = f"{type(exc).__name__} (HTTP {status})"
            return _Problem("http_status", what, str(exc), retryable, status)
        except openai.OpenAIError as exc:
            return _Problem("error", type(exc).__name__, str(exc), retryable=False)
        text = raw.text
        try:
            data = json.loads(text)
        except ValueError:
            what = f"HTTP {raw.status_code} body is not JSON"
            return _Problem("not_json", what, text, retryable=True, quote=True)
        content = reply_content(data)
        if content is None:
            what = f"HTTP {raw.status_code} JSON has no choices[0].message.content"
            return _Problem("no_content", what, text, retryable=True, quote=True)
        return content

    def _key_hint(self, status: int | None) -> str:
        """For 401/403: where the key comes from and whether it was set."""
        if status not in (401, 403):
            return ""
        state = "set" if os.environ.get(self.cfg.api_key_env) else "not set"
        return f" (the key is read from ${self.cfg.api_key_env}, which is {state})"
