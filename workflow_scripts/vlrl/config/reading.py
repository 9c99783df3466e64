"""Reading one config file: YAML with every repeated key caught and every key's line, and
validation problems that name the file and the dotted key (with a "did you mean" for a mistyped
one). :mod:`vlrl.config.loading` merges files into an experiment with these.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from vlrl.config.base import ConfigProblems, KeyProblems
from vlrl.config.keys import apply_overrides
from vlrl.core.errors import ConfigError

Model = TypeVar("Model", bound=BaseModel)


def did_you_mean(word: str, known: Iterable[str], prefix: str = "") -> str:
    """``"; did you mean '<prefix><closest>'?"`` naming the known names closest to ``word`` (a
    typo's likely intent, by :func:`difflib.get_close_matches`), or ``""`` when none is close.

    >>> did_you_mean("learing_rate", ["learning_rate", "beta"], "grpo."), did_you_mean("x", [])
    ("; did you mean 'grpo.learning_rate'?", '')
    """
    close = difflib.get_close_matches(word, list(known), n=2, cutoff=0.7)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(prefix + c) for c in close) + "?"


def unknown_hint(word: str, known: Iterable[str], where: object = None) -> str:
    """What to say after "no such <thing> '<word>'": the closest known names when a typo is
    likely, else the known names when they are few, else how many there are and ``where`` they
    are (the whole list would bury the line under 30-odd names).

    >>> unknown_hint("tiny_shape", ["tiny_shapes", "vision_sr1"])
    "; did you mean 'tiny_shapes'?"
    >>> unknown_hint("zzz", ["a", "b"])
    "; known: ['a', 'b']"
    >>> unknown_hint("zzz", [f"e{i}" for i in range(30)], "config/experiments/")
    '; 30 known, in config/experiments/'
    """
    known = sorted(known)
    close = did_you_mean(word, known)
    if close:
        return close
    if len(known) <= SHORT_LIST or where is None:
        return f"; known: {known}"
    return f"; {len(known)} known, in {where}"


SHORT_LIST = 8
"""Up to this many known names are listed in an error; more are counted."""


def parse_yaml(path: Path) -> tuple[Any, list[str]]:
    """The YAML file ``path`` parsed, and one problem line per key repeated in one mapping (the
    tree keeps its last value, as PyYAML does), naming the file, the dotted key and both lines.

    Raises:
        ConfigError: the file is missing or not YAML.
    """
    tree, repeated, _ = parse_with_lines(path)
    return tree, repeated


def parse_with_lines(path: Path) -> tuple[Any, list[str], dict[str, int]]:
    """:func:`parse_yaml`, and the line (from 1) of every dotted key of the mappings."""
    try:
        loader = yaml.SafeLoader(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, [], {}
        repeated = [
            f"{path}: {key}: duplicate key (lines {first} and {again}); YAML would keep only "
            "the last value"
            for key, first, again in _repeated_keys(node, (), set())
        ]
        return loader.construct_document(node), repeated, _key_lines(node, ())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Any:
    """The YAML file ``path`` parsed; a repeated key is an error (PyYAML would keep the last
    value silently).

    Raises:
        ConfigError: the file is missing or not YAML; a :class:`ConfigProblems` naming the file,
            the dotted key and both lines of each repeated key.
    """
    tree, repeated = parse_yaml(path)
    if repeated:
        raise ConfigProblems(repeated)
    return tree


def _repeated_keys(
    node: yaml.Node, where: tuple[str, ...], seen: set[int]
) -> list[tuple[str, int, int]]:
    """``(dotted key, first line, repeated line)`` of every key ``node`` holds twice in a
    mapping, at any depth (lines count from 1)."""
    if id(node) in seen:  # an alias: its node was checked where it was anchored
        return []
    seen.add(id(node))
    found = []
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key is not None and key in first:
                found.append((".".join((*where, key)), first[key], line))
            elif key is not None:
                first[key] = line
            found += _repeated_keys(value_node, (*where, key or "?"), seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _repeated_keys(item, (*where, str(index)), seen)
    return found


def _key_lines(node: yaml.Node, where: tuple[str, ...]) -> dict[str, int]:
    """Dotted key → line (from 1) of every key of the mappings under ``node``."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            dotted = (*where, str(key_node.value))
            lines.setdefault(".".join(dotted), key_node.start_mark.line + 1)
            for key, line in _key_lines(value_node, dotted).items():
                lines.setdefault(key, line)
    return lines


def validation_problems(
    exc: ValidationError,
    source: Path | str | Callable[[str], str],
    model: type[BaseModel] | None = None,
) -> list[str]:
    """One ``<source>: <dotted key>: <what is wrong>`` line per error of ``exc``; ``source`` may
    be a function of the dotted key (the file that set it, for an ``extends:`` chain). With the
    ``model`` that was validated, an unknown key's line names the closest known keys (a typo).

    >>> from vlrl.config import InferConfig
    >>> try:
    ...     InferConfig.model_validate({"batch_size": -1, "top_p": 1.5})
    ... except ValidationError as exc:
    ...     print("\\n".join(validation_problems(exc, "e.yaml")))
    e.yaml: batch_size: Input should be greater than 0 (got -1)
    e.yaml: top_p: Input should be less than or equal to 1 (got 1.5)
    """

    def named(dotted: str) -> str:
        return source(dotted) if callable(source) else str(source)

    lines = []
    for err in exc.errors():
        where = [str(p) for p in err["loc"]]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, KeyProblems):
            for key, why in cause.problems:
                dotted = ".".join(p for p in (*where, key) if p)
                lines.append(f"{named(dotted)}: {dotted or '<top>'}: {why}")
            continue
        got = f" (got {err['input']!r})" if err["type"] != "missing" and "input" in err else ""
        dotted = ".".join(where)
        hint = ""
        if err["type"] == "extra_forbidden" and model is not None and where:
            section = ".".join(where[:-1])
            known = _keys_at(model, where[:-1])
            hint = did_you_mean(where[-1], known, f"{section}." if section else "")
        lines.append(f"{named(dotted)}: {dotted or '<top>'}: {err['msg']}{got}{hint}")
    return lines


def _keys_at(model: type[BaseModel], where: list[str]) -> set[str]:
    """The keys the section at ``where`` (an error's location in ``model``) accepts: the fields
    of every model allowed there; empty where there is none.

    >>> from vlrl.config import ExperimentConfig
    >>> sorted(_keys_at(ExperimentConfig, ["resources", "grpo"]))[:3]
    ['cpus', 'gpus', 'mem_mb']
    """
    node: list[Any] = [model]
    for part in where:
        # A part no field names (a union member pydantic names in the location): stay.
        node = [a for t in node for a in _children(t, part)] or node
    return {f for t in node for m in _members(t) if _is_model(m) for f in m.model_fields}


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows, through ``Annotated``, ``Optional`` and unions."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _children(annotation: Any, part: str) -> list[Any]:
    """The annotations at key ``part`` below ``annotation``: a model's field, a list's items, a
    mapping's values."""
    found = []
    for t in _members(annotation):
        args = typing.get_args(t)
        if _is_model(t) and part in t.model_fields:
            found.append(t.model_fields[part].annotation)
        elif typing.get_origin(t) in (list, tuple, dict) and args:
            found.append(args[-1])
    return found


def load_yaml_model(path: Path, model: type[Model], overrides: list[str] | None = None) -> Model:
    """Read ``path`` (with the ``key.sub=value`` overrides set) and validate it as ``model``.

    Raises:
        ConfigError: the file is missing or not YAML; a :class:`ConfigProblems` with one line per
            problem, each naming the file and the dotted key (a repeated key, a top level that is
            not a mapping, every validation error).
    """
    tree, problems = parse_yaml(path)
    tree = {} if tree is None else tree
    if not isinstance(tree, dict):
        problems.append(f"{path}: <top>: must be a mapping, got {type(tree).__name__}")
        raise ConfigProblems(problems)
    apply_overrides(tree, overrides)
    try:
        cfg = model.model_validate(tree)
    except ValidationError as exc:
        problems += validation_problems(exc, path, model)
    if problems:
        raise ConfigProblems(problems)
    return cfg
