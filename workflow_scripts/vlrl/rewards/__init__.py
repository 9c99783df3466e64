"""Reward registry. Every reward has TRL's signature
``fn(completions, **columns) -> list[float | None]``.

``None`` means "not applicable to this sample" (TRL ignores it for that sample). Names are
``<family>.<name>``; experiment configs refer to them in ``grpo.rewards``. Most entries are
functions; a reward that needs settings of its own (a reward model's endpoint) is a
:class:`ConfiguredReward`, built from the GRPO config when the run starts.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.endpoints`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vlrl.core.errors import ConfigError
from vlrl.rewards import common, satori, sophiavl, vision_sr1, vlm_r1

RewardFn = Callable[..., list[float | None]]


def _thinking_reward(settings: Any) -> RewardFn:
    # Imported when built: the registry stays free of the endpoint client (openai, asyncio).
    from vlrl.rewards.thinking import get_thinking_reward

    return get_thinking_reward(settings)


@dataclass(frozen=True)
class ConfiguredReward:
    """A reward built from the GRPO config: ``build(grpo.<key>)``."""

    key: str
    """The ``grpo`` key holding its settings; it must be set when the reward is listed."""
    build: Callable[[Any], RewardFn]
    settings: str
    """What ``grpo.<key>`` must hold, for the error that says it is missing."""


REGISTRY: dict[str, RewardFn | ConfiguredReward] = {
    "common.format": common.think_answer_format_reward,
    "common.accuracy": common.accuracy_reward,
    "common.correct": common.correct_reward,
    # Each family module declares its own ``REWARDS`` (names already prefixed with the family).
    **vlm_r1.REWARDS,
    **vision_sr1.REWARDS,
    **sophiavl.REWARDS,
    **satori.REWARDS,
    sophiavl.THINKING_REWARD: ConfiguredReward("reward_model", _thinking_reward, "base_url, model"),
}


def settings_problems(rewards: Any, grpo: Any) -> list[tuple[str, str]]:
    """``[(grpo key, why)]`` for each listed :class:`ConfiguredReward` whose settings are unset.

    >>> from vlrl.config import GRPOConfig
    >>> settings_problems(["sophiavl.thinking"], GRPOConfig())[0][1]
    'grpo.rewards lists sophiavl.thinking but grpo.reward_model (base_url, model) is missing'

    """
    problems = []
    for name in rewards:
        entry = REGISTRY.get(name)
        if isinstance(entry, ConfiguredReward) and getattr(grpo, entry.key, None) is None:
            problems.append(
                (
                    entry.key,
                    f"grpo.rewards lists {name} but grpo.{entry.key} ({entry.settings}) is missing",
                )
            )
    return problems


def configured_settings(rewards: Any) -> list[str]:
    """The ``grpo`` keys the listed :class:`ConfiguredReward` rewards are built from.

    >>> configured_settings(["common.format", "sophiavl.thinking"])
    ['reward_model']
    """
    entries = [REGISTRY.get(name) for name in rewards]
    return list(dict.fromkeys(e.key for e in entries if isinstance(e, ConfiguredReward)))


def get_reward(name: str, grpo: Any = None) -> RewardFn:
    """The reward ``name``: a registry function, or a :class:`ConfiguredReward` built from the
    GRPO config ``grpo``. Unknown names list the known ones.

    Raises:
        KeyError: no such reward.
        ConfigError: a configured reward whose settings ``grpo`` lacks.
    """
    try:
        entry = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown reward {name!r}; known: {sorted(REGISTRY)}") from None
    if not isinstance(entry, ConfiguredReward):
        return entry
    problems = settings_problems([name], grpo)
    if problems:
        raise ConfigError(problems[0][1])
    return entry.build(getattr(grpo, entry.key))
