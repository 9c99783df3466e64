"""Reward registry. Every reward has TRL's signature
``fn(completions, **columns) -> list[float | None]``.

``None`` means "not applicable to this sample" (TRL ignores it for that sample). Names are
``<family>.<name>``; experiment configs refer to them in ``grpo.rewards``.
"""

from __future__ import annotations

from collections.abc import Callable

from vlrl.rewards import common, satori, sophiavl, vision_sr1, vlm_r1

RewardFn = Callable[..., list[float | None]]

REGISTRY: dict[str, RewardFn] = {
    "common.format": common.think_answer_format_reward,
    "common.accuracy": common.accuracy_reward,
    "common.correct": common.correct_reward,
    # Each family module declares its own ``REWARDS`` (names already prefixed with the family).
    **vlm_r1.REWARDS,
    **vision_sr1.REWARDS,
    **sophiavl.REWARDS,
    **satori.REWARDS,
}


def get_reward(name: str) -> RewardFn:
    """Look up a reward by name, listing the known ones when it is missing."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown reward {name!r}; known: {sorted(REGISTRY)}") from None
