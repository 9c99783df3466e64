"""A benchmark on a downloaded dataset: download → infer → score → report, in both tools.

A temporary git + DVC copy of the project gets a dataset config naming a hub repository (served
offline from a real huggingface_hub cache seeded with shapes records, tests/hub_cache.py), a
benchmark reading its records, and an experiment that evaluates the base model on it. Both
tools plan the download first; Snakemake runs the chain for real and DVC then agrees that
nothing is left to do; after an edit of the download's code or of a value it reads, both plan the
same stages, and none after an edit of a value it does not read. (A snapshot missing offline:
tests/stages/test_download.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hub_cache import seed_cache
from plans import add_comment, assert_same_plan, edited
from scratch_project import Project

pytestmark = pytest.mark.slow

EXP, DATASET, BENCH = "hub_eval", "shapes_hub", "shapes_hub_test"
REPO_ID = "vlrl-test/shapes-records"
COMMIT = "00112233445566778899aabbccddeeff00112233"
DATASET_FILE = f"config/datasets/{DATASET}.yaml"
DOWNLOAD = f"download--{DATASET}"
INFER = f"infer--{EXP}--base--{BENCH}"


def write_yaml(path: Path, tree: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(tree, sort_keys=False))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shapes_data: Path) -> Project:
    """The project with the benchmark, after a real Snakemake run of its DAG."""
    tmp_path = tmp_path_factory.mktemp("hub-benchmark")
    project = Project(tmp_path / "project")
    cache = tmp_path / "hf-cache"
    seed_cache(cache, REPO_ID, COMMIT, shapes_data, repo_type="dataset")
    project.env["HF_HUB_CACHE"] = str(cache)
    root = project.root
    write_yaml(
        root / DATASET_FILE,
        {
            "description": "Shapes records published as a hub dataset (a test fixture).",
            "repo_id": REPO_ID,
            "revision": COMMIT,
            "allow_patterns": ["test.jsonl", "images/test/*"],
        },
    )
    write_yaml(
        root / "config" / "benchmarks" / f"{BENCH}.yaml",
        {"loader": "records", "dataset": DATASET, "file": "test.jsonl", "max_items": 8},
    )
    write_yaml(
        root / "config" / "experiments" / f"{EXP}.yaml",
        {
            "description": "The base model on a downloaded benchmark.",
            "cpu_threads": 1,
            "base_model": "tiny-qwen2.5-vl",
            "sft": {"enabled": False},
            "grpo": {"enabled": False},
            "infer": {"checkpoints": ["base"], "batch_size": 8, "max_new_tokens": 16},
            "benchmarks": [BENCH],
        },
    )
    write_yaml(root / "params.yaml", {"experiments": [EXP]})
    project("vlrl", "check")
    project("vlrl", "dvc-yaml")
    project("git", "add", "-A")
    project("git", "commit", "-qm", "a benchmark on a downloaded dataset")
    project.dag = project("dvc", "dag", "--dot")
    project.planned = project.snakemake("-n", "--quiet", "rules")
    project.snakemake()
    return project


def test_both_tools_plan_the_download_first(built: Project) -> None:
    # `dvc dag`, not `dvc repro --dry`, which fails on a directory dep that does not exist yet
    # (treeverse/dvc#9818; the default pipeline's fresh clone too)
    assert f'"{DOWNLOAD}" -> "{INFER}"' in built.dag, built.dag
    assert f'"{INFER}" -> "score--{EXP}--base--{BENCH}"' in built.dag, built.dag
    assert not any(f'"{stage}--' in built.dag for stage in ("data", "sft", "grpo", "merge"))
    jobs = set(built.planned.split())
    assert {"download", "base_model", "infer", "score", "report"} <= jobs, built.planned
    assert not {"data", "sft", "grpo", "merge"} & jobs, built.planned


def test_the_chain_ran_and_dvc_agrees(built: Project) -> None:
    root = built.root
    manifest = root / "resources" / "datasets" / DATASET / "vlrl_dataset.json"
    assert json.loads(manifest.read_text())["commit"] == COMMIT
    assert (root / "results" / EXP / "scores" / "base" / f"{BENCH}.json").is_file()
    assert (root / "reports" / EXP).is_dir()
    assert "up to date" in built("dvc", "status")
    assert "Nothing to be done" in built.snakemake("-n")


def _set_patterns(text: str) -> str:
    tree = yaml.safe_load(text)
    tree["allow_patterns"] = ["*.jsonl", "images/test/*"]
    return yaml.safe_dump(tree, sort_keys=False)


def _set_description(text: str) -> str:
    return text.replace("(a test fixture)", "(a fixture of the tests)")


@pytest.mark.parametrize(
    ("file", "change", "expected"),
    [
        ("workflow_scripts/vlrl/stages/download.py", add_comment, {DOWNLOAD}),
        (DATASET_FILE, _set_patterns, {DOWNLOAD}),
        (DATASET_FILE, _set_description, set()),  # not a key the stage reads
    ],
    ids=["code", "allow_patterns", "description"],
)
def test_an_edit_plans_the_same_stages_in_both_tools(built, file, change, expected) -> None:
    with edited(built, file, change):
        assert_same_plan(built, expected)
