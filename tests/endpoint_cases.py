"""Ways an OpenAI-compatible endpoint misbehaves, shared by the tests of the endpoint client and
of its three users (judge, thinking reward, ``openai`` generation backend).

Each case is played by the real local server of ``tests/fake_openai_server.py`` (FastAPI under
uvicorn on 127.0.0.1; the ``endpoint`` fixture of ``tests/conftest.py``), except a refused
connection, which is a port nobody listens on. With :data:`OPTIONS` (one retry), a retried
failure takes 2 attempts and one that fails at once takes 1. :data:`ECHOES` are servers that
repeat the caller's key, whole, cut or split, in an error or a reply: nothing of it may reach a
file, a log or an exception (:func:`leaks`).
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

import pytest
from fake_openai_server import Echo

OPTIONS: dict[str, Any] = {"max_retries": 1, "timeout_s": 10.0, "backoff_s": 0.01}
"""Endpoint settings that keep the cases fast: one retry, 10 ms backoff. The timeout is long: the
server answers in the test's own process, which a loaded CI machine can hold up for tenths of a
second (a 0.3 s timeout once turned "HTTP 404 fails at once" into 2 attempts); only the timeout
case shortens it (:attr:`Misbehaviour.options`)."""


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the connection is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass(frozen=True)
class Misbehaviour:
    """One way to fail; ``kind`` and ``attempts`` are what the client must report."""

    name: str
    kind: str
    attempts: int
    fail_always: int | str | None = None
    latency_s: float = 0.0
    refused: bool = False
    options: tuple[tuple[str, Any], ...] = ()
    """Endpoint settings this case needs on top of :data:`OPTIONS`."""

    def settings(self) -> dict[str, Any]:
        """The endpoint settings to call this case with: :data:`OPTIONS` and the case's own."""
        return {**OPTIONS, **dict(self.options)}

    def apply(self, server: Any) -> str:
        """Make ``server`` misbehave this way; the base URL to call."""
        server.state.fail_always = self.fail_always
        server.state.latency_s = self.latency_s
        return closed_port_url() if self.refused else server.base_url


FAILURES = [
    Misbehaviour("HTTP 500 every time", "http_status", 2, fail_always=500),
    Misbehaviour("HTTP 503 every time", "http_status", 2, fail_always=503),
    Misbehaviour("HTTP 429 every time", "http_status", 2, fail_always=429),
    Misbehaviour("HTTP 401 fails at once", "http_status", 1, fail_always=401),
    Misbehaviour("HTTP 400 fails at once", "http_status", 1, fail_always=400),
    Misbehaviour("HTTP 404 fails at once", "http_status", 1, fail_always=404),
    Misbehaviour(
        "slower than the timeout", "timeout", 2, latency_s=1.0, options=(("timeout_s", 0.3),)
    ),
    Misbehaviour("connection refused", "connection", 2, refused=True),
    Misbehaviour("HTTP 200 with an HTML body", "not_json", 2, fail_always="not_json"),
    Misbehaviour("HTTP 200 JSON without choices", "no_content", 2, fail_always="no_choices"),
    Misbehaviour("HTTP 200 JSON with null content", "no_content", 2, fail_always="null_content"),
]

CASES = [pytest.param(case, id=case.name) for case in FAILURES]
""":data:`FAILURES` for ``pytest.mark.parametrize``, named."""


# ------------------------------------------------------------------- a server echoing the key
LEAK_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdefXYZ"
"""The key the leak cases send; :func:`leaks` finds what of it reached a text."""


def leaks(text: str, key: str = LEAK_KEY) -> list[str]:
    """The runs of :data:`vlrl.endpoints.FRAGMENT` (8) consecutive characters of ``key`` that
    occur in ``text`` (none: nothing usable of the key is there)."""
    return sorted({key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text})


def _error(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}})


def _completion(content: str) -> str:
    return json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    )


ECHOES = [
    # An error message is kept to MAX_DETAIL (300) characters: the key straddles that cut.
    Echo("whole, 300 characters in", 400, lambda k: _error("." * 260 + f" Bearer {k} (sent)")),
    Echo("cut short by the server", 401, lambda k: _error(f"invalid key {k[:20]}...")),
    Echo("the end of it", 401, lambda k: _error(f"invalid key ...{k[-13:]}")),
    Echo("split in two", 403, lambda k: _error(f"key {k[:14]} / {k[14:]} refused")),
    Echo("a piece from the middle", 400, lambda k: _error(f"bad token part {k[6:17]}")),
    Echo(
        "inside nested JSON",
        422,
        lambda k: _error(json.dumps({"request": {"headers": {"Authorization": f"Bearer {k}"}}})),
    ),
    # vLLM's older error body: the message at the top level.
    Echo("a top-level message", 400, lambda k: json.dumps({"object": "error", "message": k[:-3]})),
    Echo("a retried 502", 502, lambda k: _error(f"upstream refused Bearer {k[:25]}")),
    # Bodies of HTTP 200 that are no chat completion were kept to 200 characters.
    Echo(
        "a 200 HTML page, 190 characters in",
        200,
        lambda k: "<html>" + "." * 184 + k + "</html>",
        media_type="text/html",
    ),
    Echo("200 JSON without choices", 200, lambda k: json.dumps({"pad": "." * 170, "auth": k})),
    Echo("the reply repeats part of it", 200, lambda k: _completion(f"ok {k[:12]} {k[-12:]}")),
    # A usable reply (a judge's verdict on its last line) is cached: scrubbed first.
    Echo("a verdict after the key", 200, lambda k: _completion(f"you sent {k[:-5]}\n1")),
]

ECHO_CASES = [pytest.param(echo, id=echo.name) for echo in ECHOES]
""":data:`ECHOES` for ``pytest.mark.parametrize``, named."""
