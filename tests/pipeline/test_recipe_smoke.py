"""Every paper recipe's smoke variant (``config/experiments/<recipe>_smoke.yaml``: the recipe at
toy scale, ``tests/workflow/test_paper_recipes.py``) runs its whole DAG on CPU, in one Snakemake
run of all of them in a throwaway git + DVC copy of the project: download (a few rows of the
recipe's data in its released layout, ``tests/recipe_fixtures.py``, copied and converted by the
real format) → data → cold-start SFT where the recipe has one → GRPO with the recipe's algorithm
and rewards (SophiaVL's thinking reward model served by the stage) → merge → infer → score →
report. Afterwards both tools have nothing left to do, and ``dvc exp show`` lists the recipes
side by side."""

from __future__ import annotations

import json

import pytest
import yaml
from recipe_fixtures import write_smoke_datasets
from scratch_project import Project

pytestmark = [pytest.mark.slow, pytest.mark.smoke]

RECIPES = [
    "vlm_r1_rec",
    "vlm_r1_rec_sft",
    "vlm_r1_ovd",
    "vlm_r1_math",
    "vision_sr1",
    "vision_sr1_cold_start",
    "vision_r1_regular",
    "vision_sr1_no_self_reward",
    "sophiavl_r1",
    "sophiavl_r1_paper",
    "satori",
    "satori_no_thinking",
]
SMOKES = [f"{recipe}_smoke" for recipe in RECIPES]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = Project(tmp_path_factory.mktemp("recipe-smoke") / "project")
    write_smoke_datasets(project.root)
    (project.root / "params.yaml").write_text(yaml.safe_dump({"experiments": SMOKES}))
    project("vlrl", "check")
    project("vlrl", "dvc-yaml")
    project("git", "add", "-A")
    project("git", "commit", "-qm", "the recipes' smoke variants")
    project.snakemake("--keep-going")
    return project


@pytest.mark.parametrize("smoke", SMOKES)
def test_the_whole_dag_ran(ran: Project, smoke: str) -> None:
    metrics = json.loads((ran.root / "results" / smoke / "metrics.json").read_text())
    checkpoint = "sft" if smoke == "vlm_r1_rec_sft_smoke" else "grpo"
    scored = metrics["smoke_test"][checkpoint]
    assert 0.0 <= scored["accuracy"] <= 1.0
    report = ran.root / "reports" / smoke
    assert (report / "index.html").is_file() and (report / "results.md").is_file()
    if checkpoint == "grpo":
        assert (report / "grpo_curves.png").is_file()
        assert (ran.root / "results" / smoke / "grpo" / "dvclive").is_dir()


@pytest.mark.parametrize("smoke", [s for s in SMOKES if s != "vlm_r1_rec_sft_smoke"])
def test_grpo_logged_each_reward_term_of_the_recipe_in_range(ran: Project, smoke: str) -> None:
    """The recipe's algorithm trained, and each of its reward terms was logged at every step
    within [0, 1] (None: no row of that step has what the reward reads)."""
    recipe = yaml.safe_load((ran.root / f"results/{smoke}/params/grpo.yaml").read_text())
    summary = json.loads((ran.root / f"results/{smoke}/grpo/train_summary.json").read_text())
    grpo = recipe["grpo"]
    assert summary["algorithm"] == grpo["algorithm"] and summary["steps"] == grpo["max_steps"]
    steps = [h for h in summary["log_history"] if "reward" in h]
    assert steps, summary["log_history"]
    for name in grpo["rewards"]:
        values = [h.get(f"rewards/{name}/mean") for h in steps]
        assert len(values) == len(steps) and any(v is not None for v in values), (name, values)
        assert all(0.0 <= v <= 1.0 for v in values if v is not None), (name, values)


def test_each_recipe_trained_on_its_own_data(ran: Project) -> None:
    for smoke, dataset in [
        ("vlm_r1_rec_smoke", "smoke_vlm_r1_rec_train"),
        ("vision_sr1_smoke", "smoke_vision_sr1_47k"),
        ("sophiavl_r1_smoke", "smoke_sophiavl_r1_130k"),
        ("satori_smoke", "smoke_vqa_verify"),
    ]:
        report = json.loads((ran.root / "results" / smoke / "data" / "report.json").read_text())
        assert report["source"] == "datasets"
        assert report["splits"]["train"]["sources"][0]["dataset"] == dataset
        assert report["splits"]["train"]["records"] > 0
    # the retrained cold start's SFT data: every conversation as LLaMA-Factory trains it
    cold = ran.root / "results" / "vision_sr1_cold_start_smoke" / "data" / "sft_train.jsonl"
    rows = [json.loads(line) for line in cold.read_text().splitlines()]
    assert all("response" in row for row in rows)
    assert any(len(row.get("turns", [])) == 4 for row in rows), "two rounds kept"
    assert any(row.get("system") for row in rows), "a system turn kept"


def test_both_tools_are_at_rest_and_dvc_lists_the_recipes(ran: Project) -> None:
    assert "Nothing to be done" in ran.snakemake("-n")
    assert "up to date" in ran("dvc", "status")
    shown = ran("dvc", "exp", "show", "--no-pager", "--csv")
    header = shown.splitlines()[0]
    for smoke in SMOKES:
        checkpoint = "sft" if smoke == "vlm_r1_rec_sft_smoke" else "grpo"
        column = f"results/{smoke}/metrics.json:smoke_test.{checkpoint}.accuracy"
        assert column in header or f"smoke_test.{checkpoint}.accuracy" in header, smoke
