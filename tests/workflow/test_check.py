"""`vlrl check`: every config file validated at once, each problem naming its file and key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vlrl.errors import ConfigError
from vlrl.workflow.check import check_all

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _variant(project: Path, name: str, old: str, new: str) -> Path:
    """A copy of tiny_shapes with the first match of the regex ``old`` replaced by ``new``."""
    text = (project / "config" / "experiments" / "tiny_shapes.yaml").read_text()
    changed, count = re.subn(old, new, text, count=1, flags=re.MULTILINE)
    assert count == 1, f"{old!r} not found in tiny_shapes.yaml"
    path = project / "config" / "experiments" / f"{name}.yaml"
    path.write_text(changed)
    return path


def test_the_project_config_is_valid():
    check_all()


@pytest.mark.parametrize(
    ("old", "new", "key", "why"),
    [
        ("seed: 0", "seed: 0\nlearnig_rate: 1.0e-5", "learnig_rate", "unknown top-level key"),
        (r"^  max_steps: \d+", "  max_step: 1", "grpo.max_step", "unknown nested key"),
        ("seed: 0", "seed: zero", "seed", "wrong type"),
        (
            r"^  num_generations: \d+",
            "  num_generations: many",
            "grpo.num_generations",
            "wrong type",
        ),
    ],
)
def test_bad_experiment_names_file_and_key(project, old, new, key, why):
    path = _variant(project, "bad", old, new)
    with pytest.raises(ConfigError) as info:
        check_all()
    message = str(info.value)
    assert str(path) in message, why
    assert f"{key}:" in message, why


def test_all_problems_are_listed_at_once(project):
    _variant(project, "bad_a", "seed: 0", "seed: zero")
    _variant(project, "bad_b", "seed: 0", "seed: 0\nextra: 1")
    (project / "params.yaml").write_text("experiments: [tiny_shapes, missing]\nverbose: true\n")
    with pytest.raises(ConfigError) as info:
        check_all()
    message = str(info.value)
    assert "bad_a.yaml: seed:" in message
    assert "bad_b.yaml: extra:" in message
    assert "'verbose' was unexpected" in message
    assert "'missing' has no file" in message


# Problems of several files at once: (file under the project, regex on its text, replacement),
# and the ``<file>: <dotted key>: `` each problem line must start with.
SEVERAL = [
    (
        "config/experiments/bad_a.yaml",
        r"^  batch_size: \d+",
        "  batch_size: -1",
        "infer.batch_size",
    ),
    (
        "config/experiments/bad_a.yaml",
        r"^  tasks: .*",
        "  tasks: [cuont, arithmetic]",
        "grpo.tasks",
    ),
    ("config/experiments/bad_a.yaml", r"^  num_train_epochs: .*", "  num_train_epochs: -1", None),
    ("config/experiments/bad_b.yaml", r"^  num_generations: \d+", "  num_generations: 1", None),
    ("config/experiments/bad_b.yaml", r"^  beta: .*", "  beta: 0.04\n  temperature: -1", None),
    ("config/experiments/bad_b.yaml", r"^  confidence: .*", "  confidence: 1.5", None),
    ("config/experiments/bad_b.yaml", r"^prompt: .*", "prompt: think_answr", "prompt"),
    ("config/experiments/bad_c.yaml", r"^seed: 0", "seed: 0\nseed: 1", "seed"),
    ("config/experiments/bad_c.yaml", r"^score:", "score:\n  iou_threshold: 0", None),
    (
        "config/experiments/bad_c.yaml",
        r"^benchmarks:",
        "infer:\n  top_p: 1.5\nbenchmarks:",
        "infer",  # a second infer section: a duplicate key (and its top_p is validated)
    ),
    (
        "config/models/tiny-qwen2.5-vl.yaml",
        r"^builder: tiny",
        "builder: hf\nhf: {repo_id: Qwen/Qwen2.5-VL-3B-Instruct, revision: main}",
        "hf.revision",
    ),
    ("config/benchmarks/shapes_test.yaml", r"^split: test", "split: test\nprompt: nope", "prompt"),
    ("params.yaml", r"^experiments:", "experiments: [tiny_shapes]\nexperiments:", "experiments"),
]
SEVERAL_KEYS = {
    "config/experiments/bad_a.yaml": ["infer.batch_size", "grpo.tasks", "sft.num_train_epochs"],
    "config/experiments/bad_b.yaml": [
        "grpo.num_generations",
        "grpo.temperature",
        "score.confidence",
        "prompt",
    ],
    "config/experiments/bad_c.yaml": ["seed", "infer", "infer.top_p", "score.iou_threshold"],
    "config/models/tiny-qwen2.5-vl.yaml": ["hf.revision"],
    "config/benchmarks/shapes_test.yaml": ["prompt"],
    "params.yaml": ["experiments"],
}


def _break_several(project: Path) -> list[str]:
    """Apply SEVERAL (experiments start as copies of tiny_shapes); the expected line prefixes."""
    source = (project / "config" / "experiments" / "tiny_shapes.yaml").read_text()
    texts: dict[str, str] = {}
    for file, old, new, _ in SEVERAL:
        text = texts.get(file) or (
            source if file.startswith("config/experiments/") else (project / file).read_text()
        )
        texts[file], count = re.subn(old, new, text, count=1, flags=re.MULTILINE)
        assert count == 1, f"{old!r} not found for {file}"
    for file, text in texts.items():
        (project / file).write_text(text)
    return [f"{project / file}: {key}: " for file, keys in SEVERAL_KEYS.items() for key in keys]


def test_every_problem_of_every_file_is_listed_at_once(project):
    expected = _break_several(project)
    with pytest.raises(ConfigError) as info:
        check_all()
    header, *lines = str(info.value).splitlines()
    assert header == f"{len(expected)} problem(s):", lines
    for prefix in expected:
        assert [line for line in lines if line.startswith(prefix)], (prefix, lines)


def test_cli_lists_every_problem_and_exits_2(project):
    expected = _break_several(project)
    env = {**os.environ, "COLUMNS": "80", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "vlrl"), "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    for prefix in expected:  # one line each, unwrapped, [lists] not taken for markup
        assert any(line.startswith(prefix) for line in out.stderr.splitlines()), out.stderr
    assert "['color', 'count', 'grounding', 'caption', 'arithmetic']" in out.stderr


def test_cli_exits_2_and_names_file_and_key(project):
    path = _variant(project, "bad", "seed: 0", "seed: 0\nlearnig_rate: 1.0e-5")
    env = {**os.environ, "COLUMNS": "500", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "vlrl"), "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert str(path) in out.stderr and "learnig_rate" in out.stderr


def test_datasets_and_the_benchmarks_naming_them_are_checked(project):
    datasets = project / "config" / "datasets"
    datasets.mkdir(exist_ok=True)
    (datasets / "pinned.yaml").write_text("repo_id: org/name\nrevision: " + "a" * 40 + "\n")
    (datasets / "moving.yaml").write_text("repo_id: org/name\nrevision: main\n")
    benchmarks = project / "config" / "benchmarks"
    (benchmarks / "on_hub.yaml").write_text("loader: records\ndataset: pinned\nfile: t.jsonl\n")
    (benchmarks / "on_nothing.yaml").write_text("loader: records\ndataset: absent\nfile: t.jsonl\n")

    with pytest.raises(ConfigError) as info:
        check_all()

    header, *lines = str(info.value).splitlines()
    assert header == "2 problem(s):", lines
    assert lines[0].startswith(f"{datasets / 'moving.yaml'}: revision: "), lines
    assert lines[1].startswith(
        f"{benchmarks / 'on_nothing.yaml'}: dataset: 'absent' has no file "
        "config/datasets/absent.yaml; known: ["
    ), lines
    assert "'moving', 'pinned'" in lines[1], lines
