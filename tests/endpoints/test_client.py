"""The endpoint client's own decisions, in this process: the backoff's delays, what an error that
is no API error and a connection error say, what a cached entry records, the cache-only path of
an unstarted server, and what the client reports of itself."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime

import httpx2
import openai
import pytest
from endpoint_cases import OPTIONS, closed_port_url

from vlrl.config import EndpointConfig
from vlrl.core.errors import ConfigError
from vlrl.endpoints import EndpointCache, EndpointClient, Failure, MissingAPIKey
from vlrl.endpoints import client as client_module
from vlrl.endpoints.client import reply_content
from vlrl.endpoints.replies import MAX_BACKOFF_S

PASSWORD = "pw-0123456789-secret"


def body(text: str = "hello", model: str = "m") -> dict:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def client(base_url: str | None, cache=None, **options) -> EndpointClient:
    cfg = EndpointConfig(base_url=base_url, model="m", **{**OPTIONS, **options})
    return EndpointClient(cfg, "v1", cache, label="test")


class RaisingOpenAI:
    """``openai.AsyncOpenAI`` whose every request raises ``error`` (made per request)."""

    def __init__(self, error, **_: object) -> None:
        self.chat = self.completions = self.with_raw_response = self
        self.error = error

    async def create(self, **_: object) -> None:
        raise self.error()

    async def __aenter__(self) -> RaisingOpenAI:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None


def raising(monkeypatch: pytest.MonkeyPatch, error) -> None:
    monkeypatch.setattr(client_module.openai, "AsyncOpenAI", lambda **kw: RaisingOpenAI(error))


def test_an_openai_error_that_is_no_api_error_fails_at_once_scrubbed(monkeypatch) -> None:
    url = f"http://user:{PASSWORD}@127.0.0.1:1/v1"
    raising(monkeypatch, lambda: openai.OpenAIError(f"could not build the request for {url}"))
    [failed] = client(url, max_retries=3).complete([body()])
    assert failed == Failure(
        "error",
        "error: OpenAIError after 1 attempt(s): could not build the request for "
        "http://user:***@127.0.0.1:1/v1",
        attempts=1,
    )


def test_a_connection_error_says_its_cause_when_it_has_one(monkeypatch) -> None:
    [refused] = client(closed_port_url(), max_retries=0).complete([body()])
    assert refused.kind == "connection"
    prefix = "connection: APIConnectionError after 1 attempt(s): Connection error. ("
    assert refused.message.startswith(prefix) and refused.message.endswith(")")
    request = httpx2.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    raising(monkeypatch, lambda: openai.APIConnectionError(request=request))
    [bare] = client("http://127.0.0.1:1/v1", max_retries=0).complete([body()])
    assert bare.message == "connection: APIConnectionError after 1 attempt(s): Connection error."


def test_the_backoff_doubles_up_to_its_cap(endpoint, monkeypatch, caplog) -> None:
    slept: list[float] = []
    sleep = asyncio.sleep

    async def recorded(delay: float, *args: object) -> None:
        slept.append(delay)
        await sleep(0)

    class ClientsAsyncio:  # the client's asyncio only: the in-process server sleeps too
        def __getattr__(self, name: str) -> object:
            return recorded if name == "sleep" else getattr(asyncio, name)

    monkeypatch.setattr(client_module, "asyncio", ClientsAsyncio())
    endpoint.state.fail_always = 503
    caplog.set_level(logging.DEBUG, logger="vlrl.endpoints.client")
    [failed] = client(endpoint.base_url, max_retries=3, backoff_s=0.05).complete([body()])
    assert failed.attempts == 4
    assert slept == [0.05, 0.1, 0.2]
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert retries == [
        f"test: InternalServerError (HTTP 503); retry {n} in {d:.2f}s"
        for n, d in ((1, 0.05), (2, 0.1), (3, 0.2))
    ]
    slept.clear()
    client(endpoint.base_url, max_retries=2, backoff_s=20.0).complete([body()])
    assert slept == [20.0, MAX_BACKOFF_S]


def test_a_cached_entry_records_the_bodys_model_and_a_utc_time(endpoint, tmp_path) -> None:
    cache = EndpointCache(tmp_path / "c")
    client(endpoint.base_url, cache).complete([body(model="the-model")])
    [entry] = [json.loads(p.read_text()) for p in (tmp_path / "c").rglob("*.json")]
    assert entry["model"] == "the-model"
    assert datetime.fromisoformat(entry["created"]).utcoffset().total_seconds() == 0


def unstarted(cache: EndpointCache | None) -> EndpointClient:
    """A client of a server to serve that was not started, named as the pipeline names it."""
    from vlrl.serving.commands import unstarted as named

    return EndpointClient(named(EndpointConfig(serve={"model": "org/m"})), "v1", cache, "test")


def test_an_unstarted_server_answers_from_the_cache_alone(tmp_path) -> None:
    cache = EndpointCache(tmp_path / "c")
    c = unstarted(cache)
    for text, reply in (("a", "1"), ("b", "2")):
        cache.put(c._key(body(text)), {"reply": reply})
    ticks: list[int] = []
    answers = c.complete([body("a"), body("b")], parse=int, progress=lambda: ticks.append(1))
    assert [(a.value, a.text, a.cached, a.attempts) for a in answers] == [
        (1, "1", True, 0),
        (2, "2", True, 0),
    ]
    assert ticks == [1, 1]
    c.complete([body("a")])
    assert c.stats.cache_hits == 3  # counted over the client's life
    with pytest.raises(ConfigError) as info:
        c.complete([body("a"), body("c"), body("d")])
    assert str(info.value) == (
        "test: serve is set but its server is not started, and 2 of 3 requests have no cached "
        "reply; run the calls inside vlrl.serving.servers.serving(...), which starts it and "
        "sets base_url"
    )
    assert c.stats.cache_hits == 3
    # without a cache nothing is there
    with pytest.raises(ConfigError, match="1 of 1 requests have no cached reply"):
        unstarted(None).complete([body("a")])


def test_an_unstarted_server_without_a_name_is_refused(tmp_path) -> None:
    cfg = EndpointConfig(serve={"model": "org/m"})
    c = EndpointClient(cfg, "v1", EndpointCache(tmp_path / "c"), label="test")
    with pytest.raises(ConfigError) as info:
        c.complete([body("a")])
    assert str(info.value) == (
        "test: serve is set but its server is not started, and the config has no endpoint_id "
        "to find its cached replies by; name it with vlrl.serving.commands.unstarted(...), or "
        "run the calls inside vlrl.serving.servers.serving(...), which starts it"
    )


def test_progress_is_called_per_body_from_synchronous_code(endpoint) -> None:
    ticks: list[int] = []
    client(endpoint.base_url).complete([body("a"), body("b")], progress=lambda: ticks.append(1))
    assert ticks == [1, 1]


def test_what_the_client_reports_of_itself(endpoint, monkeypatch) -> None:
    c = client(endpoint.base_url)
    c.complete([body()])
    assert c.metadata() == {
        "base_url": endpoint.base_url,
        "model": "m",
        "prompt_version": "v1",
        "calls": 1,
        "attempts": 1,
        "failures": 0,
        "cache_hits": 0,
    }
    cfg = EndpointConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_required=True,
                         api_key_env="VLRL_TEST_UNSET_CLIENT_KEY")  # fmt: skip
    monkeypatch.delenv("VLRL_TEST_UNSET_CLIENT_KEY", raising=False)
    with pytest.raises(MissingAPIKey, match=r"^endpoint: the API key for http://127"):
        EndpointClient(cfg, "v1").complete([body()])


@pytest.mark.parametrize("content", [None, 3, ["a"], {"text": "a"}])
def test_a_reply_whose_content_is_not_text_has_none(content) -> None:
    assert reply_content({"choices": [{"message": {"content": content}}]}) is None
