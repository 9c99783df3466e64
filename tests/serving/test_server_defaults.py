"""``vllm serve``'s defaults from the served model's config
(``vlrl.serving.served_models.vllm_defaults``): a vision-language model gets
``--limit-mm-per-prompt`` and ``--max-model-len``, every vllm server ``--gpu-memory-utilization``; a
flag in ``serve.args`` wins, in any spelling, and is never passed twice. The whole ``serving`` path
runs against a fake ``vllm`` executable (a tiny HTTP server answering /health and recording its argv
and environment), since vllm needs a GPU."""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest
from fake_gpu_server import write_fake_server

from vlrl.config import JudgeConfig, ServeConfig
from vlrl.serving.commands import serve_command, unstarted
from vlrl.serving.served_models import (
    context_length,
    flag_name,
    is_vlm,
    model_config,
    vllm_defaults,
)
from vlrl.serving.servers import serving

VLM = {
    "model_type": "qwen2_5_vl",
    "vision_config": {"depth": 2},
    "text_config": {"max_position_embeddings": 128000},
}
TEXT = {"model_type": "qwen2", "max_position_embeddings": 32768}


def _flags(cmd: list[str]) -> dict[str, str]:
    """``--flag value`` pairs of a command (values that follow a flag)."""
    return {a: b for a, b in itertools.pairwise(cmd) if a.startswith("--")}


def test_a_vlm_gets_image_limit_context_length_and_memory_share():
    cmd = vllm_defaults(ServeConfig(model="m"), VLM)
    assert cmd == [
        "--gpu-memory-utilization",
        "0.9",
        "--max-model-len",
        "128000",
        "--limit-mm-per-prompt",
        '{"image": 4}',
    ]
    assert json.loads(_flags(cmd)["--limit-mm-per-prompt"]) == {"image": 4}  # vLLM's JSON form
    sized = ServeConfig(model="m", images_per_prompt=2, max_model_len=8192, gpus=2)
    flags = _flags(vllm_defaults(sized, VLM))
    assert flags["--max-model-len"] == "8192" and flags["--limit-mm-per-prompt"] == '{"image": 2}'
    assert flags["--tensor-parallel-size"] == "2"  # its own GPUs, all of them
    # The configured cap never raises the model's own length.
    assert _flags(vllm_defaults(ServeConfig(model="m", max_model_len=10**6), TEXT)) == {
        "--gpu-memory-utilization": "0.9",
        "--max-model-len": "32768",
    }


def test_a_text_model_gets_only_the_memory_share():
    assert vllm_defaults(ServeConfig(model="m"), TEXT) == ["--gpu-memory-utilization", "0.9"]
    assert vllm_defaults(ServeConfig(model="m", gpu_memory_utilization=0.25), None) == [
        "--gpu-memory-utilization",
        "0.25",
    ]
    assert not is_vlm(TEXT) and is_vlm(VLM) and not is_vlm(None)
    assert context_length(None, None) is None


def test_user_args_win_in_any_spelling_and_no_flag_is_passed_twice():
    args = [
        "--max_model_len=4096",
        "--limit-mm-per-prompt.image",
        "1",
        "--gpu-memory-utilization",
        "0.5",
    ]
    serve = ServeConfig(model="m", args=args, max_model_len=8192)
    cmd = serve_command(serve, 8000, gpu=True, served_name="judge", model_config=VLM)
    names = [flag_name(a) for a in cmd if flag_name(a)]
    assert len(names) == len(set(names)), cmd
    assert cmd[-len(args) :] == args  # as the user wrote them, last
    assert {"max-model-len", "limit-mm-per-prompt", "gpu-memory-utilization"} <= set(names)
    # transformers serve takes none of vLLM's flags.
    cpu = serve_command(ServeConfig(model="m"), 8000, gpu=False, model_config=VLM)
    assert not any(a.startswith("--limit") or a.startswith("--gpu") for a in cpu)


def test_the_config_is_read_from_the_directory_or_the_hub_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    (tmp_path / "models" / "vlm").mkdir(parents=True)
    (tmp_path / "models" / "vlm" / "config.json").write_text(json.dumps(VLM))
    assert model_config("models/vlm") == VLM
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--org--text"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("c" * 40)
    (repo / "snapshots" / ("c" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("c" * 40) / "config.json").write_text(json.dumps(TEXT))
    assert model_config("org/text") == TEXT
    assert model_config("org/absent") is None


@pytest.fixture
def fake_vllm(tmp_path, monkeypatch) -> Path:
    """``vllm`` on PATH is the fake; the record file it writes."""
    if Path(sys.executable).with_name("vllm").is_file():
        pytest.skip("vllm is installed in this environment: the fake would not be run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "vllm"
    write_fake_server(script)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_RECORD", str(tmp_path / "record.json"))
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.setenv("VLRL_HASH_CACHE", str(tmp_path / "hash-cache"))
    (tmp_path / "models" / "vlm").mkdir(parents=True)
    (tmp_path / "models" / "vlm" / "config.json").write_text(json.dumps(VLM))
    (tmp_path / "models" / "vlm" / "model.safetensors").write_bytes(b"weights")
    return tmp_path / "record.json"


def test_serving_a_vlm_on_its_own_gpus(fake_vllm, tmp_path):
    cfg = JudgeConfig(
        serve={"model": "models/vlm", "backend": "vllm", "gpus": 2, "args": ["--dtype", "half"]},
        model="judge",
    )
    with serving(cfg, tmp_path / "logs", name="judge", devices=["2", "3"]) as served:
        record = json.loads(fake_vllm.read_text())
        assert served.endpoint_id == unstarted(cfg).endpoint_id  # what the cache calls it
        assert served.endpoint_id.startswith("serve:vllm:judge@")
    argv = record["argv"]
    assert argv[:2] == ["serve", "models/vlm"] and argv[-2:] == ["--dtype", "half"]
    flags = _flags(argv)
    assert flags["--host"] == "127.0.0.1" and served.base_url.endswith(f":{flags['--port']}/v1")
    assert flags["--served-model-name"] == "judge"
    assert flags["--gpu-memory-utilization"] == "0.9" and flags["--tensor-parallel-size"] == "2"
    assert flags["--max-model-len"] == "128000"
    assert flags["--limit-mm-per-prompt"] == '{"image": 4}'
    assert record["cuda"] == "2,3"  # only its own GPUs
    assert record["pgid"] != os.getpgrp()
    with pytest.raises(ProcessLookupError):
        os.killpg(record["pgid"], 0)  # stopped with the block


def test_a_sharing_server_keeps_the_stage_gpus(fake_vllm, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    cfg = JudgeConfig(serve={"model": "models/vlm", "backend": "vllm"})
    with serving(cfg, tmp_path / "logs", name="judge"):
        record = json.loads(fake_vllm.read_text())
    assert record["cuda"] == "0,1"
