"""Reading config files: YAML with repeated keys caught, ``--set`` overrides, experiments that
``extends:`` another (a small diff of a parent, as EasyR1's example configs are), validation
problems that name the file (the one that set the key) and the dotted key, where each value of
an experiment comes from, and the loaders of the named files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vlrl.config.base import ConfigProblems
from vlrl.config.data import DatasetConfig, ModelConfig
from vlrl.config.experiment import ExperimentConfig
from vlrl.config.reading import (
    Model,
    load_yaml_model,
    parse_with_lines,
    unknown_hint,
    validation_problems,
)
from vlrl.core import paths
from vlrl.core.errors import ConfigError


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
        hint = unknown_hint(path.stem, known, f"{path.parent}/")
        raise ConfigError(f"{path}: no such {kind} {path.stem!r}{hint}")
    return load_yaml_model(path, model, overrides)


#: Mappings an ``extends:`` child replaces whole instead of merging key by key: a recipe's reward
#: set, protocol choice, combined numbers or hardware is one decision (an ablation that drops a
#: reward must drop it; a variant on other benchmarks drops the combined numbers of the parent's;
#: a CPU variant drops the GPU resources).
REPLACED_WHOLE = frozenset({"grpo.rewards", "score.protocol", "report.combined", "resources"})


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


SET = "--set"
"""The origin of a key an override set (``vlrl <stage> --set key=value``)."""
EXTENDS_PROBLEM = ": extends: "
"""What every problem of an unmergeable ``extends:`` chain has in it."""


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
        """The file that set ``dotted`` (or its nearest section), ``--set`` when an override set
        it, else the experiment's own file."""
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            origin = self.origins.get(".".join(parts[:end]))
            if origin is not None and (origin.line is not None or origin.file == SET):
                return origin.file
        return self.chain[0] if self.chain else "<config>"

    @property
    def broken_chain(self) -> bool:
        """Whether the ``extends:`` chain could not be merged (a missing or circular parent):
        the tree then lacks the parent's keys, and validating it would only report them."""
        return any(EXTENDS_PROBLEM in problem for problem in self.problems)


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
        # the override replaces what the files set under it
        result.origins = {k: v for k, v in result.origins.items() if not k.startswith(key + ".")}
        result.origins[key] = Origin(SET)
    return result


def _parse_override_pairs(overrides: list[str] | None) -> list[tuple[str, Any]]:
    from vlrl.config.keys import parse_overrides

    return parse_overrides(overrides or [])


def _merged(path: Path, below: list[Path]) -> ExperimentTree:
    text = path.read_text() if path.is_file() else None
    tree, problems, lines = parse_with_lines(path)
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
        hint = unknown_hint(parent, known, f"{parent_path.parent}/")
        problems.append(f"{path}: extends: no experiment {parent!r}{hint}")
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
            f"{path}: no such experiment {name!r}{unknown_hint(name, known, f'{path.parent}/')}"
        )
    return load_experiment_file(path, overrides)


def load_experiment_file(path: Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Validate one experiment file with its ``extends:`` chain (see :func:`load_experiment`);
    each problem names the file that set the key."""
    merged = experiment_tree(Path(path), overrides)
    problems = list(merged.problems)
    if merged.broken_chain:
        raise ConfigProblems(problems)
    try:
        cfg = ExperimentConfig.model_validate(merged.tree)
    except ValidationError as exc:
        problems += validation_problems(exc, merged.source_of, ExperimentConfig)
    if problems and overrides:
        # a problem of a key no --set touched may still follow from one (num_generations and
        # the batch size): say which were given
        sets = f" (with --set {' '.join(overrides)})"
        problems = [p if p.startswith(SET) else p + sets for p in problems]
    if problems:
        raise ConfigProblems(problems)
    return cfg


def load_model(name: str) -> ModelConfig:
    """Load and validate ``config/models/<name>.yaml``."""
    return load_named(paths.model_file(name), ModelConfig, "model")


def load_dataset(name: str) -> DatasetConfig:
    """Load and validate ``config/datasets/<name>.yaml``."""
    return load_named(paths.dataset_file(name), DatasetConfig, "dataset")
