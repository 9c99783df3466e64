"""Reward registry. Every reward has TRL's signature
``fn(completions, **columns) -> list[float | None]``.

``None`` means "not applicable to this sample" (TRL ignores it for that sample). Names are
``<family>.<name>``; experiment configs refer to them in ``grpo.rewards``. Each family is a
module of this package, ``vlrl/rewards/<family>.py``, whose ``REWARDS`` table maps its names to
its rewards; the registry finds a reward by its family's name and lists none by hand, so adding
a family edits no shared file (and changes the code of no GRPO run that does not use it). Most
entries are functions; a reward that needs settings of its own (a reward model's endpoint) is a
:class:`ConfiguredReward`, built from the GRPO config when the run starts.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.endpoints`.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vlrl.core.errors import ConfigError

RewardFn = Callable[..., list[float | None]]
TABLE = "REWARDS"
"""The name of a family module's table of rewards."""


@dataclass(frozen=True)
class ConfiguredReward:
    """A reward built from the GRPO config: ``build(grpo.<key>)``."""

    key: str
    """The ``grpo`` key holding its settings; it must be set when the reward is listed."""
    builder: Callable[[Any], RewardFn] | str
    """The function that builds it, or its name ``"module:function"`` (imported when built)."""
    settings: str
    """What ``grpo.<key>`` must hold, for the error that says it is missing."""

    def build(self, settings: Any) -> RewardFn:
        """The reward, built from ``settings`` (``grpo.<key>``)."""
        builder = self.builder
        if isinstance(builder, str):
            builder = pkgutil.resolve_name(builder)
        return builder(settings)


def families() -> list[str]:
    """The reward families: this package's public modules that declare a ``REWARDS`` table.

    >>> families()
    ['common', 'satori', 'sophiavl', 'vision_sr1', 'vlm_r1']
    """
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        if hasattr(importlib.import_module(f"{__name__}.{info.name}"), TABLE):
            found.append(info.name)
    return sorted(found)


def family_rewards(family: str) -> dict[str, RewardFn | ConfiguredReward]:
    """Family ``family``'s table (empty when there is no such family)."""
    if family.startswith("_"):
        return {}
    try:
        module = importlib.import_module(f"{__name__}.{family}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{family}":
            raise
        return {}
    return dict(getattr(module, TABLE, {}))


REGISTERED: dict[str, RewardFn | ConfiguredReward] = {}
"""Rewards registered while a process runs rather than by a family module (a test's, a
notebook's): found before the families' of the same name."""


def registry() -> dict[str, RewardFn | ConfiguredReward]:
    """Every registered reward, name → entry (imports every family)."""
    found = {name: e for family in families() for name, e in family_rewards(family).items()}
    return {**found, **REGISTERED}


def __getattr__(name: str) -> Any:
    # REGISTRY, the full table, is built on first use: looking up one reward imports only its
    # family.
    if name == "REGISTRY":
        return registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def entry(name: str) -> RewardFn | ConfiguredReward | None:
    """The registry's entry for ``name`` (``<family>.<name>``), or None; imports only the
    family's module.

    >>> entry("common.format").__name__, entry("common.nope"), entry("nofamily.x")
    ('think_answer_format_reward', None, None)
    """
    if name in REGISTERED:
        return REGISTERED[name]
    family, dot, _ = name.partition(".")
    if not dot or not family.isidentifier():
        return None
    return family_rewards(family).get(name)


def unknown_reward(name: str) -> str:
    """What is wrong with an unregistered reward name: the closest registered names first.

    >>> unknown_reward("common.acuracy")
    "unknown reward 'common.acuracy'; did you mean 'common.accuracy'?"
    """
    known = sorted(registry())
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.8)
    if close:
        return f"unknown reward {name!r}; did you mean {' or '.join(map(repr, close))}?"
    family = name.partition(".")[0]
    ours = [k for k in known if k.startswith(f"{family}.")]
    if ours:
        return f"unknown reward {name!r}; family {family} has {ours}"
    return f"unknown reward {name!r}; the families are {families()} (names are <family>.<name>)"


def settings_problems(rewards: Any, grpo: Any) -> list[tuple[str, str]]:
    """``[(grpo key, why)]`` for each listed :class:`ConfiguredReward` whose settings are unset.

    >>> from vlrl.config import GRPOConfig
    >>> settings_problems(["sophiavl.thinking"], GRPOConfig())[0][1]
    'grpo.rewards lists sophiavl.thinking but grpo.reward_model (base_url, model) is missing'

    """
    problems = []
    for name in rewards:
        found = entry(name)
        if isinstance(found, ConfiguredReward) and getattr(grpo, found.key, None) is None:
            problems.append(
                (
                    found.key,
                    f"grpo.rewards lists {name} but grpo.{found.key} ({found.settings}) is missing",
                )
            )
    return problems


def configured_settings(rewards: Any) -> list[str]:
    """The ``grpo`` keys the listed :class:`ConfiguredReward` rewards are built from.

    >>> configured_settings(["common.format", "sophiavl.thinking"])
    ['reward_model']
    """
    entries = [entry(name) for name in rewards]
    return list(dict.fromkeys(e.key for e in entries if isinstance(e, ConfiguredReward)))


def get_reward(name: str, grpo: Any = None) -> RewardFn:
    """The reward ``name``: a registry function, or a :class:`ConfiguredReward` built from the
    GRPO config ``grpo``. An unknown name says which registered names are closest.

    Raises:
        KeyError: no such reward.
        ConfigError: a configured reward whose settings ``grpo`` lacks.
    """
    found = entry(name)
    if found is None:
        raise KeyError(unknown_reward(name))
    if not isinstance(found, ConfiguredReward):
        return found
    problems = settings_problems([name], grpo)
    if problems:
        raise ConfigError(problems[0][1])
    return found.build(getattr(grpo, found.key))
