"""RL algorithms, chosen by ``grpo.algorithm`` (DESIGN.md "Registries"):

- ``grpo``: TRL's GRPOTrainer as is.
- ``trust_grpo``: SophiaVL-R1's Trust-GRPO (:mod:`vlrl.algorithms.trust_grpo`).
- ``self_reward``: Vision-SR1's image-free second pass (:mod:`vlrl.algorithms.self_reward`).
"""

from __future__ import annotations

from typing import Any

from vlrl.config import GRPOConfig


def build_trainer(cfg: GRPOConfig, **trainer_kwargs: Any):
    """The trainer of ``cfg.algorithm``, built with GRPOTrainer's keyword arguments."""
    if cfg.algorithm == "trust_grpo":
        from vlrl.algorithms.trust import rule_from_settings
        from vlrl.algorithms.trust_grpo import TrustGRPOTrainer
        from vlrl.rewards.thinking import get_thinking_reward

        assert cfg.trust is not None  # config validation guarantees it
        return TrustGRPOTrainer(
            trust_rule=rule_from_settings(cfg.trust, cfg.max_steps),
            thinking=get_thinking_reward(cfg.trust.reward_model),
            **trainer_kwargs,
        )
    if cfg.algorithm == "self_reward":
        from vlrl.algorithms.self_reward import SelfRewardGRPOTrainer

        return SelfRewardGRPOTrainer(settings=cfg.self_reward, **trainer_kwargs)
    from trl import GRPOTrainer

    return GRPOTrainer(**trainer_kwargs)
