"""GPUs for managed servers beside training (``vlrl.serving.gpus``, ``serve.gpus``): the last
visible GPUs go to the servers, the first ones to the training ranks (torchrun puts rank 0 on
the first), on one node only; a vllm server sharing the training GPUs must say its share."""

from __future__ import annotations

import random

import pytest

from vlrl.config import JudgeConfig, ServeConfig, ThinkingRewardConfig
from vlrl.config.resources import StageResources
from vlrl.core.errors import ConfigError
from vlrl.serving.gpus import server_devices, split_devices, stage_split, visible_devices


def _rm(**serve) -> ThinkingRewardConfig:
    return ThinkingRewardConfig(serve={"model": "org/rm", **serve})


def test_servers_take_the_last_gpus_and_training_the_first():
    split = split_devices(["0", "1", "2", "3"], {"reward_model": 1})
    assert split.training == ("0", "1", "2") and split.servers == {"reward_model": ("3",)}
    assert (split.reserved, split.training_env) == (1, "0,1,2")
    # Several servers: consecutive blocks from the end, the first named the last GPUs; a
    # server that shares takes none and is not listed.
    split = split_devices(list("01234567"), {"a": 2, "shared": 0, "b": 3})
    assert split.servers == {"a": ("6", "7"), "b": ("3", "4", "5")}
    assert split.training == ("0", "1", "2") and split.reserved == 5
    # Nothing reserved: the split is the identity.
    assert split_devices(["0", "1"], {"x": 0}).training == ("0", "1")


def test_the_split_is_a_partition_for_random_cases():
    rng = random.Random(0)
    for _ in range(200):
        visible = [f"GPU-{i}" for i in rng.sample(range(64), rng.randint(2, 8))]
        wants = {f"s{i}": rng.randint(0, 2) for i in range(rng.randint(0, 3))}
        if sum(wants.values()) >= len(visible):
            with pytest.raises(ConfigError, match="leaves none for training"):
                split_devices(visible, wants)
            continue
        split = split_devices(visible, wants)
        served = [d for devices in split.servers.values() for d in devices]
        assert list(split.training) + sorted(served, key=visible.index) == visible
        assert {k: len(v) for k, v in split.servers.items()} == {
            k: n for k, n in wants.items() if n
        }
        assert split.training == tuple(visible[: len(visible) - sum(wants.values())])


def test_visible_gpus_come_from_cuda_visible_devices_else_the_resources():
    assert visible_devices(3, {}) == ["0", "1", "2"]
    assert visible_devices(0, {}) == []
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}  # Slurm's GPUs for the job
    assert visible_devices(4, env) == ["4", "5", "6", "7"]
    assert visible_devices(2, env) == ["4", "5"]  # only the stage's share of a workstation
    assert visible_devices(None, {"CUDA_VISIBLE_DEVICES": ""}) == []
    split = stage_split(StageResources(gpus=4), {"grpo.reward_model": _rm(gpus=1)}, env)
    assert split.training_env == "4,5,6" and split.servers == {"grpo.reward_model": ("7",)}
    # The TRL vLLM server is given as a count.
    split = stage_split(StageResources(gpus=4), {"grpo.vllm_server": 2, "x": None}, {})
    assert split.training_env == "0,1" and split.servers == {"grpo.vllm_server": ("2", "3")}


def test_a_reservation_on_several_nodes_or_without_gpus_is_a_config_error():
    with pytest.raises(ConfigError, match=r"grpo.reward_model: .* spans 2 nodes; .*127\.0\.0\.1"):
        stage_split(StageResources(gpus=4, nodes=2), {"grpo.reward_model": _rm(gpus=1)}, {})
    with pytest.raises(ConfigError, match=r"grpo\.vllm_server: reserves GPUs .* has no GPU"):
        stage_split(StageResources(gpus=0), {"grpo.vllm_server": 1}, {})
    with pytest.raises(ConfigError, match=r"reserve 2 GPUs .* sees 2 \(0,1\)"):
        stage_split(StageResources(gpus=2), {"a": 1, "b": 1}, {})
    # Sharing (gpus: 0) on several nodes is as before: no reservation, no error.
    shared = _rm(backend="transformers")
    assert stage_split(StageResources(gpus=2, nodes=2), {"rm": shared}, {}).reserved == 0


def test_a_vllm_server_sharing_training_gpus_must_name_its_share():
    resources = StageResources(gpus=2)
    for rm in (_rm(), _rm(backend="vllm")):  # auto is vllm on a GPU stage
        with pytest.raises(ConfigError, match=r"rm\.serve: a vllm server sharing .* 90%"):
            stage_split(resources, {"rm": rm}, {})
    for fine in (_rm(gpu_memory_utilization=0.2), _rm(gpus=1), _rm(backend="transformers")):
        stage_split(resources, {"rm": fine}, {})
    stage_split(StageResources(gpus=0), {"rm": _rm()}, {})  # on CPU, auto is transformers


def test_serve_gpus_is_bounded_and_checked_against_the_gpus_given(monkeypatch):
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        ServeConfig(model="m", gpus=-1)
    serve = ServeConfig(model="m", gpus=2)
    assert server_devices(serve, "judge", ["6", "7"]) == ["6", "7"]
    with pytest.raises(ConfigError, match=r"judge: serve.gpus is 2, but it was given 1 GPUs \(3\)"):
        server_devices(serve, "judge", ["3"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert server_devices(serve, "judge", None) == ["2", "3"]  # the last visible ones
    assert server_devices(ServeConfig(model="m"), "judge", None) == []
    with pytest.raises(ConfigError, match=r"serve\.gpus is 0"):
        server_devices(ServeConfig(model="m"), "judge", ["1"])
    judge = JudgeConfig(serve={"model": "m", "gpus": 4})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(ConfigError, match="reserve 4 GPUs"):
        server_devices(judge.serve, "judge", None)


def test_every_gpu_refusal_says_what_was_asked_whole():
    with pytest.raises(ConfigError) as err:
        split_devices([], {"judge": 1, "shared": 0, "grpo.vllm_server": 2})
    assert str(err.value) == (
        "the stage's servers reserve 3 GPUs (judge: 1, grpo.vllm_server: 2) but it sees 0 "
        "(none), which leaves none for training; give the stage more GPUs "
        "(resources.<stage>.gpus) or its servers fewer (serve.gpus)"
    )
    with pytest.raises(ConfigError) as err:
        stage_split(StageResources(gpus=4, nodes=2), {"grpo.vllm_server": 1}, {})
    assert str(err.value) == (
        "grpo.vllm_server: reserves GPUs for a server, but the stage spans 2 nodes; a managed "
        "server runs on 127.0.0.1 of the first node, which the other nodes' ranks cannot "
        "reach: use one node, or give the server's base_url"
    )
    with pytest.raises(ConfigError) as err:
        server_devices(ServeConfig(model="m", gpus=2), "judge", [])
    assert str(err.value) == "judge: serve.gpus is 2, but it was given 0 GPUs (none)"
    with pytest.raises(ConfigError) as err:
        server_devices(ServeConfig(model="m", gpus=2), "judge", ["1", "2", "3"])
    assert str(err.value) == "judge: serve.gpus is 2, but it was given 3 GPUs (1,2,3)"


def test_a_vllm_server_sharing_the_one_gpu_of_a_stage_must_name_its_share():
    with pytest.raises(ConfigError, match=r"rm\.serve: a vllm server sharing"):
        stage_split(StageResources(gpus=1), {"rm": _rm()}, {})


def test_without_a_gpu_count_every_visible_gpu_counts(monkeypatch):
    """``count`` None (a server started on its own): every CUDA_VISIBLE_DEVICES entry, else as
    many as torch sees, else none."""
    import sys

    import torch

    assert visible_devices(None, {"CUDA_VISIBLE_DEVICES": "4,5"}) == ["4", "5"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert visible_devices(None, {}) == ["0", "1", "2"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert visible_devices(None, {}) == []
    monkeypatch.setitem(sys.modules, "torch", None)  # no torch in this environment
    assert visible_devices(None, {}) == []
