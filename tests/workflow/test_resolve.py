"""Each stage's params file holds the resolved values (defaults included) of the keys it reads."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from vlrl.cli import app
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.workflow import resolve

ROOT = Path(__file__).resolve().parents[2]


def _values(text: str) -> dict:
    return yaml.safe_load(text)


def test_a_params_file_holds_the_declared_keys_with_defaults(project: Path) -> None:
    values = _values(resolve.render("sft", "tiny_shapes"))
    assert list(values) == list(declared_reads("sft"))
    assert values["sft"]["lr_scheduler_type"] == "cosine"  # a default: tiny_shapes.yaml omits it
    assert values["sft"]["num_train_epochs"] == 6  # set in the file
    report = _values(resolve.render("report", "tiny_shapes"))
    assert report["report"]["title"] is None and report["sft.enabled"] is True
    model = _values(resolve.render("base_model", "tiny-qwen2.5-vl"))
    assert list(model) == ["builder", "tiny", "hf"] and model["tiny"]["vocab_size"] == 600


def test_files_are_rewritten_only_when_their_content_changes(project: Path) -> None:
    written = resolve.write_all(["tiny_shapes"])
    assert str(paths.stage_params_file("tiny_shapes", "grpo")) in written
    assert str(paths.model_params_file("tiny-qwen2.5-vl")) in written
    grpo, sft = (project / paths.stage_params_file("tiny_shapes", s) for s in ("grpo", "sft"))
    times = grpo.stat().st_mtime_ns, sft.stat().st_mtime_ns
    exp = project / "config/experiments/tiny_shapes.yaml"
    exp.write_text(exp.read_text().replace("learning_rate: 3.0e-4", "learning_rate: 2.0e-4"))
    resolve.write_all(["tiny_shapes"])
    assert grpo.stat().st_mtime_ns != times[0] and "0.0002" in grpo.read_text()
    assert sft.stat().st_mtime_ns == times[1], "sft reads no grpo key: its file stays as it was"


def test_resolve_stops_when_dvc_yaml_is_stale(project: Path) -> None:
    for item in ("Snakefile", "rules", "workflow_scripts", "dvc.yaml"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, project / item)
    runner = CliRunner()
    current = runner.invoke(app, ["resolve"])
    assert current.exit_code == 0, current.output
    (project / "params.yaml").write_text("experiments: [tiny_shapes, tiny_shapes_satori]\n")
    stale = runner.invoke(app, ["resolve"])
    assert stale.exit_code == 2
    # Joined without spaces: the console wraps long temporary paths anywhere.
    assert re.search(r"dvc\.yamlisstale.*vlrldvc-yaml", "".join(stale.output.split()))
    assert (project / paths.stage_params_file("tiny_shapes_satori", "grpo")).is_file()
    assert runner.invoke(app, ["resolve", "--no-check"]).exit_code == 0
