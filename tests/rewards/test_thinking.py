"""``sophiavl.thinking`` client against a real local OpenAI-compatible server.

The server (``tests/fake_openai_server.py::FakeRewardModel``) is a FastAPI app under uvicorn on
127.0.0.1 with per-test latency and injected 500/429 codes; the client path is the real
``openai.AsyncOpenAI``. A reply is ``<answer>x</answer>`` when the request text holds
``SCORE=x``, else the state's ``reply``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import pickle
import re

import pytest
from endpoint_cases import CASES, OPTIONS, closed_port_url
from fake_openai_server import FakeRewardModel
from PIL import Image
from trl.trainer.utils import is_async_callable

from vlrl import endpoints
from vlrl.rewards import thinking
from vlrl.rewards.sophiavl import thinking_request
from vlrl.rewards.thinking import (
    ThinkingRewardConfig,
    get_thinking_reward,
    parse_score_or_none,
)

SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "VLRL_TEST_THINKING_KEY"
LOGGER = "vlrl.rewards.thinking"


@pytest.fixture(scope="module")
def server():
    with FakeRewardModel() as srv:
        yield srv


@pytest.fixture
def state(server):
    server.state.reset()
    return server.state


def make(server, **options):
    return get_thinking_reward(
        ThinkingRewardConfig(base_url=server.base_url, model="thinking-reward-model", **options)
    )


def batch(scores):
    completions = [f"<think>SCORE={s}</think><answer>{i}</answer>" for i, s in enumerate(scores)]
    prompts = [[{"role": "user", "content": f"Q{i}?"}] for i in range(len(scores))]
    return completions, prompts


def run(reward, completions, **kwargs):
    return asyncio.run(reward(completions, **kwargs))


def test_config_forbids_extra_and_validates():
    with pytest.raises(ValueError):
        ThinkingRewardConfig(base_url="http://x/v1", model="m", temperature=0.0)
    with pytest.raises(ValueError):
        ThinkingRewardConfig(base_url="http://x/v1", model="m", on_failure="error")
    cfg = ThinkingRewardConfig(base_url="http://x/v1", model="m")
    assert (cfg.api_key_env, cfg.concurrency, cfg.timeout_s, cfg.max_retries) == (
        "OPENAI_API_KEY",
        8,
        60,
        3,
    )
    assert (cfg.backoff_s, cfg.cache_dir, cfg.on_failure) == (0.5, None, "missing")


def test_parse_score_or_none():
    assert parse_score_or_none("<answer>1.0</answer>") == 1.0
    assert parse_score_or_none("\\box{0.3}") == 0.3
    assert parse_score_or_none("I cannot judge this.") is None
    assert parse_score_or_none("") is None


def test_scores_in_order_and_request_is_sophiavl_body(server, state):
    reward = make(server)
    assert asyncio.iscoroutinefunction(type(reward).__call__)
    assert is_async_callable(reward)  # TRL's test: runs it on its async loop
    scores = [0.1, 0.9, 0.5, 1.0, 0.0]
    completions, prompts = batch(scores)
    image = Image.new("RGB", (4, 3), "red")
    images = [[image]] + [None] * 4
    assert run(reward, completions, prompts=prompts, images=images) == scores
    assert (reward.calls, reward.failures, reward.cache_hits) == (5, 0, 0)
    assert state.requests == 5
    by_q = {
        re.search(r"user\nQ(\d)\?", b["messages"][1]["content"][0]["text"]).group(1): b
        for b in state.bodies
    }
    first = by_q["0"]
    assert first["temperature"] == 0.0 and first["model"] == "thinking-reward-model"
    assert first["messages"][1]["content"][1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert "Question: <image> system\n" in first["messages"][1]["content"][0]["text"]
    # Text-only sample: exactly sophiavl.thinking_request's body.
    expected = thinking_request(
        "thinking-reward-model",
        "system\nYou are a helpful assistant.\nuser\nQ1?\nassistant\n",
        completions[1],
        None,
    )
    assert by_q["1"] == expected


def test_concurrency_is_bounded(server, state):
    state.latency_s = 0.1
    reward = make(server, concurrency=3)
    completions, prompts = batch([0.5] * 12)
    assert run(reward, completions, prompts=prompts) == [0.5] * 12
    assert state.max_in_flight == 3


def test_retries_then_success(server, state):
    state.fail_next = [500, 429, 503]
    reward = make(server, concurrency=1, max_retries=3, backoff_s=0.01)
    completions, prompts = batch([0.4])
    assert run(reward, completions, prompts=prompts) == [0.4]
    assert (reward.calls, reward.attempts, reward.failures) == (1, 4, 0)
    assert state.requests == 4


def test_persistent_failure_is_none_counted_and_logged(server, state, caplog):
    state.fail_always = 500
    reward = make(server, max_retries=2, backoff_s=0.01)
    completions, prompts = batch([0.4, 0.6])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run(reward, completions, prompts=prompts) == [None, None]
    assert (reward.calls, reward.attempts, reward.failures) == (2, 6, 2)
    assert state.requests == 6
    assert "2 of 2 samples failed (scored as None)" in caplog.text
    assert "InternalServerError (HTTP 500) after 3 attempt(s)" in caplog.text


def test_non_retryable_and_unparseable(server, state, caplog):
    state.fail_next = [400]
    state.reply = "The reasoning looks fine."  # no score anywhere
    reward = make(server, concurrency=1, backoff_s=0.01)
    completions = ["<think>a</think><answer>1</answer>", "<think>b</think><answer>2</answer>"]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run(reward, completions, prompts=["Q", "Q"]) == [None, None]
    assert (reward.calls, reward.attempts, reward.failures) == (2, 2, 2)
    assert "BadRequestError (HTTP 400) after 1 attempt(s)" in caplog.text
    assert "reply has no score" in caplog.text


def test_timeout_is_retried_then_failure(server, state):
    state.latency_s = 1.0
    reward = make(server, timeout_s=0.2, max_retries=1, backoff_s=0.01)
    completions, prompts = batch([0.3])
    assert run(reward, completions, prompts=prompts) == [None]
    assert (reward.attempts, reward.failures) == (2, 1)


def test_score_zero_option_scores_zero_and_counts(server, state, caplog):
    state.fail_always = 429
    reward = make(server, on_failure="score_zero", max_retries=1, backoff_s=0.01)
    completions, prompts = batch([0.8, 0.2])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert run(reward, completions, prompts=prompts) == [0.0, 0.0]
    assert reward.failures == 2
    assert "2 of 2 samples failed (scored as 0.0)" in caplog.text


def test_cache_hit_on_second_call_and_failures_not_cached(server, state, tmp_path):
    cache_dir = tmp_path / "thinking_cache"
    completions, prompts = batch([0.2, 0.7])
    reward = make(server, cache_dir=str(cache_dir))
    assert run(reward, completions, prompts=prompts) == [0.2, 0.7]
    assert state.requests == 2 and len(list(cache_dir.rglob("*.json"))) == 2
    assert not list(cache_dir.rglob("*.part"))
    # A fresh object (e.g. another worker) with the same cache: no request is made.
    again = make(server, cache_dir=str(cache_dir))
    assert run(again, completions, prompts=prompts) == [0.2, 0.7]
    assert state.requests == 2 and (again.calls, again.cache_hits) == (0, 2)
    # A failure is not cached: the next call asks again.
    state.fail_always = 500
    other = make(server, cache_dir=str(cache_dir), max_retries=0)
    new, new_prompts = batch([0.9])
    assert run(other, new, prompts=new_prompts) == [None]
    assert len(list(cache_dir.rglob("*.json"))) == 2
    state.fail_always = None
    assert run(other, new, prompts=new_prompts) == [0.9]
    assert other.cache_hits == 0 and len(list(cache_dir.rglob("*.json"))) == 3


def test_key_sent_but_never_logged_cached_or_pickled(server, state, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, SECRET)
    cache_dir = tmp_path / "c"
    # The reply echoes the key: it must be scrubbed before it is cached.
    state.reply = f"<answer>0.6</answer> {SECRET}"
    reward = make(server, api_key_env=KEY_ENV, cache_dir=str(cache_dir), backoff_s=0.01)
    with caplog.at_level(logging.DEBUG):
        assert run(reward, ["<think>x</think><answer>1</answer>"], prompts=["Q"]) == [0.6]
        state.fail_always = 500
        assert run(reward, ["<think>y</think><answer>2</answer>"], prompts=["Q"]) == [None]
    assert state.auth[0] == f"Bearer {SECRET}"  # it is sent
    assert SECRET not in caplog.text
    for path in cache_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text()
    assert SECRET.encode() not in pickle.dumps(reward)
    assert SECRET not in repr(reward.stats())


def test_picklable_and_usable_after_unpickling(server, state):
    reward = make(server)
    run(reward, *batch([0.5])[:1], prompts=batch([0.5])[1])
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.__name__ == "sophiavl.thinking" and clone.calls == 1
    assert run(clone, *batch([0.3])[:1], prompts=batch([0.3])[1]) == [0.3]


def test_concurrent_calls_share_one_event_loop(server, state):
    """TRL gathers async reward funcs on one daemon loop: two batches at once."""
    state.latency_s = 0.05
    reward = make(server, concurrency=4)

    async def both():
        a, pa = batch([0.1] * 4)
        b, pb = batch([0.9] * 4)
        return await asyncio.gather(reward(a, prompts=pa), reward(b, prompts=pb))

    assert asyncio.run(both()) == [[0.1] * 4, [0.9] * 4]
    assert reward.calls == 8


# ------------------------------------------------------------------- a misbehaving endpoint
@pytest.mark.parametrize("on_failure", ["missing", "score_zero"])
@pytest.mark.parametrize("case", CASES)
def test_misbehaving_endpoint_is_never_scored_nor_cached(
    server, state, case, on_failure, tmp_path, caplog
):
    cfg = ThinkingRewardConfig(
        base_url=case.apply(server),
        model="thinking-reward-model",
        cache_dir=str(tmp_path / "c"),
        on_failure=on_failure,
        **case.settings(),
    )
    reward = get_thinking_reward(cfg)
    completions, prompts = batch([0.4, 0.6])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        scores = run(reward, completions, prompts=prompts)  # never raises
    assert scores == ([None, None] if on_failure == "missing" else [0.0, 0.0])
    assert (reward.calls, reward.attempts, reward.failures) == (2, 2 * case.attempts, 2)
    assert f"sample 0 failed: {case.kind}: " in caplog.text
    assert "2 of 2 samples failed" in caplog.text
    assert not list((tmp_path / "c").rglob("*.json"))


def test_scores_are_cached_per_endpoint_model_and_version(server, state, tmp_path, monkeypatch):
    cache_dir = str(tmp_path / "c")
    completions, prompts = batch([0.4])
    assert run(make(server, cache_dir=cache_dir), completions, prompts=prompts) == [0.4]
    again = make(server, cache_dir=cache_dir)
    assert run(again, completions, prompts=prompts) == [0.4] and again.cache_hits == 1
    other_model = get_thinking_reward(
        ThinkingRewardConfig(base_url=server.base_url, model="other-rm", cache_dir=cache_dir)
    )
    assert run(other_model, completions, prompts=prompts) == [0.4]
    assert other_model.cache_hits == 0
    monkeypatch.setattr(thinking, "CACHE_VERSION", "sophiavl-thinking-v2")
    new_version = make(server, cache_dir=cache_dir)
    assert run(new_version, completions, prompts=prompts) == [0.4]
    assert new_version.cache_hits == 0 and state.requests == 3
    monkeypatch.undo()
    elsewhere = get_thinking_reward(
        ThinkingRewardConfig(
            base_url=closed_port_url(),
            model="thinking-reward-model",
            cache_dir=cache_dir,
            **OPTIONS,
        )
    )
    assert run(elsewhere, completions, prompts=prompts) == [None]  # not the other server's score


def test_a_required_key_that_is_unset_fails_when_the_reward_is_built(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(endpoints.MissingAPIKey, match=rf"\${KEY_ENV}, which is not set"):
        make(server, api_key_env=KEY_ENV, api_key_required=True)


# ------------------------------------------------------------- inputs, logs and settings
def png_pixels(b64: str) -> tuple[tuple[int, int], list]:
    """Size and RGB pixels of a base64 PNG (and check that it is a PNG)."""
    raw = base64.b64decode(b64)
    assert raw.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(raw)) as img:
        return img.size, list(img.convert("RGB").getdata())


def test_image_png_b64_reads_every_image_form(tmp_path):
    image = Image.new("RGB", (3, 2), (10, 20, 30))
    image.putpixel((2, 1), (200, 100, 0))
    expected = ((3, 2), list(image.getdata()))
    path = tmp_path / "img.png"
    image.save(path)
    raw = path.read_bytes()
    forms = {
        "PIL image": image,
        "str path": str(path),
        "Path": path,
        "bytes": raw,
        "bytes dict (datasets Image)": {"bytes": raw, "path": None},
        "bytes-only dict": {"bytes": raw},
        "path dict": {"bytes": None, "path": str(path)},
        "path-only dict": {"path": str(path)},
        "list: the first is used": [raw, Image.new("RGB", (1, 1))],
        "tuple": (image,),
    }
    for why, form in forms.items():
        assert png_pixels(thinking.image_png_b64(form)) == expected, why
    for empty in (None, [], (), {}, {"bytes": None, "path": None}):
        assert thinking.image_png_b64(empty) is None, empty


def test_score_of_raises_with_the_reply_clipped_to_200_characters():
    assert thinking.score_of("<answer>0.4</answer>") == 0.4
    reply = "no score here " * 30
    with pytest.raises(ValueError) as info:
        thinking.score_of(reply)
    assert str(info.value) == f"reply has no score: {reply[:200]!r}"


def test_without_prompts_the_prompt_is_empty(server, state):
    reward = make(server)
    completions, _ = batch([0.2, 0.6])
    assert run(reward, completions) == [0.2, 0.6]
    expected = [thinking_request("thinking-reward-model", "", c, None) for c in completions]
    assert sorted(state.bodies, key=str) == sorted(expected, key=str)


def test_the_image_column_is_read_when_images_is_absent(server, state):
    reward = make(server)
    image = Image.new("RGB", (2, 2), (0, 128, 255))
    completions, prompts = batch([0.3])
    assert run(reward, completions, prompts=prompts, image=[image]) == [0.3]
    (body,) = state.bodies
    url = body["messages"][1]["content"][1]["image_url"]["url"]
    assert png_pixels(url.removeprefix("data:image/png;base64,")) == ((2, 2), [(0, 128, 255)] * 4)
    # ``images`` wins over ``image``.
    state.reset()
    assert run(reward, completions, prompts=prompts, images=[None], image=[image]) == [0.3]
    assert len(state.bodies[0]["messages"][1]["content"]) == 1  # text only


def test_columns_of_other_lengths_raise(server, state):
    reward = make(server)
    completions, prompts = batch([0.1, 0.2])
    with pytest.raises(ValueError, match="zip"):
        run(reward, completions, prompts=prompts[:1])
    with pytest.raises(ValueError, match="zip"):
        run(reward, completions, prompts=prompts, images=[None])
    assert state.requests == 0


def test_failure_log_lines_name_the_reward_and_stop_after_ten(server, state, caplog):
    """The first MAX_LOGGED failures of the reward's life are warnings, later ones debug; each
    batch with failures ends with one warning that counts them."""
    assert thinking.MAX_LOGGED == 10
    state.fail_always = 400  # not retried: one request per sample
    reward = make(server, max_retries=0)
    completions, prompts = batch([0.5] * 6)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert run(reward, completions, prompts=prompts) == [None] * 6
        assert run(reward, completions, prompts=prompts) == [None] * 6
    records = [r for r in caplog.records if r.name == LOGGER]
    per_sample = [r for r in records if " failed: " in r.getMessage()]
    assert [r.levelno for r in per_sample] == [logging.WARNING] * 10 + [logging.DEBUG] * 2
    for i, r in enumerate(per_sample):
        assert r.getMessage().startswith(
            f"sophiavl.thinking: sample {i % 6} failed: http_status: BadRequestError (HTTP 400)"
        )
    summaries = [r for r in records if "samples failed" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in summaries] == [
        (
            logging.WARNING,
            "sophiavl.thinking: 6 of 6 samples failed (scored as None); "
            f"totals: {total} failures, {total} calls, 0 cache hits",
        )
        for total in (6, 12)
    ]


def test_no_summary_warning_without_failures(server, state, caplog):
    reward = make(server)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert run(reward, *batch([0.5])[:1], prompts=batch([0.5])[1]) == [0.5]
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_cache_max_entries_bounds_the_cache(server, state, tmp_path):
    cache_dir = tmp_path / "c"
    reward = make(server, cache_dir=str(cache_dir), cache_max_entries=2)
    completions, prompts = batch([0.1, 0.2, 0.3, 0.4, 0.5])
    assert run(reward, completions, prompts=prompts) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert len(list(cache_dir.rglob("*.json"))) == 2
    unbounded = make(server, cache_dir=str(tmp_path / "d"))
    assert run(unbounded, completions, prompts=prompts) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert len(list((tmp_path / "d").rglob("*.json"))) == 5


def test_get_thinking_reward_validates_a_dict(server):
    reward = get_thinking_reward(
        {"base_url": server.base_url, "model": "rm", "concurrency": 2, "on_failure": "score_zero"}
    )
    assert reward.cfg == ThinkingRewardConfig(
        base_url=server.base_url, model="rm", concurrency=2, on_failure="score_zero"
    )
    cfg = ThinkingRewardConfig(base_url=server.base_url, model="rm")
    assert get_thinking_reward(cfg).cfg is cfg
    with pytest.raises(ValueError, match="on_failure"):
        get_thinking_reward({"base_url": server.base_url, "model": "rm", "on_failure": "raise"})


def test_a_missing_key_error_names_the_reward(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(endpoints.MissingAPIKey) as info:
        make(server, api_key_env=KEY_ENV, api_key_required=True)
    assert str(info.value).startswith("sophiavl.thinking: the API key for ")
