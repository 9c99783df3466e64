"""vlrl.reporting.frames: what the report reads of each scores file, its results rows, the paired
comparisons between checkpoints and metrics.json, each built from scores written out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from vlrl import sharing
from vlrl.benchmarks import load_benchmark
from vlrl.core.errors import StageError
from vlrl.items.predictions import JudgeMetadata, MetricValue, ScoredItem, Scores, write_scores
from vlrl.reporting import frames
from vlrl.reporting.frames import Evaluation
from vlrl.scoring.stats import paired_difference, proportion_ci

EXP, BENCH = "tiny_shapes", "shapes_test"
JUDGE = JudgeMetadata(model="judge-7b", base_url="http://j", mode="api", prompt_version="v2")


def _item(i: int, correct: int | None, task: str = "count", method: str = "rule") -> ScoredItem:
    return ScoredItem(
        id=f"q{i}",
        task=task,
        problem_type="multiple_choice",
        extracted="A",
        correct=correct,
        score=None if correct is None else float(correct),
        method=method,
    )


def _scores(checkpoint: str, items: list[ScoredItem], **fields) -> Scores:
    return Scores(
        **{
            "experiment": EXP,
            "checkpoint": checkpoint,
            "benchmark": BENCH,
            "n": len(items),
            "accuracy": 0.0,
            "ci_low": 0.0,
            "ci_high": 0.0,
            "per_task": {},
            "headline": "accuracy",
            "metrics": {},
            "confidence": 0.95,
            "generation_failures": 0,
            "judge": None,
            "items": items,
            **fields,
        }
    )


def _evaluation(scores: dict[str, Scores], bench: str = BENCH) -> Evaluation:
    return Evaluation(bench, load_benchmark(bench), scores)


# ---------------------------------------------------------------------------------- Evaluation
def test_a_task_sum_is_shown_on_its_own_scale_every_other_metric_as_a_percentage(project):
    mme = _evaluation({}, "mme")
    assert mme.scale("perception") == "raw"
    assert mme.scale("acc_plus") == "percent"
    assert mme.scale("accuracy") == "percent"


def test_a_judge_is_named_only_when_it_decided_an_item(project):
    ruled = [_item(0, 1), _item(1, 0)]
    judged = [_item(0, 1), _item(1, 0, method="judge")]
    ev = _evaluation(
        {
            "base": _scores("base", ruled),
            "sft": _scores("sft", ruled, judge=JUDGE),
            "grpo": _scores("grpo", judged, judge=JUDGE),
        }
    )
    assert ev.judged("base") is None
    assert ev.judged("sft") is None, "a judge configured but never asked decided nothing"
    assert ev.judged("grpo") == "judge-7b (prompt v2)"


# ---------------------------------------------------------------------------------- load
def test_load_reads_each_checkpoint_in_training_order(project):
    for checkpoint in ("base", "grpo"):
        path = sharing.scores_file(EXP, checkpoint, BENCH)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_scores(path, _scores(checkpoint, [_item(0, checkpoint == "grpo")]))
    [ev] = frames.load(EXP, [BENCH], ["grpo", "base"])
    assert ev.bench == BENCH and ev.config == load_benchmark(BENCH)
    assert list(ev.scores) == ["base", "grpo"]
    assert [s.items[0].correct for s in ev.scores.values()] == [0, 1]


def test_load_names_a_missing_scores_file_and_the_command_that_makes_it(project):
    with pytest.raises(StageError) as caught:
        frames.load(EXP, [BENCH], ["base"])
    message = str(caught.value)
    assert str(sharing.scores_file(EXP, "base", BENCH)) in message
    assert f"vlrl score {EXP} base {BENCH}" in message


def test_load_names_a_malformed_scores_file_as_the_reports(project):
    path = sharing.scores_file(EXP, "base", BENCH)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{")
    with pytest.raises(StageError) as caught:
        frames.load(EXP, [BENCH], ["base"])
    assert str(caught.value).startswith(f"report: {path} is not a valid scores file: ")


# ---------------------------------------------------------------------------------- results rows
def test_a_results_row_counts_only_scored_items_and_names_the_rest(project):
    items = [_item(0, 1), _item(1, 1), _item(2, 0), _item(3, None, method="judge")]
    items += [_item(4, 1, task="color"), _item(5, 1, task="color", method="judge")]
    metrics = {
        "accuracy": MetricValue(value=0.8),
        "acc_plus": MetricValue(value=0.5, n=2, ci_low=0.1, ci_high=0.9, left_out=1),
        "kappa": MetricValue(value=0.3),
    }
    judge = JUDGE.model_copy(update={"failures": 1})
    scores = _scores("grpo", items, metrics=metrics, judge=judge, generation_failures=2)
    ev = _evaluation({"base": _scores("base", [_item(0, 0, task="shape")]), "grpo": scores})

    base, grpo = frames.results_rows([ev], confidence=0.9, sft_enabled=False)

    low, high = proportion_ci(4, 5, 0.9)
    count_low, count_high = proportion_ci(2, 3, 0.9)
    assert grpo == {
        "benchmark": BENCH,
        "checkpoint": "grpo",
        "model": "GRPO",
        "n": 5,
        "accuracy": pytest.approx(0.8),
        "ci_low": pytest.approx(low),
        "ci_high": pytest.approx(high),
        "color.n": 2,
        "color.accuracy": 1.0,
        "color.ci_low": pytest.approx(proportion_ci(2, 2, 0.9)[0]),
        "color.ci_high": pytest.approx(1.0),
        "count.n": 3,
        "count.accuracy": pytest.approx(2 / 3),
        "count.ci_low": pytest.approx(count_low),
        "count.ci_high": pytest.approx(count_high),
        "shape.n": None,
        "shape.accuracy": None,
        "shape.ci_low": None,
        "shape.ci_high": None,
        "metric.acc_plus": 0.5,
        "metric.acc_plus.ci_low": 0.1,
        "metric.acc_plus.ci_high": 0.9,
        "metric.acc_plus.left_out": 1,
        "metric.kappa": 0.3,
        "metric.kappa.ci_low": None,
        "metric.kappa.ci_high": None,
        "headline": "accuracy",
        "protocol": "vlrl",
        "unscored": 1,
        "generation_failures": 2,
        "judge": "judge-7b (prompt v2)",
        "judge_failures": 1,
    }
    assert base["model"] == "base" and base["judge"] is None and base["judge_failures"] == 0
    assert base["count.n"] is None and base["shape.n"] == 1 and base["unscored"] == 0
    assert "metric.kappa.left_out" not in grpo, "a metric that left nothing out says nothing"


def test_a_checkpoint_with_no_scored_item_is_an_error_naming_its_file(project):
    ev = _evaluation({"sft": _scores("sft", [_item(0, None, method="judge")])})
    with pytest.raises(StageError) as caught:
        frames.results_rows([ev], 0.95, sft_enabled=True)
    assert (
        str(caught.value) == f"report: {sharing.scores_file(EXP, 'sft', BENCH)} has no scored item"
    )


def test_the_sft_label_follows_whether_sft_ran(project):
    ev = _evaluation({"grpo": _scores("grpo", [_item(0, 1)])})
    assert frames.results_rows([ev], 0.95, sft_enabled=True)[0]["model"] == "SFT+GRPO"


# ---------------------------------------------------------------------------------- row readers
def test_metric_of_reads_accuracy_or_a_benchmark_metric_and_nones_otherwise():
    row = {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "metric.fAcc": 0.2}
    row |= {"metric.fAcc.ci_low": 0.1, "metric.fAcc.ci_high": 0.3}
    assert frames.metric_of(row, "accuracy") == (0.5, 0.4, 0.6)
    assert frames.metric_of(row, "fAcc") == (0.2, 0.1, 0.3)
    assert frames.metric_of(row, "qAcc") == (None, None, None)


def test_metric_names_skip_intervals_and_left_out_counts_across_rows():
    rows = [{"metric.a": 1, "metric.a.ci_low": 0, "metric.a.ci_high": 1, "metric.a.left_out": 2}]
    rows.append({"metric.b": 1, "accuracy": 1})
    assert frames.metric_names(rows) == ["a", "b"]


@pytest.mark.parametrize(
    ("checkpoints", "pairs"),
    [
        pytest.param(["base"], [], id="one-checkpoint-no-pair"),
        pytest.param(["base", "grpo"], [("grpo", "base")], id="two-one-pair"),
        pytest.param(
            ["base", "sft", "grpo"],
            [("sft", "base"), ("grpo", "sft"), ("grpo", "base")],
            id="three-consecutive-and-last-first",
        ),
    ],
)
def test_comparison_pairs(checkpoints, pairs):
    assert frames.comparison_pairs(checkpoints) == pairs


# ---------------------------------------------------------------------------------- paired
SCORE = SimpleNamespace(confidence=0.9, bootstrap_resamples=50)


def test_a_paired_comparison_leaves_out_items_unscored_on_either_side():
    a = _scores("grpo", [_item(0, 1), _item(1, 1), _item(2, None), _item(3, 0), _item(4, 1)])
    b = _scores("base", [_item(0, 0), _item(1, 1), _item(2, 1), _item(3, None), _item(4, 0)])
    stats = frames.paired(("a.json", a), ("b.json", b), SCORE, seed=7)
    expected = paired_difference(np.array([1, 1, 1]), np.array([0, 1, 0]), 0.9, 50, seed=7)
    assert stats == {
        "n": 3,
        "accuracy_a": 1.0,
        "accuracy_b": pytest.approx(1 / 3),
        "diff": pytest.approx(2 / 3),
        "ci_low": expected["ci_low"],
        "ci_high": expected["ci_high"],
        "p_mcnemar": expected["p_value"],
        "a_only": 2,
        "b_only": 0,
        "discordant_fraction": pytest.approx(2 / 3),
        "unscored_a": 1,
        "unscored_b": 1,
        "excluded": 2,
    }


def test_a_paired_comparison_passes_its_seed_confidence_and_resamples_on():
    a = _scores("grpo", [_item(i, int(i % 3 != 0)) for i in range(30)])
    b = _scores("base", [_item(i, int(i % 2 == 0)) for i in range(30)])
    order = sorted(range(30), key=lambda i: f"q{i}")  # the items are paired in their ids' order
    xs = np.array([int(i % 3 != 0) for i in order])
    ys = np.array([int(i % 2 == 0) for i in order])
    for seed, score in ((1, SCORE), (2, SimpleNamespace(confidence=0.5, bootstrap_resamples=7))):
        stats = frames.paired(("a", a), ("b", b), score, seed)
        expected = paired_difference(xs, ys, score.confidence, score.bootstrap_resamples, seed)
        assert (stats["ci_low"], stats["ci_high"]) == (expected["ci_low"], expected["ci_high"])


def test_files_scoring_different_items_are_an_error_naming_both():
    a = _scores("grpo", [_item(0, 1), _item(1, 1)])
    b = _scores("base", [_item(0, 1), _item(2, 1)])
    with pytest.raises(StageError, match=r"a\.json and b\.json score different items") as caught:
        frames.paired(("a.json", a), ("b.json", b), SCORE, 0)
    assert str(caught.value) == (
        "a.json and b.json score different items (e.g. ['q1', 'q2']); a paired comparison needs "
        "the same items"
    )
    # five of them at most
    many = _scores("base", [_item(0, 1), *(_item(i, 1) for i in range(10, 17))])
    with pytest.raises(StageError) as caught:
        frames.paired(("a.json", a), ("b.json", many), SCORE, 0)
    assert "(e.g. ['q1', 'q10', 'q11', 'q12', 'q13']);" in str(caught.value)


def test_no_item_scored_on_both_sides_is_an_error():
    a = _scores("grpo", [_item(0, 1), _item(1, None)])
    b = _scores("base", [_item(0, None), _item(1, 0)])
    with pytest.raises(StageError, match=r"no item is scored in both a\.json and b\.json"):
        frames.paired(("a.json", a), ("b.json", b), SCORE, 0)


def test_comparison_rows_name_each_pair_its_judges_once_and_the_benchmark_of_an_error(project):
    judged = [_item(0, 1, method="judge"), _item(1, 0), _item(2, 1)]
    ev = _evaluation(
        {
            "base": _scores("base", [_item(0, 0), _item(1, 0), _item(2, 1)]),
            "sft": _scores("sft", judged, judge=JUDGE),
            "grpo": _scores("grpo", judged, judge=JUDGE),
        }
    )
    rows = frames.comparison_rows(EXP, [ev], SCORE, seed=0, sft_enabled=True)
    assert [(r["comparison"], r["a"], r["b"]) for r in rows] == [
        ("SFT − base", "sft", "base"),
        ("SFT+GRPO − SFT", "grpo", "sft"),
        ("SFT+GRPO − base", "grpo", "base"),
    ]
    assert [r["judge"] for r in rows] == ["judge-7b (prompt v2)"] * 3
    assert all(r["benchmark"] == BENCH for r in rows)
    assert rows[0]["diff"] == pytest.approx(1 / 3) and rows[1]["diff"] == 0
    unjudged = _evaluation({"base": ev.scores["base"], "grpo": ev.scores["base"]})
    [row] = frames.comparison_rows(EXP, [unjudged], SCORE, 0, sft_enabled=False)
    assert row["judge"] is None and row["comparison"] == "GRPO − base"

    broken = _evaluation({"base": ev.scores["base"], "grpo": _scores("grpo", [_item(9, 1)])})
    with pytest.raises(StageError) as caught:
        frames.comparison_rows(EXP, [broken], SCORE, 0, True)
    grpo, base = (sharing.scores_file(EXP, c, BENCH) for c in ("grpo", "base"))
    assert str(caught.value).startswith(
        f"report: {BENCH}: {grpo} and {base} score different items (e.g. "
    )


def test_a_comparison_names_each_judge_of_either_side_once(project):
    other = JUDGE.model_copy(update={"model": "judge-70b"})
    judged = [_item(0, 1, method="judge"), _item(1, 0)]
    ev = _evaluation(
        {
            "base": _scores("base", judged, judge=JUDGE),
            "grpo": _scores("grpo", judged, judge=other),
        }
    )
    [row] = frames.comparison_rows(EXP, [ev], SCORE, seed=0, sft_enabled=False)
    assert row["judge"] == "judge-70b (prompt v2); judge-7b (prompt v2)"  # a's, then b's


# ---------------------------------------------------------------------------------- metrics.json
def test_metrics_tree_keeps_values_and_drops_intervals_of_metrics_and_absent_tasks():
    row = {"benchmark": "b", "checkpoint": "sft", "accuracy": 0.5, "ci_low": 0.4}
    row |= {"ci_high": 0.6, "t.n": 2, "t.accuracy": 0.5, "u.n": None, "u.accuracy": None}
    row |= {"metric.f": 0.25, "metric.f.ci_low": 0.1, "metric.f.ci_high": 0.4, "n": 2}
    other = {**row, "checkpoint": "grpo", "accuracy": 0.75}
    assert frames.metrics_tree([row, other, {**row, "benchmark": "c"}]) == {
        "b": {
            "sft": {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "t": 0.5, "f": 0.25},
            "grpo": {"accuracy": 0.75, "ci_low": 0.4, "ci_high": 0.6, "t": 0.5, "f": 0.25},
        },
        "c": {"sft": {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "t": 0.5, "f": 0.25}},
    }


def test_comparison_rows_hand_the_experiments_seed_to_the_paired_comparison(project, monkeypatch):
    ev = Evaluation("shapes_test", load_benchmark("shapes_test"), {"base": None, "sft": None})
    calls = []

    def paired(a, b, score, seed):
        calls.append((a[0].as_posix(), b[0].as_posix(), score, seed))
        return {"diff": 0.0}

    monkeypatch.setattr(frames, "paired", paired)
    monkeypatch.setattr(Evaluation, "judged", lambda self, checkpoint: None)
    frames.comparison_rows(EXP, [ev], SCORE, seed=7, sft_enabled=True)
    assert calls == [
        (
            f"results/{EXP}/scores/sft/shapes_test.json",
            f"results/{EXP}/scores/base/shapes_test.json",
            SCORE,
            7,
        )
    ]
