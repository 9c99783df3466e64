"""How an endpoint is named and its secrets kept out of what is written
(vlrl.endpoints.replies): the pure functions, each decision on both sides."""

from __future__ import annotations

from vlrl.config import EndpointConfig
from vlrl.endpoints.replies import clip, endpoint_name, redact_url, scrub

KEY = "sk-test-0123456789abcdef"


def test_clip_keeps_a_text_of_the_limit_and_cuts_one_longer_to_it() -> None:
    assert clip("abcd", 4) == "abcd"
    assert clip("abcde", 4) == "abc…"
    assert len(clip("x" * 1000)) == 300
    assert clip("x" * 1000).endswith("x…")


def test_an_endpoint_is_named_by_its_id_else_its_redacted_url_else_says_it_has_none() -> None:
    assert endpoint_name(EndpointConfig(base_url="http://u:pw@h:8000/v1?k=x", model="m")) == (
        "http://h:8000/v1"
    )
    assert endpoint_name(EndpointConfig(serve={"model": "org/m"})) == "(no base_url)"  # not up
    named = EndpointConfig(base_url="http://h/v1", model="m", endpoint_id="serve:x@1")
    assert endpoint_name(named) == "serve:x@1"


def test_a_url_keeps_its_port_only_when_it_has_one() -> None:
    assert redact_url("https://user:secret@api.example.com/v1?key=abc") == (
        "https://api.example.com/v1"
    )
    assert redact_url("http://u:p@127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url("unix:/run/socket") == "unix:/run/socket"  # no host at all


def test_a_secret_of_the_shortest_length_scrubbed_is_scrubbed() -> None:
    assert scrub("pin abcd here", ["abcd"]) == "pin *** here"
    assert scrub("pin abc here", ["abc"]) == "pin abc here"  # too short to tell apart
    # a secret too short is skipped, the next one still scrubbed
    assert scrub("abc and abcd", ["abc", "abcd", None, ""]) == "abc and ***"


def test_every_occurrence_of_every_piece_is_scrubbed() -> None:
    """The key three times, once cut short and once overlapping itself: each becomes ***."""
    text = f"{KEY} then {KEY} and {KEY[:10]}!{KEY}{KEY}"
    assert scrub(text, [KEY]) == "*** then *** and ***!***"
    assert scrub("a" * 9, ["a" * 8]) == "***"  # found again one character on
