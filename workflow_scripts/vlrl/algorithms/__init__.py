"""RL algorithms, chosen by ``grpo.algorithm`` (README.md "Algorithms and paper recipes"):

- ``grpo``: TRL's GRPOTrainer as is.
- ``trust_grpo``: SophiaVL-R1's Trust-GRPO (:mod:`vlrl.algorithms.trust_grpo`).
- ``self_reward``: Vision-SR1's image-free second pass (:mod:`vlrl.algorithms.self_reward`).

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.cluster`,
:mod:`vlrl.serving`, :mod:`vlrl.rewards`, :mod:`vlrl.data`.
"""

from __future__ import annotations

from typing import Any

from vlrl.config import GRPOConfig
from vlrl.rewards.sophiavl import THINKING_REWARD

ADDED_REWARDS = {"trust_grpo": THINKING_REWARD}
"""The reward an algorithm adds itself (grpo.rewards then lists only the others)."""


def build_trainer(cfg: GRPOConfig, **trainer_kwargs: Any):
    """The trainer of ``cfg.algorithm``, built with GRPOTrainer's keyword arguments (with vLLM
    rollouts on vLLM's CPU build, :func:`vlrl.algorithms.vllm_cpu.fit_weight_sync`)."""
    trainer = _trainer(cfg, **trainer_kwargs)
    if cfg.use_vllm:
        from vlrl.algorithms.vllm_cpu import fit_weight_sync

        fit_weight_sync(trainer)
    return trainer


def _trainer(cfg: GRPOConfig, **trainer_kwargs: Any):
    if cfg.algorithm == "trust_grpo":
        from vlrl.algorithms.trust import rule_from_settings
        from vlrl.algorithms.trust_grpo import TrustGRPOTrainer
        from vlrl.rewards import get_reward

        assert cfg.trust is not None  # config validation guarantees it
        return TrustGRPOTrainer(
            trust_rule=rule_from_settings(cfg.trust, cfg.max_steps),
            thinking=get_reward(THINKING_REWARD, cfg.trust),
            **trainer_kwargs,
        )
    if cfg.algorithm == "self_reward":
        from vlrl.algorithms.self_reward import SelfRewardGRPOTrainer

        return SelfRewardGRPOTrainer(settings=cfg.self_reward, **trainer_kwargs)
    from trl import GRPOTrainer

    return GRPOTrainer(**trainer_kwargs)
