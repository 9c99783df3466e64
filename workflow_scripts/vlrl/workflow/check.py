"""``vlrl check``: validate params.yaml and every experiment, model and benchmark file at once.

Every problem is collected before raising, so one run lists them all, each with its file and key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from vlrl import paths
from vlrl.errors import ConfigError

log = logging.getLogger(__name__)

SCHEMA = Path("config", "schema", "params.schema.yaml")


def params_file() -> Path:
    return paths.root() / "params.yaml"


def schema_file() -> Path:
    return paths.root() / SCHEMA


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def params_problems(params: Any, source: Path | str = "params.yaml") -> list[str]:
    """Why ``params`` (the parsed params.yaml) does not match the schema; empty when it does.

    >>> params_problems({"experiments": ["tiny_shapes"]})
    []
    >>> params_problems({"experiments": ["tiny_shapes"], "seeds": [1]})
    ["params.yaml: <top>: Additional properties are not allowed ('seeds' was unexpected)"]
    """
    from jsonschema import Draft202012Validator

    schema = _read_yaml(schema_file())
    validator = Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path) or "<top>"
        problems.append(f"{source}: {where}: {error.message}")
    return problems


def check_params() -> tuple[list[str], list[str]]:
    """Problems of params.yaml, and the experiment names it lists (when it lists any)."""
    path = params_file()
    try:
        params = _read_yaml(path) or {}
    except ConfigError as exc:
        return [str(exc)], []
    names = params.get("experiments", []) if isinstance(params, dict) else []
    names = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    return params_problems(params, path), names


def registry_problems(cfg: Any, source: Path | str) -> list[str]:
    """Names in an experiment that no registry knows: its prompt format and its rewards.

    Checked here rather than in :mod:`vlrl.config`, which imports neither registry (a stage's
    config must not pull in every reward).

    >>> from vlrl.config import ExperimentConfig
    >>> cfg = ExperimentConfig.model_construct(prompt="nope", grpo=None)
    >>> registry_problems(cfg, "e.yaml")[0]
    "e.yaml: prompt: 'nope' is not one of [..."
    """
    from vlrl.config import THINKING_REWARD
    from vlrl.prompts import PROMPTS
    from vlrl.rewards import REGISTRY

    problems = []
    if cfg.prompt not in PROMPTS:
        problems.append(f"{source}: prompt: {cfg.prompt!r} is not one of {sorted(PROMPTS)}")
    rewards = cfg.grpo.rewards if cfg.grpo is not None else {}
    unknown = sorted(set(rewards) - set(REGISTRY) - {THINKING_REWARD})
    if unknown:
        problems.append(
            f"{source}: grpo.rewards: unknown rewards {unknown}; known: {sorted(REGISTRY)}"
        )
    return problems


def load_checked(name: str) -> Any:
    """``load_experiment(name)`` plus :func:`registry_problems`; raises ConfigError on either."""
    from vlrl.config import load_experiment

    cfg = load_experiment(name)
    problems = registry_problems(cfg, paths.experiment_file(name))
    if problems:
        raise ConfigError("; ".join(problems))
    return cfg


def _check_each(kind: str, names: list[str], load: Callable[[str], Any]) -> list[str]:
    problems = []
    for name in names:
        try:
            load(name)
        except ConfigError as exc:
            problems.append(str(exc))
        else:
            log.debug("%s %s: ok", kind, name)
    return problems


def _stems(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml"))


def check_all() -> None:
    """Validate params.yaml, config/experiments/*, config/models/*, config/benchmarks/*.

    Also checks that the experiments named in params.yaml exist and that every benchmark an
    experiment names has a file.

    Raises:
        ConfigError: listing every problem found, one per line, each naming its file and key.
    """
    from vlrl.benchmarks import load_benchmark
    from vlrl.config import load_model

    config = paths.root() / "config"
    experiments = _stems(config / "experiments")
    models = _stems(config / "models")
    benches = _stems(config / "benchmarks")

    problems, listed = check_params()
    for name in listed:
        if name not in experiments:
            problems.append(
                f"{params_file()}: experiments: {name!r} has no file "
                f"config/experiments/{name}.yaml; known: {experiments}"
            )
    problems += _check_each("model", models, load_model)
    problems += _check_each("benchmark", benches, load_benchmark)
    for name in experiments:
        try:
            cfg = load_checked(name)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        for bench in cfg.benchmarks:
            if bench not in benches:
                problems.append(
                    f"{paths.experiment_file(name)}: benchmarks: {bench!r} has no file "
                    f"config/benchmarks/{bench}.yaml; known: {benches}"
                )
    if problems:
        raise ConfigError(f"{len(problems)} problem(s):\n" + "\n".join(problems))
    log.info(
        "ok: params.yaml, %d experiments, %d models, %d benchmarks",
        len(experiments),
        len(models),
        len(benches),
    )
