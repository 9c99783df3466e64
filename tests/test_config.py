"""Experiment config: merge order, unknown keys, wrong types, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.config import load_experiment, load_model, parse_overrides
from vlrl.errors import ConfigError
from vlrl.workflow.check import load_checked


def test_default_experiment_loads(project: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    assert cfg.base_model == "tiny-qwen2.5-vl"
    assert cfg.checkpoints == ["base", "sft", "grpo"]


def test_override_wins_over_file(project: Path) -> None:
    cfg = load_experiment("tiny_shapes", ["grpo.max_steps=3", "sft.enabled=false"])
    assert cfg.grpo.max_steps == 3
    assert cfg.checkpoints == ["base", "grpo"]


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("grpo:\n  learnin_rate: 1.0\n", "grpo.learnin_rate"),  # typo in a key is rejected
        ("grpo:\n  max_steps: many\n", "grpo.max_steps"),  # wrong type names the key
        ("prompt: no_such_format\n", "no_such_format"),  # unknown prompt format
        ("grpo:\n  rewards: {nope.reward: 1.0}\n", "nope.reward"),  # unknown reward
        ("base_model: missing-model\n", "missing-model"),  # model without a config file
        ("surprise: 1\n", "surprise"),  # unknown top-level key
        ("cpu_threads: 0\n", "cpu_threads"),  # at least one thread
    ],
)
def test_bad_experiment_names_file_and_key(project: Path, yaml_text: str, message: str) -> None:
    base = (project / "config/experiments/tiny_shapes.yaml").read_text()
    (project / "config/experiments/bad.yaml").write_text(base + yaml_text)
    # prompt and reward names are checked above the config module (it imports no registry)
    with pytest.raises(ConfigError) as err:
        load_checked("bad")
    assert "bad.yaml" in str(err.value)
    assert message in str(err.value)


def test_missing_experiment_lists_known(project: Path) -> None:
    with pytest.raises(ConfigError, match="tiny_shapes"):
        load_experiment("nope")


def test_not_a_mapping(project: Path) -> None:
    (project / "config/experiments/list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_experiment("list")


def test_hf_model_needs_repo(project: Path) -> None:
    (project / "config/models/bad.yaml").write_text("builder: hf\n")
    with pytest.raises(ConfigError, match=r"base_model\.hf"):
        load_model("bad")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a.b=1e-5", ("a.b", 1e-5)),  # YAML 1.1 reads 1e-5 as a string; we mean a number
        ("a=true", ("a", True)),
        ("a=[x, y]", ("a", ["x", "y"])),
        ("a=hello", ("a", "hello")),
    ],
)
def test_parse_overrides(raw: str, expected: tuple) -> None:
    assert parse_overrides([raw]) == [expected]


def test_override_without_equals() -> None:
    with pytest.raises(ConfigError, match=r"key\.sub=value"):
        parse_overrides(["grpo.max_steps"])
