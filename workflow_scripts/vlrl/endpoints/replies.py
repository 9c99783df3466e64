"""What a request to an endpoint ends as (:class:`Answer`, :class:`Failure`), the counts of a
batch, and how an endpoint is named and its secrets kept out of what is written."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from vlrl.core.errors import ConfigError

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
    ...                              endpoint_id="serve:transformers:m@0123456789ab"))
    'serve:transformers:m@0123456789ab'
    """
    if cfg.endpoint_id is not None:
        return cfg.endpoint_id
    return redact_url(cfg.base_url) if cfg.base_url is not None else "(no base_url)"


MIN_SECRET = 4
"""Shorter secrets are not scrubbed (they would match too much)."""
FRAGMENT = 8
"""Every run of this many consecutive characters of a secret is scrubbed too: a server may echo
the key cut short, split, or starting past where an error text is cut, and what is left of it
must not reach a file or a log. Runs shorter than this may survive (a key's well-known prefix,
``sk-proj``, is 7 characters)."""
MAX_DETAIL = 300
"""Characters of an error's detail (a server's message, a body) kept in a :class:`Failure`."""


def scrub(text: str, secrets: Sequence[str | None]) -> str:
    """``text`` with every secret (of at least :data:`MIN_SECRET` characters) and every run of
    at least :data:`FRAGMENT` consecutive characters of one replaced by ``***`` (pieces that
    touch or overlap become one ``***``). Scrub a text before cutting it short: a cut can leave
    a piece of a secret that is too short to be recognised.

    >>> scrub("Bearer sk-1234 was refused", ["sk-1234", None])
    'Bearer *** was refused'
    >>> key = "sk-test-0123456789abcdef"
    >>> scrub(f"cut {key[:12]}, split {key[:15]} {key[15:]}, tail {key[-9:]}", [key])
    'cut ***, split *** ***, tail ***'
    >>> scrub(f"too short to tell: {key[:7]} {key[-7:]}", [key])
    'too short to tell: sk-test 9abcdef'
    """
    spans = []
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET:
            continue
        width = min(len(secret), FRAGMENT)
        for piece in {secret[i : i + width] for i in range(len(secret) - width + 1)}:
            at = text.find(piece)
            while at >= 0:
                spans.append((at, at + width))
                at = text.find(piece, at + 1)
    merged: list[list[int]] = []
    for start, stop in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    kept, end = [], 0
    for start, stop in merged:
        kept += [text[end:start], "***"]
        end = stop
    return "".join([*kept, text[end:]])


def clip(text: str, limit: int = MAX_DETAIL) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut (scrub it first).

    >>> clip("abcdef", 4), clip("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"
