"""The one client for OpenAI-compatible endpoints: the LLM judge (:mod:`vlrl.scoring.judge`),
the thinking reward model (:mod:`vlrl.rewards.thinking`) and the ``openai`` generation backend
(:mod:`vlrl.generation.openai`) all call their servers through :class:`EndpointClient`, with
one config (:class:`vlrl.config.EndpointConfig`), one retry policy and one cache
(:class:`EndpointCache`).

Every request ends as an :class:`Answer` or a :class:`Failure`; no endpoint misbehaviour
raises. Per attempt, what the endpoint did → the failure's ``kind``, and whether it is retried:

- no answer within ``timeout_s`` → ``timeout``, retried;
- connection refused or reset, name not found → ``connection``, retried;
- HTTP 408, 409, 429 or 5xx → ``http_status``, retried;
- any other non-2xx (400, 401, 403, 404, 422, …) → ``http_status``, not retried: the request or
  the key is wrong, and asking again cannot help;
- HTTP 2xx whose body is not JSON → ``not_json``, retried;
- JSON without a string at ``choices[0].message.content`` → ``no_content``, retried;
- a reply the caller's ``parse`` rejects → ``unparsable``, not retried (callers decode greedily:
  the same reply would come back).

Retry ``k`` (from 0) waits ``backoff_s · 2^k`` seconds, at most :data:`MAX_BACKOFF_S`; the
``openai`` client's own retries are off, so every HTTP request is counted. A request that still
fails after ``max_retries`` retries is a :class:`Failure`, and callers never score it: the judge
leaves the item without a verdict, the thinking reward gives None (0.0 with ``on_failure:
score_zero``, counted), the generation backend records the error in the predictions file.

The API key is read from ``os.environ[cfg.api_key_env]`` at each batch, sent as a bearer token
and never stored, logged or cached: replies and error texts are scrubbed of it (and of a
password in the base URL) before anything else sees them.

An endpoint is named, in the cache key, the cache entries and the metadata callers record, by
:func:`endpoint_name`: its ``endpoint_id`` when set (``serve:<backend>:<model>`` for a server
the pipeline started, :mod:`vlrl.servers`, whose port changes from run to run), else its
``base_url`` without credentials. A config whose server is not started (``serve`` set,
``base_url`` not) is refused: its requests would go nowhere it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai

from vlrl.errors import ConfigError

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BACKOFF_S = 30.0
RETRY_STATUSES = frozenset({408, 409, 429})
"""Non-5xx statuses that say "try again later" (5xx are all retried)."""
NO_KEY = "EMPTY"
"""Sent when no key is set: the ``openai`` client needs one, local servers ignore it."""

FailureKind = Literal[
    "timeout", "connection", "http_status", "not_json", "no_content", "unparsable", "error"
]


HTTP_CLIENT_LOGGERS = ("httpx", "httpx2")
"""Loggers of the HTTP clients under ``openai`` (1.x: httpx; 2.x: httpx2): one INFO line per
request drowns the progress bar."""


def quiet_http_clients() -> None:
    """Raise :data:`HTTP_CLIENT_LOGGERS` to WARNING, unless someone set their level already.

    >>> quiet_http_clients(); logging.getLogger("httpx2").level == logging.WARNING
    True
    """
    for name in HTTP_CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


class MissingAPIKey(ConfigError):
    """``api_key_required`` is set but the environment variable holding the key is not."""


# ---------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Answer(Generic[T]):
    """A usable reply: ``text`` as the server sent it (scrubbed), ``value`` what ``parse`` made
    of it; ``attempts`` HTTP requests were made for it (0 when it came from the cache)."""

    value: T
    text: str
    attempts: int
    cached: bool = False


@dataclass(frozen=True)
class Failure:
    """A request that failed for good. ``message`` is one scrubbed line,
    ``<kind>: <what> after <n> attempt(s): <detail>`` (``unparsable: <why parse refused it>`` for
    a reply the caller could not use, whose text is then ``text``).

    >>> str(Failure("timeout", "timeout: APITimeoutError after 2 attempt(s): timed out", 2))
    'timeout: APITimeoutError after 2 attempt(s): timed out'
    """

    kind: FailureKind
    message: str
    attempts: int
    status: int | None = None
    text: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass
class EndpointStats:
    """Counters over a client's life (they survive pickling)."""

    calls: int = 0
    """Requests sent to the endpoint (cache misses)."""
    attempts: int = 0
    """HTTP requests made, retries included."""
    failures: int = 0
    cache_hits: int = 0


# ----------------------------------------------------------------------------------- secrets
def redact_url(url: str) -> str:
    """``url`` without user info or query (where credentials sometimes hide).

    >>> redact_url("https://user:secret@api.example.com/v1?key=abc")
    'https://api.example.com/v1'
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def endpoint_name(cfg: EndpointConfig) -> str:
    """What the cache and the records call ``cfg``'s endpoint: ``endpoint_id``, else the
    redacted ``base_url``.

    >>> from vlrl.config import EndpointConfig
    >>> endpoint_name(EndpointConfig(base_url="http://u:pw@h:8000/v1", model="m"))
    'http://h:8000/v1'
    >>> endpoint_name(EndpointConfig(base_url="http://127.0.0.1:41234/v1", model="m",
    ...                              endpoint_id="serve:transformers:m"))
    'serve:transformers:m'
    """
    if cfg.endpoint_id is not None:
        return cfg.endpoint_id
    return redact_url(cfg.base_url) if cfg.base_url is not None else "(no base_url)"


def scrub(text: str, secrets: Sequence[str | None]) -> str:
    """``text`` with every secret (of at least 4 characters) replaced by ``***``.

    >>> scrub("Bearer sk-1234 was refused", ["sk-1234", None])
    'Bearer *** was refused'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


# ------------------------------------------------------------------------------------- cache
def _touch(path: Path) -> None:
    """Set ``path``'s times from the fine clock: the kernel stamps files from a coarse one
    (milliseconds), which would leave entries written together unordered for pruning."""
    now = time.time_ns()
    os.utime(path, ns=(now, now))


class EndpointCache:
    """Replies on disk, one JSON file per key (``<dir>/<key[:2]>/<key>.json``), at most
    ``max_entries`` of them.

    Keys (:meth:`key`) hash the endpoint (its ``endpoint_id``, else its redacted URL), the model,
    the caller's prompt version and the whole request body, so another server, model, prompt or
    decoding setting never sees another's reply. Only usable replies are stored; failures never
    are.

    Writes are atomic (a uniquely named temporary file renamed into place), so concurrent jobs
    sharing the directory never see a half-written entry; an unreadable entry is a miss. A hit
    refreshes the file's modification time, and when a write takes the number of entries above
    ``max_entries`` the least recently used are deleted down to 90 % of it (so the directory is
    scanned once per tenth of the cache, not at every write). Repeated runs therefore never grow
    the cache beyond ``max_entries`` (give or take what other processes wrote since this one last
    counted), and entries no run asks for any more (an old prompt version) are the first to go.

    >>> import tempfile
    >>> cache = EndpointCache(Path(tempfile.mkdtemp()) / "cache", max_entries=2)
    >>> keys = [EndpointCache.key("http://h/v1", "m", "v1", {"n": i}) for i in range(3)]
    >>> cache.get(keys[0]) is None
    True
    >>> for k in keys:
    ...     cache.put(k, {"reply": k[:4]})
    >>> len(cache), cache.get(keys[0]) is None, cache.get(keys[2])["reply"] == keys[2][:4]
    (2, True, True)
    """

    STALE_PART_S = 3600.0
    """A temporary file this old belongs to a killed writer: pruning removes it."""

    def __init__(self, path: Path | str, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError(f"EndpointCache: max_entries must be at least 1, not {max_entries}")
        self.path = Path(path)
        self.max_entries = max_entries
        self._count: int | None = None  # entries on disk as this process last counted them

    @staticmethod
    def key(
        base_url: str,
        model: str,
        prompt_version: str,
        body: dict[str, Any],
        endpoint_id: str | None = None,
    ) -> str:
        """sha256 of the endpoint (``endpoint_id``, else the redacted ``base_url``), model,
        prompt version and request body (never the API key).

        >>> body = {"model": "m", "messages": []}
        >>> a = EndpointCache.key("http://127.0.0.1:4001/v1", "m", "v1", body, "serve:vllm:m")
        >>> a == EndpointCache.key("http://127.0.0.1:4002/v1", "m", "v1", body, "serve:vllm:m")
        True
        """
        blob = json.dumps(
            {
                "endpoint": endpoint_id or redact_url(base_url).rstrip("/"),
                "model": model,
                "prompt_version": prompt_version,
                "body": body,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def _file(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry (its use is recorded), or None when absent or unreadable."""
        path = self._file(key)
        try:
            entry = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("endpoint cache: ignoring unreadable %s: %s", path, exc)
            return None
        if not isinstance(entry, dict):
            return None
        with contextlib.suppress(OSError):  # pruned meanwhile by another process: still a hit
            _touch(path)
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` under ``key`` (atomically), then keep the cache within its bound."""
        path = self._file(key)
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump({"key": key, **entry}, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
            os.replace(tmp, path)
            _touch(path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if self._count is None:
            self._count = len(self)
        elif not existed:
            self._count += 1
        if self._count > self.max_entries:
            self.prune()

    def _entries(self) -> list[os.DirEntry]:
        found = []
        if not self.path.is_dir():
            return found
        for shard in os.scandir(self.path):
            if shard.is_dir():
                found += [e for e in os.scandir(shard.path) if e.name.endswith(".json")]
        return found

    def __len__(self) -> int:
        return len(self._entries())

    def prune(self, keep: int | None = None) -> int:
        """Delete the least recently used entries beyond ``keep`` (default: 90 % of
        ``max_entries``) and stale temporary files; the number of entries deleted."""
        if keep is None:
            keep = self.max_entries - self.max_entries // 10
        entries = []
        for entry in self._entries():
            with contextlib.suppress(FileNotFoundError):  # another process pruned it
                entries.append((entry.stat().st_mtime_ns, entry.path))
        entries.sort(reverse=True)
        removed = 0
        for _, path in entries[keep:]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
        now = time.time()
        for part in self.path.glob("*/.*.part"):
            with contextlib.suppress(FileNotFoundError):
                if now - part.stat().st_mtime > self.STALE_PART_S:
                    part.unlink()
        self._count = min(len(entries), keep)
        if removed:
            log.info("endpoint cache %s: removed %d least recently used", self.path, removed)
        return removed


# ------------------------------------------------------------------------------------ client
@dataclass(frozen=True)
class _Problem:
    """What went wrong with one attempt."""

    kind: FailureKind
    what: str
    detail: str
    retryable: bool
    status: int | None = None


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
    client, the semaphore and the key exist only while a batch runs. ``stats`` accumulates over
    the object's life.

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
        ``cfg.concurrency`` requests in flight.

        Args:
            bodies: request bodies (``model``, ``messages``, decoding parameters), each passed
                to ``chat.completions.create``.
            parse: turns a reply text into the caller's value; a ``ValueError`` it raises makes
                the result a ``unparsable`` :class:`Failure` with the error's text.
            progress: called once per finished body.

        A config without ``base_url`` (``serve`` set, its server not started: see
        :func:`vlrl.servers.unstarted`) answers from the cache alone.

        Raises:
            MissingAPIKey: before any request (see :meth:`api_key`). Nothing the endpoint does
                raises.
            ConfigError: without ``base_url``, when a body has no usable cached reply.
        """
        if self.cfg.base_url is None:
            return self._from_cache_only(bodies, parse, progress)
        secret = self.api_key()
        secrets = (secret, urlsplit(self.cfg.base_url).password)
        semaphore = asyncio.Semaphore(self.cfg.concurrency)
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
                async with semaphore:
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
        answers = [self._lookup(body, parse) for body in bodies]
        missing = sum(answer is None for answer in answers)
        if missing:
            raise ConfigError(
                f"{self.label}: serve is set but its server is not started, and {missing} of "
                f"{len(bodies)} requests have no cached reply; run the calls inside "
                "vlrl.servers.serving(...), which starts it and sets base_url"
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
                message = f"{outcome.kind}: {outcome.what} after {attempts} attempt(s): "
                message += outcome.detail[:300] + self._key_hint(outcome.status)
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
            return _Problem("not_json", what, repr(text[:200]), retryable=True)
        content = reply_content(data)
        if content is None:
            what = f"HTTP {raw.status_code} JSON has no choices[0].message.content"
            return _Problem("no_content", what, repr(text[:200]), retryable=True)
        return content

    def _key_hint(self, status: int | None) -> str:
        """For 401/403: where the key comes from and whether it was set."""
        if status not in (401, 403):
            return ""
        state = "set" if os.environ.get(self.cfg.api_key_env) else "not set"
        return f" (the key is read from ${self.cfg.api_key_env}, which is {state})"
