"""Servers the pipeline starts (``vlrl.serving.servers``): the command, a real ``transformers
serve`` of a tiny model (``tests/text_models.py``) answering through the endpoint client, its
process group gone after the ``with`` block (also when the block raises), a server that dies at once
or is not
ready in time, the cache identity that does not depend on the port, and two of its consumers:
the grpo stage's reward model (the ranks' config carries the started address) and the infer
stage's ``openai`` backend (serving the checkpoint). The score stage's judge:
``tests/scoring/test_judge.py``."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

import pytest
from text_models import build_text_models

from vlrl.algorithms import grpo_servers
from vlrl.config import (
    EndpointConfig,
    ExperimentConfig,
    InferConfig,
    JudgeConfig,
    ServeConfig,
    load_experiment,
)
from vlrl.config.keys import assign, select
from vlrl.config.reads import declared_reads
from vlrl.core.errors import ConfigError, StageError
from vlrl.endpoints import EndpointCache, EndpointClient, endpoint_name
from vlrl.generation.openai import OpenAIGenerator
from vlrl.serving.commands import plan, serve_command, unstarted
from vlrl.serving.servers import free_port, serving
from vlrl.stages.infer import served_openai
from vlrl.workflow.reads import RecordingConfig, undeclared

MODEL = "models/says1"
"""The served model, relative to the project root (the server runs there)."""
ASK = {"messages": [{"role": "user", "content": "Is it right?"}], "max_tokens": 4}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A project root holding ``models/random`` and ``models/says1``."""
    out = tmp_path_factory.mktemp("served-project")
    build_text_models(out / "models")
    return out


@pytest.fixture
def served_root(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The models' project root as the current directory and ``$VLRL_ROOT``."""
    monkeypatch.chdir(root)
    monkeypatch.setenv("VLRL_ROOT", str(root))
    return root


@pytest.fixture(autouse=True)
def _hash_memo(tmp_path, monkeypatch) -> None:
    """The weights' hash memo (vlrl.serving.served_models) in the test's directory, not ~/.cache."""
    monkeypatch.setenv("VLRL_HASH_CACHE", str(tmp_path / "hash-cache"))


def _cfg(**serve) -> JudgeConfig:
    return JudgeConfig(serve={"model": MODEL, "backend": "transformers", **serve}, max_retries=0)


def _groups(port: int) -> set[int]:
    """Process groups of the processes whose command line serves on ``port``."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"serve" in argv and str(port).encode() in argv:
                groups.add(os.getpgid(int(entry.name)))
        except (OSError, ProcessLookupError):
            continue  # exited meanwhile
    return groups


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def _port(cfg: EndpointConfig) -> int:
    return int(cfg.base_url.rsplit(":", 1)[1].split("/")[0])


# ------------------------------------------------------------------------------- no server
def test_serve_command_for_both_backends():
    cpu = serve_command(ServeConfig(model="models/judge", args=["--dtype", "float32"]), 8123, False)
    assert Path(cpu[0]).name == "transformers"
    assert cpu[1:] == [
        "serve",
        "models/judge",
        "--device",
        "cpu",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--dtype",
        "float32",
    ]
    gpu = serve_command(ServeConfig(model="org/judge"), 8000, gpu=True, served_name="judge")
    assert Path(gpu[0]).name == "vllm"
    assert gpu[1:] == [
        "serve",
        "org/judge",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--served-model-name",
        "judge",
        "--gpu-memory-utilization",  # vLLM's default, said (tests/serving/test_server_defaults.py)
        "0.9",
    ]
    # The backend, when named, wins over the device; transformers serve then uses the GPU.
    on_gpu = serve_command(ServeConfig(model="m", backend="transformers"), 1, gpu=True)
    assert Path(on_gpu[0]).name == "transformers" and on_gpu[3:5] == ["--device", "cuda"]
    assert Path(serve_command(ServeConfig(model="m", backend="vllm"), 1, False)[0]).name == "vllm"
    # YAML reads [--max-model-len, 8192] with a number in it: it is passed as text.
    assert ServeConfig(model="m", args=["--max-len", 8192]).args == ["--max-len", "8192"]


def test_plan_names_the_served_model():
    assert plan(_cfg(), gpu=False).model == MODEL
    assert plan(_cfg(), gpu=False).endpoint_id.startswith(f"serve:transformers:{MODEL}@")
    # vllm serves under the endpoint's model name, or the model itself; the fingerprint after
    # the name: tests/serving/test_server_identity.py.
    named = JudgeConfig(serve={"model": "org/big"}, model="judge")
    assert plan(named, gpu=True).endpoint_id.startswith("serve:vllm:judge@")
    assert plan(JudgeConfig(serve={"model": "org/big"}), gpu=True).model == "org/big"
    # transformers serve answers only requests naming its model: another name is an error.
    with pytest.raises(ConfigError, match=r"transformers serve names its model by serve\.model"):
        plan(named, gpu=False)


def test_a_config_with_base_url_is_used_as_it_is(tmp_path):
    cfg = JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m")
    with serving(cfg, tmp_path / "logs") as same:
        assert same is cfg
    assert unstarted(cfg) is cfg
    assert not (tmp_path / "logs").exists()


def test_an_unstarted_server_is_never_called(tmp_path):
    """Without its server a client answers from the cache or not at all: it never sends to a
    guessed address."""
    cache = EndpointCache(tmp_path / "cache")
    client = EndpointClient(unstarted(_cfg()), "v1", cache)
    body = {"model": client.cfg.model, "messages": [{"role": "user", "content": "2+2?"}]}
    assert client.uncached([body]) == 1
    with pytest.raises(ConfigError, match="not started, and 1 of 1 requests have no cached"):
        client.complete([body])
    cache.put(client._key(body), {"reply": "4"})
    assert client.uncached([body]) == 0
    [answer] = client.complete([body])
    assert (answer.value, answer.cached) == ("4", True)
    assert (client.stats.calls, client.stats.cache_hits) == (0, 1)


def test_the_cache_identity_does_not_depend_on_the_port():
    """Two runs of one managed server on two ports name it alike; a base_url endpoint is named
    by its URL, as before."""
    named = unstarted(_cfg())
    first, second = (
        named.model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
        for port in (41001, 41002)
    )
    body = {"model": named.model, **ASK}
    keys = [EndpointClient(cfg, "v1")._key(body) for cfg in (first, second)]
    assert keys[0] == keys[1]
    assert endpoint_name(first) == endpoint_name(second) == named.endpoint_id
    assert named.endpoint_id.startswith(f"serve:transformers:{MODEL}@")
    plain = JudgeConfig(base_url=first.base_url, model=named.model)
    assert EndpointClient(plain, "v1")._key(body) != keys[0]
    assert EndpointClient(plain, "v1")._key(body) == EndpointCache.key(
        first.base_url, named.model, "v1", body
    )


def test_a_configured_port_in_use_is_refused(served_root, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        refused = pytest.raises(StageError, match=rf"serve\.port {port} on 127\.0\.0\.1 is in use")
        with refused, serving(_cfg(port=port), tmp_path):
            pass


# ------------------------------------------------------------------------- a real server
@pytest.mark.model_server
def test_a_served_model_answers_and_is_stopped_after_the_block(served_root, tmp_path, caplog):
    cache = EndpointCache(tmp_path / "cache")
    logs = caplog.at_level(logging.INFO, logger="vlrl.serving.servers")
    with logs, serving(_cfg(), tmp_path / "logs", name="judge") as served:
        port = _port(served)
        assert served.base_url == f"http://127.0.0.1:{port}/v1" and served.serve is None
        # The name a consumer with nothing to ask gives it is the same (the cache finds it).
        assert (served.model, served.endpoint_id) == (MODEL, unstarted(_cfg()).endpoint_id)
        assert served.endpoint_id.startswith(f"serve:transformers:{MODEL}@")
        groups = _groups(port)
        assert len(groups) == 1 and os.getpgrp() not in groups  # its own process group
        client = EndpointClient(served, "v1", cache, label="judge")
        [answer] = client.complete([{"model": served.model, **ASK}])
        assert answer.text == "1" and client.stats.calls == 1
    assert all(_gone(group) for group in groups)
    assert f"starting transformers serve at http://127.0.0.1:{port}/v1" in caplog.text
    assert f"serve {MODEL} --device cpu --host 127.0.0.1 --port {port}" in caplog.text
    assert (tmp_path / "logs" / "judge.log").is_file()
    [entry] = list((tmp_path / "cache").rglob("*.json"))
    assert f'"endpoint": "{served.endpoint_id}"' in entry.read_text()  # not the port


def _environ(group: int) -> dict[str, str]:
    """The environment of the first process of process group ``group``."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == group:
                pairs = (entry / "environ").read_bytes().split(b"\0")
                return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)
        except (OSError, ProcessLookupError):
            continue
    return {}


@pytest.mark.model_server
def test_the_server_is_stopped_when_the_block_raises(served_root, tmp_path):
    """Also: a server with GPUs of its own (``serve.gpus``) sees only those."""
    port = free_port()  # a configured port, this time
    cfg = _cfg(port=port, gpus=2)
    with pytest.raises(KeyboardInterrupt), serving(cfg, tmp_path, devices=["2", "3"]) as served:
        assert served.base_url == f"http://127.0.0.1:{port}/v1"
        groups = _groups(port)
        assert groups
        assert {_environ(g).get("CUDA_VISIBLE_DEVICES") for g in groups} == {"2,3"}
        raise KeyboardInterrupt
    assert all(_gone(group) for group in groups)


@pytest.mark.model_server
def test_a_server_that_exits_at_once_fails_fast_with_its_log(served_root, tmp_path):
    cfg = _cfg(model="models/no-such-model")
    started = time.monotonic()
    with pytest.raises(StageError) as info, serving(cfg, tmp_path, name="judge"):
        pytest.fail("the block must not run")
    assert time.monotonic() - started < 60  # not the 600 s startup timeout
    message = str(info.value)
    assert message.startswith("judge: the server exited with status 1 before it answered")
    assert "transformers serve models/no-such-model --device cpu" in message
    assert f"last lines of {tmp_path / 'judge.log'}:" in message
    tail = message.split("last lines of", 1)[1]
    assert "OSError" in tail and "couldn't find them in the cached files" in tail  # why it died


def test_a_server_not_ready_in_time_is_stopped(served_root, tmp_path):
    late = pytest.raises(StageError, match=r"did not answer .*/health within 0\.5 s")
    with late as info, serving(_cfg(startup_timeout_s=0.5), tmp_path):
        pytest.fail("the block must not run")
    port = int(str(info.value).split("--port ", 1)[1].split()[0])
    assert not _groups(port)


# ------------------------------------------------------------------------------ consumers
@pytest.mark.model_server
def test_grpo_hands_the_started_reward_model_to_its_ranks(project, root, tmp_path):
    """trust_grpo with ``reward_model.serve``: started before training, its address in the config
    file the ranks validate, and stopped after."""
    says1 = str(root / "models" / "says1")
    served = f"grpo.trust.reward_model={{serve: {{model: {says1}, backend: transformers}}}}"
    cfg = load_experiment("tiny_shapes_sophiavl", [served])
    seen: set[str] = set()
    start = root / "models" / "says1"  # the policy's start model (no TRL server here)
    recording = RecordingConfig(cfg, seen)
    with grpo_servers.served("tiny_shapes_sophiavl", recording, start) as run_cfg:
        started = run_cfg.grpo.trust.reward_model
        assert started.base_url.startswith("http://127.0.0.1:") and started.serve is None
        assert started.endpoint_id.startswith(f"serve:transformers:{says1}@")
        groups = _groups(_port(started))
        # A rank's config: the experiment file, then the file train_in_ranks writes.
        tree = load_experiment("tiny_shapes_sophiavl").model_dump(mode="json")
        assign(tree, json.loads(json.dumps(select(run_cfg, declared_reads("grpo")))))
        rank_rm = ExperimentConfig.model_validate(tree).grpo.trust.reward_model
        assert rank_rm == started
        [answer] = EndpointClient(rank_rm, "v1").complete([{"model": rank_rm.model, **ASK}])
        assert answer.text == "1"
    assert groups and all(_gone(group) for group in groups)
    assert not undeclared(seen, declared_reads("grpo"))
    assert (project / "logs/grpo/tiny_shapes_sophiavl/trust.reward_model.log").is_file()


@pytest.mark.model_server
def test_infer_serves_the_checkpoint_when_serve_names_no_model(root, tmp_path):
    checkpoint = root / "models" / "says1"
    cfg = InferConfig(
        backend="openai",
        max_new_tokens=4,
        openai={"serve": {"backend": "transformers"}, "max_retries": 0},
    )
    with served_openai(cfg, checkpoint, tmp_path, needed=False) as same:  # nothing to generate
        assert same is cfg
    assert not (tmp_path / "openai.log").exists()
    with served_openai(cfg, checkpoint, tmp_path, needed=True) as started:
        assert started.openai.model == str(checkpoint)
        groups = _groups(_port(started.openai))
        generator = OpenAIGenerator(str(checkpoint), started, seed=0)
        conversation = [{"role": "user", "content": [{"type": "text", "text": "Is it right?"}]}]
        assert generator.generate([conversation], [[]]) == ["1"]
    assert groups and all(_gone(group) for group in groups)
    assert (tmp_path / "openai.log").is_file()
