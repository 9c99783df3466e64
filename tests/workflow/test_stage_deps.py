"""A stage's dependencies are derived from its code: imports walked, READS parsed, couplings cut."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from vlrl.errors import ConfigError
from vlrl.workflow import stage_deps
from vlrl.workflow.reads import RecordingConfig, undeclared

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["download", "data", "base_model", "sft", "grpo", "merge", "infer", "score", "report"]
PKG = "workflow_scripts/vlrl/"


def files(stage: str, root: Path = ROOT) -> set[str]:
    return {f.removeprefix(PKG) for f in stage_deps.code_files(stage, root)}


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_has_its_module_its_packages_and_no_config(stage: str) -> None:
    found = files(stage)
    assert {f"stages/{stage}.py", "stages/__init__.py", "__init__.py"} <= found
    assert "config.py" not in found, "config's effect on a stage is the resolved values it reads"
    assert "threads.py" in found, "the CLI pins threads before every stage"
    assert "cli.py" not in found and not any(f.startswith("workflow/") for f in found)
    assert stage_deps.declared_reads(stage)


@pytest.mark.parametrize(
    ("stage", "absent"),
    [
        ("merge", ["stages/grpo.py", "rewards/common.py", "algorithms/__init__.py"]),
        ("report", ["stages/score.py", "scoring/judge.py", "rewards/__init__.py"]),
        ("score", ["rewards/__init__.py", "rewards/vlm_r1.py"]),
        ("sft", ["rewards/__init__.py", "generation/hf.py"]),
        ("infer", ["rewards/__init__.py", "scoring/rules.py"]),
    ],
)
def test_couplings_are_cut(stage: str, absent: list[str]) -> None:
    assert not set(absent) & files(stage)


@pytest.mark.parametrize(
    ("stage", "present"),
    [
        ("grpo", ["rewards/vlm_r1.py", "algorithms/trust_grpo.py", "endpoints.py", "answers.py"]),
        ("infer", ["generation/hf.py", "generation/vllm.py", "data/convert.py", "benchmarks.py"]),
        ("score", ["scoring/rules.py", "scoring/judge.py", "answers.py", "endpoints.py"]),
        ("report", ["scoring/stats.py"]),
    ],
)
def test_lazy_and_indirect_imports_are_followed(stage: str, present: list[str]) -> None:
    assert set(present) <= files(stage)


def _scratch(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "workflow_scripts", tmp_path / "workflow_scripts")
    return tmp_path


def test_a_new_import_is_a_new_dependency(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    assert "answers.py" not in files("merge", root)
    merge.write_text(merge.read_text() + "\n\ndef _late():\n    from vlrl import answers\n")
    assert "answers.py" in files("merge", root)


def test_type_checking_imports_are_not_dependencies(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    merge.write_text(
        merge.read_text()
        + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vlrl import answers\n"
    )
    assert "answers.py" not in files("merge", root)


def test_relative_imports_are_followed(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    merge.write_text(merge.read_text() + "\nfrom ..scoring import stats\n")
    assert "scoring/stats.py" in files("merge", root)


def test_missing_or_malformed_reads_is_an_error(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    text = merge.read_text()
    merge.write_text(re.sub(r"\nREADS = .*", '\nREADS = ["base_model"]', text))
    with pytest.raises(ConfigError, match="READS must be a tuple of strings"):
        stage_deps.declared_reads("merge", root)
    merge.write_text(text.replace("READS =", "NOT_READS ="))
    with pytest.raises(ConfigError, match=r"merge\.py: no READS"):
        stage_deps.declared_reads("merge", root)
    with pytest.raises(ConfigError, match="has no module"):
        stage_deps.code_files("no_such_stage", root)


def test_recording_config_records_leaves_properties_and_whole_sections() -> None:
    from vlrl.config import load_experiment

    seen: set[str] = set()
    view = RecordingConfig(load_experiment("tiny_shapes"), seen)
    assert view.sft.num_train_epochs > 0
    assert view.checkpoints == ["base", "sft", "grpo"]  # a property, evaluated on the view
    view.score.model_dump()
    assert seen == {
        "sft.num_train_epochs",
        "infer.checkpoints",
        "sft.enabled",
        "grpo.enabled",
        "score",
    }
    assert undeclared(seen, ["sft", "score", "infer"]) == ["grpo.enabled"]
    with pytest.raises(AttributeError, match="read-only"):
        view.seed = 3
