"""The ``openai`` generation backend against a real local server (``tests/endpoint_cases.py``):
images go as PNG data URLs, decoding settings and the seed are sent, the key comes from
``infer.openai.api_key_env``, and a request that fails for good comes back as a Failure (never
an exception, never an empty response) that is not cached."""

from __future__ import annotations

import pytest
from endpoint_cases import CASES, OPTIONS, closed_port_url
from PIL import Image

from vlrl.config import InferConfig
from vlrl.endpoints import Failure, MissingAPIKey
from vlrl.generation import make_generator
from vlrl.generation import openai as backend
from vlrl.generation.openai import OpenAIGenerator

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "VLRL_TEST_GENERATION_KEY"


def conversation(text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]


def cfg(base_url: str, **openai) -> InferConfig:
    return InferConfig(
        backend="openai",
        max_new_tokens=12,
        temperature=0.5,
        top_p=0.9,
        openai={"base_url": base_url, **OPTIONS, **openai},
    )


def generate(generator: OpenAIGenerator, texts: list[str]) -> list:
    image = Image.new("RGB", (4, 4), "blue")
    return generator.generate([conversation(t) for t in texts], [[image] for _ in texts])


def echo(body: dict) -> str:
    return "re: " + body["messages"][0]["content"][1]["text"]


def test_requests_and_responses(endpoint, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    endpoint.state.replier = echo
    generator = make_generator(cfg(endpoint.base_url, api_key_env=KEY_ENV), "models/m", seed=7)
    assert isinstance(generator, OpenAIGenerator)
    assert generate(generator, ["a", "b", "c"]) == ["re: a", "re: b", "re: c"]
    sent = endpoint.state.bodies[0]
    assert sent["model"] == "models/m"  # the checkpoint, unless infer.openai.model names one
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["seed"]) == (
        12,
        0.5,
        0.9,
        7,
    )
    image_part = sent["messages"][0]["content"][0]
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
    assert endpoint.state.auth == [f"Bearer {SECRET}"] * 3  # infer.openai.api_key_env


def test_served_model_name(endpoint):
    generator = OpenAIGenerator("models/m", cfg(endpoint.base_url, model="served"), seed=0)
    generate(generator, ["a"])
    assert endpoint.state.bodies[0]["model"] == "served"


@pytest.mark.parametrize("case", CASES)
def test_misbehaving_endpoint_gives_failures_not_responses(endpoint, case, tmp_path):
    generator = OpenAIGenerator(
        "models/m",
        cfg(case.apply(endpoint), cache_dir=str(tmp_path / "c"), **case.settings()),
        seed=0,
    )
    results = generate(generator, ["a", "b"])  # never raises
    assert all(isinstance(r, Failure) for r in results), results
    assert all(r.kind == case.kind and r.attempts == case.attempts for r in results)
    assert generator.client.stats.failures == 2
    assert not list((tmp_path / "c").rglob("*.json"))


def test_transient_failure_is_retried(endpoint):
    endpoint.state.fail_next = [502, "no_choices"]
    generator = OpenAIGenerator(
        "models/m", cfg(endpoint.base_url, concurrency=1, max_retries=2), seed=0
    )
    assert generate(generator, ["a"]) == ["<answer>0.7</answer>"]
    assert generator.client.stats.attempts == 3


def test_cache_per_endpoint_model_and_prompt_version(endpoint, tmp_path, monkeypatch):
    endpoint.state.replier = echo
    cache_dir = str(tmp_path / "c")
    first = OpenAIGenerator("models/m", cfg(endpoint.base_url, cache_dir=cache_dir), seed=0)
    assert generate(first, ["a"]) == ["re: a"]
    again = OpenAIGenerator("models/m", cfg(endpoint.base_url, cache_dir=cache_dir), seed=0)
    assert generate(again, ["a"]) == ["re: a"] and again.client.stats.cache_hits == 1
    other_model = OpenAIGenerator("models/m2", cfg(endpoint.base_url, cache_dir=cache_dir), 0)
    generate(other_model, ["a"])
    other_seed = OpenAIGenerator("models/m", cfg(endpoint.base_url, cache_dir=cache_dir), 1)
    generate(other_seed, ["a"])
    monkeypatch.setattr(backend, "PROMPT_VERSION", "openai-chat-v2")
    new_version = OpenAIGenerator("models/m", cfg(endpoint.base_url, cache_dir=cache_dir), 0)
    generate(new_version, ["a"])
    assert endpoint.state.requests == 4
    monkeypatch.undo()
    elsewhere = OpenAIGenerator("models/m", cfg(closed_port_url(), cache_dir=cache_dir), 0)
    [failed] = generate(elsewhere, ["a"])
    assert isinstance(failed, Failure) and failed.kind == "connection"


def test_a_required_key_that_is_unset_fails_before_generating(endpoint, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(MissingAPIKey, match=rf"\${KEY_ENV}, which is not set"):
        OpenAIGenerator(
            "models/m",
            cfg(endpoint.base_url, api_key_env=KEY_ENV, api_key_required=True),
            seed=0,
        )
    assert endpoint.state.requests == 0
