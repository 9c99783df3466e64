"""``vlrl plan``'s stage list is the preview of a run: after an edit it lists exactly the stages
`snakemake -n` and `dvc repro` run, each with why in the user's terms (the config key with its
old and new value, the code file, the input rebuilt first), old values being what the stage last
ran with, also after consecutive edits.

One shrunk copy of the default experiment is "built" without running anything: every job's
outputs are stand-in files, recorded by DVC (``dvc commit``) and older than their inputs for
Snakemake, so both tools see a built workspace in seconds (the preview reads no output).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))
from plans import add_comment, dvc_plan, edited, snakemake_plan
from scratch_project import Project

from vlrl.workflow import preview
from vlrl.workflow.dag import Job, Planned

EXP, BENCH = "tiny_shapes", "shapes_test"
EXP_FILE = f"config/experiments/{EXP}.yaml"
GRPO_AND_AFTER = {
    f"grpo--{EXP}",
    f"merge--{EXP}",
    f"infer--{EXP}--grpo--{BENCH}",
    f"score--{EXP}--grpo--{BENCH}",
    f"report--{EXP}",
}

STAND_IN_BUILD = """
import os, subprocess, time
from vlrl.workflow.dag import dag_jobs

jobs = dag_jobs(["all"])  # also writes the params files, as Snakemake does
for job in jobs:
    for out in job.output:
        if out in job.directories:
            os.makedirs(out, exist_ok=True)
            out = os.path.join(out, "stand-in")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as fh:
            fh.write(out)
subprocess.run(["dvc", "commit", "--force", "--quiet"], check=True)
# Snakemake decides by file times: inputs first, then each job's outputs in DAG order.
now, made = time.time(), {o for job in jobs for o in job.output}
for path in {i for job in jobs for i in job.input} - made:
    if os.path.exists(path):
        os.utime(path, (now - 600, now - 600))
for index, job in enumerate(jobs):
    for out in job.output:
        os.utime(out, (now - 300 + index, now - 300 + index))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = Project(tmp_path_factory.mktemp("preview"))
    project.shrink()
    project("python", "-c", STAND_IN_BUILD)
    project("git", "add", "-A")
    project("git", "commit", "-qm", "built")
    assert "Data and pipelines are up to date" in project("dvc", "status")
    return project


def previewed(project: Project) -> dict[str, list[str]]:
    """``{stage: reasons}`` of the stages `vlrl plan` lists to run (and it says that `dvc repro`
    runs the same)."""
    section = project("vlrl", "plan", EXP).split("## Downloads")[0]
    assert "`dvc repro` runs the same stages" in section, section
    runs: dict[str, list[str]] = {}
    current = None
    for line in section.splitlines():
        if line.startswith("  run "):
            current = line.split()[1]
            runs[current] = []
        elif line.startswith("  cached "):
            current = None
        elif current is not None and line.startswith("           "):
            runs[current].append(line.strip())
    return runs


def _set_learning_rate(value: float):
    def change(text: str) -> str:
        tree = yaml.safe_load(text)
        tree["grpo"]["learning_rate"] = value
        return yaml.safe_dump(tree, sort_keys=False)

    return change


@pytest.mark.slow
def test_the_preview_lists_what_both_tools_run_and_why(built: Project) -> None:
    """A config value of grpo and the code of score edited at once (one preview for both)."""
    module = "workflow_scripts/vlrl/stages/score.py"
    scores = {f"score--{EXP}--{c}--{BENCH}" for c in ("base", "sft")}
    with edited(built, EXP_FILE, _set_learning_rate(1e-4)), edited(built, module, add_comment):
        # `snakemake -n` rewrites grpo's params file: the value it held is gone from the disk
        smk, _ = snakemake_plan(built)
        shown = previewed(built)
        dvc, _ = dvc_plan(built)  # runs DVC's resolve stage: dvc.lock records the new values
        assert set(shown) == smk == dvc == GRPO_AND_AFTER | scores
        assert shown[f"grpo--{EXP}"] == ["config grpo.learning_rate: 0.0003 → 0.0001"]
        assert f"input results/{EXP}/grpo: rebuilt by grpo--{EXP}" in shown[f"merge--{EXP}"]
        for score in scores:
            assert shown[score] == [f"code {module} changed"]
        # a second edit before any run: the old value is still the one grpo last ran with
        exp_file = built.root / EXP_FILE
        exp_file.write_text(_set_learning_rate(1e-3)(exp_file.read_text()))
        shown = previewed(built)
        assert shown[f"grpo--{EXP}"] == ["config grpo.learning_rate: 0.0003 → 0.001"]


def test_the_baseline_is_the_text_whose_hash_dvc_lock_recorded() -> None:
    """Candidates that do not have the recorded hash are not taken for what the stage ran."""
    ran, later = "grpo:\n  beta: 0.04\n", "grpo:\n  beta: 0.1\n"
    recorded = hashlib.md5(ran.encode()).hexdigest()
    assert preview.Baselines({}, {"p.yaml": ran}).find("grpo", "x", "p.yaml", recorded) == ran
    no_record = preview.Baselines({}, {"p.yaml": later})
    no_record.sources = [dict]  # no dvc.lock, no commit
    assert no_record.find("grpo", "x", "p.yaml", recorded) is None
    assert preview.key_changes(ran, later) == ["grpo.beta: 0.04 → 0.1"]


def _planned(rule: str, inputs: list[str], updated: tuple[str, ...] = ()) -> Planned:
    job = Job(rule, {}, inputs, [f"out_{rule}"], [], {}, f"vlrl {rule}", frozenset())
    return Planned(job, True, "Updated input files", frozenset(updated))


def test_file_times_alone_are_snakemake_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job Snakemake runs for a newer file whose content dvc.lock records as it is (and the
    jobs after it) is one `dvc repro` skips; a newer folder, not compared, leaves it open."""
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    for name in ("in.txt", "out_a", "out_b", "out_c"):
        (tmp_path / name).write_text(name)
    (tmp_path / "folder").mkdir()
    md5 = hashlib.md5(b"in.txt").hexdigest()
    lock = {
        "a": {"deps": [{"path": "in.txt", "md5": md5}]},
        "b": {"deps": [{"path": "out_a", "md5": "0"}]},
        "c": {"deps": [{"path": "folder", "md5": "0.dir"}]},
    }
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"stages": lock}))
    jobs = [
        _planned("a", ["in.txt"], ("in.txt",)),
        _planned("b", ["out_a"]),
        _planned("c", ["folder"], ("folder",)),
    ]
    found = preview.explain(jobs, {})
    assert (found.snakemake_only, found.unknown) == (["a", "b"], ["c"])
    assert found.why["b"] == ["input out_a: rebuilt by a"]
    (tmp_path / "in.txt").write_text("edited")
    found = preview.explain(jobs, {})
    assert (found.snakemake_only, found.why["a"]) == ([], ["input in.txt changed"])
