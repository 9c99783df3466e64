"""Experiment config: merge order, unknown keys, wrong types, ranges, names, overrides."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vlrl.config import ConfigProblems, load_experiment, load_model, parse_overrides
from vlrl.core.errors import ConfigError
from vlrl.workflow.check import load_checked

TINY = "config/experiments/tiny_shapes.yaml"
BAD = "config/experiments/bad.yaml"
MODEL = "config/models/bad.yaml"
REQUIRED = {
    "base_model": "base_model: tiny-qwen2.5-vl\n",
    "benchmarks": "benchmarks: [shapes_test]\n",
}
JUDGE = "base_url: 'http://127.0.0.1:1/v1', model: m"
HUB = "repo_id: Qwen/Qwen2.5-VL-3B-Instruct"


def test_default_experiment_loads(project: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    assert cfg.base_model == "tiny-qwen2.5-vl"
    assert cfg.checkpoints == ["base", "sft", "grpo"]


def test_override_wins_over_file(project: Path) -> None:
    cfg = load_experiment("tiny_shapes", ["grpo.max_steps=3", "sft.enabled=false"])
    assert cfg.grpo.max_steps == 3
    assert cfg.checkpoints == ["base", "grpo"]


# A malformed config: how it is made, the file and the dotted key its error must name, and what
# the error says. ``set``: overrides of config/experiments/tiny_shapes.yaml; ``experiment``: an
# experiment file of this YAML (plus base_model and benchmarks when it has none); ``model``: a
# config/models file of this YAML.
TRUST = "reward_model: {base_url: 'http://127.0.0.1:1/v1', model: m}"
URL = "score.judge.base_url"
MALFORMED = [
    # sizes and counts
    ("set", "infer.batch_size=-1", TINY, "infer.batch_size", "greater than 0"),
    ("set", "infer.max_new_tokens=0", TINY, "infer.max_new_tokens", "greater than 0"),
    ("set", "sft.num_train_epochs=-1", TINY, "sft.num_train_epochs", "greater than 0"),
    (
        "set",
        "sft.per_device_train_batch_size=0",
        TINY,
        "sft.per_device_train_batch_size",
        "greater than 0",
    ),
    ("set", "grpo.max_steps=0", TINY, "grpo.max_steps", "greater than 0"),
    ("set", "sft.processes=0", TINY, "sft.processes", "greater than 0"),
    ("set", "grpo.processes=0", TINY, "grpo.processes", "greater than 0"),
    ("set", "grpo.num_generations=1", TINY, "grpo.num_generations", "greater than or equal to 2"),
    ("set", "data.shapes.n_val=0", TINY, "data.shapes.n_val", "greater than or equal to 1"),
    ("set", "score.bootstrap_resamples=0", TINY, "score.bootstrap_resamples", "greater than 0"),
    ("set", "cpu_threads=0", TINY, "cpu_threads", "greater than or equal to 1"),
    ("set", "seed=-1", TINY, "seed", "greater than or equal to 0"),
    # probabilities, thresholds, temperatures, rates
    ("set", "grpo.temperature=-1", TINY, "grpo.temperature", "greater than 0"),
    ("set", "grpo.temperature=0", TINY, "grpo.temperature", "greater than 0"),  # TRL divides by it
    ("set", "infer.temperature=-1", TINY, "infer.temperature", "greater than or equal to 0"),
    ("set", "grpo.top_p=1.5", TINY, "grpo.top_p", "less than or equal to 1"),
    ("set", "infer.top_p=0", TINY, "infer.top_p", "greater than 0"),
    ("set", "sft.warmup_ratio=1.5", TINY, "sft.warmup_ratio", "less than or equal to 1"),
    ("set", "grpo.beta=-0.1", TINY, "grpo.beta", "greater than or equal to 0"),
    ("set", "grpo.learning_rate=0", TINY, "grpo.learning_rate", "greater than 0"),
    ("set", "score.confidence=1.5", TINY, "score.confidence", "less than 1"),
    ("set", "score.iou_threshold=0", TINY, "score.iou_threshold", "greater than 0"),
    ("set", "grpo.rewards={common.format: .nan}", TINY, "grpo.rewards.common.format", "finite"),
    # the judge endpoint: concurrency 0 used to wait forever
    (
        "set",
        f"score.judge={{{JUDGE}, concurrency: 0}}",
        TINY,
        "score.judge.concurrency",
        "greater than 0",
    ),
    (
        "set",
        f"score.judge={{{JUDGE}, timeout_s: 0}}",
        TINY,
        "score.judge.timeout_s",
        "greater than 0",
    ),
    (
        "set",
        f"score.judge={{{JUDGE}, max_retries: -1}}",
        TINY,
        "score.judge.max_retries",
        "greater than or equal to 0",
    ),
    # an endpoint is a running server (base_url) or one the pipeline starts (serve), not both
    ("set", f"score.judge={{{JUDGE}, serve: {{model: m}}}}", TINY, "score.judge.serve", "not both"),
    ("set", "score.judge={mode: always}", TINY, "score.judge.base_url", "or serve (one the"),
    ("set", "score.judge={base_url: 'http://h/v1'}", TINY, "score.judge.model", "served model"),
    ("set", "grpo.reward_model={serve: {port: 8}}", TINY, "grpo.reward_model.serve.model", "name"),
    (
        "set",
        "score.judge={serve: {model: m}, endpoint_id: e}",
        TINY,
        "score.judge.endpoint_id",
        "leave it unset with serve",
    ),
    (
        "set",
        "score.judge={serve: {model: m, startup_timeout_s: 0}}",
        TINY,
        "score.judge.serve.startup_timeout_s",
        "greater than 0",
    ),
    (
        "set",
        "score.judge={serve: {model: m, backend: gpu}}",
        TINY,
        "score.judge.serve.backend",
        "'auto', 'transformers' or 'vllm'",
    ),
    ("set", "infer.openai={serve: {port: 70000}}", TINY, "infer.openai.serve.port", "65535"),
    # what a stage's job needs (resources) agrees with how the stage launches
    ("set", "resources.grpo.nodes=0", TINY, "resources.grpo.nodes", "greater than 0"),
    ("set", "resources.sft.gpus=-1", TINY, "resources.sft.gpus", "greater than or equal to 0"),
    ("set", "resources.infer.mem_mb=0", TINY, "resources.infer.mem_mb", "greater than 0"),
    ("set", "resources.infer.nodes=2", TINY, "resources.infer.nodes", "runs on one node"),
    ("set", "resources.grpo.gpus=8", TINY, "resources.grpo.gpus", "grpo.processes (2)"),
    ("set", "resources.infer.gpus=2", TINY, "resources.infer.gpus", "hf backend generates on one"),
    ("set", "resources.grpo.memory=1", TINY, "resources.grpo.memory", "Extra inputs"),
    # names that refer to nothing
    ("set", "grpo.tasks=[cuont, arithmetic]", TINY, "grpo.tasks", "'cuont' is not a shapes task"),
    ("set", "grpo.tasks=[count, color]", TINY, "grpo.tasks", "'color' is not in data.shapes"),
    ("set", "data.shapes.teacher.misses=[pink]", TINY, "data.shapes.teacher.misses.0", "'pink'"),
    (
        "set",
        "data.shapes.teacher.miss_rate=1.5",
        TINY,
        "data.shapes.teacher.miss_rate",
        "than or equal",
    ),
    ("set", "grpo.tasks=[]", TINY, "grpo.tasks", "at least 1 item"),
    ("set", "grpo.rewards={}", TINY, "grpo.rewards", "at least 1 item"),
    ("experiment", "prompt: no_such_format\n", BAD, "prompt", "'no_such_format' is not one of"),
    ("experiment", "grpo:\n  rewards: {nope.reward: 1.0}\n", BAD, "grpo.rewards", "nope.reward"),
    ("experiment", "base_model: missing-model\n", BAD, "base_model", "no config/models file"),
    ("experiment", "benchmarks: [shapes_tset]\n", BAD, "benchmarks.0", "'shapes_tset' has no file"),
    # keys that must agree
    ("set", "grpo.num_generations=3", TINY, "grpo.per_device_train_batch_size", "multiple of"),
    ("set", "data.shapes.min_shapes=5", TINY, "data.shapes.min_shapes", "above max_shapes (4)"),
    ("set", "sft.image_min_pixels=20000", TINY, "sft.image_min_pixels", "above image_max_pixels"),
    ("set", "infer.backend=openai", TINY, "infer.openai", "(base_url, model) is not set"),
    ("set", "grpo.epsilon_high=0.1", TINY, "grpo.epsilon", "above epsilon_high (0.1)"),
    ("set", "grpo.schedule_steps=89", TINY, "grpo.max_steps", "90 is above schedule_steps (89)"),
    (
        "set",
        "grpo={schedule_steps: 100, schedule_epochs: 2}",
        TINY,
        "grpo.schedule_epochs",
        "both plan the schedule: set one",
    ),
    ("set", f"grpo.trust={{{TRUST}, skip_low: 0.95}}", TINY, "grpo.trust.skip_low", "skip_high"),
    # lists that must hold something, each item once
    ("set", "infer.checkpoints=[]", TINY, "infer.checkpoints", "at least 1 item"),
    ("set", "infer.checkpoints=[base, sft, base]", TINY, "infer.checkpoints", "['base'] more"),
    ("set", "benchmarks=[]", TINY, "benchmarks", "at least 1 item"),
    ("set", "benchmarks=[shapes_test, shapes_test]", TINY, "benchmarks", "more than once"),
    # URLs that are URLs
    ("set", "score.judge={base_url: 'localhost:8000/v1', model: m}", TINY, URL, "http(s) URL"),
    ("set", "score.judge={base_url: 'http://', model: m}", TINY, URL, "http(s) URL"),
    # unknown keys, wrong types, repeated keys
    ("experiment", "grpo:\n  learnin_rate: 1.0\n", BAD, "grpo.learnin_rate", "not permitted"),
    ("experiment", "grpo:\n  max_steps: many\n", BAD, "grpo.max_steps", "valid integer"),
    ("experiment", "surprise: 1\n", BAD, "surprise", "not permitted"),
    ("experiment", "seed: 1\nseed: 2\n", BAD, "seed", "duplicate key (lines 1 and 2)"),
    ("experiment", "grpo:\n  beta: 0\n  beta: 1\n", BAD, "grpo.beta", "duplicate key (lines 2 and"),
    # model files
    ("model", f"builder: hf\nhf: {{{HUB}, revision: main}}\n", MODEL, "hf.revision", "pattern"),
    ("model", "builder: hf\n", MODEL, "hf", "base_model.hf (repo_id, revision) is missing"),
    ("model", "tiny: {num_attention_heads: 3}\n", MODEL, "tiny.hidden_size", "not a multiple"),
    ("model", "tiny: {num_key_value_heads: 3}\n", MODEL, "tiny.num_attention_heads", "multiple"),
    ("model", "tiny: {min_pixels: 20000}\n", MODEL, "tiny.min_pixels", "above max_pixels"),
    ("model", "builder: tiny\nbuilder: hf\n", MODEL, "builder", "duplicate key"),
]


def _problems(project: Path, kind: str, text: str) -> list[str]:
    """The problem lines loading the malformed config raises (none: the test fails)."""
    with pytest.raises(ConfigProblems) as err:
        if kind == "set":
            load_checked("tiny_shapes", [text])
        elif kind == "experiment":
            required = "".join(
                line for key, line in REQUIRED.items() if not re.search(f"^{key}:", text, re.M)
            )
            (project / BAD).write_text(text + required)
            load_checked("bad")
        else:
            (project / MODEL).write_text(text)
            load_model("bad")
    return err.value.problems


@pytest.mark.parametrize(("kind", "text", "file", "key", "says"), MALFORMED)
def test_malformed_config_names_file_and_key(
    project: Path, kind: str, text: str, file: str, key: str, says: str
) -> None:
    problems = _problems(project, kind, text)
    where = f"{project / file}: {key}: "
    named = [line for line in problems if line.startswith(where)]
    if kind == "set":
        # a key the --set set is blamed on the --set; one the file set (a limit the --set broke
        # elsewhere) on the file, with the --set named
        named = [line.replace(where, f"--set: {key}: ") for line in named]
        assert all(line.endswith(f" (with --set {text})") for line in named), named
        named += [line for line in problems if line.startswith(f"--set: {key}: ")]
        where = f"--set: {key}: "
    assert named, f"no problem at {where!r} in {problems}"
    assert any(says in line for line in named), named


def test_every_problem_of_a_file_is_listed_at_once(project: Path) -> None:
    text = (
        "seed: 1\nseed: 2\nprompt: nope\n"
        "sft: {num_train_epochs: -1, warmup_ratio: 2}\n"
        "grpo: {tasks: [cuont], rewards: {no.reward: 1}}\n"
        "infer: {batch_size: -1, temperature: -1}\n"
        "score: {confidence: 1.5, iou_threshold: 0}\n"
    )
    (project / BAD).write_text(text + "".join(REQUIRED.values()))
    with pytest.raises(ConfigProblems) as err:
        load_checked("bad")
    lines = err.value.problems
    assert all(line.startswith(f"{project / BAD}: ") for line in lines), lines
    keys = [line.removeprefix(f"{project / BAD}: ").split(": ")[0] for line in lines]
    assert sorted(keys) == [
        "grpo.rewards",  # an unknown reward, though the file does not validate
        "grpo.tasks",  # a task typo, though other sections do not validate
        "infer.batch_size",
        "infer.temperature",
        "prompt",
        "score.confidence",
        "score.iou_threshold",
        "seed",
        "sft.num_train_epochs",
        "sft.warmup_ratio",
    ], lines
    assert str(err.value) == "\n".join(lines)  # one line per problem


@pytest.mark.parametrize(
    "override",
    [
        "grpo.epsilon_high=0.2",  # equal to epsilon: no clip-higher, still valid
        f"grpo.trust={{{TRUST}, skip_low: 0.5, skip_high: 0.5}}",
        "infer.checkpoints=[grpo]",
        "benchmarks=[shapes_test]",
        "score.judge={base_url: 'https://api.example.com/v1', model: m}",
        "score.judge={base_url: 'http://127.0.0.1:8000/v1', model: m}",
    ],
)
def test_the_boundary_values_of_each_check_are_valid(project: Path, override: str) -> None:
    load_checked("tiny_shapes", [override])


def test_shipped_configs_are_valid(project: Path) -> None:
    for path in sorted((project / "config" / "experiments").glob("*.yaml")):
        load_checked(path.stem)
    for path in sorted((project / "config" / "models").glob("*.yaml")):
        load_model(path.stem)


def test_missing_experiment_suggests_or_counts_the_known(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"'tiny_shape'; did you mean 'tiny_shapes'"):
        load_experiment("tiny_shape")
    with pytest.raises(ConfigError, match=r"'nope'; \d+ known, in .*config/experiments/$") as err:
        load_experiment("nope")
    assert "tiny_shapes" not in str(err.value).split("known")[1]  # not the whole list


def test_not_a_mapping(project: Path) -> None:
    (project / "config/experiments/list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_experiment("list")


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
