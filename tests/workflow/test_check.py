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


def test_cli_exits_2_and_names_file_and_key(project):
    path = _variant(project, "bad", "seed: 0", "seed: 0\nlearnig_rate: 1.0e-5")
    env = {**os.environ, "COLUMNS": "500", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "vlrl"), "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert str(path) in out.stderr and "learnig_rate" in out.stderr
