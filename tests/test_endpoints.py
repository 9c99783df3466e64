"""The endpoint client and its cache against a real local server that misbehaves in every way
``tests/endpoint_cases.py`` lists: each request ends as an Answer or a Failure, never an
exception; transient failures are retried, the others fail at once; failures are never cached;
the key is sent but never logged or stored; the cache is keyed by endpoint, model, prompt
version and body, and bounded."""

from __future__ import annotations

import json
import logging
import os
import pickle
import time

import pytest
from endpoint_cases import CASES, OPTIONS, closed_port_url

from vlrl.config import EndpointConfig
from vlrl.endpoints import (
    Answer,
    EndpointCache,
    EndpointClient,
    Failure,
    MissingAPIKey,
    redact_url,
)

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "VLRL_TEST_ENDPOINT_KEY"


def body(text: str = "hello", model: str = "m") -> dict:
    return {"model": model, "messages": [{"role": "user", "content": text}], "temperature": 0.0}


def client(base_url: str, cache=None, prompt_version: str = "v1", **options) -> EndpointClient:
    cfg = EndpointConfig(base_url=base_url, model="m", **{**OPTIONS, **options})
    return EndpointClient(cfg, prompt_version, cache, label="test")


def entries(cache_dir) -> list:
    return list(cache_dir.rglob("*.json"))


# ------------------------------------------------------------------------------ misbehaviour
@pytest.mark.parametrize("case", CASES)
def test_misbehaviour_is_a_failure_never_an_exception_nor_cached(endpoint, case, tmp_path):
    base_url = case.apply(endpoint)
    c = client(base_url, EndpointCache(tmp_path / "cache"), **case.settings())
    results = c.complete([body("a"), body("b")])
    assert all(isinstance(r, Failure) for r in results), results
    for result in results:
        assert result.kind == case.kind and result.attempts == case.attempts, result
        assert result.message.startswith(f"{case.kind}: ")
        assert f"after {case.attempts} attempt(s)" in result.message
    assert (c.stats.calls, c.stats.attempts, c.stats.failures) == (2, 2 * case.attempts, 2)
    if not case.refused:
        assert endpoint.state.requests == 2 * case.attempts
    assert not entries(tmp_path / "cache")  # a failure is never cached
    # The endpoint recovers: the same requests now succeed, and only now are they cached.
    endpoint.state.reset()
    good = client(endpoint.base_url, EndpointCache(tmp_path / "cache"))
    assert [r.value for r in good.complete([body("a"), body("b")])] == ["<answer>0.7</answer>"] * 2
    assert len(entries(tmp_path / "cache")) == 2


@pytest.mark.parametrize(
    ("first", "kind"),
    [
        pytest.param(500, "http_status", id="HTTP 500"),
        pytest.param(429, "http_status", id="HTTP 429"),
        pytest.param(408, "http_status", id="HTTP 408"),
        pytest.param("not_json", "not_json", id="HTML body"),
        pytest.param("no_choices", "no_content", id="no choices"),
    ],
)
def test_transient_failure_then_success(endpoint, first, kind):
    endpoint.state.fail_next = [first]
    c = client(endpoint.base_url)
    [result] = c.complete([body()])
    assert isinstance(result, Answer) and result.value == "<answer>0.7</answer>"
    assert (result.attempts, c.stats.attempts, c.stats.failures) == (2, 2, 0)


def test_failure_messages(endpoint):
    """The exact texts callers record (scores files, predictions, logs)."""
    endpoint.state.fail_always = 500
    [failed] = client(endpoint.base_url).complete([body()])
    assert failed.message == (
        "http_status: InternalServerError (HTTP 500) after 2 attempt(s): "
        "Error code: 500 - injected 500"
    )
    assert failed.status == 500 and str(failed) == failed.message
    endpoint.state.fail_always = "not_json"
    [failed] = client(endpoint.base_url).complete([body()])
    assert failed.message == (
        "not_json: HTTP 200 body is not JSON after 2 attempt(s): "
        "'<html><body>502 Bad Gateway</body></html>'"
    )
    endpoint.state.fail_always = "no_choices"
    [failed] = client(endpoint.base_url).complete([body()])
    assert failed.message.startswith(
        "no_content: HTTP 200 JSON has no choices[0].message.content after 2 attempt(s): "
        '\'{"id":"chatcmpl-'
    )
    [failed] = client(closed_port_url()).complete([body()])
    assert failed.message.startswith("connection: APIConnectionError after 2 attempt(s): ")
    endpoint.state.reset()
    endpoint.state.latency_s = 1.0
    [failed] = client(endpoint.base_url, timeout_s=0.3).complete([body()])
    assert failed.message == "timeout: APITimeoutError after 2 attempt(s): Request timed out."


def test_unparsable_reply_is_a_failure_not_retried_not_cached(endpoint, tmp_path):
    endpoint.state.reply = "no number here"

    def number(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"not a number: {text!r}") from None

    c = client(endpoint.base_url, EndpointCache(tmp_path / "c"), max_retries=3)
    [failed] = c.complete([body()], parse=number)
    assert failed.kind == "unparsable" and failed.attempts == 1
    assert failed.message == "unparsable: not a number: 'no number here'"
    assert failed.text == "no number here"  # the reply is kept for the record
    assert not entries(tmp_path / "c")
    endpoint.state.reply = "0.25"
    [ok] = c.complete([body()], parse=number)
    assert ok.value == 0.25 and len(entries(tmp_path / "c")) == 1


def test_backoff_doubles(endpoint):
    endpoint.state.fail_always = 503
    start = time.perf_counter()
    [failed] = client(endpoint.base_url, max_retries=3, backoff_s=0.05).complete([body()])
    elapsed = time.perf_counter() - start
    assert failed.attempts == 4
    assert elapsed >= 0.05 + 0.1 + 0.2  # 0.05 · 2^k before retry k + 1


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_bounded(endpoint, concurrency):
    endpoint.state.latency_s = 0.05
    results = client(endpoint.base_url, concurrency=concurrency).complete(
        [body(str(i)) for i in range(8)]
    )
    assert all(isinstance(r, Answer) for r in results)
    assert endpoint.state.max_in_flight == concurrency


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError, match="greater than 0"):
        EndpointConfig(base_url="http://x/v1", model="m", concurrency=0)


def test_results_keep_the_order_of_the_bodies(endpoint):
    endpoint.state.replier = lambda b: b["messages"][0]["content"].upper()
    endpoint.state.latency_s = 0.01
    results = client(endpoint.base_url, concurrency=4).complete([body(t) for t in "abcdef"])
    assert [r.value for r in results] == list("ABCDEF")


def test_requests_are_not_logged_one_line_each(endpoint, caplog):
    """openai's HTTP client logs every request at INFO; at the root logger's INFO (the CLI's)
    a thousand judged items would print a thousand lines over the progress bar."""
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    with caplog.at_level(logging.INFO):
        results = client(endpoint.base_url).complete([body("a"), body("b")])
    assert all(isinstance(r, Answer) for r in results)
    assert "HTTP Request" not in caplog.text


# ---------------------------------------------------------------------------------- the key
def test_key_is_sent_and_never_logged_or_stored(endpoint, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, SECRET)
    endpoint.state.reply = f"echo {SECRET}"
    c = client(endpoint.base_url, EndpointCache(tmp_path / "c"), api_key_env=KEY_ENV)
    with caplog.at_level(logging.DEBUG):
        [ok] = c.complete([body("a")])
        endpoint.state.fail_always = "leaky_400"  # the error body repeats the bearer token
        [failed] = c.complete([body("b")])
    assert endpoint.state.auth[0] == f"Bearer {SECRET}"
    assert ok.text == "echo ***" and ok.value == "echo ***"
    assert SECRET not in failed.message and "bad request from Bearer ***" in failed.message
    assert SECRET not in caplog.text
    for path in (tmp_path / "c").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text()
    assert SECRET.encode() not in pickle.dumps(c)
    assert SECRET not in repr(c.metadata())


def test_key_is_read_at_call_time(endpoint, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    c = client(endpoint.base_url, api_key_env=KEY_ENV)
    c.complete([body("a")])
    monkeypatch.setenv(KEY_ENV, SECRET)
    c.complete([body("b")])
    assert endpoint.state.auth == ["Bearer EMPTY", f"Bearer {SECRET}"]


def test_a_required_key_that_is_unset_names_the_variable(endpoint, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    c = client(endpoint.base_url, api_key_env=KEY_ENV, api_key_required=True)
    with pytest.raises(MissingAPIKey, match=rf"\${KEY_ENV}, which is not set"):
        c.complete([body()])
    assert endpoint.state.requests == 0  # refused before asking


def test_401_names_the_variable(endpoint, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    endpoint.state.fail_always = 401
    [failed] = client(endpoint.base_url, api_key_env=KEY_ENV).complete([body()])
    assert failed.attempts == 1
    assert failed.message.endswith(f"(the key is read from ${KEY_ENV}, which is not set)")


def test_credentials_in_the_url_are_redacted_and_scrubbed(endpoint):
    url = endpoint.base_url.replace("http://", "http://user:hunter22@")
    c = client(url)
    assert c.metadata()["base_url"] == endpoint.base_url
    assert redact_url(endpoint.base_url + "?api-key=abc") == endpoint.base_url


# -------------------------------------------------------------------------------- the cache
def test_cache_hit_asks_nothing(endpoint, tmp_path):
    cache = EndpointCache(tmp_path / "c")
    first = client(endpoint.base_url, cache)
    assert [r.cached for r in first.complete([body("a"), body("b")])] == [False, False]
    again = client(endpoint.base_url, EndpointCache(tmp_path / "c"))
    results = again.complete([body("a"), body("b")])
    assert [r.cached for r in results] == [True, True]
    assert [r.attempts for r in results] == [0, 0]
    assert endpoint.state.requests == 2 and again.stats.cache_hits == 2
    entry = json.loads(entries(tmp_path / "c")[0].read_text())
    assert set(entry) == {"key", "endpoint", "model", "prompt_version", "reply", "created"}
    assert entry["endpoint"] == endpoint.base_url and entry["prompt_version"] == "v1"
    assert not list((tmp_path / "c").rglob("*.part"))


def test_cache_key_differs_by_endpoint_model_prompt_version_and_body():
    base = ("http://h:1/v1", "m", "v1", body())
    key = EndpointCache.key(*base)
    others = [
        ("http://h:2/v1", "m", "v1", body()),
        ("http://h:1/v1", "m2", "v1", body()),
        ("http://h:1/v1", "m", "v2", body()),
        ("http://h:1/v1", "m", "v1", body("other")),
        ("http://h:1/v1", "m", "v1", {**body(), "temperature": 0.5}),
    ]
    assert len({key, *(EndpointCache.key(*o) for o in others)}) == 1 + len(others)
    # Credentials and a trailing slash do not make another endpoint.
    assert EndpointCache.key("http://u:p@h:1/v1/", "m", "v1", body()) == key


def test_a_cached_reply_is_not_reused_for_another_endpoint_model_or_prompt(endpoint, tmp_path):
    cache_dir = tmp_path / "c"
    assert client(endpoint.base_url, EndpointCache(cache_dir)).complete([body()])[0].value
    # Another prompt version or model: asked again.
    other_version = client(endpoint.base_url, EndpointCache(cache_dir), prompt_version="v2")
    assert not other_version.complete([body()])[0].cached
    assert (
        not client(endpoint.base_url, EndpointCache(cache_dir))
        .complete([body(model="m2")])[0]
        .cached
    )
    assert endpoint.state.requests == 3 and len(entries(cache_dir)) == 3
    # Another endpoint: not a hit (here it is down, so the request fails).
    [failed] = client(closed_port_url(), EndpointCache(cache_dir)).complete([body()])
    assert isinstance(failed, Failure) and failed.kind == "connection"


def test_unreadable_entry_is_a_miss(endpoint, tmp_path):
    cache = EndpointCache(tmp_path / "c")
    client(endpoint.base_url, cache).complete([body()])
    [path] = entries(tmp_path / "c")
    path.write_text("{not json")
    [again] = client(endpoint.base_url, EndpointCache(tmp_path / "c")).complete([body()])
    assert not again.cached and endpoint.state.requests == 2
    assert json.loads(path.read_text())["reply"] == again.text  # rewritten


def test_cache_is_bounded_and_evicts_the_least_recently_used(tmp_path):
    cache = EndpointCache(tmp_path / "c", max_entries=10)
    keys = [EndpointCache.key("http://h/v1", "m", "v1", body(str(i))) for i in range(30)]
    for i, key in enumerate(keys):
        cache.put(key, {"reply": str(i)})
        assert cache.get(keys[0]) is not None  # used at every step: never the oldest
        assert len(cache) <= 10
    assert cache.get(keys[0])["reply"] == "0"
    assert cache.get(keys[29])["reply"] == "29"
    assert all(cache.get(k) is None for k in keys[1:20])
    # Another process (a fresh object) counts what is there and keeps the bound too.
    other = EndpointCache(tmp_path / "c", max_entries=10)
    for i in range(30, 60):
        other.put(EndpointCache.key("http://h/v1", "m", "v1", body(str(i))), {"reply": str(i)})
    assert len(other) <= 10


def test_repeated_runs_do_not_grow_the_cache(endpoint, tmp_path):
    cache_dir = tmp_path / "c"
    for run in range(4):  # each run asks 8 new and 8 repeated questions
        c = client(endpoint.base_url, EndpointCache(cache_dir, max_entries=12))
        repeated = [body(f"same {i}") for i in range(8)]
        c.complete(repeated + [body(f"run {run} {i}") for i in range(8)])
        assert len(entries(cache_dir)) <= 12


def test_prune_removes_stale_temporary_files(tmp_path):
    cache = EndpointCache(tmp_path / "c", max_entries=5)
    key = EndpointCache.key("http://h/v1", "m", "v1", body())
    cache.put(key, {"reply": "x"})
    stale = cache.path / key[:2] / f".{key}.abc.part"
    stale.write_text("half")
    old = time.time() - 2 * EndpointCache.STALE_PART_S
    os.utime(stale, (old, old))
    fresh = cache.path / key[:2] / f".{key}.def.part"
    fresh.write_text("being written")
    assert cache.prune() == 0
    assert not stale.exists() and fresh.exists() and cache.get(key) is not None


def test_max_entries_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        EndpointCache(tmp_path, max_entries=0)
    with pytest.raises(ValueError, match="greater than 0"):
        EndpointConfig(base_url="http://x/v1", model="m", cache_max_entries=0)
