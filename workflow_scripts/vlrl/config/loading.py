"""Reading config files: YAML with repeated keys caught, ``--set`` overrides, validation
problems that name the file and the dotted key, and the loaders of the named files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from vlrl import paths
from vlrl.config.base import ConfigProblems, KeyProblems
from vlrl.config.data import DatasetConfig, ModelConfig
from vlrl.config.experiment import ExperimentConfig
from vlrl.config.keys import apply_overrides
from vlrl.errors import ConfigError

Model = TypeVar("Model", bound=BaseModel)


def load_named(
    path: Path, model: type[Model], kind: str, overrides: list[str] | None = None
) -> Model:
    """A named config file (``config/<folder>/<name>.yaml``) validated as ``model``.

    Raises:
        ConfigError: naming the file and the known names of its folder when it is missing; else
            as :func:`load_yaml_model`.
    """
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path}: no such {kind} {path.stem!r}; known: {known}")
    return load_yaml_model(path, model, overrides)


def load_experiment(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate ``config/experiments/<name>.yaml``, with the ``key.sub=value``
    overrides set.

    Raises:
        ConfigError: naming the file when it is missing or not YAML; a :class:`ConfigProblems`
            with one line per problem, each naming the file and the dotted key, when it is not a
            mapping, repeats a key, has unknown keys, values of the wrong type or out of their
            range, or keys that disagree.
    """
    return load_named(paths.experiment_file(name), ExperimentConfig, "experiment", overrides)


def load_experiment_file(path: Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Validate one experiment file (see :func:`load_experiment`)."""
    return load_yaml_model(path, ExperimentConfig, overrides)


def load_model(name: str) -> ModelConfig:
    """Load and validate ``config/models/<name>.yaml``."""
    return load_named(paths.model_file(name), ModelConfig, "model")


def load_dataset(name: str) -> DatasetConfig:
    """Load and validate ``config/datasets/<name>.yaml``."""
    return load_named(paths.dataset_file(name), DatasetConfig, "dataset")


def parse_yaml(path: Path) -> tuple[Any, list[str]]:
    """The YAML file ``path`` parsed, and one problem line per key repeated in one mapping (the
    tree keeps its last value, as PyYAML does), naming the file, the dotted key and both lines.

    Raises:
        ConfigError: the file is missing or not YAML.
    """
    try:
        loader = yaml.SafeLoader(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        repeated = [
            f"{path}: {key}: duplicate key (lines {first} and {again}); YAML would keep only "
            "the last value"
            for key, first, again in _repeated_keys(node, (), set())
        ]
        return loader.construct_document(node), repeated
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


def validation_problems(exc: ValidationError, source: Path | str) -> list[str]:
    """One ``<source>: <dotted key>: <what is wrong>`` line per error of ``exc``.

    >>> from vlrl.config import InferConfig
    >>> try:
    ...     InferConfig.model_validate({"batch_size": -1, "top_p": 1.5})
    ... except ValidationError as exc:
    ...     print("\\n".join(validation_problems(exc, "e.yaml")))
    e.yaml: batch_size: Input should be greater than 0 (got -1)
    e.yaml: top_p: Input should be less than or equal to 1 (got 1.5)
    """
    lines = []
    for err in exc.errors():
        where = [str(p) for p in err["loc"]]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, KeyProblems):
            lines += [
                f"{source}: {'.'.join(p for p in (*where, key) if p) or '<top>'}: {why}"
                for key, why in cause.problems
            ]
            continue
        got = f" (got {err['input']!r})" if err["type"] != "missing" and "input" in err else ""
        lines.append(f"{source}: {'.'.join(where) or '<top>'}: {err['msg']}{got}")
    return lines


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
        problems += validation_problems(exc, path)
    if problems:
        raise ConfigProblems(problems)
    return cfg
