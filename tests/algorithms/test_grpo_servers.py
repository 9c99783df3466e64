"""The servers a GRPO run starts beside its ranks: the GPUs each gets, the ranks left, and the
batch check that counts them the same way (vlrl.algorithms.grpo_servers)."""

from __future__ import annotations

import pytest

from vlrl.algorithms.grpo_servers import gpu_split
from vlrl.cluster.distributed import topology
from vlrl.config import load_experiment
from vlrl.core.errors import ConfigError
from vlrl.workflow import cores

SERVER_MODE = ["grpo.use_vllm=true", "grpo.vllm_mode=server"]


def test_trl_vllm_server_takes_the_last_gpus_and_the_ranks_the_first(monkeypatch) -> None:
    """vlm_r1_rec on 8 GPUs with TRL's server on 2 of them: 6 ranks on GPUs 0-5, the server on
    6-7; the rule's threads and the launch count 6 processes."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cfg = load_experiment("vlm_r1_rec", [*SERVER_MODE, "grpo.vllm_server_gpus=2"])
    assert cfg.grpo.server_gpus == 2
    split = gpu_split(cfg)
    assert split.training_env == "0,1,2,3,4,5"
    assert split.servers == {"grpo.vllm_server": ("6", "7")}
    assert topology(cfg.resources.grpo, cfg.grpo.processes, split.reserved).world_size == 6
    assert cores.processes(cfg, "grpo") == 6


def test_the_split_follows_the_gpus_slurm_gave_the_job(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,5,7,8,9,10,11")
    cfg = load_experiment("vlm_r1_rec", SERVER_MODE)
    split = gpu_split(cfg)
    assert split.training_env == "2,3,5,7,8,9,10"
    assert split.servers == {"grpo.vllm_server": ("11",)}


def test_colocated_vllm_reserves_nothing(monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cfg = load_experiment("vlm_r1_rec", ["grpo.use_vllm=true"])
    assert cfg.grpo.server_gpus == 0
    assert gpu_split(cfg).training_env == "0,1,2,3,4,5,6,7"


def test_the_batch_check_counts_the_ranks_left_by_the_servers() -> None:
    """4 completions per rank and step, groups of 8: 8 ranks or 6 (2 GPUs for the server) hold
    whole groups, 7 (1 for the server) do not, and the error says where the 7 come from."""
    small = [*SERVER_MODE, "grpo.per_device_train_batch_size=4"]
    small.append("grpo.gradient_accumulation_steps=1")
    load_experiment("vlm_r1_rec", small[2:])  # no server: 8 ranks x 4 = 32
    load_experiment("vlm_r1_rec", [*small, "grpo.vllm_server_gpus=2"])  # 6 x 4 = 24
    with pytest.raises(ConfigError, match=r"4 x 7 GPUs x 1 node\(s\) \(of 8: 1 for its servers\)"):
        load_experiment("vlm_r1_rec", small)  # 7 x 4 = 28


def test_the_reward_models_a_run_may_start_by_config_key() -> None:
    """Trust-GRPO's thinking reward model counts only under the trust_grpo algorithm;
    grpo.reward_model under any."""
    from vlrl.algorithms.grpo_servers import _reward_models

    grpo = load_experiment("sophiavl_r1").grpo
    endpoint = grpo.trust.reward_model
    assert grpo.algorithm == "trust_grpo" and endpoint is not None
    assert _reward_models(grpo) == {
        "grpo.reward_model": None,
        "grpo.trust.reward_model": endpoint,
    }
    plain = grpo.model_copy(update={"algorithm": "grpo", "reward_model": endpoint})
    assert _reward_models(plain) == {
        "grpo.reward_model": endpoint,
        "grpo.trust.reward_model": None,
    }
    untrusted = grpo.model_copy(update={"trust": None})
    assert _reward_models(untrusted)["grpo.trust.reward_model"] is None


def test_a_config_with_another_grpo_section_reads_everything_else_from_the_config() -> None:
    from vlrl.algorithms.grpo_servers import _WithGRPO

    cfg = load_experiment("vlm_r1_rec")
    grpo = cfg.grpo.model_copy(update={"max_steps": 3})
    view = _WithGRPO(cfg, grpo)
    assert view.grpo is grpo and view.grpo.max_steps == 3 != cfg.grpo.max_steps
    assert view.resources is cfg.resources and view.data is cfg.data
    with pytest.raises(AttributeError, match="no_such_key"):
        view.no_such_key  # noqa: B018
