"""Snakemake and DVC at rest after every documented workflow, one after another on one workspace.

On a copy of the shrunk default built with `dvc repro` (conftest.py, as after `make run`):
outputs restored out of order by `dvc checkout`, then `snakemake --touch` twice; a reward added
(a new family module), then `snakemake`; an experiment added to params.yaml (a child of the
default), then `snakemake`; a benchmark added to it, then `vlrl dvc-yaml` and `dvc repro`;
`dvc exp run`, the README's way back to the committed state, and forth with `dvc exp apply`.
After each, both tools have nothing to do: `snakemake -n` plans no job and `dvc status` is clean
(README, "Snakemake and DVC on one workspace", "Extending", "Going back after `dvc exp run`").
"""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from scratch_project import ROOT, Project

pytestmark = pytest.mark.slow

EXP, CHILD, BENCH = "tiny_shapes", "tiny_shapes_child", "shapes_probe"
EXP_FILE, CHILD_FILE = f"config/experiments/{EXP}.yaml", f"config/experiments/{CHILD}.yaml"
REWARDS = "workflow_scripts/vlrl/rewards"
RERUN_BY_GRPO = ("grpo/", "model/", "predictions/grpo/", "scores/grpo/", "metrics.json", "params/")
"""What a GRPO change reruns and rewrites: GRPO, merge, the GRPO model's inference and scores,
the report's metrics, and the resolved configs."""
BACK = ["git restore .", "dvc checkout", "vlrl resolve", "snakemake --touch --cores 1"]
"""The README's way back after `dvc exp run` (and the last two, after `dvc exp apply`)."""


def assert_at_rest(project: Project) -> None:
    """`snakemake -n` plans no job and `dvc status` has nothing to report."""
    plan = project.snakemake("-n")
    planned = re.findall(r"\n(?:local)?rule (\w+):.*?\n\s*reason: ([^\n]*)", plan, re.DOTALL)
    assert "Nothing to be done" in plan, f"snakemake -n plans {planned}"
    status = project("dvc", "status")
    assert "Data and pipelines are up to date" in status, status


def commit(project: Project, message: str) -> None:
    project("git", "add", "-A")
    project("git", "commit", "-qm", message)


@pytest.fixture(scope="module")
def project(built_copy: Project) -> Project:
    return built_copy


def test_snakemake_touch_is_idempotent(project: Project) -> None:
    """After a checkout restored the data after the models that were trained on it, `snakemake
    --touch` marks the outputs current; a second one finds nothing to touch, rewrites nothing."""
    shutil.rmtree(project.root / "results" / EXP / "data")
    project("dvc", "checkout", f"data--{EXP}")
    before = project.outputs()
    project.snakemake("--touch")
    touched = project.outputs()
    assert touched != before, "there was nothing to touch"
    project.snakemake("--touch")
    assert project.outputs() == touched, "a second snakemake --touch rewrote outputs"
    assert_at_rest(project)


BREVITY = '''"""A reward added by tests/pipeline/test_handover.py."""

from vlrl.rewards.common import completion_text


def short(completions, **columns):
    """1.0 for a completion of at most 8 characters."""
    return [float(len(completion_text(c)) <= 8) for c in completions]


REWARDS = {"brevity.short": short}
'''


def test_adding_a_reward(project: Project) -> None:
    """README, "Extending": a reward in a new family module, named under grpo.rewards, then
    `snakemake`. GRPO and what follows rerun; the hand-over regenerates dvc.yaml (its grpo stage
    gained a dependency) and records the jobs rewriting no other output (it relinked them all
    from DVC's cache, in no particular order: predictions newer than their scores)."""
    # the module is all: the registry finds the family by its name (no file lists families)
    (project.root / REWARDS / "brevity.py").write_text(BREVITY)
    config = yaml.safe_load((project.root / EXP_FILE).read_text())
    rewards = {**config["grpo"]["rewards"], "brevity.short": 0.5}
    project.set_values(EXP_FILE, {"grpo.rewards": rewards}, commit=False)
    commit(project, "a reward")

    before = project.outputs()
    project.snakemake()
    after = project.outputs()
    curve = project.root / "results" / EXP / "grpo" / "dvclive" / "plots" / "metrics"
    assert (curve / "rewards" / "brevity.short" / "mean.tsv").is_file(), "GRPO ran without it"
    rerun = tuple(f"results/{EXP}/{o}" for o in RERUN_BY_GRPO)
    rewritten = sorted(path for path, mtime in after.items() if before.get(path) != mtime)
    assert [path for path in rewritten if not path.startswith(rerun)] == []
    dvc_yaml = yaml.safe_load((project.root / "dvc.yaml").read_text())
    assert f"{REWARDS}/brevity.py" in dvc_yaml["stages"][f"grpo--{EXP}"]["deps"]
    assert_at_rest(project)


def test_adding_an_experiment(project: Project) -> None:
    """README, "Extending": a child experiment added to params.yaml, then `snakemake` (the
    hand-over writes its stages into dvc.yaml where `vlrl dvc-yaml` was forgotten)."""
    (project.root / CHILD_FILE).write_text(
        "description: the default with another GRPO learning rate (test_handover.py)\n"
        f"extends: {EXP}\ngrpo:\n  learning_rate: 1.0e-4\nreport:\n  title: a child\n"
    )
    params = yaml.safe_load((project.root / "params.yaml").read_text())
    project.set_values("params.yaml", {"experiments": [*params["experiments"], CHILD]}, False)
    commit(project, "an experiment")
    project.snakemake()
    assert (project.root / "reports" / CHILD / "results.md").is_file()
    stages = yaml.safe_load((project.root / "dvc.yaml").read_text())["stages"]
    assert f"report--{CHILD}" in stages, "DVC does not track the new experiment"
    assert_at_rest(project)


def test_adding_a_benchmark(project: Project) -> None:
    """A benchmark listed in an experiment, `vlrl dvc-yaml`, `dvc repro`: Snakemake's record of
    the report's inputs (from its own run) is older than the report, and does not count."""
    (project.root / "config" / "benchmarks" / f"{BENCH}.yaml").write_text(
        "description: a few items of the test split (test_handover.py)\n"
        "loader: experiment_split\nsplit: test\nprotocols: [vlrl]\nmax_items: 4\n"
    )
    project.set_values(CHILD_FILE, {"benchmarks": ["shapes_test", BENCH]}, commit=False)
    commit(project, "a benchmark")
    project("vlrl", "dvc-yaml")
    repro = project("dvc", "repro")
    assert f"Running stage 'score--{CHILD}--grpo--{BENCH}'" in repro, repro
    assert_at_rest(project)


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n### {title}\n")
    return text[start : text.index("\n#", start + 1)]


def test_dvc_exp_run_and_back_and_apply(project: Project) -> None:
    """`dvc exp run` leaves both tools at rest; the README's way back to the committed state,
    and `dvc exp apply` with its last two steps, leave them at rest too (`dvc checkout` alone
    left the experiment's resolved config, which DVC does not cache)."""
    section = readme_section("Going back after `dvc exp run`")
    found = [section.find(f"`{command}`") for command in BACK]
    assert -1 not in found and found == sorted(found), f"the README does not say {BACK}"
    assert "`dvc exp apply <name>`" in section

    commit(project, "the runs")  # the state to go back to
    title = f"{CHILD_FILE}:report.title=probe"
    ran = project("dvc", "exp", "run", "-S", title)
    name = re.search(r"Ran experiment\(s\): (\S+)", ran).group(1)
    assert_at_rest(project)

    for command in BACK:
        project(*command.split())
    assert project("git", "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert_at_rest(project)

    project("dvc", "exp", "apply", name)
    for command in BACK[2:]:
        project(*command.split())
    assert "title: probe" in (project.root / CHILD_FILE).read_text()
    assert_at_rest(project)
