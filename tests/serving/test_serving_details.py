"""The small decisions behind a managed server, each on the branch no shipped config takes: a
flag's name in every spelling, a context length at its edges, where the hub cache is, a server
on one GPU, a port in use, which ``trl`` runs and which environment names TRL's vLLM server."""

from __future__ import annotations

import hashlib
import json
import socket
import sys
from pathlib import Path

import pytest

from vlrl.config import ServeConfig
from vlrl.core.errors import StageError
from vlrl.serving import servers, trl_vllm
from vlrl.serving.served_models import context_length, flag_name, hub_cache, vllm_defaults


@pytest.mark.parametrize(
    ("arg", "name"),
    [
        ("--limit-mm-per-prompt.image", "limit-mm-per-prompt"),
        ("--compilation-config.pass_config.enabled", "compilation-config"),  # the first dot
        ("--served-model-name=a=b", "served-model-name"),  # the first "="
        ("--max_model_len=8192", "max-model-len"),
        ("8192", None),
        ("-h", None),
    ],
)
def test_the_flag_an_argument_sets(arg: str, name: str | None) -> None:
    assert flag_name(arg) == name


@pytest.mark.parametrize(
    ("config", "cap", "length"),
    [
        ({"max_position_embeddings": 1}, None, 1),  # the smallest real length is kept
        ({"max_position_embeddings": 0}, 512, 512),  # not a length: the cap
        ({"max_position_embeddings": -4}, None, None),
        ({"max_position_embeddings": "4096"}, 64, 64),  # not an int
        ({"text_config": {"max_position_embeddings": 300}}, 200, 200),
        ({"max_position_embeddings": 100, "text_config": {"max_position_embeddings": 300}},
         None, 100),  # the top level first
    ],
)  # fmt: skip
def test_the_context_length_at_its_edges(config: dict, cap: int | None, length) -> None:
    assert context_length(config, cap) == length


HUB_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.mark.parametrize(
    ("env", "cache"),
    [
        ({"HF_HUB_CACHE": "/a", "HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c"}, "/a"),
        ({"HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c"}, "/b"),  # the older name
        ({"HF_HOME": "/c", "XDG_CACHE_HOME": "/d"}, "/c/hub"),
        ({"XDG_CACHE_HOME": "/d"}, "/d/huggingface/hub"),
        ({}, "~/.cache/huggingface/hub"),
    ],
)
def test_the_hub_cache_as_huggingface_hub_finds_it(monkeypatch, env: dict, cache: str) -> None:
    for name in HUB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hub_cache() == Path(cache).expanduser()


def test_a_server_on_one_gpu_is_not_split_over_gpus() -> None:
    one = vllm_defaults(ServeConfig(model="m", gpus=1), None)
    two = vllm_defaults(ServeConfig(model="m", gpus=2), None)
    assert "--tensor-parallel-size" not in one
    assert two[two.index("--tensor-parallel-size") + 1] == "2"


def test_a_port_in_use_is_named_with_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind((servers.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StageError) as err:
            servers._check_port_free(port, "judge")
    assert str(err.value).startswith(f"judge: serve.port {port} on {servers.HOST} is in use (")
    assert str(err.value).endswith(
        "); stop what listens there, or leave serve.port unset for a free port"
    )
    servers._check_port_free(port, "judge")  # closed: free again


def test_trl_is_the_one_beside_the_python_else_on_path(tmp_path: Path, monkeypatch) -> None:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(python))
    assert trl_vllm.trl_executable() == "trl"
    (tmp_path / "bin" / "trl").write_text("#!/bin/sh\n")
    assert trl_vllm.trl_executable() == str(tmp_path / "bin" / "trl")


def test_the_server_named_by_the_environment_given(monkeypatch) -> None:
    server = trl_vllm.TRLServer("127.0.0.1", 8001, 51216)
    monkeypatch.setenv(trl_vllm.SERVER_ENV, server.to_env())
    assert trl_vllm.TRLServer.from_env() == server  # this process's
    assert trl_vllm.TRLServer.from_env({}) is None  # the one given, even empty
    monkeypatch.delenv(trl_vllm.SERVER_ENV)
    assert trl_vllm.TRLServer.from_env({trl_vllm.SERVER_ENV: server.to_env()}) == server


def test_the_tail_of_a_servers_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    assert servers.log_tail(log) == ""  # not written yet
    log.write_bytes(b"  started\n\xff bad byte\nA\nB\n\n\n")
    assert servers.log_tail(log, lines=2) == "A\nB"  # the blank end left out
    assert servers.log_tail(log, lines=10) == "  started\n\ufffd bad byte\nA\nB"


def test_a_cached_hub_ref_that_is_no_commit_is_none(tmp_path: Path, monkeypatch) -> None:
    from vlrl.serving.served_models import hub_commit

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--org--m" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("not-a-commit\n")
    assert hub_commit("org/m") is None
    (refs / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert hub_commit("org/m") == "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("env", "base"),
    [
        ({"VLRL_HASH_CACHE": "/h", "XDG_CACHE_HOME": "/x"}, "/h"),
        ({"XDG_CACHE_HOME": "/x"}, "/x/vlrl"),
        ({}, "~/.cache/vlrl"),
    ],
)
def test_where_file_hashes_are_remembered(monkeypatch, env: dict, base: str) -> None:
    import hashlib

    from vlrl.serving.served_models import _memo_file

    for name in ("VLRL_HASH_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    key = hashlib.sha256(b"/models/judge").hexdigest()[:24]
    expected = Path(base).expanduser() / "file-sha256" / f"{key}.json"
    assert _memo_file(Path("/models/judge")) == expected


def _weights(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "config.json").write_text("{}")
    return folder


def test_the_digest_of_weights_and_where_it_remembers_them(tmp_path: Path, monkeypatch) -> None:
    """Each directory's file hashes in a memo of its own (two models whose files have the same
    names, sizes and times must not share one); hidden files and *.md are no part of it."""
    from vlrl.serving.served_models import _memo_file, directory_digest

    monkeypatch.setenv("VLRL_HASH_CACHE", str(tmp_path / "cache"))
    first, second = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    digest = directory_digest(first)
    assert _memo_file(first.resolve()).is_file()
    assert directory_digest(second) == digest  # the same bytes under the same names
    assert _memo_file(second.resolve()).is_file()  # its own memo, in the cache folder made
    (first / ".cache").mkdir()
    (first / ".cache" / "lock").write_text("x")
    (first / "README.md").write_text("about")
    assert directory_digest(first) == digest
    (first / "config.json").write_text('{"a": 1}')
    assert directory_digest(first) != digest


def test_a_memo_that_is_no_table_or_cannot_be_written(tmp_path: Path, monkeypatch, caplog) -> None:
    import hashlib
    import logging

    from vlrl.serving.served_models import _memo_file, directory_digest

    monkeypatch.setenv("VLRL_HASH_CACHE", str(tmp_path / "cache"))
    model = _weights(tmp_path / "m").resolve()
    memo = _memo_file(model)
    memo.parent.mkdir(parents=True)
    memo.write_text("[1, 2]")  # JSON, but not the memo's table
    entries = [[name, hashlib.sha256(data).hexdigest()] for name, data in
               (("config.json", b"{}"), ("model.safetensors", b"weights"))]  # fmt: skip
    expected = hashlib.sha256(json.dumps(entries).encode()).hexdigest()
    assert directory_digest(model) == expected
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("VLRL_HASH_CACHE", str(blocked))  # the memo's folder cannot be made
    with caplog.at_level(logging.DEBUG, logger="vlrl.serving.served_models"):
        assert directory_digest(model) == expected
    message = caplog.messages[-1]
    assert message.startswith(f"cannot remember the hashes of {model}: [Errno ")


def test_the_value_a_flag_is_given() -> None:
    from vlrl.serving.served_models import flag_value

    args = ["--port", "9", "--max-model-len=8", "--max_model_len", "16", "--enforce-eager"]
    assert flag_value(args, "max-model-len") == "16"  # the last one
    assert flag_value(args, "port") == "9"
    assert flag_value(args, "enforce-eager") is None  # a switch: no value
    assert flag_value(args, "seed") is None
    assert flag_value(["--seed", "--port", "9"], "seed") is None  # the next is a flag


def test_whether_a_gpu_is_visible(monkeypatch) -> None:
    import builtins

    import torch

    from vlrl.serving import commands

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert commands.gpu_visible() is True
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert commands.gpu_visible() is False
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert commands.gpu_visible() is False


def test_a_server_command_names_its_console_script_and_needs_a_model(
    tmp_path: Path, monkeypatch
) -> None:
    from vlrl.core.errors import ConfigError
    from vlrl.serving import commands

    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(python))
    assert commands.serve_command(ServeConfig(model="m"), 1, gpu=False)[0] == "transformers"
    (tmp_path / "bin" / "transformers").write_text("#!/bin/sh\n")
    cmd = commands.serve_command(ServeConfig(model="m"), 1, gpu=False)
    assert cmd[0] == str(tmp_path / "bin" / "transformers")
    with pytest.raises(ConfigError, match=r"^serve\.model is not set: name the model to serve$"):
        commands.serve_command(ServeConfig(), 1, gpu=False)


SHA = "0123456789abcdef0123456789abcdef01234567"


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def test_the_fingerprint_of_a_server_is_its_weights_backend_and_reply_settings() -> None:
    """Recomputed here from the payload the module docstring describes, and pinned: replies
    cached under it by an earlier version stay found."""
    from vlrl.serving.served_models import fingerprint

    args = ["--revision", SHA, "--dtype", "bfloat16", "--port", "1"]
    serve = ServeConfig(model="org/m", args=args, max_model_len=4096)
    kept = ["--revision", SHA, "--dtype", "bfloat16"]
    payload = {
        "weights": f"hub:org/m@{SHA}",
        "backend": "vllm",
        "args": kept,
        "max_model_len": 4096,
    }
    assert fingerprint(serve, "vllm") == _digest(payload) == "1627214c13ed"
    with pytest.raises(ValueError, match=r"^fingerprint: serve\.model is not set$"):
        fingerprint(ServeConfig(), "vllm")


def test_an_unresolved_model_is_named_in_its_warning(monkeypatch, tmp_path, caplog) -> None:
    from vlrl.serving import served_models

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    served_models._warn_unresolved.cache_clear()
    assert served_models.weights_id("org/nowhere") == "unresolved:org/nowhere"
    assert caplog.messages[-1].startswith("serve.model org/nowhere is neither a directory nor ")


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["--port", "8001", "--dtype", "bfloat16"], ["--dtype", "bfloat16"]),
        (["--dtype", "bfloat16", "--port", "8001"], ["--dtype", "bfloat16"]),
        (["bfloat16"], ["bfloat16"]),  # a value with no flag before it
        (["--port", "1", "m"], ["m"]),  # the neutral flag's one value only...
        (["--port", "1", "--seed", "3", "m"], ["--seed", "3", "m"]),  # ...and on after it
        (["--port=1", "m"], ["m"]),  # its value in the flag
        (["--enforce-eager", "--host", "h", "--seed", "3"], ["--enforce-eager", "--seed", "3"]),
    ],
)
def test_the_arguments_that_change_replies(args: list[str], kept: list[str]) -> None:
    from vlrl.serving.served_models import reply_args

    assert reply_args(args) == kept


def test_a_flags_value_with_equals_signs_and_at_the_end() -> None:
    from vlrl.serving.served_models import flag_value

    assert flag_value(["--hf-overrides=a=b"], "hf-overrides") == "a=b"
    assert flag_value(["--dtype", "half", "--revision", "abc"], "revision") == "abc"
    assert flag_value(["--revision=abc"], "revision") == "abc"


def test_a_hub_models_config_at_its_revision(monkeypatch, tmp_path: Path) -> None:
    from vlrl.serving.served_models import model_config

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--org--m"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "v1").write_text(SHA)
    snapshot = repo / "snapshots" / SHA
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "qwen2"}')
    assert model_config("org/m", "v1") == {"model_type": "qwen2"}
    assert model_config("org/m") is None  # no refs/main
    (snapshot / "config.json").write_text("[1, 2]")
    assert model_config("org/m", "v1") is None  # JSON, but no config


def test_a_server_plan_from_its_config(monkeypatch) -> None:
    from vlrl.config import JudgeConfig
    from vlrl.core.errors import ConfigError
    from vlrl.serving import commands, served_models

    unserved = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m")
    for cfg in (unserved, JudgeConfig.model_construct(serve=ServeConfig(), model=None)):
        with pytest.raises(ConfigError, match=r"^serve\.model is not set: name the model to"):
            commands.plan(cfg, gpu=False)
    cfg = JudgeConfig(serve={"model": "org/m"})
    planned = commands.plan(cfg, gpu=False)
    digest = served_models.fingerprint(cfg.serve, "transformers")
    assert planned == commands.ServerPlan(
        "transformers", False, "org/m", f"serve:transformers:org/m@{digest}"
    )
    monkeypatch.setattr(commands, "gpu_visible", lambda: True)  # gpu not given: asked
    asked = commands.plan(cfg)
    assert (asked.backend, asked.gpu) == ("vllm", True)
    with pytest.raises(ConfigError) as err:
        commands.plan(JudgeConfig(serve={"model": "org/m"}, model="judge"), gpu=False)
    assert str(err.value) == (
        "model is 'judge', but transformers serve names its model by serve.model ('org/m'); "
        "leave model unset (or use the vllm backend, which serves it under that name)"
    )


def test_a_servers_environment_skips_the_hubs_update_check() -> None:
    assert servers.server_env()["HF_HUB_DISABLE_UPDATE_CHECK"] == "1"


def test_a_health_check_ignores_proxies_and_gives_up_on_silence(monkeypatch) -> None:
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer((servers.HOST, 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("no_proxy", "")
    try:
        assert servers._healthy(f"http://{servers.HOST}:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()
    with socket.socket() as silent:  # accepts, never answers
        silent.bind((servers.HOST, 0))
        silent.listen()
        assert not servers._healthy(f"http://{servers.HOST}:{silent.getsockname()[1]}")


def test_a_server_that_exits_with_an_empty_log(tmp_path: Path) -> None:
    import subprocess

    log = tmp_path / "server.log"
    log.write_text("")
    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    proc.wait()
    with pytest.raises(StageError) as err:
        servers._wait_ready(proc, "http://127.0.0.1:9", 5, ["srv", "--x"], log, "judge", "k")
    assert str(err.value) == (
        "judge: the server exited with status 3 before it answered http://127.0.0.1:9/health: "
        f"srv --x\nlast lines of {log}:\n(empty)"
    )
