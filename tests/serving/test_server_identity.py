"""The endpoint id of a managed server (``serve:<backend>:<model>@<fingerprint>``,
``vlrl.serving.served_models.fingerprint``): the reply cache must never hand one model's replies to
other weights served under the same name, and must find them again whatever port, GPUs or
start-up timeout the server gets."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from vlrl.config import InferConfig, JudgeConfig
from vlrl.endpoints import EndpointCache, EndpointClient
from vlrl.serving import served_models
from vlrl.serving.commands import plan, unstarted

COMMIT_A, COMMIT_B = "a" * 40, "b" * 40


@pytest.fixture
def hashes(tmp_path, monkeypatch) -> Path:
    """A project root (the current directory) and a private hash memo."""
    monkeypatch.setenv("VLRL_HASH_CACHE", str(tmp_path / "hash-cache"))
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _model(root: Path, name: str, weights: bytes) -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "config.json").write_text('{"max_position_embeddings": 4096}')
    (directory / "model.safetensors").write_bytes(weights)
    (directory / "README.md").write_text("notes")  # not part of the weights
    return directory


def _judge(model: str, **serve) -> JudgeConfig:
    return JudgeConfig(serve={"model": model, **serve}, model="judge")


def _id(cfg, gpu: bool = True) -> str:
    return plan(cfg, gpu=gpu).endpoint_id


def test_the_id_names_the_backend_model_and_a_12_hex_fingerprint(hashes):
    _model(hashes, "models/judge", b"w1")
    assert re.fullmatch(r"serve:vllm:judge@[0-9a-f]{12}", _id(_judge("models/judge")))
    cpu = JudgeConfig(serve={"model": "models/judge"})
    assert re.fullmatch(r"serve:transformers:models/judge@[0-9a-f]{12}", _id(cpu, gpu=False))
    assert unstarted(cpu).endpoint_id == _id(cpu, gpu=False)  # torch sees no GPU here


def test_other_weights_under_the_same_name_get_another_id(hashes):
    first = _id(_judge(str(_model(hashes, "a", b"weights one"))))
    other = _id(_judge(str(_model(hashes, "b", b"weights two"))))
    assert first != other
    # A retrain that overwrites the checkpoint in place: the same path, new weights.
    retrained = hashes / "a" / "model.safetensors"
    retrained.write_bytes(b"weights three")
    assert _id(_judge(str(hashes / "a"))) not in (first, other)
    # A changed config or tokenizer changes replies too; the README does not.
    before = _id(_judge("b"))
    (hashes / "b" / "README.md").write_text("other notes")
    assert _id(_judge("b")) == before
    (hashes / "b" / "tokenizer.json").write_text("{}")
    assert _id(_judge("b")) != before


def test_the_same_weights_get_the_same_id_wherever_they_are(hashes):
    source = _model(hashes, "models/judge", b"the weights")
    shutil.copytree(source, hashes / "elsewhere" / "judge")
    assert _id(_judge("models/judge")) == _id(_judge(str(hashes / "elsewhere" / "judge")))
    assert _id(_judge("models/judge")) == _id(_judge(str(source)))  # relative or absolute


def test_port_gpus_and_timeout_do_not_change_the_id_but_reply_settings_do(hashes):
    _model(hashes, "m", b"w")
    base = _id(_judge("m"))
    neutral = [
        {"port": 8123},
        {"gpus": 2},
        {"startup_timeout_s": 5},
        {"gpu_memory_utilization": 0.5},
        {"images_per_prompt": 8},
        {"args": ["--port", "9000", "--gpu_memory_utilization=0.4", "--tensor-parallel-size", "2"]},
    ]
    for serve in neutral:
        assert _id(_judge("m", **serve)) == base, serve
    changing = [
        {"backend": "transformers"},
        {"args": ["--dtype", "float16"]},
        {"args": ["--max-model-len", "2048"]},
        {"max_model_len": 2048},
    ]
    ids = {_id(JudgeConfig(serve={"model": "m", **serve})) for serve in changing}
    assert len(ids) == len(changing) and base not in ids


def test_a_hub_model_is_named_by_its_cached_commit(hashes, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(hashes / "hub"))
    refs = hashes / "hub" / "models--org--judge" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(COMMIT_A)
    at_a = _id(_judge("org/judge"))
    (refs / "main").write_text(COMMIT_B)  # the cache now holds newer weights
    at_b = _id(_judge("org/judge"))
    assert at_a != at_b and served_models.weights_id("org/judge") == f"hub:org/judge@{COMMIT_B}"
    # A pinned revision in serve.args is the weights, whatever main points to.
    pinned = _judge("org/judge", args=["--revision", COMMIT_A])
    assert served_models.weights_id("org/judge", COMMIT_A) == f"hub:org/judge@{COMMIT_A}"
    (refs / "v1").write_text(COMMIT_A)
    tagged = _judge("org/judge", args=["--revision=v1"])
    assert _id(pinned) != at_b and _id(tagged) != _id(pinned)  # the args differ, the weights not
    # Not in the cache at all: named by the name alone, stably.
    assert served_models.weights_id("org/missing") == "unresolved:org/missing"
    assert _id(_judge("org/missing")) == _id(_judge("org/missing"))


def test_file_hashes_are_remembered_by_size_and_mtime(hashes, monkeypatch):
    directory = _model(hashes, "m", b"x" * 1000)
    read: list[str] = []
    real = served_models.sha256_file

    def counting(path: Path) -> str:
        read.append(path.name)
        return real(path)

    monkeypatch.setattr(served_models, "sha256_file", counting)
    first = served_models.directory_digest(directory)
    assert sorted(read) == ["config.json", "model.safetensors"]
    read.clear()
    assert served_models.directory_digest(directory) == first and read == []  # a rerun: no read
    weights = directory / "model.safetensors"
    stat = weights.stat()
    weights.write_bytes(b"y" * 1000)  # same size, new content and mtime
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert served_models.directory_digest(directory) != first and read == ["model.safetensors"]
    memo = list((hashes / "hash-cache" / "file-sha256").glob("*.json"))
    assert len(memo) == 1


def test_cached_replies_are_not_found_for_other_weights(hashes):
    """The cache key follows the id: a reply cached for one model is a miss for another
    served under the same name, and a hit for the same weights at another port."""
    _model(hashes, "m1", b"one")
    _model(hashes, "m2", b"two")
    cache = EndpointCache(hashes / "cache")
    body = {"model": "judge", "messages": [{"role": "user", "content": "2+2?"}]}

    def client(model: str, port: int) -> EndpointClient:
        named = unstarted(_judge(model, backend="vllm"))
        started = named.model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
        return EndpointClient(started, "v1", cache)

    cache.put(client("m1", 4001)._key(body), {"reply": "4"})
    assert client("m1", 4002).uncached([body]) == 0
    assert client("m2", 4001).uncached([body]) == 1


def test_infer_serving_the_checkpoint_is_named_by_its_content(hashes):
    """``infer.openai.serve`` without a model serves the checkpoint (its path is the served
    name): a retrain that overwrites it must not reuse the old generations."""
    checkpoint = _model(hashes, "results/e/grpo/final", b"step 100")
    cfg = InferConfig(backend="openai", openai={"serve": {"backend": "vllm"}})
    serve = cfg.openai.serve.model_copy(update={"model": str(checkpoint)})
    endpoint = cfg.openai.model_copy(update={"serve": serve})
    before = unstarted(endpoint).endpoint_id
    (checkpoint / "model.safetensors").write_bytes(b"step 200")
    assert unstarted(endpoint).endpoint_id != before
    assert before.startswith(f"serve:vllm:{checkpoint}@")
