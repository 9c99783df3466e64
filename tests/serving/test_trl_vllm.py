"""The vLLM server of ``grpo.vllm_mode: server`` (``vlrl.serving.trl_vllm``): its command is one TRL
1.16's ``trl vllm-serve`` parser accepts, and the server runs for real as a fake ``trl``
executable (a tiny HTTP server answering /health and recording its argv and environment, since
vllm needs a GPU): started on its GPUs only, ready on /health, its address handed to the ranks
through the environment, and stopped with its process group after the block."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_gpu_server import write_fake_server

from vlrl.config import GRPOConfig
from vlrl.core.errors import ConfigError, StageError
from vlrl.serving.trl_vllm import (
    SERVER_ENV,
    TRLServer,
    server_gpus,
    trl_serve_command,
    trl_vllm_server,
)

VLM = {"vision_config": {}, "text_config": {"max_position_embeddings": 32768}}


def _grpo(**kw) -> GRPOConfig:
    return GRPOConfig(**{"use_vllm": True, "vllm_mode": "server", **kw})


@pytest.fixture
def fake_trl(tmp_path, monkeypatch) -> str:
    script = tmp_path / "trl"
    write_fake_server(script)
    monkeypatch.setenv("FAKE_RECORD", str(tmp_path / "record.json"))
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.delenv(SERVER_ENV, raising=False)
    (tmp_path / "start").mkdir()
    (tmp_path / "start" / "config.json").write_text(json.dumps(VLM))
    return str(script)


def test_trl_vllm_serve_parses_the_command():
    """TRL's own parser (trl/scripts/vllm_serve.py, TRL 1.16) reads our flags; what is not its
    own (the image limit) is forwarded to vllm serve."""
    from trl.scripts.vllm_serve import make_parser

    cmd = trl_serve_command("results/e/sft", 8123, 2, VLM)
    assert Path(cmd[0]).name == "trl" and cmd[1] == "vllm-serve"
    args, extra = make_parser().parse_args_and_config(args=cmd[2:], return_remaining_strings=True)
    assert (args.model, args.host, args.port) == ("results/e/sft", "127.0.0.1", 8123)
    assert (args.tensor_parallel_size, args.gpu_memory_utilization) == (2, 0.9)
    assert args.max_model_len == 32768
    assert extra == ["--limit-mm-per-prompt", '{"image": 4}']
    text = trl_serve_command("m", 1, 1, {"max_position_embeddings": 4096})
    assert "--limit-mm-per-prompt" not in text and text[-2:] == ["--max-model-len", "4096"]
    assert "--max-model-len" not in trl_serve_command("m", 1, 1, None)


def test_the_server_gpus_count_only_in_server_mode():
    assert server_gpus(_grpo()) == 1  # grpo.vllm_server_gpus's default
    assert server_gpus(_grpo(vllm_server_gpus=2)) == 2
    assert server_gpus(_grpo(vllm_mode="colocate", vllm_server_gpus=2)) == 0
    assert server_gpus(_grpo(use_vllm=False)) == 0


def test_the_server_runs_on_its_gpus_and_the_ranks_learn_its_address(fake_trl, tmp_path):
    grpo = _grpo(vllm_server_gpus=2)
    logs = tmp_path / "logs"
    with trl_vllm_server(tmp_path / "start", grpo, logs, ["6", "7"], executable=fake_trl) as srv:
        record = json.loads((tmp_path / "record.json").read_text())
        assert TRLServer.from_env() == srv  # what the ranks (and trl_kwargs) read
        assert srv.host == "127.0.0.1" and srv.group_port != srv.port
    argv = record["argv"]
    assert argv[:3] == ["vllm-serve", "--model", str(tmp_path / "start")]
    flags = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert flags["--port"] == str(srv.port) and flags["--host"] == "127.0.0.1"
    assert flags["--tensor-parallel-size"] == "2" and flags["--max-model-len"] == "32768"
    assert record["cuda"] == "6,7" and record["offline"] == "1"
    assert record["pgid"] != os.getpgrp()
    with pytest.raises(ProcessLookupError):
        os.killpg(record["pgid"], 0)  # stopped with the block
    assert SERVER_ENV not in os.environ  # restored
    assert (logs / "grpo.vllm_server.log").is_file()


def test_the_server_is_stopped_when_training_fails(fake_trl, tmp_path):
    failing = pytest.raises(RuntimeError, match="rank 0 died")
    with (
        failing,
        trl_vllm_server(tmp_path / "start", _grpo(), tmp_path, ["1"], executable=fake_trl),
    ):
        pgid = json.loads((tmp_path / "record.json").read_text())["pgid"]
        raise RuntimeError("rank 0 died")
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert SERVER_ENV not in os.environ


def test_a_server_that_dies_at_start_is_a_stage_error_with_its_log(fake_trl, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "1")
    died = pytest.raises(StageError)
    with (
        died as info,
        trl_vllm_server(tmp_path / "start", _grpo(), tmp_path, ["0"], executable=fake_trl),
    ):
        pytest.fail("the block must not run")
    message = str(info.value)
    assert message.startswith("grpo.vllm_server: the server exited with status 3 before it")
    assert "vllm-serve --model" in message and "CUDA out of memory" in message
    assert SERVER_ENV not in os.environ


def test_the_gpus_given_must_match_the_configured_count(fake_trl, tmp_path):
    wrong = pytest.raises(ConfigError, match=r"vllm_server_gpus is 2, but .* 1 GPUs \(3\)")
    with wrong, trl_vllm_server(tmp_path, _grpo(vllm_server_gpus=2), tmp_path, ["3"]):
        pytest.fail("the block must not run")
    assert not (tmp_path / "record.json").exists()


def test_with_no_gpus_of_its_own_the_server_runs_on_the_cpu_with_one_engine(
    fake_trl, tmp_path, monkeypatch
):
    """``vllm_server_gpus: 0`` on a stage without GPUs: vLLM's CPU build, one engine (tensor
    parallel 1), no CUDA_VISIBLE_DEVICES of its own; on a machine with GPUs it is refused."""
    monkeypatch.setattr("vlrl.serving.trl_vllm.gpu_visible", lambda: False)
    grpo = _grpo(vllm_server_gpus=0)
    with trl_vllm_server(tmp_path / "start", grpo, tmp_path, [], executable=fake_trl):
        record = json.loads((tmp_path / "record.json").read_text())
    flags = dict(zip(record["argv"][1::2], record["argv"][2::2], strict=False))
    assert flags["--tensor-parallel-size"] == "1"
    monkeypatch.setattr("vlrl.serving.trl_vllm.gpu_visible", lambda: True)
    refused = pytest.raises(ConfigError, match="vllm_server_gpus is 0, which runs the server on")
    with refused, trl_vllm_server(tmp_path / "start", grpo, tmp_path, [], executable=fake_trl):
        pytest.fail("the block must not run")
