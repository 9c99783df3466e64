"""``vlrl.algorithms.build_trainer``: the trainer class ``grpo.algorithm`` names, given
GRPOTrainer's arguments untouched and what its algorithm adds (Trust-GRPO's rule and thinking
reward, Vision-SR1's settings); the vLLM weight-sync fit only for vLLM rollouts. The trainers
are recorders here: what each one does is tested in its own file."""

from __future__ import annotations

import pytest

import vlrl.algorithms.self_reward as self_reward
import vlrl.algorithms.trust_grpo as trust_grpo
import vlrl.algorithms.vllm_cpu as vllm_cpu
import vlrl.rewards as rewards
from vlrl.algorithms import ADDED_REWARDS, build_trainer
from vlrl.config import load_experiment
from vlrl.rewards.sophiavl import THINKING_REWARD


class Recorder:
    """A trainer class that keeps its keyword arguments."""

    def __init__(self, **kwargs) -> None:
        self.kwargs = kwargs


class TRLRecorder(Recorder):
    pass


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list:
    """The trainer classes replaced by recorders; the list of trainers fit_weight_sync saw."""
    import trl

    monkeypatch.setattr(trl, "GRPOTrainer", TRLRecorder)
    monkeypatch.setattr(trust_grpo, "TrustGRPOTrainer", type("Trust", (Recorder,), {}))
    monkeypatch.setattr(self_reward, "SelfRewardGRPOTrainer", type("SelfReward", (Recorder,), {}))
    synced: list = []
    monkeypatch.setattr(vllm_cpu, "fit_weight_sync", synced.append)
    return synced


ARGS = {"model": "m", "reward_funcs": ["r"], "args": "a", "train_dataset": "d"}


def test_grpo_is_trls_trainer_with_the_arguments_as_given(project, recorded) -> None:
    cfg = load_experiment("tiny_shapes").grpo
    assert cfg.algorithm == "grpo" and not cfg.use_vllm
    trainer = build_trainer(cfg, **ARGS)
    assert type(trainer) is TRLRecorder and trainer.kwargs == ARGS
    assert recorded == []  # no vLLM: no weight-sync fit


@pytest.mark.parametrize("use_vllm", [True, False])
def test_vllm_rollouts_get_the_weight_sync_fit(project, recorded, use_vllm) -> None:
    cfg = load_experiment("tiny_shapes").grpo.model_copy(update={"use_vllm": use_vllm})
    trainer = build_trainer(cfg, **ARGS)
    assert recorded == ([trainer] if use_vllm else [])


def test_trust_grpo_gets_its_rule_from_the_settings_and_the_thinking_reward(
    project, recorded, monkeypatch
) -> None:
    asked = []

    def get_reward(name, grpo=None):
        asked.append((name, grpo))
        return "thinking"

    monkeypatch.setattr(rewards, "get_reward", get_reward)
    values = [
        "grpo.trust.variant=paper",
        "grpo.trust.T=null",  # the paper's T: the run's max_steps
        "grpo.max_steps=37",
        "grpo.trust.alpha=0.25",
        "grpo.trust.query_threshold=0.15",
        "grpo.trust.skip_high=0.85",
        "grpo.trust.skip_low=0.05",
        "grpo.trust.correct_threshold=0.6",
    ]
    cfg = load_experiment("tiny_shapes_sophiavl", values).grpo
    trainer = build_trainer(cfg, **ARGS)
    assert type(trainer).__name__ == "Trust"
    rule = trainer.kwargs.pop("trust_rule")
    assert (rule.variant, rule.T, rule.alpha) == ("paper", 37.0, 0.25)
    assert (rule.query_threshold, rule.skip_high, rule.skip_low) == (0.15, 0.85, 0.05)
    assert rule.correct_threshold == 0.6
    assert trainer.kwargs == {"thinking": "thinking", **ARGS}
    assert asked == [(THINKING_REWARD, cfg.trust)]
    assert ADDED_REWARDS == {"trust_grpo": THINKING_REWARD}


def test_self_reward_gets_its_settings(project, recorded) -> None:
    cfg = load_experiment("tiny_shapes_vision_sr1").grpo
    assert cfg.algorithm == "self_reward"
    trainer = build_trainer(cfg, **ARGS)
    assert type(trainer).__name__ == "SelfReward"
    assert trainer.kwargs == {"settings": cfg.self_reward, **ARGS}
    assert trainer.kwargs["settings"] is cfg.self_reward
