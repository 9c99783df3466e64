"""``vlrl check``: validate params.yaml and every experiment, model, dataset, benchmark and
reference file at once.

Every problem is collected before raising, so one run lists them all, one line each naming its
file and dotted key: the schema's (unknown keys, wrong types, values out of range, keys that
disagree, repeated keys) and names that refer to nothing (prompt formats, rewards, benchmarks,
published tables and their rows).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlrl.config.reading import unknown_hint
from vlrl.core import paths
from vlrl.core.errors import ConfigError

log = logging.getLogger(__name__)

SCHEMA = Path("config", "schema", "params.schema.yaml")


def params_file() -> Path:
    return paths.root() / "params.yaml"


def schema_file() -> Path:
    return paths.root() / SCHEMA


def _read_yaml(path: Path) -> Any:
    from vlrl.config import read_yaml

    return read_yaml(path)


def _lines(exc: ConfigError) -> list[str]:
    """The problem lines of a ConfigError (a ConfigProblems holds several)."""
    return list(getattr(exc, "problems", None) or [str(exc)])


def params_problems(params: Any, source: Path | str = "params.yaml") -> list[str]:
    """Why ``params`` (the parsed params.yaml) does not match the schema; empty when it does.

    >>> params_problems({"experiments": ["tiny_shapes"]})
    []
    >>> params_problems({"experiments": ["tiny_shapes"], "seeds": [1]})
    ["params.yaml: <top>: Additional properties are not allowed ('seeds' was unexpected)"]
    >>> params_problems({"experiment": ["tiny_shapes"]})
    ["params.yaml: experiment: not a key of params.yaml; did you mean 'experiments'?"]
    """
    from jsonschema import Draft202012Validator

    from vlrl.config.reading import did_you_mean

    schema = _read_yaml(schema_file())
    validator = Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(params), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path) or "<top>"
        known = list(error.schema.get("properties", {})) if isinstance(error.schema, dict) else []
        extra = (
            [k for k in error.instance if k not in known]
            if isinstance(error.instance, dict)
            else []
        )
        hints = [(key, did_you_mean(str(key), known)) for key in extra]
        if error.validator == "additionalProperties" and any(hint for _, hint in hints):
            prefix = "" if where == "<top>" else f"{where}."
            for key, hint in hints:
                problems.append(f"{source}: {prefix}{key}: not a key of params.yaml{hint}")
            continue
        problems.append(f"{source}: {where}: {error.message}")
    return problems


def check_params() -> tuple[list[str], list[str]]:
    """Problems of params.yaml, and the experiment names it lists (when it lists any)."""
    path = params_file()
    try:
        params = _read_yaml(path) or {}
    except ConfigError as exc:
        return _lines(exc), []
    names = params.get("experiments", []) if isinstance(params, dict) else []
    names = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    return params_problems(params, path), names


def registry_problems(cfg: Any, source: Path | str) -> list[str]:
    """Names in an experiment that refer to nothing: its prompt format, its rewards and its
    benchmarks.

    Checked here rather than in :mod:`vlrl.config`, which imports neither registry (a stage's
    config must not pull in every reward).

    >>> from vlrl.config import ExperimentConfig
    >>> cfg = ExperimentConfig.model_construct(prompt="nope", grpo=None, benchmarks=[])
    >>> registry_problems(cfg, "e.yaml")[0]  # doctest: +ELLIPSIS
    "e.yaml: prompt: 'nope' is not one of [..."
    """
    from vlrl.items.prompts import PROMPTS
    from vlrl.rewards import entry, unknown_reward

    problems = []
    if cfg.prompt not in PROMPTS:
        problems.append(f"{source}: prompt: {cfg.prompt!r} is not one of {sorted(PROMPTS)}")
    infer_prompt = getattr(getattr(cfg, "infer", None), "prompt", None)
    if infer_prompt is not None and infer_prompt not in PROMPTS:
        problems.append(f"{source}: infer.prompt: {infer_prompt!r} is not one of {sorted(PROMPTS)}")
    rewards = cfg.grpo.rewards if cfg.grpo is not None else {}
    for name in rewards:
        if entry(name) is None:
            problems.append(f"{source}: grpo.rewards: {unknown_reward(name)}")
    score = getattr(cfg, "score", None)  # absent when the file did not validate
    for index, bench in enumerate(cfg.benchmarks):
        if not paths.benchmark_file(bench).is_file():
            known = _stems(paths.benchmark_file(bench).parent)
            hint = unknown_hint(bench, known, "config/benchmarks/")
            problems.append(
                f"{source}: benchmarks.{index}: {bench!r} has no file "
                f"config/benchmarks/{bench}.yaml{hint}"
            )
        elif score is not None:
            problems += _protocol_problems(source, index, bench, score)
    if score is not None:
        for key, chosen in (
            ("score.protocol", score.protocol),
            ("score.judge.benchmarks", score.judge.benchmarks if score.judge else {}),
        ):
            problems += [
                f"{source}: {key}.{bench}: {bench!r} is not one of the experiment's benchmarks "
                f"{list(cfg.benchmarks)}"
                for bench in chosen
                if bench not in cfg.benchmarks
            ]
    return problems


def _protocol_problems(source: str, index: int, bench: str, score: Any) -> list[str]:
    """The benchmark's protocols exist, the experiment's choice is one of them, and a protocol
    that is a judge's has a judge."""
    from vlrl.benchmarks import load_benchmark, protocol_for
    from vlrl.scoring.protocols import PROTOCOLS

    try:
        bench_cfg = load_benchmark(bench)
    except ConfigError:  # reported with the benchmark's own file
        return []
    unknown = [name for name in bench_cfg.protocols if name not in PROTOCOLS]
    if unknown:
        return [
            f"config/benchmarks/{bench}.yaml: protocols: {name!r} is not a scoring protocol"
            f"{unknown_hint(name, PROTOCOLS, '`vlrl protocols`')}"
            for name in unknown
        ]
    try:
        name = protocol_for(bench, bench_cfg, score.protocol)
    except ConfigError as exc:
        return [f"{source}: {exc}"]
    if PROTOCOLS[name].judge == "always" and score.judge is None:
        return [
            f"{source}: benchmarks.{index}: {bench!r} is scored by protocol {name!r}, an LLM "
            "judge's, but score.judge is not set"
        ]
    return []


def _names(tree: dict[str, Any]) -> Any:
    """What :func:`registry_problems` reads, taken from an experiment file that does not
    validate; a name that is absent or of the wrong type gets its default (validation reports
    the wrong type)."""
    from vlrl.config import ExperimentConfig, GRPOConfig

    prompt = tree.get("prompt")
    if not isinstance(prompt, str):
        prompt = ExperimentConfig.model_fields["prompt"].default
    grpo = tree.get("grpo") if isinstance(tree.get("grpo"), dict) else {}
    rewards = grpo.get("rewards")
    grpo_names = GRPOConfig.model_construct(
        **({"rewards": {str(k): 1.0 for k in rewards}} if isinstance(rewards, dict) else {})
    )
    benchmarks = tree.get("benchmarks") if isinstance(tree.get("benchmarks"), list) else []
    return ExperimentConfig.model_construct(
        prompt=prompt, grpo=grpo_names, benchmarks=[b for b in benchmarks if isinstance(b, str)]
    )


def experiment_problems(name: str, overrides: list[str] | None = None) -> tuple[Any, list[str]]:
    """The validated config of experiment ``name`` (None when it has problems) and every problem
    of it: schema problems and :func:`registry_problems`, the latter also when the former exist.
    """
    from vlrl.config import ConfigProblems, experiment_tree, load_experiment

    path = paths.experiment_file(name)
    try:
        cfg = load_experiment(name, overrides)
    except ConfigProblems as exc:
        merged = experiment_tree(path, overrides)  # its problems are among exc's
        names = _names(merged.tree)
        return None, exc.problems + registry_problems(names, path)
    except ConfigError as exc:  # no such file, not YAML: nothing more to check
        return None, _lines(exc)
    problems = registry_problems(cfg, path) + reward_problems(cfg, path)
    problems += published_problems(cfg, path) + extra_problems(cfg, path)
    problems += parallel_problems(cfg, path)
    return (None if problems else cfg), problems


def parallel_problems(cfg: Any, source: Path | str) -> list[str]:
    """The vLLM engines of the experiment whose tensor parallelism the base model's attention
    heads cannot take (:func:`vlrl.generation.vllm.tensor_parallel_problem`): each would fail
    at start, after the jobs before it ran."""
    from vlrl.config import load_model
    from vlrl.generation.vllm import tensor_parallel_problem

    try:
        heads = load_model(cfg.base_model).heads()
    except ConfigError:  # the model file's own problems are listed with the models
        return []
    if heads is None:
        return []
    grpo = cfg.grpo
    engines = {}
    if cfg.benchmarks and cfg.infer.backend == "vllm":
        engines["resources.infer.gpus"] = max(1, cfg.resources.infer.gpus)
    if grpo.enabled and grpo.use_vllm and grpo.vllm_mode == "colocate":
        engines["grpo.vllm_tensor_parallel_size"] = grpo.vllm_tensor_parallel_size
    if grpo.enabled and grpo.use_vllm and grpo.vllm_mode == "server":
        engines["grpo.vllm_server_gpus"] = max(1, grpo.vllm_server_gpus)
    return [
        f"{source}: {key}: {problem} (base model {cfg.base_model})"
        for key, size in engines.items()
        if (problem := tensor_parallel_problem(size, heads))
    ]


def extra_problems(cfg: Any, source: Path | str) -> list[str]:
    """``grpo.extra`` options that TRL does not have or that vlrl sets itself."""
    if not cfg.grpo.extra:
        return []
    from vlrl.algorithms.trl_setup import extra_problems as trl_extra_problems

    return [f"{source}: grpo.{key}: {why}" for key, why in trl_extra_problems(cfg.grpo)]


def reward_problems(cfg: Any, source: Path | str) -> list[str]:
    """What a valid experiment's rewards need from the rest of ``grpo``: the settings of each
    configured reward (:class:`vlrl.rewards.ConfiguredReward`), and no reward that the algorithm
    adds itself (:data:`vlrl.algorithms.ADDED_REWARDS`)."""
    from vlrl.algorithms import ADDED_REWARDS
    from vlrl.rewards import settings_problems

    grpo = cfg.grpo
    problems = settings_problems(grpo.rewards, grpo)
    added = ADDED_REWARDS.get(grpo.algorithm)
    if added in grpo.rewards:
        problems.append(
            (
                "rewards",
                f"grpo.rewards lists {added} under {grpo.algorithm}, which adds the "
                f"{added.rpartition('.')[2]} reward itself; list only the outcome rewards",
            )
        )
    return [f"{source}: grpo.{key}: {why}" for key, why in problems]


def published_problems(cfg: Any, source: Path | str) -> list[str]:
    """The experiment's ``report.published`` links that name no reference file
    (``config/reference/<name>.yaml``) or a row it does not have."""
    from vlrl.reporting.published import link_problems

    return link_problems(list(cfg.report.published), source)


def load_checked(name: str, overrides: list[str] | None = None) -> Any:
    """``load_experiment(name, overrides)`` plus :func:`registry_problems` and
    :func:`published_problems`.

    Raises:
        ConfigProblems: listing every problem of the experiment (see :func:`experiment_problems`).
    """
    from vlrl.config import ConfigProblems

    cfg, problems = experiment_problems(name, overrides)
    if problems:
        raise ConfigProblems(problems)
    return cfg


def _check_each(kind: str, names: list[str], load: Callable[[str], Any]) -> list[str]:
    problems = []
    for name in names:
        try:
            load(name)
        except ConfigError as exc:
            problems += _lines(exc)
        else:
            log.debug("%s %s: ok", kind, name)
    return problems


def _stems(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml"))


def _checked_dataset(name: str) -> Any:
    """``load_dataset(name)``; the format it names, if any, must exist."""
    from vlrl.config import ConfigProblems, load_dataset
    from vlrl.data.formats import formats

    cfg = load_dataset(name)
    if cfg.format is not None and cfg.format not in formats():
        raise ConfigProblems(
            [f"{paths.dataset_file(name)}: format: {cfg.format!r} is not one of {formats()}"]
        )
    return cfg


def _checked_benchmark(name: str) -> Any:
    """``load_benchmark(name)``; the prompt format and the dataset it names, if any, must exist."""
    from vlrl.benchmarks import load_benchmark
    from vlrl.config import ConfigProblems
    from vlrl.items.prompts import PROMPTS

    cfg = load_benchmark(name)
    if cfg.blank_images_of is not None:  # its keys are its twin's, checked in the twin's file
        return cfg
    file, problems = paths.benchmark_file(name), []
    if cfg.prompt is not None and cfg.prompt not in PROMPTS:
        problems.append(f"{file}: prompt: {cfg.prompt!r} is not one of {sorted(PROMPTS)}")
    if cfg.judge is not None and cfg.judge.prompt is not None:
        from vlrl.scoring.judge_prompts import PROMPTS as JUDGE_PROMPTS

        if cfg.judge.prompt not in JUDGE_PROMPTS:
            problems.append(
                f"{file}: judge.prompt: {cfg.judge.prompt!r} is not one of {sorted(JUDGE_PROMPTS)}"
            )
    if cfg.dataset is not None and not paths.dataset_file(cfg.dataset).is_file():
        known = _stems(paths.dataset_file(cfg.dataset).parent)
        problems.append(
            f"{file}: dataset: {cfg.dataset!r} has no file "
            f"config/datasets/{cfg.dataset}.yaml; known: {known}"
        )
    if problems:
        raise ConfigProblems(problems)
    return cfg


def check_all() -> None:
    """Validate params.yaml, config/experiments/*, config/models/*, config/datasets/*,
    config/benchmarks/*, config/reference/*.

    Also checks that the experiments named in params.yaml exist, that every benchmark an
    experiment names has a file, that the names in each file refer to something
    (:func:`registry_problems`), that each reference file's columns name benchmarks and metrics
    that exist, and that the published rows an experiment links exist
    (:func:`published_problems`).

    Raises:
        ConfigError: listing every problem found, one per line, each naming its file and key.
    """
    from vlrl.config import load_model
    from vlrl.reporting.published import reference_problems, references

    config = paths.root() / "config"
    experiments = _stems(config / "experiments")
    models = _stems(config / "models")
    datasets = _stems(config / "datasets")
    benches = _stems(config / "benchmarks")
    refs = references()

    problems, listed = check_params()
    for name in listed:
        if name not in experiments:
            problems.append(
                f"{params_file()}: experiments: {name!r} has no file "
                f"config/experiments/{name}.yaml; known: {experiments}"
            )
    problems += _check_each("model", models, load_model)
    problems += _check_each("dataset", datasets, _checked_dataset)
    problems += _check_each("benchmark", benches, _checked_benchmark)
    for name in refs:
        problems += reference_problems(name)
    for name in experiments:
        problems += experiment_problems(name)[1]
    if problems:
        raise ConfigError(f"{len(problems)} problem(s):\n" + "\n".join(problems))
    log.info(
        "ok: params.yaml, %d experiments, %d models, %d datasets, %d benchmarks, %d references",
        len(experiments),
        len(models),
        len(datasets),
        len(benches),
        len(refs),
    )
