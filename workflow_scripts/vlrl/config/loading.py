"""Reading config files: YAML with repeated keys caught, ``--set`` overrides, experiments that
``extends:`` another (a small diff of a parent, as EasyR1's example configs are), validation
problems that name the file (the one that set the key) and the dotted key, where each value of
an experiment comes from, and the loaders of the named files."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
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
        raise ConfigError(
            f"{path}: no such {kind} {path.stem!r}; known: {known}{did_you_mean(path.stem, known)}"
        )
    return load_yaml_model(path, model, overrides)


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


#: Mappings an ``extends:`` child replaces whole instead of merging key by key: a recipe's reward
#: set, protocol choice or hardware is one decision (an ablation that drops a reward must drop it;
#: a CPU variant drops the GPU resources).
REPLACED_WHOLE = frozenset({"grpo.rewards", "score.protocol", "resources"})


#: How much of a key's comment ``vlrl show`` keeps (a file's opening comment can be long).
COMMENT_CHARS = 400


@dataclass(frozen=True)
class Origin:
    """Where a key's value was set: the file and line (``None`` for ``--set``)."""

    file: str
    line: int | None = None
    comment: str = ""
    """The YAML comments on the key's line and right above it: the cited source, by
    convention."""

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"


@dataclass
class ExperimentTree:
    """An experiment's YAML with its ``extends:`` chain merged: the tree, where each dotted key
    (leaves and sections) was set, the chain (the file first, its ancestors after) and the
    problems found while reading (repeated keys, a missing or circular parent)."""

    tree: dict[str, Any]
    origins: dict[str, Origin] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def source_of(self, dotted: str) -> str:
        """The file that set ``dotted`` (or its nearest section), else the experiment's own (also
        for a ``--set`` override: the file it overrides)."""
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            origin = self.origins.get(".".join(parts[:end]))
            if origin is not None and origin.line is not None:
                return origin.file
        return self.chain[0] if self.chain else "<config>"


def experiment_tree(path: Path, overrides: list[str] | None = None) -> ExperimentTree:
    """Read experiment file ``path`` with its ``extends:`` ancestors merged under it (see
    :data:`REPLACED_WHOLE`) and the overrides set; never raises for a problem of the content
    (they are in ``problems``).

    Raises:
        ConfigError: ``path`` is missing or not YAML.
    """
    result = _merged(Path(path), [])
    for key, value in _parse_override_pairs(overrides):
        from vlrl.config.keys import set_dotted

        set_dotted(result.tree, key, value)
        result.origins[key] = Origin("--set")
    return result


def _parse_override_pairs(overrides: list[str] | None) -> list[tuple[str, Any]]:
    from vlrl.config.keys import parse_overrides

    return parse_overrides(overrides or [])


def _merged(path: Path, below: list[Path]) -> ExperimentTree:
    text = path.read_text() if path.is_file() else None
    tree, problems, lines = _parse_with_lines(path)
    if tree is None:
        tree = {}
    if not isinstance(tree, dict):
        problems.append(f"{path}: <top>: must be a mapping, got {type(tree).__name__}")
        return ExperimentTree({}, {}, [str(path)], problems)
    comments = _comments(text or "")
    own = {key: Origin(str(path), line, comments.get(line, "")) for key, line in lines.items()}
    parent = tree.get("extends")
    if parent is None:
        return ExperimentTree(tree, own, [str(path)], problems)
    if not isinstance(parent, str) or not parent:
        problems.append(f"{path}: extends: must be an experiment name, got {parent!r}")
        return ExperimentTree(tree, own, [str(path)], problems)
    parent_path = paths.experiment_file(parent)
    if parent_path.resolve() in [p.resolve() for p in (*below, path)]:
        cycle = " → ".join(str(p) for p in (*below, path, parent_path))
        problems.append(f"{path}: extends: {parent!r} extends this file again ({cycle})")
        return ExperimentTree(tree, own, [str(path)], problems)
    if not parent_path.is_file():
        known = sorted(p.stem for p in parent_path.parent.glob("*.yaml"))
        hint = did_you_mean(parent, known)
        problems.append(f"{path}: extends: no experiment {parent!r}; known: {known}{hint}")
        return ExperimentTree(tree, own, [str(path)], problems)
    base = _merged(parent_path, [*below, path])
    origins = dict(base.origins)
    for key in own:
        if key in REPLACED_WHOLE:  # the parent's entries are gone with its mapping
            origins = {k: v for k, v in origins.items() if not k.startswith(key + ".")}
    origins.update(own)
    merged = _merge(base.tree, tree, "")
    return ExperimentTree(merged, origins, [str(path), *base.chain], base.problems + problems)


def _merge(base: Any, child: Any, where: str) -> Any:
    """``child`` over ``base``: mappings merged key by key (except :data:`REPLACED_WHOLE`),
    anything else replaced."""
    if not (isinstance(base, dict) and isinstance(child, dict)) or where in REPLACED_WHOLE:
        return child
    merged = dict(base)
    for key, value in child.items():
        dotted = f"{where}.{key}" if where else str(key)
        merged[key] = _merge(base[key], value, dotted) if key in base else value
    return merged


def _comments(text: str) -> dict[int, str]:
    """Line number → the comment on that line and the comment lines right above it."""
    lines = text.splitlines()
    found: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        above = []
        index = number - 2
        while index >= 0 and lines[index].strip().startswith("#"):
            above.insert(0, lines[index].strip().lstrip("#").strip())
            index -= 1
        trailing = line.split(" #", 1)[1].strip() if " #" in line else ""
        parts = [*above, trailing] if trailing else above
        if parts:
            text = " ".join(parts)
            found[number] = text if len(text) <= COMMENT_CHARS else text[: COMMENT_CHARS - 1] + "…"
    return found


def load_experiment(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    """Load and validate ``config/experiments/<name>.yaml`` (its ``extends:`` ancestors merged
    under it), with the ``key.sub=value`` overrides set.

    Raises:
        ConfigError: naming the file when it is missing or not YAML; a :class:`ConfigProblems`
            with one line per problem, each naming the file and the dotted key, when it is not a
            mapping, repeats a key, has unknown keys, values of the wrong type or out of their
            range, or keys that disagree.
    """
    path = paths.experiment_file(name)
    if not path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(
            f"{path}: no such experiment {name!r}; known: {known}{did_you_mean(name, known)}"
        )
    return load_experiment_file(path, overrides)


def load_experiment_file(path: Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Validate one experiment file with its ``extends:`` chain (see :func:`load_experiment`);
    each problem names the file that set the key."""
    merged = experiment_tree(Path(path), overrides)
    problems = list(merged.problems)
    try:
        cfg = ExperimentConfig.model_validate(merged.tree)
    except ValidationError as exc:
        problems += validation_problems(exc, merged.source_of, ExperimentConfig)
    if problems:
        raise ConfigProblems(problems)
    return cfg


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
    tree, repeated, _ = _parse_with_lines(path)
    return tree, repeated


def _parse_with_lines(path: Path) -> tuple[Any, list[str], dict[str, int]]:
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
