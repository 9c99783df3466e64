"""The embedded default, end to end, as a user runs it: `dvc repro` in a fresh git + DVC copy
(`make reproduce`).

This is the learning-signal test: at a fixed seed, SFT must beat the base model and SFT+GRPO
must beat SFT on the held-out shapes benchmark, each by more than the paired 95% confidence
interval (the interval of the difference excludes zero), and RL must add at least 5 points (the
default's SFT imitates an imperfect teacher; GRPO's reward checks the truth). The default pins
one CPU thread per process, so this run gives the numbers `make run` gives
(docs/tiny_shapes.md). A second `dvc repro` must then be a quick no-op.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
from scratch_project import Project

# `make reproduce` runs this module, `make test` does not: the whole default costs about 450 CPU
# seconds (5 min on 2 cores), and run beside the suite it slows both. The suite's own end-to-end
# runs are shrunk copies of the default (tests/pipeline/test_invalidation.py runs every stage
# with `dvc repro`). CI runs both.
pytestmark = [pytest.mark.slow, pytest.mark.reproduction]

EXP, BENCH = "tiny_shapes", "shapes_test"


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str, float]:
    project = Project(tmp_path_factory.mktemp("tiny_shapes"))
    start = time.perf_counter()
    log = project("dvc", "repro")
    return project, log, time.perf_counter() - start


def test_every_stage_ran(reproduced) -> None:
    project, log, seconds = reproduced
    print(f"dvc repro of the default experiment: {seconds:.0f}s")
    for stage in ("data", "base_model", "sft", "grpo", "merge", "infer", "score", "report"):
        assert f"Running stage '{stage}--" in log, stage
    report = project.root / "reports" / EXP
    for name in ("results.md", "results.csv", "comparisons.md", "accuracy.png", "index.html"):
        assert (report / name).is_file(), name


def test_reproduces_the_committed_lock_and_metrics(reproduced) -> None:
    """A fresh copy in another directory reproduces the committed dvc.lock (every output hash),
    results/<exp>/params.yaml and metrics.json byte for byte: `git status` stays clean, and
    Snakemake then has nothing to do either."""
    project = reproduced[0]
    changed = project("git", "status", "--porcelain", "--untracked-files=no")
    assert changed == "", f"dvc repro changed committed files:\n{changed}\n" + project(
        "git", "diff", "--stat"
    )
    assert "Nothing to be done" in project.snakemake("-n")


def paired(project: Project, better: str, worse: str):
    comparisons = pd.read_csv(project.root / "reports" / EXP / "comparisons.csv")
    print(comparisons.to_string())
    rows = comparisons[(comparisons.benchmark == BENCH) & (comparisons.a == better)]
    return rows[rows.b == worse].iloc[0]


def test_sft_beats_base(reproduced) -> None:
    row = paired(reproduced[0], "sft", "base")
    assert row.ci_low > 0, f"SFT - base: {row['diff']:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}]"


def test_grpo_beats_sft_by_five_points(reproduced) -> None:
    row = paired(reproduced[0], "grpo", "sft")
    said = f"GRPO - SFT: {row['diff']:+.3f} [{row.ci_low:+.3f}, {row.ci_high:+.3f}]"
    assert row.ci_low > 0 and row["diff"] >= 0.05, said


def test_the_readme_shows_the_reproduced_reward_curve(reproduced) -> None:
    """docs/tiny_shapes_reward_curve.png (the README's figure) is the report's, byte for byte."""
    project = reproduced[0]
    shown = Path(__file__).resolve().parents[2] / "docs" / "tiny_shapes_reward_curve.png"
    assert shown.read_bytes() == (project.root / "reports" / EXP / "reward_curve.png").read_bytes()


def test_metrics_for_dvc_exp_show(reproduced) -> None:
    project, _, _ = reproduced
    metrics = json.loads((project.root / "results" / EXP / "metrics.json").read_text())
    assert set(metrics[BENCH]) == {"base", "sft", "grpo"}
    shown = project("dvc", "metrics", "show", "--json")
    assert "accuracy" in shown


def test_training_curves_for_dvc_plots(reproduced) -> None:
    project, _, _ = reproduced
    curves = project.root / "results" / EXP / "grpo" / "dvclive" / "plots" / "metrics"
    names = {p.relative_to(curves).as_posix() for p in curves.rglob("*.tsv")}
    for needed in ("reward.tsv", "kl.tsv", "completions/mean_length.tsv"):
        assert needed in names, sorted(names)
    assert "rewards/common.accuracy/mean.tsv" in names, sorted(names)
    assert "reward" in project("dvc", "plots", "show", "--json")


def test_second_repro_is_a_quick_noop(reproduced) -> None:
    # What it costs is a benchmark's business (docs/performance.md), not a timed assertion: on
    # a CI machine shared with the other xdist worker it took 11 s once.
    project, _, _ = reproduced
    start = time.perf_counter()
    log = project("dvc", "repro")
    print(f"second dvc repro: {time.perf_counter() - start:.1f}s")
    assert "Running stage" not in log, log


def test_dvc_experiment_compares_a_variant(reproduced) -> None:
    """`dvc exp run -S` reruns only the stages that read the changed section; `dvc exp show`
    lists the variant's params and metrics beside the workspace's."""
    project, _, _ = reproduced
    project("git", "add", "-A")
    # Empty when the run reproduced every committed file (test above); dvc exp needs a commit.
    project("git", "commit", "-qm", "reproduced", "--allow-empty")
    # A scoring setting: cheap to rerun (inference on the large test split is not).
    param = f"config/experiments/{EXP}.yaml:score.confidence"
    log = project("dvc", "exp", "run", "-n", "ci90", "-S", f"{param}=0.9")
    assert "Running stage 'score--" in log
    for untouched in ("data--", "sft--", "grpo--", "infer--"):
        assert f"Running stage '{untouched}" not in log, untouched
    shown = json.loads(project("dvc", "exp", "show", "--json"))
    text = json.dumps(shown)
    assert "ci90" in text and "confidence" in text and "accuracy" in text
