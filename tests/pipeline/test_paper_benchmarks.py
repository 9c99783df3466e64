"""The experiment that lists every benchmark of the four papers' tables
(``config/experiments/qwen2.5_vl_3b_benchmarks.yaml``) is valid, and both tools plan, for each
benchmark, download → infer → score → report: its dataset fetched once, however many benchmarks
read it. Nothing runs (the model and the datasets need the hub)."""

from __future__ import annotations

import re

import pytest
import yaml
from scratch_project import Project

from vlrl.benchmarks import load_benchmark
from vlrl.config import load_experiment

pytestmark = pytest.mark.slow

EXP = "qwen2.5_vl_3b_benchmarks"


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str, str]:
    project = Project(tmp_path_factory.mktemp("paper-benchmarks") / "project")
    (project.root / "params.yaml").write_text(yaml.safe_dump({"experiments": [EXP]}))
    project("vlrl", "check")
    project("vlrl", "dvc-yaml")
    project("git", "add", "-A")
    project("git", "commit", "-qm", "the papers' benchmarks")
    # `dvc dag`, not `dvc repro --dry`, which fails on a directory dep that does not exist yet
    # (treeverse/dvc#9818)
    return project, project("dvc", "dag", "--dot"), project.snakemake("-n", "--quiet", "rules")


def test_dvc_chains_download_infer_score_report_for_each_benchmark(planned) -> None:
    _, dag, _ = planned
    for bench in load_experiment(EXP).benchmarks:
        dataset = load_benchmark(bench).dataset
        infer, score = f"infer--{EXP}--base--{bench}", f"score--{EXP}--base--{bench}"
        assert f'"download--{dataset}" -> "{infer}"' in dag, bench
        assert f'"{infer}" -> "{score}"' in dag, bench
        assert f'"{score}" -> "report--{EXP}"' in dag, bench
    assert f'"base_model--qwen2.5-vl-3b-instruct" -> "infer--{EXP}--base--mmstar"' in dag


def test_snakemake_plans_the_same_jobs(planned) -> None:
    _, _, rules = planned
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", rules, re.M)}
    benches = load_experiment(EXP).benchmarks
    datasets = {load_benchmark(b).dataset for b in benches}
    assert counts["download"] == len(datasets)
    assert counts["infer"] == counts["score"] == len(benches)
    assert counts["report"] == counts["base_model"] == 1
    assert not {"data", "sft", "grpo", "merge"} & set(counts)
