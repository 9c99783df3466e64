"""The report stage: scores of base, SFT and SFT+GRPO on synthetic predictions, scored by the real
score stage; every number in the report is recomputed here from the scores files' items."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy.stats import binomtest

from vlrl import paths
from vlrl.config import load_experiment
from vlrl.errors import StageError
from vlrl.scoring.stats import paired_difference, proportion_ci
from vlrl.stages import report, score

REPO = Path(__file__).resolve().parents[2]
EXP = "tiny_shapes"
TASKS = {  # task → (problem_type, answer, right response, wrong response)
    "color": ("multiple_choice", "B", "<answer>B</answer>", "<answer>A</answer>"),
    "count": ("numerical", "3", "<think>1 2 3</think><answer>3</answer>", "<answer>2</answer>"),
    "caption": ("free_form", "a red circle", "<answer>a red circle</answer>", "<answer>a</answer>"),
}
SKILL = {"base": 0.3, "sft": 0.55, "grpo": 0.7}  # chance of a right answer


def write_predictions(checkpoint: str, bench: str, n: int = 90, seed: int = 0) -> None:
    rng = np.random.default_rng([seed, list(SKILL).index(checkpoint)])
    rows = []
    for i in range(n):
        task = list(TASKS)[i % len(TASKS)]
        ptype, answer, right, wrong = TASKS[task]
        rows.append(
            {
                "id": f"{bench}-{i:03d}",
                "task": task,
                "problem_type": ptype,
                "problem": f"question {i}",
                "answer": answer,
                "options": ["red", "blue"] if ptype == "multiple_choice" else [],
                "boxes": [],
                "images": [f"images/test/{i}.png"],
                "prompt": f"question {i}",
                "response": right if rng.random() < SKILL[checkpoint] else wrong,
                "model": f"results/{EXP}/{checkpoint}",
                "checkpoint": checkpoint,
            }
        )
    path = paths.predictions_file(EXP, checkpoint, bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def project(project):
    """The shared scratch project, with a second benchmark."""
    shutil.copy(
        project / "config/benchmarks/shapes_test.yaml", project / "config/benchmarks/other.yaml"
    )
    return project


def scored(overrides: list[str], benches=("shapes_test",)):
    cfg = load_experiment(EXP, [f"benchmarks=[{', '.join(benches)}]", *overrides])
    for bench in benches:
        for checkpoint in cfg.checkpoints:
            write_predictions(checkpoint, bench)
            score.run(EXP, cfg, checkpoint, bench)
    return cfg


def items_of(checkpoint: str, bench: str) -> list[dict]:
    return json.loads(paths.scores_file(EXP, checkpoint, bench).read_text())["items"]


def test_report_numbers_equal_recomputation_from_items(project):
    benches = ("shapes_test", "other")
    cfg = scored([], benches)
    report.run(EXP, cfg)
    out = paths.report_dir(EXP)
    assert sorted(p.name for p in out.iterdir()) == [
        "accuracy.png", "comparisons.csv", "comparisons.md", "index.html", "results.csv",
        "results.md",
    ]  # fmt: skip

    results = pd.read_csv(out / "results.csv")
    assert len(results) == 6
    assert list(results.columns[:7]) == [
        "benchmark", "checkpoint", "model", "n", "accuracy", "ci_low", "ci_high",
    ]  # fmt: skip
    metrics = json.loads(paths.metrics_file(EXP).read_text())
    assert sorted(metrics) == sorted(benches)
    for bench in benches:
        got = results[results.benchmark == bench]
        assert list(got.checkpoint) == ["base", "sft", "grpo"]
        assert list(got.model) == ["base", "SFT", "SFT+GRPO"]
        for checkpoint in ["base", "sft", "grpo"]:
            items = items_of(checkpoint, bench)
            row = got[got.checkpoint == checkpoint].iloc[0]
            correct = [i["correct"] for i in items]
            low, high = proportion_ci(sum(correct), len(correct), cfg.score.confidence)
            assert row["n"] == len(items)
            assert row["accuracy"] == pytest.approx(np.mean(correct))
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
            m = metrics[bench][checkpoint]
            assert (m["accuracy"], m["ci_low"], m["ci_high"]) == pytest.approx(
                (np.mean(correct), low, high)
            )
            for task in TASKS:
                task_correct = [i["correct"] for i in items if i["task"] == task]
                t_low, t_high = proportion_ci(sum(task_correct), len(task_correct))
                assert row[f"{task}.n"] == len(task_correct)
                assert row[f"{task}.accuracy"] == pytest.approx(np.mean(task_correct))
                assert (row[f"{task}.ci_low"], row[f"{task}.ci_high"]) == pytest.approx(
                    (t_low, t_high)
                )
                assert m[task] == pytest.approx(np.mean(task_correct))

    comparisons = pd.read_csv(out / "comparisons.csv")
    assert list(comparisons.comparison[comparisons.benchmark == "shapes_test"]) == [
        "SFT − base",
        "SFT+GRPO − SFT",
        "SFT+GRPO − base",
    ]
    for _, row in comparisons.iterrows():
        a = {i["id"]: i["correct"] for i in items_of(row["a"], row["benchmark"])}
        b = {i["id"]: i["correct"] for i in items_of(row["b"], row["benchmark"])}
        d = np.array([a[k] - b[k] for k in sorted(a)])
        a_only, b_only = int((d > 0).sum()), int((d < 0).sum())
        assert row["diff"] == pytest.approx(d.mean())
        assert (row["a_only"], row["b_only"]) == (a_only, b_only)
        assert row["discordant_fraction"] == pytest.approx((a_only + b_only) / len(d))
        assert row["p_mcnemar"] == pytest.approx(binomtest(a_only, a_only + b_only).pvalue)
        again = paired_difference(
            np.array([a[k] for k in sorted(a)]),
            np.array([b[k] for k in sorted(a)]),
            cfg.score.confidence,
            cfg.score.bootstrap_resamples,
            cfg.seed,
        )
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((again["ci_low"], again["ci_high"]))
        assert row["ci_low"] <= row["diff"] <= row["ci_high"]

    md = (out / "results.md").read_text()
    base = results.iloc[0]
    shown = f"{100 * base.accuracy:.1f} [{100 * base.ci_low:.1f}, {100 * base.ci_high:.1f}]"
    assert shown in md and "## other" in md and "| SFT+GRPO |" in md
    assert "rules only" in md
    html = (out / "index.html").read_text()
    assert "data:image/png;base64," in html and shown in html and "SFT+GRPO − base" in html
    with Image.open(out / "accuracy.png") as png:
        assert png.format == "PNG" and png.width >= 600 and png.height >= 600  # two panels


def test_sft_disabled_means_grpo_label_and_no_sft_file_needed(project):
    cfg = scored(["sft.enabled=false"])
    assert cfg.checkpoints == ["base", "grpo"]
    report.run(EXP, cfg)
    results = pd.read_csv(paths.report_dir(EXP) / "results.csv")
    assert list(results.model) == ["base", "GRPO"]
    comparisons = pd.read_csv(paths.report_dir(EXP) / "comparisons.csv")
    assert list(comparisons.comparison) == ["GRPO − base"]
    assert set(json.loads(paths.metrics_file(EXP).read_text())["shapes_test"]) == {"base", "grpo"}


def test_missing_scores_file_is_named(project):
    cfg = scored([])
    paths.scores_file(EXP, "sft", "shapes_test").unlink()
    with pytest.raises(StageError, match=r"scores/sft/shapes_test\.json does not exist"):
        report.run(EXP, cfg)
    assert not paths.report_dir(EXP).exists()


def test_different_items_cannot_be_paired(project):
    cfg = scored([])
    path = paths.scores_file(EXP, "grpo", "shapes_test")
    data = json.loads(path.read_text())
    data["items"][0]["id"] = "someone-else"
    path.write_text(json.dumps(data))
    with pytest.raises(StageError, match=r"score different items .*someone-else"):
        report.run(EXP, cfg)


def test_rerun_replaces_the_report(project):
    cfg = scored([])
    report.run(EXP, cfg)
    (paths.report_dir(EXP) / "stale.txt").write_text("old")
    report.run(EXP, cfg)
    assert not (paths.report_dir(EXP) / "stale.txt").exists()
    assert not list(paths.report_dir(EXP).parent.glob("*.tmp-*"))


def test_a_single_checkpoint_has_no_comparisons(project):
    cfg = scored(["infer.checkpoints=[base]"])
    report.run(EXP, cfg)
    out = paths.report_dir(EXP)
    assert list(pd.read_csv(out / "results.csv").model) == ["base"]
    assert "No comparisons" in (out / "comparisons.md").read_text()
    assert "No comparisons" in (out / "index.html").read_text()
    assert json.loads(paths.metrics_file(EXP).read_text())["shapes_test"].keys() == {"base"}


def test_the_judge_is_named_with_its_failures(project):
    cfg = scored([])
    path = paths.scores_file(EXP, "grpo", "shapes_test")
    data = json.loads(path.read_text())
    data["judge"] = dict(
        model="judge-m", base_url="http://h/v1", mode="fallback", prompt_version="verifier-v1",
        calls=9, failures=2, cache_hits=1,
    )  # fmt: skip
    path.write_text(json.dumps(data))
    report.run(EXP, cfg)
    md = (paths.report_dir(EXP) / "results.md").read_text()
    assert "SFT+GRPO on shapes_test: rules + judge `judge-m` at http://h/v1 (mode fallback" in md
    assert "9 calls, 1 cached, 2 failures scored 0" in md
    assert "base on shapes_test: rules only" in md
