"""Dotted config keys (``grpo.beta``, ``sft`` for a whole section): the values of a list of
keys, and setting them, from a ``--set key=value`` override or from another process.

The values of the keys a stage declares in ``READS`` are its params: :func:`select` computes
them, for the params files (:mod:`vlrl.workflow.resolve`) and for the training ranks alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from vlrl.core.errors import ConfigError

_DECIMAL = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
"""A number as written in a config (``1e-5``, ``-2.``, ``.5``): YAML 1.1 reads some as text."""


def lookup(config: Any, key: str) -> Any:
    """The value of a dotted key of a config tree (nested dicts) or a config object (sections
    as attributes: a validated config, or a stage's recording view of one).

    >>> lookup({"sft": {"enabled": True}}, "sft.enabled")
    True
    """
    node: Any = config
    for part in key.split("."):
        if isinstance(node, dict):
            if part not in node:
                raise ConfigError(f"no config key {key!r} (stopped at {part!r})")
            node = node[part]
        else:
            try:
                node = getattr(node, part)
            except AttributeError:
                raise ConfigError(f"no config key {key!r} (stopped at {part!r})") from None
    return node


def select(config: Any, keys: Iterable[str]) -> dict[str, Any]:
    """``{key: value}`` for each dotted key, in the given order, sections as plain dicts.

    >>> select({"seed": 0, "sft": {"enabled": True, "lr": 1}}, ["seed", "sft.enabled"])
    {'seed': 0, 'sft.enabled': True}
    >>> from vlrl.config import load_experiment
    >>> select(load_experiment("tiny_shapes"), ["resources.grpo.nodes", "sft"])["sft"]["enabled"]
    True
    """
    values = {}
    for key in keys:
        value = lookup(config, key)
        values[key] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    return values


def set_dotted(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """Set one dotted key in ``tree`` (in place), making the sections on the way; a section's
    key replaces the whole section.

    >>> tree = {"sft": {"enabled": True, "lr": 1}}
    >>> set_dotted(tree, "sft.enabled", False); set_dotted(tree, "grpo.beta", 0.1); tree
    {'sft': {'enabled': False, 'lr': 1}, 'grpo': {'beta': 0.1}}
    """
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"config key {dotted!r}: {key!r} is not a section")
    node[keys[-1]] = value


def assign(tree: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``tree`` with each ``{dotted key: value}`` of :func:`select` set in it (in place).

    >>> assign({"seed": 0, "sft": {"enabled": True}}, {"seed": 3, "sft.enabled": False})
    {'seed': 3, 'sft': {'enabled': False}}
    """
    for key, value in values.items():
        set_dotted(tree, key, value)
    return tree


def parse_overrides(overrides: list[str]) -> list[tuple[str, Any]]:
    """Parse ``key.sub=value`` strings; values are read as YAML (``1e-5``, ``true``, ``[a, b]``).

    >>> parse_overrides(["grpo.learning_rate=1e-5", "sft.enabled=false"])
    [('grpo.learning_rate', 1e-05), ('sft.enabled', False)]
    """
    parsed = []
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw)
        # YAML 1.1 reads 1e-5 as a string; users mean a number (but "nan" or "Infinity" are
        # text, which float() would also accept).
        if isinstance(value, str) and _DECIMAL.fullmatch(value):
            value = float(value)
        parsed.append((key.strip(), value))
    return parsed


def apply_overrides(tree: dict[str, Any], overrides: list[str] | None) -> dict[str, Any]:
    """``tree`` with the ``key.sub=value`` overrides set in it (in place).

    >>> apply_overrides({"grpo": {"beta": 0.0}}, ["grpo.beta=0.04", "seed=1"])
    {'grpo': {'beta': 0.04}, 'seed': 1}
    """
    for key, value in parse_overrides(overrides or []):
        set_dotted(tree, key, value)
    return tree
