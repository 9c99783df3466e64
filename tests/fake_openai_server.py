"""A fake OpenAI-compatible chat-completions server for the tests (a test double).

:class:`FakeRewardModel` is a FastAPI app under uvicorn on 127.0.0.1 (a free port), in a
background thread, that answers ``POST /v1/chat/completions``. Each test sets what it does
through :class:`ServerState`: a latency, the reply (fixed, ``SCORE=x`` in the user text, a
``scorer`` or a ``replier``), and misbehaviours: an error status, too late, a body that is not a
chat completion (:data:`MISBEHAVIOURS`), or a body that echoes the caller's key
(:class:`Echo`); it records what it saw, the most requests it had in flight at once included.
The endpoint tests play their cases on it (``tests/endpoint_cases.py``, the ``endpoint``
fixture of ``tests/conftest.py``), as do the thinking reward's and trust_grpo's tests; the
timing scripts ``perf/thinking_client.py``, ``perf/judge_throughput.py`` and
``perf/algorithm_overhead.py`` time the clients against it.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

SCORE_TAG = re.compile(r"SCORE=([0-9.]+)")
MISBEHAVIOURS = {
    "not_json": "HTTP 200 with an HTML body",
    "no_choices": "HTTP 200 with JSON that has no choices",
    "null_content": "HTTP 200 with JSON whose message content is null",
    "leaky_400": "HTTP 400 whose error message repeats the request's Authorization header",
}


@dataclass(frozen=True)
class Echo:
    """A misbehaviour: answer ``status`` with the body ``render(key)``, where ``key`` is the
    bearer token the request came with (as servers that repeat a request in an error do)."""

    name: str
    status: int
    render: Callable[[str], str]
    media_type: str = "application/json"


@dataclass
class ServerState:
    """What the server does (set per test) and what it saw."""

    latency_s: float = 0.0
    reply: str = "<answer>0.7</answer>"
    """Reply text unless the user text holds ``SCORE=x`` (then ``<answer>x</answer>``)."""
    scorer: Callable[[str], float] | None = None
    """When set, the reply is ``<answer>scorer(user text)</answer>`` (rounded to one decimal)."""
    replier: Callable[[dict[str, Any]], str] | None = None
    """When set, the reply is ``replier(request body)`` (it wins over ``scorer`` and ``reply``)."""
    fail_next: list[int | str | Echo] = field(default_factory=list)
    """Misbehaviours for the next requests, one popped per request: an HTTP status code (answered
    with an OpenAI-style error body), one of :data:`MISBEHAVIOURS` or an :class:`Echo`."""
    fail_always: int | str | Echo | None = None
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    epoch: int = 0
    """Bumped by :meth:`reset`: a request still running from before does not count in flight."""

    def reset(self) -> None:
        epoch = self.epoch + 1
        self.__init__()
        self.epoch = epoch


def _user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if part.get("type") == "text")


class FakeRewardModel:
    """A tiny OpenAI-compatible chat-completions server in a background thread.

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:<port>/v1``.
    """

    def __init__(self) -> None:
        self.state = ServerState()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server = None
        self._thread = None

    def _app(self) -> FastAPI:
        app = FastAPI()
        state = self.state

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            epoch = state.epoch
            state.requests += 1
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            state.bodies.append(body)
            state.auth.append(request.headers.get("authorization", ""))
            # Decided on arrival: a request still sleeping when the next test starts takes
            # nothing of that test's misbehaviours.
            code = state.fail_next.pop(0) if state.fail_next else state.fail_always
            try:
                if state.latency_s:
                    await asyncio.sleep(state.latency_s)
                if isinstance(code, Echo):
                    key = request.headers.get("authorization", "").removeprefix("Bearer ")
                    return Response(code.render(key), code.status, media_type=code.media_type)
                if code == "not_json":
                    return HTMLResponse("<html><body>502 Bad Gateway</body></html>")
                if code == "no_choices":
                    return {"id": f"chatcmpl-{state.requests}", "object": "chat.completion"}
                if code == "leaky_400":
                    leak = f"bad request from {request.headers.get('authorization', '')}"
                    return JSONResponse({"error": {"message": leak}}, status_code=400)
                if isinstance(code, int):
                    error = {"error": {"message": f"injected {code}", "type": "injected"}}
                    return JSONResponse(error, status_code=code)
                match = SCORE_TAG.search(_user_text(body))
                text = f"<answer>{match.group(1)}</answer>" if match else state.reply
                if state.scorer is not None:
                    text = f"<answer>{state.scorer(_user_text(body)):.1f}</answer>"
                if state.replier is not None:
                    text = state.replier(body)
                if code == "null_content":
                    text = None
                return {
                    "id": f"chatcmpl-{state.requests}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            finally:
                if state.epoch == epoch:  # else a reset (the next test) came meanwhile
                    state.in_flight -= 1

        return app

    def __enter__(self) -> FakeRewardModel:
        import uvicorn

        config = uvicorn.Config(
            self._app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake reward-model server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
