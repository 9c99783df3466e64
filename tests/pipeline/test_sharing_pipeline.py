"""Change one thing, rerun one thing: a child experiment (``extends:``) that changes only a GRPO
setting plans and runs GRPO and what follows it, nothing before, in both tools, and reads its
parent's data, SFT model and base and SFT scores (vlrl.sharing). Its report still shows it whole.

Starts from the shrunk default built once (tests/pipeline/conftest.py) and adds the committed
child experiment ``tiny_shapes_grpo_lr`` to params.yaml, as the README's recipe says.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from plans import dvc_plan, snakemake_plan
from scratch_project import Project

pytestmark = pytest.mark.slow

PARENT, CHILD, BENCH = "tiny_shapes", "tiny_shapes_grpo_lr", "shapes_test"
CHILD_FILE = f"config/experiments/{CHILD}.yaml"
CHILD_STAGES = {
    f"grpo--{CHILD}",
    f"merge--{CHILD}",
    f"infer--{CHILD}--grpo--{BENCH}",
    f"score--{CHILD}--grpo--{BENCH}",
    f"report--{CHILD}",
}


def _stages(project: Project) -> dict:
    return yaml.safe_load((project.root / "dvc.yaml").read_text())["stages"]


@pytest.fixture(scope="module")
def family(built_copy: Project) -> Project:
    built_copy.set_values("params.yaml", {"experiments": [PARENT, CHILD]}, commit=False)
    built_copy("vlrl", "dvc-yaml")
    built_copy("git", "add", "-A")
    built_copy("git", "commit", "-qm", "add the child experiment")
    return built_copy


def test_the_child_has_only_the_stages_it_changes(family: Project) -> None:
    stages = _stages(family)
    assert {name for name in stages if f"--{CHILD}" in name} == CHILD_STAGES
    grpo_deps = stages[f"grpo--{CHILD}"]["deps"]
    assert f"results/{PARENT}/data" in grpo_deps and f"results/{PARENT}/sft" in grpo_deps
    report_deps = stages[f"report--{CHILD}"]["deps"]
    assert f"results/{PARENT}/scores/sft/{BENCH}.json" in report_deps
    assert f"results/{CHILD}/scores/grpo/{BENCH}.json" in report_deps
    # the child's report pairs its GRPO scores with its parent's
    assert f"results/{PARENT}/scores/grpo/{BENCH}.json" in report_deps


def test_both_tools_plan_only_the_child_and_it_reports_whole(family: Project) -> None:
    smk_all, _ = snakemake_plan(family)
    dvc_all, _ = dvc_plan(family)
    assert smk_all == dvc_all == CHILD_STAGES

    log = family("dvc", "repro")
    assert set(re.findall(r"Running stage '([^']+)'", log)) == CHILD_STAGES
    parent = json.loads((family.root / "results" / PARENT / "metrics.json").read_text())
    child = json.loads((family.root / "results" / CHILD / "metrics.json").read_text())
    assert set(child[BENCH]) == {"base", "sft", "grpo"}
    for checkpoint in ("base", "sft"):
        assert child[BENCH][checkpoint] == parent[BENCH][checkpoint]
    summary = json.loads(
        (family.root / "results" / CHILD / "grpo" / "train_summary.json").read_text()
    )
    assert summary["start_model"] == f"results/{PARENT}/sft"
    rates = {h["learning_rate"] for h in summary["log_history"] if "learning_rate" in h}
    assert rates == {1.0e-4}, rates

    assert "Nothing to be done" in family.snakemake("-n")
    assert "Data and pipelines are up to date" in family("dvc", "status")
    _did_the_change_help(family, parent, child)


def _did_the_change_help(family: Project, parent: dict, child: dict) -> None:
    """The child's report and `vlrl compare` answer it: the child's GRPO against the parent's
    on the same items, the shared base and SFT marked shared. Read through a pipe, the output
    has whole rows and whole sentences."""
    ours, theirs = child[BENCH]["grpo"]["accuracy"], parent[BENCH]["grpo"]["accuracy"]
    rows = json.loads(family("vlrl", "compare", CHILD, PARENT, "--format", "json"))
    by_model = {r["checkpoint"]: r for r in rows}
    assert set(by_model) == {"base", "sft", "grpo"}
    assert by_model["base"]["shared"] and by_model["sft"]["shared"]
    grpo = by_model["grpo"]
    assert not grpo["shared"] and grpo["file_b"] == f"results/{PARENT}/scores/grpo/{BENCH}.json"
    assert grpo["accuracy_a"] == pytest.approx(ours) and grpo["accuracy_b"] == pytest.approx(theirs)
    assert grpo["diff"] == pytest.approx(ours - theirs)
    assert grpo["ci_low"] <= grpo["diff"] <= grpo["ci_high"]
    worse_or_better = "better" if ours >= theirs else "worse"
    expected = (
        f"{CHILD}'s SFT+GRPO is {100 * abs(ours - theirs):.1f} points {worse_or_better} than "
        f"{PARENT}'s on {BENCH}"
    )
    assert expected in grpo["sentence"]

    table = family("vlrl", "compare", CHILD, PARENT)  # stdout is a pipe here
    assert grpo["sentence"] in table  # one line, not cut or wrapped
    assert "…" not in table
    csv = family("vlrl", "compare", CHILD, PARENT, "-f", "csv").splitlines()
    assert csv[0].startswith("benchmark,checkpoint,model,a,b,shared,n,") and len(csv) == 4

    report = family.root / "reports" / CHILD
    results = (report / "results.md").read_text()
    assert f"## Against the parent, {PARENT}" in results
    assert f"- {grpo['sentence']}" in results
    assert "| shapes_test | SFT | shared | shared |" in results
    saved = (report / "parent.csv").read_text().splitlines()
    assert saved[0] == csv[0] and len(saved) == 4


def test_a_change_that_unshares_sft_plans_it_in_both_tools(family: Project) -> None:
    """The child's DAG changes shape: resolve stops DVC until dvc.yaml is regenerated, then both
    tools plan the child's own SFT and everything after it, and nothing of the parent's."""
    family.set_values(CHILD_FILE, {"sft.learning_rate": 1.0e-3})
    stale = family("dvc", "repro", "--single-item", "resolve", check=False)
    assert "vlrl dvc-yaml" in stale, stale
    family("vlrl", "dvc-yaml")
    smk_all, _ = snakemake_plan(family)
    dvc_all, _ = dvc_plan(family)
    expected = CHILD_STAGES | {
        f"sft--{CHILD}",
        f"infer--{CHILD}--sft--{BENCH}",
        f"score--{CHILD}--sft--{BENCH}",
    }
    assert smk_all == dvc_all == expected
