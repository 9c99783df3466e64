"""The report stage: scores of base, SFT and SFT+GRPO on synthetic predictions, scored by the real
score stage; every number in the report is recomputed here from the scores files' items."""

from __future__ import annotations

import json
import re
import shutil
from base64 import b64encode
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from independent_stats import scipy_paired_bootstrap, scipy_wilson
from PIL import Image
from scipy.stats import binomtest

from vlrl.config import load_experiment
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import report, score
from vlrl.workflow import resolve, stage_deps
from vlrl.workflow.reads import RecordingConfig, undeclared

REPO = Path(__file__).resolve().parents[2]
EXP = "tiny_shapes"
TASKS = {  # task → (problem_type, answer, right response, wrong response)
    "color": ("multiple_choice", "B", "<answer>B</answer>", "<answer>A</answer>"),
    "count": ("numerical", "3", "<think>1 2 3</think><answer>3</answer>", "<answer>2</answer>"),
    "caption": ("free_form", "a red circle", "<answer>a red circle</answer>", "<answer>a</answer>"),
}
SKILL = {"base": 0.3, "sft": 0.55, "grpo": 0.7}  # chance of a right answer
OUTPUTS = [
    "accuracy.png", "comparisons.csv", "comparisons.md", "index.html", "published.csv",
    "results.csv", "results.md",
]  # fmt: skip


def write_predictions(
    checkpoint: str, bench: str, n: int = 90, seed: int = 0, exp: str = EXP, items_of: str = ""
) -> None:
    """Synthetic predictions of ``checkpoint`` (right with its SKILL); ``items_of``: the items
    of another benchmark (ids included), as a blank_images_of benchmark asks them."""
    rng = np.random.default_rng([seed, list(SKILL).index(checkpoint)])
    rows = []
    for i in range(n):
        task = list(TASKS)[i % len(TASKS)]
        ptype, answer, right, wrong = TASKS[task]
        rows.append(
            {
                "id": f"{items_of or bench}-{i:03d}",
                "task": task,
                "problem_type": ptype,
                "problem": f"question {i}",
                "answer": answer,
                "options": ["red", "blue"] if ptype == "multiple_choice" else [],
                "boxes": [],
                "images": [f"images/test/{i}.png"],
                "prompt": f"question {i}",
                "response": right if rng.random() < SKILL[checkpoint] else wrong,
                "model": f"results/{exp}/{checkpoint}",
                "checkpoint": checkpoint,
            }
        )
    path = paths.predictions_file(exp, checkpoint, bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_images(n: int = 90) -> None:
    folder = paths.data_dir(EXP) / "images" / "test"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.new("RGB", (56, 56), (i, 100, 200)).save(folder / f"{i}.png")


@pytest.fixture
def project(project):
    """The shared scratch project, with a second benchmark and the pinned environments (the
    provenance reads them)."""
    shutil.copy(
        project / "config/benchmarks/shapes_test.yaml", project / "config/benchmarks/other.yaml"
    )
    shutil.copytree(REPO / "envs", project / "envs")
    return project


def scored(overrides: list[str], benches=("shapes_test",)):
    cfg = load_experiment(EXP, [f"benchmarks=[{', '.join(benches)}]", *overrides])
    resolve.ensure("base_model", cfg.base_model)  # the provenance reads it (resolve writes it)
    for bench in benches:
        for checkpoint in cfg.checkpoints:
            write_predictions(checkpoint, bench)
            score.run(EXP, cfg, checkpoint, bench)
    return cfg


def run_report(cfg) -> None:
    """The report stage, given its code files as `vlrl report` gives them (vlrl.cli)."""
    root = stage_deps.source_root().parent
    report.run(EXP, cfg, stage_deps.code_files("report", root), root)


def items_of(checkpoint: str, bench: str) -> list[dict]:
    return json.loads(paths.scores_file(EXP, checkpoint, bench).read_text())["items"]


def edit_scores(checkpoint: str, bench: str, change) -> None:
    path = paths.scores_file(EXP, checkpoint, bench)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def expected_metrics_json(cfg, benches) -> str:
    """metrics.json as the report has always written it, computed here from the items."""
    tree = {}
    for bench in benches:
        tasks = sorted({i["task"] for c in cfg.checkpoints for i in items_of(c, bench)})
        for checkpoint in cfg.checkpoints:
            items = [i for i in items_of(checkpoint, bench) if i["correct"] is not None]
            correct = [i["correct"] for i in items]
            low, high = scipy_wilson(sum(correct), len(correct), cfg.score.confidence)
            entry = {"accuracy": sum(correct) / len(correct), "ci_low": low, "ci_high": high}
            for task in tasks:
                task_correct = [i["correct"] for i in items if i["task"] == task]
                if task_correct:
                    entry[task] = sum(task_correct) / len(task_correct)
            tree.setdefault(bench, {})[checkpoint] = entry
    return json.dumps(tree, indent=2) + "\n"


def test_report_numbers_equal_recomputation_from_items(project):
    benches = ("shapes_test", "other")
    cfg = scored(["report.gallery.n=0"], benches)
    # Every interval below is the 95 % one, computed by scipy (not vlrl.scoring.stats) and
    # checked to 1e-9; each test of one also asserts that the 90 % interval misses it by far.
    assert cfg.score.confidence == 0.95
    level, tol, wrong_level = cfg.score.confidence, 1e-9, 0.9
    run_report(cfg)
    out = paths.report_dir(EXP)
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS

    results = pd.read_csv(out / "results.csv")
    assert len(results) == 6
    assert list(results.columns[:7]) == [
        "benchmark", "checkpoint", "model", "n", "accuracy", "ci_low", "ci_high",
    ]  # fmt: skip
    assert paths.metrics_file(EXP).read_text() == expected_metrics_json(cfg, benches)
    for bench in benches:
        got = results[results.benchmark == bench]
        assert list(got.checkpoint) == ["base", "sft", "grpo"]
        assert list(got.model) == ["base", "SFT", "SFT+GRPO"]
        for checkpoint in ["base", "sft", "grpo"]:
            items = items_of(checkpoint, bench)
            row = got[got.checkpoint == checkpoint].iloc[0]
            correct = [i["correct"] for i in items]
            low, high = scipy_wilson(sum(correct), len(correct), level)
            assert row["n"] == len(items) and row["unscored"] == 0
            assert row["accuracy"] == pytest.approx(np.mean(correct))
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=tol)
            w_low, w_high = scipy_wilson(sum(correct), len(correct), wrong_level)
            assert min(abs(w_low - low), abs(w_high - high)) > 1e-3  # the test's own power
            for task in TASKS:
                task_correct = [i["correct"] for i in items if i["task"] == task]
                t_low, t_high = scipy_wilson(sum(task_correct), len(task_correct), level)
                assert row[f"{task}.n"] == len(task_correct)
                assert row[f"{task}.accuracy"] == pytest.approx(np.mean(task_correct))
                assert (row[f"{task}.ci_low"], row[f"{task}.ci_high"]) == pytest.approx(
                    (t_low, t_high), abs=tol
                )

    comparisons = pd.read_csv(out / "comparisons.csv")
    comparisons_md = (out / "comparisons.md").read_text()
    assert "| 95% CI (paired bootstrap) |" in comparisons_md
    assert "(2000 resamples, seed 0)" in comparisons_md
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
        paired = ([a[k] for k in sorted(a)], [b[k] for k in sorted(a)])
        resampling = (cfg.score.bootstrap_resamples, cfg.seed)
        assert resampling == (2000, 0)  # the defaults the rendered legend states
        low, high = scipy_paired_bootstrap(*paired, level, *resampling)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=tol)
        w_low, w_high = scipy_paired_bootstrap(*paired, wrong_level, *resampling)
        assert min(abs(w_low - low), abs(w_high - high)) > 1e-3  # the test's own power
        assert row["ci_low"] <= row["diff"] <= row["ci_high"]
        assert row["excluded"] == 0
        # The rendered page shows that interval under the level's name (fmt.signed_interval).
        line = next(x for x in comparisons_md.splitlines() if f"| {row['comparison']} |" in x)
        assert f"| [{100 * low:+.1f}, {100 * high:+.1f}] |" in line, line

    md = (out / "results.md").read_text()
    html = (out / "index.html").read_text()
    top = md.split("## Summary")[0]
    assert top.startswith(f"# {EXP}\n\n{cfg.description}\n\n**RL "), "the story comes first"
    for bench in benches:
        cells = {  # comparisons.md's rows of the bench, by comparison: its cells
            line.split(" | ")[1]: line.split(" | ")
            for line in comparisons_md.splitlines()
            if line.startswith(f"| {bench} | ")
        }
        _, _, n, _, accuracies, diff, ci, p, *_ = cells["SFT+GRPO − SFT"]
        _, _, _, _, _, sft_diff, sft_ci, *_ = cells["SFT − base"]
        acc_a, acc_b = accuracies.split(" vs ")
        rl = (
            f" on {bench} (SFT+GRPO {acc_a}% vs SFT {acc_b}%, paired 95% interval {ci}, McNemar "
            f"p {'' if p.startswith('<') else '= '}{p}, n = {n});"
        )
        [line] = [x for x in top.splitlines() if rl in x]
        row = comparisons.set_index(["benchmark", "comparison"]).loc[(bench, "SFT+GRPO − SFT")]
        assert row["ci_low"] > 0, "the draw: GRPO (0.7) beats SFT (0.55) beyond doubt"
        assert line.startswith(f"**RL added {diff} points**{rl}")
        assert f" SFT added {sft_diff} points over base {sft_ci}." in line
        assert f"<b>RL added {diff} points</b>{rl.replace('<', '&lt;')}" in html
    assert top.count("**RL added") == 2, "one line per benchmark"
    base = [i["correct"] for i in items_of("base", "shapes_test")]
    b_low, b_high = scipy_wilson(sum(base), len(base), level)
    shown = f"{100 * np.mean(base):.1f} [{100 * b_low:.1f}, {100 * b_high:.1f}]"
    assert shown in md and "## other" in md and "| SFT+GRPO |" in md
    assert "| model | accuracy (headline) | n | unscored |" in md, "the headline leads"
    assert "base on shapes_test, protocol `vlrl`: rules only" in md
    assert "data:image/png;base64," in html and shown in html and "SFT+GRPO − base" in html
    assert 'id="gallery"' not in html and 'id="curves"' not in html  # n=0; curves: none logged
    assert "reward_curve.png" not in md and 'alt="GRPO training reward"' not in html
    with Image.open(out / "accuracy.png") as png:
        assert png.format == "PNG" and png.width >= 600 and png.height >= 600  # two panels


def test_p_values_print_as_numbers_never_zero(project):
    cfg = scored(["report.gallery.n=0"])
    run_report(cfg)
    comparisons = pd.read_csv(paths.report_dir(EXP) / "comparisons.csv")
    md = (paths.report_dir(EXP) / "comparisons.md").read_text()
    for p in comparisons.p_mcnemar:
        assert ("< 0.001" if p < 0.001 else f"| {p:.3f} |") in md
    assert "| 0.000 |" not in md and "e-" not in md


def test_unscored_items_are_left_out_and_counted(project):
    cfg = scored(["report.gallery.n=0"])
    unscored = {"shapes_test-000", "shapes_test-004", "shapes_test-010"}

    def judge_failed(data):
        for item in data["items"]:
            if item["id"] in unscored:
                item.update(correct=None, score=None, method="judge", judge_error="timeout")
        data["unscored"] = len(unscored)
        data["judge"] = dict(
            model="judge-m", base_url="http://h/v1", mode="always", prompt_version="verifier-v1",
            on_failure="unscored", calls=9, failures=3, cache_hits=1,
        )  # fmt: skip

    edit_scores("grpo", "shapes_test", judge_failed)
    run_report(cfg)
    out = paths.report_dir(EXP)
    results = pd.read_csv(out / "results.csv").set_index("checkpoint")
    kept = [i["correct"] for i in items_of("grpo", "shapes_test") if i["id"] not in unscored]
    assert results.loc["grpo", "n"] == len(kept) == 87
    assert results.loc["grpo", "unscored"] == 3
    assert results.loc["grpo", "accuracy"] == pytest.approx(np.mean(kept))
    assert results.loc["grpo", "judge"] == "judge-m (prompt verifier-v1)"
    assert pd.isna(results.loc["base", "judge"])

    comparisons = pd.read_csv(out / "comparisons.csv").set_index("comparison")
    grpo_sft = comparisons.loc["SFT+GRPO − SFT"]
    assert (grpo_sft["n"], grpo_sft["excluded"], grpo_sft["unscored_a"]) == (87, 3, 3)
    assert comparisons.loc["SFT − base", "n"] == 90
    sft = {i["id"]: i["correct"] for i in items_of("sft", "shapes_test")}
    grpo = {i["id"]: i["correct"] for i in items_of("grpo", "shapes_test")}
    d = [grpo[k] - sft[k] for k in sorted(sft) if k not in unscored]
    assert grpo_sft["diff"] == pytest.approx(np.mean(d))

    md = (out / "results.md").read_text()
    judged_row = next(line for line in md.splitlines() if line.startswith("| SFT+GRPO |"))
    assert "rules + judge judge-m (prompt verifier-v1)" in judged_row
    assert "| 87 | 3 |" in judged_row
    assert "rules + judge judge-m (prompt verifier-v1)" in (out / "comparisons.md").read_text()
    assert (
        "SFT+GRPO on shapes_test, protocol `vlrl`: rules + judge `judge-m` at http://h/v1 (mode "
        "always, prompt "
        "verifier-v1): 9 calls, 1 cached, 3 failures (left unscored), 3 items unscored"
    ) in md
    assert "base on shapes_test, protocol `vlrl`: rules only" in md


def test_the_headline_metric_leads_its_table(project):
    bench_file = project / "config/benchmarks/other.yaml"
    bench_file.write_text(
        bench_file.read_text() + "metrics:\n  - {name: task_mean, kind: macro_mean}\n"
        "headline: task_mean\n"
    )
    cfg = scored(["report.gallery.n=0"], ("other",))
    run_report(cfg)
    md = (paths.report_dir(EXP) / "results.md").read_text()
    assert "| model | task_mean (headline) | accuracy | n |" in md
    grpo = [i for i in items_of("grpo", "other")]
    means = [np.mean([i["correct"] for i in grpo if i["task"] == t]) for t in TASKS]
    row = next(line for line in md.splitlines() if line.startswith("| SFT+GRPO |"))
    assert row.startswith(f"| SFT+GRPO | {100 * np.mean(means):.1f} |"), "no interval: a mean"
    metrics = json.loads(paths.metrics_file(EXP).read_text())
    assert metrics["other"]["grpo"]["task_mean"] == pytest.approx(np.mean(means))


def test_sft_disabled_means_grpo_label_and_no_sft_file_needed(project):
    cfg = scored(["sft.enabled=false", "report.gallery.n=0"])
    assert cfg.checkpoints == ["base", "grpo"]
    run_report(cfg)
    results = pd.read_csv(paths.report_dir(EXP) / "results.csv")
    assert list(results.model) == ["base", "GRPO"]
    comparisons = pd.read_csv(paths.report_dir(EXP) / "comparisons.csv")
    assert list(comparisons.comparison) == ["GRPO − base"]
    md = (paths.report_dir(EXP) / "results.md").read_text()
    [lead] = [x for x in md.split("## Summary")[0].splitlines() if x.startswith("**")]
    assert lead.startswith("**RL ") and " on shapes_test (GRPO " in lead and "SFT" not in lead
    assert set(json.loads(paths.metrics_file(EXP).read_text())["shapes_test"]) == {"base", "grpo"}


def test_missing_scores_file_is_named(project):
    cfg = scored([])
    paths.scores_file(EXP, "sft", "shapes_test").unlink()
    with pytest.raises(StageError, match=r"scores/sft/shapes_test\.json does not exist"):
        run_report(cfg)
    assert not paths.report_dir(EXP).exists()


def test_different_items_cannot_be_paired(project):
    cfg = scored(["report.gallery.n=0"])
    edit_scores("grpo", "shapes_test", lambda d: d["items"][0].update(id="someone-else"))
    with pytest.raises(StageError, match=r"score different items .*someone-else"):
        run_report(cfg)


def test_rerun_replaces_the_report(project):
    cfg = scored(["report.gallery.n=0"])
    run_report(cfg)
    (paths.report_dir(EXP) / "stale.txt").write_text("old")
    run_report(cfg)
    assert not (paths.report_dir(EXP) / "stale.txt").exists()
    assert not list(paths.report_dir(EXP).parent.glob("*.tmp-*"))


def test_a_single_checkpoint_has_no_comparisons(project):
    cfg = scored(["infer.checkpoints=[base]", "report.gallery.n=0"])
    run_report(cfg)
    out = paths.report_dir(EXP)
    assert list(pd.read_csv(out / "results.csv").model) == ["base"]
    assert "No comparisons" in (out / "comparisons.md").read_text()
    assert "No comparisons" in (out / "index.html").read_text()
    assert "**" not in (out / "results.md").read_text(), "nothing compared: no lead line"
    assert 'class="lead"' not in (out / "index.html").read_text()
    assert json.loads(paths.metrics_file(EXP).read_text())["shapes_test"].keys() == {"base"}


REFERENCE = """\
paper: {title: A Paper, arxiv: "2501.00001", url: "https://arxiv.org/abs/2501.00001"}
protocol: {toolkit: VLMEvalKit, prompt: R1 system prompt, judge: not stated, scoring: vlrl}
columns:
  Shapes: {benchmark: shapes_test, scale: percent, differs: another split}
  Other: {benchmark: null, scale: percent}
rows:
  - {id: base_row, model: Base-7B, source: {table: Table 1, row: Base-7B},
     values: {Shapes: 31.25, Other: 56.51}}
  - {id: rl_row, model: RL-7B, source: {table: Table 2, row: RL-7B},
     protocol: {toolkit: own script, prompt: think, judge: gpt-4o-mini},
     values: {Shapes: 99.0, Other: null}}
"""


def test_published_numbers_stand_beside_reproduced_ones(project):
    (project / "config/reference").mkdir(exist_ok=True)
    (project / "config/reference/a_paper.yaml").write_text(REFERENCE)
    cfg = scored(
        [
            "report.gallery.n=0",
            "report.published=[{reference: a_paper, rows: {base: base_row, grpo: rl_row}}]",
        ]
    )
    run_report(cfg)
    out = paths.report_dir(EXP)
    published = pd.read_csv(out / "published.csv")
    results = pd.read_csv(out / "results.csv").set_index("checkpoint")
    base = published[(published.checkpoint == "base") & published.evaluated].iloc[0]
    assert base["published"] == pytest.approx(0.3125)
    assert base["reproduced"] == pytest.approx(results.loc["base", "accuracy"])
    assert base["delta"] == pytest.approx(results.loc["base", "accuracy"] - 0.3125)
    low, high = results.loc["base", "ci_low"], results.loc["base", "ci_high"]
    assert bool(base["inside_interval"]) == (low <= 0.3125 <= high)
    rl = published[published.checkpoint == "grpo"].iloc[0]
    assert not rl["inside_interval"] and rl["judge"] == "gpt-4o-mini"
    assert list(published.evaluated) == [True, True, False], "LISA-like column kept, last"

    md = (out / "results.md").read_text()
    delta = f"{100 * (results.loc['base', 'accuracy'] - 0.3125):+.1f}"
    assert "| shapes_test | accuracy | base |" in md and f"| 31.25 | {delta} |" in md
    assert 'A Paper (arXiv 2501.00001), Table 1, row "Base-7B"' in md
    assert "toolkit: VLMEvalKit; prompt: R1 system prompt; judge: not stated" in md
    assert "| Other | none in vlrl | 56.51 | Base-7B | base |" in md
    summary = md.split("## Summary")[1].split("## shapes_test")[0]
    assert "| Base-7B (a_paper, Table 1) | 31.25 | as published: not stated |" in summary
    assert "| RL-7B (a_paper, Table 2) | 99.0 |" in summary
    assert "Published vs reproduced" in (out / "index.html").read_text()


POOLED_REFERENCE = """\
paper: {title: A Paper, url: "https://arxiv.org/abs/2501.00001"}
protocol: {toolkit: own script, prompt: p, judge: none, scoring: vlrl}
columns:
  Both: {benchmark: null, pooled: [other, shapes_test], scale: percent}
rows:
  - {id: rl_row, model: RL-7B, source: {table: Table 2, row: RL-7B}, values: {Both: 40.7}}
"""


def test_a_combined_number_is_the_accuracy_over_its_benchmarks_items(project):
    """report.combined: the pooled accuracy of its benchmarks (their accuracies weighted by
    their items), beside them in results.csv, metrics.json, the summary and a section of its
    own, and the published number pooled from the same benchmarks set beside it."""
    (project / "config/reference").mkdir(exist_ok=True)
    (project / "config/reference/a_paper.yaml").write_text(POOLED_REFERENCE)
    cfg = load_experiment(
        EXP,
        [
            "benchmarks=[shapes_test, other]",
            "report.gallery.n=0",
            "report.combined={both: {benchmarks: [shapes_test, other]}}",
            "report.published=[{reference: a_paper, rows: {grpo: rl_row}}]",
        ],
    )
    resolve.ensure("base_model", cfg.base_model)
    for checkpoint in cfg.checkpoints:  # other: fewer items, other answers
        write_predictions(checkpoint, "shapes_test")
        write_predictions(checkpoint, "other", n=45, seed=7)
        for bench in ("shapes_test", "other"):
            score.run(EXP, cfg, checkpoint, bench)
    run_report(cfg)
    out = paths.report_dir(EXP)
    results = pd.read_csv(out / "results.csv")
    both = results[results.benchmark == "both"].set_index("checkpoint")
    assert list(both.index) == ["base", "sft", "grpo"]
    assert set(both.combines) == {"shapes_test+other"}
    metrics = json.loads(paths.metrics_file(EXP).read_text())
    for checkpoint in cfg.checkpoints:
        correct = [i["correct"] for b in ("shapes_test", "other") for i in items_of(checkpoint, b)]
        parts = [results[(results.benchmark == b) & (results.checkpoint == checkpoint)].iloc[0]
                 for b in ("shapes_test", "other")]  # fmt: skip
        plain = (parts[0].accuracy + parts[1].accuracy) / 2
        low, high = scipy_wilson(sum(correct), len(correct), cfg.score.confidence)
        row = both.loc[checkpoint]
        assert row["n"] == len(correct) == 135
        assert row["accuracy"] == pytest.approx(np.mean(correct))
        assert abs(row["accuracy"] - plain) > 1e-6, "weighted by the items, not averaged"
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-9)
        assert metrics["both"][checkpoint] == {
            "accuracy": row["accuracy"], "ci_low": row["ci_low"], "ci_high": row["ci_high"]
        }  # fmt: skip
    published = pd.read_csv(out / "published.csv")
    (matched,) = published.itertuples()
    assert (matched.benchmark, matched.checkpoint, matched.evaluated) == ("both", "grpo", True)
    assert matched.reproduced == pytest.approx(both.loc["grpo", "accuracy"])
    md = (out / "results.md").read_text()
    summary = md.split("## Summary")[1].split("## shapes_test")[0]
    assert "| shapes_test accuracy | other accuracy | both accuracy |" in summary
    grpo = 100 * both.loc["grpo", "accuracy"]
    assert f"| SFT+GRPO (reproduced) | {100 * parts[0].accuracy:.1f} | " in summary
    assert f"{100 * parts[1].accuracy:.1f} | {grpo:.1f} |" in summary
    assert "| RL-7B (a_paper, Table 2) | – | – | 40.7 |" in summary
    section = md.split("## both (combined)")[1].split("## Published vs reproduced")[0]
    assert "shapes_test, other as one number (report.combined)" in section
    assert f"| SFT+GRPO | {grpo:.1f} [" in section and "(n=45)" in section
    assert "<h3>both (combined)</h3>" in (out / "index.html").read_text()


def test_gallery_is_seeded_and_the_same_for_every_checkpoint(project):
    write_images()
    cfg = scored(["report.gallery.n=4"])
    run_report(cfg)
    html = (paths.report_dir(EXP) / "index.html").read_text()
    gallery = html.split('id="gallery"')[1].split("<h2")[0]
    assert gallery.count('class="item"') == 4
    assert gallery.count("data:image/png;base64,") == 4
    assert gallery.count("SFT+GRPO</td>") == 4
    for word in ("right", "wrong"):
        assert f'class="{word}"' in gallery
    run_report(cfg)
    assert (paths.report_dir(EXP) / "index.html").read_text() == html, "reproducible"
    shown = [line.split("</b>")[0] for line in gallery.split("<p><b>")[1:]]
    verdicts = {
        c: {i["id"]: i["correct"] for i in items_of(c, "shapes_test")} for c in cfg.checkpoints
    }
    differ = [i for i in shown if len({verdicts[c][i] for c in cfg.checkpoints}) > 1]
    assert differ == shown, "items the checkpoints disagree on come first"


def test_curves_of_grpo_are_drawn_and_omitted_without_grpo(project):
    folder = paths.grpo_dir(EXP) / "dvclive" / "plots" / "metrics"
    for name in ("reward", "kl", "rewards/common.format/mean"):
        path = folder / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        stem = path.stem
        path.write_text(f"step\t{stem}\n" + "".join(f"{s}\t{s / 10}\n" for s in range(1, 6)))
    cfg = scored(["report.gallery.n=0"])
    run_report(cfg)
    out = paths.report_dir(EXP)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*OUTPUTS, "grpo_curves.png", "reward_curve.png"]
    )
    html = (out / "index.html").read_text()
    assert 'id="curves"' in html and "reward, rewards/common.format/mean, kl" in html
    with Image.open(out / "grpo_curves.png") as png:
        assert png.format == "PNG"
    reward = (out / "reward_curve.png").read_bytes()
    with Image.open(out / "reward_curve.png") as png:
        assert png.format == "PNG" and png.size == (640, 320)
    # Right below the lead line, above the tables; in the page, the same bytes.
    top = (out / "results.md").read_text().split("## Summary")[0]
    assert top.index("**RL ") < top.index("![GRPO training reward](reward_curve.png)")
    embedded = (
        f'alt="GRPO training reward" src="data:image/png;base64,{b64encode(reward).decode()}"'
    )
    assert embedded in html
    assert (
        html.index('class="lead"')
        < html.index('alt="GRPO training reward"')
        < html.index('id="summary"')
    )
    run_report(cfg)
    assert (out / "reward_curve.png").read_bytes() == reward, "byte for byte, render after render"
    (folder / "reward.tsv").unlink()  # curves, but not the reward: no figure of it
    run_report(cfg)
    assert (out / "grpo_curves.png").exists() and not (out / "reward_curve.png").exists()
    cfg = scored(["report.gallery.n=0", "infer.checkpoints=[base, sft]"])
    run_report(cfg)
    html = (out / "index.html").read_text()
    assert 'id="curves"' not in html and 'alt="GRPO training reward"' not in html
    assert not (out / "grpo_curves.png").exists() and not (out / "reward_curve.png").exists()
    md = (out / "results.md").read_text()
    [lead] = [x for x in md.split("## Summary")[0].splitlines() if x.startswith("**")]
    assert lead.startswith("**SFT ") and " on shapes_test (SFT " in lead and "RL" not in lead
    assert "reward_curve.png" not in md


def test_provenance_has_no_paths_times_or_commit_and_reads_only_declared_keys(project):
    write_images(4)
    cfg = scored(["report.gallery.n=2"])
    seen: set[str] = set()
    run_report(RecordingConfig(cfg, seen))
    assert undeclared(seen, declared_reads("report")) == []
    out = paths.report_dir(EXP)
    for name in ("index.html", "results.md", "comparisons.md", "results.csv", "published.csv"):
        text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", (out / name).read_text())
        for absolute in (str(project), str(REPO), "/tmp/", "/home/", "/work/"):
            assert absolute not in text, f"{name} holds {absolute}"
    html = (out / "index.html").read_text()
    assert "git log -1 -- dvc.lock" in html
    assert "tiny-qwen2.5-vl" in html and "built locally" in html
    assert "llamafactory" in html and "0.9.5" in html
    assert "report.gallery.n" not in html and "gallery:" in html  # the resolved report section
    import importlib.metadata

    assert f"<td>pandas</td><td>{importlib.metadata.version('pandas')}</td>" in html


def test_a_child_report_pairs_each_model_with_its_parents(project):
    """Did the child's change help? Its report pairs its GRPO with its parent's on the same
    items (numbers recomputed here with scipy), marks the base and SFT it shares as shared, and
    says it in a sentence; parent.csv has the fields `vlrl compare` prints."""
    parent_cfg = scored(["report.gallery.n=0"])
    (project / "config/experiments/child.yaml").write_text(
        "extends: tiny_shapes\nbenchmarks: [shapes_test]\ngrpo:\n  learning_rate: 1.0e-4\n"
        "report:\n  gallery:\n    n: 0\n"
    )
    cfg = load_experiment("child")
    write_predictions("grpo", "shapes_test", seed=7, exp="child")
    score.run("child", cfg, "grpo", "shapes_test")
    root = stage_deps.source_root().parent
    report.run("child", cfg, stage_deps.code_files("report", root), root)

    out = paths.report_dir("child")
    parent = pd.read_csv(out / "parent.csv")
    assert list(parent.checkpoint) == ["base", "sft", "grpo"]
    assert list(parent.shared) == [True, True, False]
    grpo = parent.iloc[2]
    a = np.array(
        [
            i["correct"]
            for i in json.loads(paths.scores_file("child", "grpo", "shapes_test").read_text())[
                "items"
            ]
        ]
    )
    b = np.array([i["correct"] for i in items_of("grpo", "shapes_test")])
    assert not np.array_equal(a, b)
    low, high = scipy_paired_bootstrap(a, b, 0.95, parent_cfg.score.bootstrap_resamples, 0)
    assert grpo["diff"] == pytest.approx(a.mean() - b.mean())
    assert (grpo["ci_low"], grpo["ci_high"]) == pytest.approx((low, high), abs=1e-9)
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    assert (grpo["a_only"], grpo["b_only"]) == (only_a, only_b)
    p = binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    assert grpo["p_mcnemar"] == pytest.approx(p)
    assert grpo["file_b"] == "results/tiny_shapes/scores/grpo/shapes_test.json"
    direction = "better" if a.mean() >= b.mean() else "worse"
    head = f"child's SFT+GRPO is {100 * abs(a.mean() - b.mean()):.1f} points {direction} than"
    assert grpo["sentence"].startswith(head)

    results = (out / "results.md").read_text()
    assert "## Against the parent, tiny_shapes" in results
    assert f"- {grpo['sentence']}" in results
    assert "- child's SFT on shapes_test is tiny_shapes's own (one shared output)" in results
    assert "Against the parent, tiny_shapes" in (out / "index.html").read_text()
    # a child that evaluates nothing its parent does (a smoke variant) has no such section
    (project / "config/experiments/other_child.yaml").write_text(
        "extends: tiny_shapes\nbenchmarks: [other]\ninfer: {checkpoints: [base]}\n"
        "report:\n  gallery:\n    n: 0\n"
    )
    other = load_experiment("other_child")
    write_predictions("base", "other", exp="other_child")
    score.run("other_child", other, "base", "other")
    report.run("other_child", other, stage_deps.code_files("report", root), root)
    assert not (paths.report_dir("other_child") / "parent.csv").exists()
    assert "Against the parent" not in (paths.report_dir("other_child") / "results.md").read_text()
    # an experiment with no parent has no such section and no parent.csv
    run_report(parent_cfg)
    assert (paths.report_dir(EXP) / "results.md").is_file()
    assert not (paths.report_dir(EXP) / "parent.csv").exists()
    assert "Against the parent" not in (paths.report_dir(EXP) / "results.md").read_text()


def test_blanked_images_say_what_looking_adds_and_how_much_of_each_gain_remains(project):
    """shapes_test_blank asks shapes_test's items with the images blanked: the report pairs
    each checkpoint with itself seeing, and each gain with the same gain blanked (numbers
    recomputed here with scipy); the blank benchmark gets no answer prior and no gallery."""
    cfg = load_experiment(EXP, ["benchmarks=[shapes_test, shapes_test_blank]"])
    resolve.ensure("base_model", cfg.base_model)
    for checkpoint in cfg.checkpoints:
        write_predictions(checkpoint, "shapes_test")
        write_predictions(checkpoint, "shapes_test_blank", seed=3, items_of="shapes_test")
        for bench in ("shapes_test", "shapes_test_blank"):
            score.run(EXP, cfg, checkpoint, bench)
    write_images()
    run_report(cfg)

    def correct(checkpoint: str, bench: str) -> np.ndarray:
        return np.array([i["correct"] for i in items_of(checkpoint, bench)])

    out = paths.report_dir(EXP)
    table = pd.read_csv(out / "blanked.csv")
    rows = table[table.kind == "checkpoint"].set_index("checkpoint")
    gains = table[table.kind == "gain"].set_index("comparison")
    assert list(rows.index) == ["base", "sft", "grpo"]
    assert set(table.benchmark) == {"shapes_test"} and set(table.blank) == {"shapes_test_blank"}
    resamples = cfg.score.bootstrap_resamples
    for checkpoint in cfg.checkpoints:
        seeing, blank = correct(checkpoint, "shapes_test"), correct(checkpoint, "shapes_test_blank")
        row = rows.loc[checkpoint]
        assert row["blanked"] == pytest.approx(blank.mean())
        assert (row["blanked_ci_low"], row["blanked_ci_high"]) == pytest.approx(
            scipy_wilson(blank.sum(), len(blank), 0.95)
        )
        assert row["image_adds"] == pytest.approx(seeing.mean() - blank.mean())
        low, high = scipy_paired_bootstrap(seeing, blank, 0.95, resamples, 0)
        assert (row["image_adds_ci_low"], row["image_adds_ci_high"]) == pytest.approx((low, high))
    for a, b, name in [("sft", "base", "SFT − base"), ("grpo", "sft", "SFT+GRPO − SFT"),
                       ("grpo", "base", "SFT+GRPO − base")]:  # fmt: skip
        gain = gains.loc[name]
        blank_a, blank_b = correct(a, "shapes_test_blank"), correct(b, "shapes_test_blank")
        seeing_a, seeing_b = correct(a, "shapes_test"), correct(b, "shapes_test")
        assert gain["blanked"] == pytest.approx(blank_a.mean() - blank_b.mean())
        assert gain["with_image"] == pytest.approx(seeing_a.mean() - seeing_b.mean())
        low, high = scipy_paired_bootstrap(blank_a, blank_b, 0.95, resamples, 0)
        assert (gain["blanked_ci_low"], gain["blanked_ci_high"]) == pytest.approx((low, high))
        # the part from looking: the gain with the image minus blanked, item by item
        per_item = (seeing_a - seeing_b) - (blank_a - blank_b)
        assert gain["looking"] == pytest.approx(per_item.mean())
        assert gain["looking"] == pytest.approx(gain["with_image"] - gain["blanked"])
        low, high = scipy_paired_bootstrap(per_item, np.zeros(len(per_item)), 0.95, resamples, 0)
        assert (gain["looking_ci_low"], gain["looking_ci_high"]) == pytest.approx((low, high))

    results = (out / "results.md").read_text()
    assert "on shapes_test (" in results and "on shapes_test_blank (" not in results  # the lead
    sft = gains.loc["SFT − base"]
    assert (
        f"With every image of shapes_test blanked, SFT − base is "
        f"{100 * sft['blanked']:+.1f} points" in results
    )
    assert "image adds (95% CI)" in results and "blanked.csv has every field" in results
    assert "With every image of shapes_test blanked" in (out / "index.html").read_text()
    blind = out / "blind.csv"
    assert not blind.exists() or "shapes_test_blank" not in blind.read_text()
    gallery = (out / "index.html").read_text().split('<h2 id="gallery">')[1].split("<h2")[0]
    assert "<h3>shapes_test</h3>" in gallery and "<h3>shapes_test_blank</h3>" not in gallery


def test_the_answer_prior_and_the_gains_where_it_is_wrong(project):
    """blind.csv: the training set's most common answer to each question, scored by the same
    rules (here right on the even items), each model against it, and each gain between
    checkpoints on the items it answers wrong (recomputed here with scipy)."""
    cfg = scored(["report.gallery.n=0"])
    wrong_answer = {"color": "A", "count": "2", "caption": "a"}
    train = []
    for i in range(90):
        task = list(TASKS)[i % len(TASKS)]
        ptype, answer, *_ = TASKS[task]
        given = answer if i % 2 == 0 else wrong_answer[task]
        train += [{"problem": f"Question {i} ", "answer": given, "task": task,
                   "problem_type": ptype}] * 2  # fmt: skip
        train.append(
            {"problem": f"question {i}", "answer": "x", "task": task, "problem_type": ptype}
        )  # fmt: skip (outvoted)
    paths.data_dir(EXP).mkdir(parents=True, exist_ok=True)
    (paths.data_dir(EXP) / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    run_report(cfg)

    table = pd.read_csv(paths.report_dir(EXP) / "blind.csv")
    against = table[table.kind == "model − prior"].set_index("checkpoint")
    prior = np.array([int(i % 2 == 0) for i in range(90)])
    assert against["prior_accuracy"].iloc[0] == pytest.approx(prior.mean())
    assert list(against["by_question"].unique()) == [90]
    for checkpoint in cfg.checkpoints:
        model = np.array([i["correct"] for i in items_of(checkpoint, "shapes_test")])
        assert against.loc[checkpoint, "diff"] == pytest.approx(model.mean() - prior.mean())

    gains = table[table.kind == "gain where the prior is wrong"].set_index("comparison")
    assert list(gains.index) == ["SFT − base", "SFT+GRPO − SFT", "SFT+GRPO − base"]
    odd = slice(1, None, 2)
    for name, a, b in [("SFT − base", "sft", "base"), ("SFT+GRPO − SFT", "grpo", "sft"),
                       ("SFT+GRPO − base", "grpo", "base")]:  # fmt: skip
        left = np.array([i["correct"] for i in items_of(a, "shapes_test")])[odd]
        right = np.array([i["correct"] for i in items_of(b, "shapes_test")])[odd]
        gain = gains.loc[name]
        assert gain["n"] == 45 and gain["diff"] == pytest.approx(left.mean() - right.mean())
        low, high = scipy_paired_bootstrap(left, right, 0.95, cfg.score.bootstrap_resamples, 0)
        assert (gain["ci_low"], gain["ci_high"]) == pytest.approx((low, high))
    results = (paths.report_dir(EXP) / "results.md").read_text()
    assert "On the 45 items of shapes_test where that answer is wrong" in results
