"""The reward registry (``vlrl.rewards``): names, lookups and the configured reward's settings.

``get_reward`` is what training calls for each name in ``grpo.rewards``; ``settings_problems``
is what ``vlrl check`` reports; ``configured_settings`` is which ``grpo`` keys the grpo stage
starts servers for. No endpoint is called here (building the thinking reward only validates).
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.config import GRPOConfig, ThinkingRewardConfig
from vlrl.core.errors import ConfigError
from vlrl.rewards import (
    REGISTRY,
    ConfiguredReward,
    common,
    configured_settings,
    get_reward,
    settings_problems,
)
from vlrl.rewards.thinking import ThinkingReward

URL = "http://127.0.0.1:1/v1"
MISSING = "grpo.rewards lists sophiavl.thinking but grpo.reward_model (base_url, model) is missing"


def with_reward_model(**extra) -> GRPOConfig:
    return GRPOConfig(reward_model={"base_url": URL, "model": "rm", **extra})


def test_common_rewards_are_registered_as_functions() -> None:
    assert REGISTRY["common.format"] is common.think_answer_format_reward
    assert REGISTRY["common.accuracy"] is common.accuracy_reward
    assert REGISTRY["common.correct"] is common.correct_reward
    # The default experiment's rewards resolve.
    for name in GRPOConfig().rewards:
        assert callable(get_reward(name))


def test_thinking_is_the_only_configured_reward() -> None:
    configured = {n: e for n, e in REGISTRY.items() if isinstance(e, ConfiguredReward)}
    assert list(configured) == ["sophiavl.thinking"]
    entry = configured["sophiavl.thinking"]
    assert (entry.key, entry.settings) == ("reward_model", "base_url, model")


def test_get_reward_returns_the_registered_function() -> None:
    assert get_reward("common.format") is common.think_answer_format_reward
    assert get_reward("common.correct", GRPOConfig()) is common.correct_reward


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("common.acuracy", "unknown reward 'common.acuracy'; did you mean 'common.accuracy'?"),
        (
            "common.nope",
            "unknown reward 'common.nope'; family common has "
            "['common.accuracy', 'common.correct', 'common.format']",
        ),
        (
            "nofamily.x",
            "unknown reward 'nofamily.x'; the families are ['common', 'satori', 'sophiavl', "
            "'vision_sr1', 'vlm_r1'] (names are <family>.<name>)",
        ),
        ("accuracy", "unknown reward 'accuracy'; the families are "),
    ],
)
def test_an_unknown_reward_gets_the_closest_names_not_the_whole_registry(name, message) -> None:
    with pytest.raises(KeyError) as info:
        get_reward(name)
    assert info.value.args[0].startswith(message)
    assert "vlm_r1.iou" not in info.value.args[0]


def test_a_family_is_found_by_name_without_being_listed(tmp_path, monkeypatch) -> None:
    """A new family module is registered by existing: no shared file lists it, so adding one
    changes the code of no GRPO run that does not use it."""
    import vlrl.rewards as rewards

    family = tmp_path / "newfamily.py"
    family.write_text(
        "def always_one(completions, **kwargs):\n"
        "    return [1.0 for _ in completions]\n\n"
        "REWARDS = {'newfamily.one': always_one}\n"
    )
    monkeypatch.setattr(rewards, "__path__", [*rewards.__path__, str(tmp_path)])
    assert "newfamily" in rewards.families()
    assert get_reward("newfamily.one")(["a", "b"]) == [1.0, 1.0]
    assert "newfamily.one" in rewards.registry()
    tree = ast.parse(Path(rewards.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not any(m and m.startswith("vlrl.rewards") for m in imported), imported


def test_get_reward_builds_the_configured_reward_from_its_settings() -> None:
    reward = get_reward("sophiavl.thinking", with_reward_model(concurrency=3))
    assert isinstance(reward, ThinkingReward)
    assert (reward.cfg.base_url, reward.cfg.model, reward.cfg.concurrency) == (URL, "rm", 3)
    # Any object with the key works (trust_grpo passes its own section).
    settings = ThinkingRewardConfig(base_url=URL, model="other")
    assert get_reward("sophiavl.thinking", SimpleNamespace(reward_model=settings)).cfg is settings


@pytest.mark.parametrize("grpo", [GRPOConfig(), None, SimpleNamespace()])
def test_get_reward_refuses_a_configured_reward_without_settings(grpo) -> None:
    with pytest.raises(ConfigError) as info:
        get_reward("sophiavl.thinking", grpo)
    assert str(info.value) == MISSING


def test_settings_problems() -> None:
    assert settings_problems(["sophiavl.thinking"], GRPOConfig()) == [("reward_model", MISSING)]
    # An object without the key at all (not just None) is reported, not an AttributeError.
    assert settings_problems(["common.format", "sophiavl.thinking"], SimpleNamespace()) == [
        ("reward_model", MISSING)
    ]
    assert settings_problems(["sophiavl.thinking"], None) == [("reward_model", MISSING)]
    assert settings_problems(["sophiavl.thinking"], with_reward_model()) == []
    # Plain functions and unknown names need no settings (unknown names are reported elsewhere).
    assert settings_problems(["common.format", "common.accuracy", "x.y"], GRPOConfig()) == []
    assert settings_problems([], GRPOConfig()) == []


def test_configured_settings() -> None:
    assert configured_settings(["common.format", "sophiavl.thinking"]) == ["reward_model"]
    assert configured_settings(["sophiavl.thinking", "x.y", "sophiavl.thinking"]) == [
        "reward_model"
    ]
    assert configured_settings(["common.format", "common.accuracy"]) == []
    assert configured_settings([]) == []
