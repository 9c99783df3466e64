"""Nothing of the key leaks: a server that echoes it (whole, cut short, split, in nested JSON,
hundreds of characters into an error, in a reply; ``tests/endpoint_cases.py:ECHOES``) leaves no
run of 8 of its characters in a result, the cache, a log line or a pickled client. Before, error
texts were cut to 300 (bodies to 200) characters *before* the key was scrubbed, and only the
whole key was: a cut key slipped through."""

from __future__ import annotations

import logging
import pickle

import pytest
from endpoint_cases import ECHO_CASES, ECHOES, LEAK_KEY, OPTIONS, leaks

from vlrl.config import EndpointConfig
from vlrl.endpoints import MAX_DETAIL, EndpointCache, EndpointClient, Failure, clip, scrub

KEY_ENV = "VLRL_TEST_LEAK_KEY"


def body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0.0}


@pytest.mark.parametrize("echo", ECHO_CASES)
def test_an_echoed_key_reaches_no_result_cache_or_log(
    endpoint, echo, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv(KEY_ENV, LEAK_KEY)
    endpoint.state.fail_always = echo
    cfg = EndpointConfig(base_url=endpoint.base_url, model="m", api_key_env=KEY_ENV, **OPTIONS)
    client = EndpointClient(cfg, "v1", EndpointCache(tmp_path / "cache"), label="leak")
    with caplog.at_level(logging.DEBUG):
        results = client.complete([body("a"), body("b")])
    assert endpoint.state.auth[0] == f"Bearer {LEAK_KEY}"  # the server did get the key
    texts = [caplog.text, repr(client.metadata()), pickle.dumps(client).decode("latin-1")]
    for result in results:
        texts += [str(result), repr(result), result.text or ""]
        if isinstance(result, Failure):
            assert len(result.message) < MAX_DETAIL + 200, result.message  # still cut short
    texts += [p.read_text() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not leaks("\n".join(texts)), [t for t in texts if leaks(t)]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "cut short by the server",
            "http_status: AuthenticationError (HTTP 401) after 1 attempt(s): Error code: 401 - "
            f"invalid key ***... (the key is read from ${KEY_ENV}, which is set)",
        ),
        (
            "split in two",
            "http_status: PermissionDeniedError (HTTP 403) after 1 attempt(s): Error code: 403 - "
            f"key *** / *** refused (the key is read from ${KEY_ENV}, which is set)",
        ),
        (
            "a retried 502",
            "http_status: InternalServerError (HTTP 502) after 2 attempt(s): Error code: 502 - "
            "upstream refused Bearer ***",
        ),
        (
            "whole, 300 characters in",
            "http_status: BadRequestError (HTTP 400) after 1 attempt(s): "
            + clip("Error code: 400 - " + "." * 260 + " Bearer *** (sent)"),
        ),
        (
            "a 200 HTML page, 190 characters in",
            "not_json: HTTP 200 body is not JSON after 2 attempt(s): "
            + clip(repr("<html>" + "." * 184 + "***</html>")),
        ),
    ],
)
def test_messages_keep_what_the_server_said_around_the_key(endpoint, name, message, monkeypatch):
    monkeypatch.setenv(KEY_ENV, LEAK_KEY)
    [endpoint.state.fail_always] = [e for e in ECHOES if e.name == name]
    cfg = EndpointConfig(base_url=endpoint.base_url, model="m", api_key_env=KEY_ENV, **OPTIONS)
    [failed] = EndpointClient(cfg, "v1").complete([body("a")])
    assert failed.message == message


def test_scrubbing_comes_before_the_cut():
    """The cut itself would leave a piece of the key at the end of the text."""
    text = "." * 290 + LEAK_KEY
    assert leaks(clip(text)) and not leaks(clip(scrub(text, [LEAK_KEY])))


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        pytest.param(f"a {LEAK_KEY} b", "a *** b", id="whole"),
        pytest.param(f"{LEAK_KEY}{LEAK_KEY}", "***", id="twice, touching"),
        pytest.param(f"{LEAK_KEY[:8]}|{LEAK_KEY[-8:]}", "***|***", id="8 from each end"),
        pytest.param(f"{LEAK_KEY[:7]}|{LEAK_KEY[-7:]}", f"{LEAK_KEY[:7]}|{LEAK_KEY[-7:]}", id="7"),
        pytest.param(f"x{LEAK_KEY[3:30]}y", "x***y", id="the middle"),
        pytest.param(f"{LEAK_KEY[:20]}{LEAK_KEY[10:]}", "***", id="overlapping pieces"),
        pytest.param("nothing here", "nothing here", id="none"),
    ],
)
def test_scrub_cases(text, scrubbed):
    assert scrub(text, [LEAK_KEY, None, "pw"]) == scrubbed


def test_scrub_leaves_no_run_of_8_wherever_the_key_is_cut():
    """Every piece of the key, at every offset in a text, then cut at every length."""
    for start in range(len(LEAK_KEY)):
        for stop in range(start + 1, len(LEAK_KEY) + 1):
            text = scrub(f"<{LEAK_KEY[start:stop]}>", [LEAK_KEY])
            assert not leaks(text), (start, stop, text)
            assert ("***" in text) == (stop - start >= 8), (start, stop, text)


def test_short_secrets_are_scrubbed_whole_only():
    assert scrub("pw=hunter2 and hunter", ["hunter2"]) == "pw=*** and hunter"
    assert scrub("abc", ["abc"]) == "abc"  # under 4 characters: not a secret worth matching
