"""A stage's dependencies are derived from its code: imports walked, couplings cut; the keys it
reads are declared in vlrl.config.reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vlrl.config.reads import STAGE_READS, declared_reads
from vlrl.core.errors import ConfigError
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
    config = {f for f in found if f.startswith("config/")}
    assert not config, "config's effect on a stage is the resolved values it reads"
    assert "cluster/threads.py" in found, "the CLI pins threads before every stage"
    assert not {f for f in found if f.startswith("cli/")}, "the command's own plumbing is not code"
    # no stage runs the workflow layer above it (the report is given its code files by the CLI)
    assert not {f for f in found if f.startswith("workflow/")}
    assert declared_reads(stage)


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
        (
            "grpo",
            [
                "rewards/vlm_r1.py",
                "algorithms/trust_grpo.py",
                "endpoints/client.py",
                "items/answers.py",
            ],
        ),
        ("infer", ["generation/hf.py", "generation/vllm.py", "data/convert.py", "benchmarks.py"]),
        (
            "score",
            ["scoring/rules.py", "scoring/judge.py", "items/answers.py", "endpoints/client.py"],
        ),
        (
            "report",
            ["scoring/stats.py", "items/predictions.py", "reporting/templates/index.html.j2"],
        ),
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
    assert "items/answers.py" not in files("merge", root)
    merge.write_text(merge.read_text() + "\n\ndef _late():\n    from vlrl.items import answers\n")
    assert "items/answers.py" in files("merge", root)
    # an old path (vlrl.core.moved) is a dependency on the module it moved to
    merge.write_text(merge.read_text() + "\n\ndef _older():\n    from vlrl import predictions\n")
    assert "items/predictions.py" in files("merge", root)


def test_type_checking_imports_are_not_dependencies(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    merge.write_text(
        merge.read_text()
        + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vlrl import answers\n"
    )
    assert "items/answers.py" not in files("merge", root)


def test_relative_imports_are_followed(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    merge = root / PKG / "stages" / "merge.py"
    merge.write_text(merge.read_text() + "\nfrom ..scoring import stats\n")
    assert "scoring/stats.py" in files("merge", root)


def test_every_stage_and_no_other_declares_the_keys_it_reads() -> None:
    assert set(STAGE_READS) == set(STAGES)
    with pytest.raises(ConfigError, match=r"stage 'no_such_stage'.*vlrl/config/reads\.py"):
        declared_reads("no_such_stage")
    with pytest.raises(ConfigError, match="has no module"):
        stage_deps.code_files("no_such_stage", ROOT)


def _add_module(root: Path, body: str) -> Path:
    """A module vlrl/extra/mod.py with ``body`` and a templates folder beside it, imported by
    the merge stage."""
    package = root / PKG / "extra"
    (package / "templates").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "templates" / "a.j2").write_text("{{ a }}")
    (package / "templates" / "notes.txt").write_text("not a template")
    module = package / "mod.py"
    module.write_text(body)
    merge = root / PKG / "stages" / "merge.py"
    merge.write_text(merge.read_text() + "\nfrom vlrl.extra import mod\n")
    return package


def test_declared_files_are_code_of_every_stage_importing_the_module(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    package = _add_module(root, 'FILES = ("templates/*.j2",)\n')
    assert {"extra/mod.py", "extra/templates/a.j2"} <= files("merge", root)
    assert "extra/templates/notes.txt" not in files("merge", root)
    assert "extra/templates/a.j2" not in files("score", root)
    (package / "templates" / "b.j2").write_text("{{ b }}")
    assert "extra/templates/b.j2" in files("merge", root), "a new template: a new dependency"
    assert [f.name for f in stage_deps.data_files("vlrl.extra.mod", root)] == ["a.j2", "b.j2"]
    assert stage_deps.data_files("vlrl.extra", root) == [], "no FILES: no data files"


@pytest.mark.parametrize(
    ("files_line", "message"),
    [
        ('FILES = ("nothing/*.j2",)', r"mod\.py: FILES pattern 'nothing/\*\.j2' matches no file"),
        ('FILES = ["templates/*.j2"]', r"mod\.py: FILES must be a tuple of strings"),
        ('FILES = ("../*.py",)', r"mod\.py: FILES pattern '\.\./\*\.py' must stay inside"),
        ('FILES = ("/etc/*",)', r"must stay inside the module's directory"),
    ],
)
def test_malformed_files_declarations_name_the_module(tmp_path, files_line, message) -> None:
    root = _scratch(tmp_path)
    _add_module(root, files_line + "\n")
    with pytest.raises(ConfigError, match=message):
        stage_deps.code_files("merge", root)


def test_the_report_templates_are_declared_and_all_found() -> None:
    templates = ROOT / PKG / "reporting" / "templates"
    declared = {f"reporting/templates/{p.name}" for p in templates.glob("*.j2")}
    assert declared and declared <= files("report")
    assert not any("templates" in f for f in files("score"))


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


def test_a_reward_family_is_code_of_the_runs_that_list_its_rewards() -> None:
    """The registry finds families by name; a run's GRPO code has only the families it uses,
    and the families other code of the stage imports (the GRPO algorithms call some rewards)."""
    everything = files("grpo")
    assert {"rewards/satori.py", "rewards/vlm_r1.py", "rewards/common.py"} <= everything

    def narrowed(*rewards: str) -> set[str]:
        return {f.removeprefix(PKG) for f in stage_deps.code_files("grpo", ROOT, rewards)}

    common = narrowed("common.format", "common.accuracy")
    assert "rewards/satori.py" not in common and "rewards/vlm_r1.py" not in common
    assert {"rewards/common.py", "rewards/__init__.py"} <= common
    assert everything - common == {
        "rewards/satori.py",
        "rewards/vlm_r1.py",
        "rewards/_vlm_r1_grading.py",
        "rewards/_detection.py",
        "rewards/_rec.py",
        "rewards/_math_verify.py",
        "rewards/_satori_boxes.py",
        "items/boxes.py",  # VLM-R1's box matching, read by its detection rewards only
    }
    satori = narrowed("satori.format_think")
    assert "rewards/satori.py" in satori and "rewards/vlm_r1.py" not in satori
    assert narrowed(*[f"{f.rsplit('.', 1)[1]}.x" for f in stage_deps.reward_families(ROOT)]) == (
        everything
    )
    # the sharing and the command line's plumbing are no stage's code
    assert not {"sharing.py", "cli/__init__.py", "cli/support.py", "cli/commands.py"} & everything


def test_adding_a_reward_family_changes_only_the_code_of_runs_that_use_it(tmp_path: Path) -> None:
    """A new family is a new file and nothing else: no shared file lists it, so the GRPO code
    of a run that does not use it is unchanged (it is not rerun), and a run that does has it."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "workflow_scripts", root / "workflow_scripts")
    before = {r: stage_deps.code_files("grpo", root, [r]) for r in ("common.format", "satori.x")}
    before_all = stage_deps.code_files("grpo", root)
    family = root / PKG / "rewards" / "newfamily.py"
    family.write_text("def one(completions, **kwargs):\n    return [1.0] * len(completions)\n\n"
                      "REWARDS = {'newfamily.one': one}\n")  # fmt: skip
    for reward, files_before in before.items():
        assert stage_deps.code_files("grpo", root, [reward]) == files_before
    assert set(stage_deps.code_files("grpo", root)) - set(before_all) == {
        f"{PKG}rewards/newfamily.py"
    }
    assert f"{PKG}rewards/newfamily.py" in stage_deps.code_files("grpo", root, ["newfamily.one"])
    helper = root / PKG / "rewards" / "notafamily.py"  # no REWARDS table: a helper, not a family
    helper.write_text("X = 1\n")
    assert "vlrl.rewards.notafamily" not in stage_deps.reward_families(root)
