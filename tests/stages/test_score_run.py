"""The score stage's ``score_benchmark`` in process and in well under a second each: when it
refuses to score (a judge's protocol without a judge, failed generations, nothing scored, a
metric that cannot be computed) and the whole text it says then, which IoU threshold the rules
get, what the judge is handed (mode, the benchmark's prompt, the judge's log directory), how
unscored items and the experiment's confidence reach the scores, and the whole of every line it
logs. The judge is a recorder (the real one is exercised against a local server by
tests/scoring/test_judge.py and test_score.py); everything else is the stage's own code on a
synthetic predictions file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from independent_stats import scipy_wilson

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import score

EXP, BENCH = "tiny_shapes", "shapes_test"
JUDGE = ["score.judge.base_url=http://127.0.0.1:9/v1", "score.judge.model=judge-m"]

# id, problem_type, answer, options, boxes, response; right under vlrl's rules at IoU 0.5:
# m1, n1, n3, f1 (4 of 8). g1's predicted box overlaps the gold one with IoU 200 / 600 = 1/3.
# fmt: off
ROWS = [
    ("m1", "multiple_choice", "B", ["red", "blue", "green"], [], "<answer>B</answer>"),
    ("m2", "multiple_choice", "C", ["red", "blue", "green"], [], "<answer>A</answer>"),
    ("n1", "numerical", "3", [], [], "<answer>3</answer>"),
    ("n2", "numerical", "2", [], [], "<answer>4</answer>"),
    ("n3", "numerical", "7", [], [], "<answer>7</answer>"),
    ("g1", "grounding", "[10, 10, 30, 30]", [], [[10, 10, 30, 30]],
     "<answer>[20, 10, 40, 30]</answer>"),
    ("f1", "free_form", "a red circle", [], [], "<answer>a red circle</answer>"),
    ("f2", "free_form", "a red circle and a blue square", [], [], "<answer>a red circle</answer>"),
]
# fmt: on
RIGHT = {"m1", "n1", "n3", "f1"}


def _predictions(bench: str = BENCH, failed: int = 0) -> Path:
    """ROWS as the infer stage's predictions of grpo on ``bench``; the first ``failed`` rows
    are generations that got no response."""
    path = paths.predictions_file(EXP, "grpo", bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "id": rid,
            "task": ptype,
            "problem_type": ptype,
            "problem": f"question {rid}",
            "answer": answer,
            "options": options,
            "boxes": boxes,
            "images": [f"images/test/{rid}.png"],
            "prompt": f"question {rid}",
            "response": "" if i < failed else response,
            "error": "timeout: APITimeoutError after 2 attempt(s)" if i < failed else None,
            "model": f"results/{EXP}/grpo",
            "checkpoint": "grpo",
        }
        for i, (rid, ptype, answer, options, boxes, response) in enumerate(ROWS)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _bench(name: str, **keys) -> str:
    """A benchmark of the scratch project: the shapes test split with ``keys``."""
    body = {"loader": "experiment_split", "split": "test", **keys}
    paths.benchmark_file(name).write_text(json.dumps(body))
    return name


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.score"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


@pytest.fixture()
def judged(project: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """apply_judge recorded: its arguments, and the items whose ids are in ``unscore`` left
    without a verdict (as a judge failure in mode always leaves them)."""
    rec: dict = {"calls": [], "unscore": set()}

    def apply_judge(*args):
        rec["calls"].append(args)
        for item in args[4]:
            if item.id in rec["unscore"]:
                item.method, item.correct, item.score = "judge", None, None

    monkeypatch.setattr(score, "apply_judge", apply_judge)
    return rec


def test_the_stage_logs_what_it_reads_the_rules_accuracy_and_what_it_wrote(
    judged: dict, caplog: pytest.LogCaptureFixture
) -> None:
    source = _predictions()
    with caplog.at_level(logging.INFO, logger="vlrl.stages.score"):
        scores = score.run(EXP, load_experiment(EXP), "grpo", BENCH)
    assert scores is None  # run returns nothing; the scores are in the file
    low, high = scipy_wilson(4, 8)
    out = Path("results", EXP, "scores", "grpo", f"{BENCH}.json")
    assert _messages(caplog) == [
        f"score: {EXP}/grpo on {BENCH}: 8 items from {source}",
        "score: rules of protocol vlrl: accuracy 50.0%",
        f"score: {EXP}/grpo on {BENCH} (vlrl): accuracy 50.0% [{_pct(low)}, {_pct(high)}] (n=8) "
        f"→ {out}",
    ]
    data = json.loads(out.read_text())
    assert (data["n"], data["accuracy"], data["judge"]) == (8, 0.5, None)
    assert "unscored" not in data
    assert not judged["calls"]  # no score.judge: nothing is judged


def test_the_rules_accuracy_counts_every_item_and_the_final_line_its_interval(
    judged: dict, caplog: pytest.LogCaptureFixture
) -> None:
    """An accuracy whose interval is not symmetric about it, so each bound is checked."""
    path = _predictions()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["response"] = "<answer>C</answer>"  # m2 now right: 5 of 8
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with caplog.at_level(logging.INFO, logger="vlrl.stages.score"):
        scores = score.score_benchmark(EXP, load_experiment(EXP), "grpo", BENCH)
    low, high = scipy_wilson(5, 8)
    out = paths.scores_file(EXP, "grpo", BENCH)
    assert _messages(caplog)[1:] == [
        "score: rules of protocol vlrl: accuracy 62.5%",
        f"score: {EXP}/grpo on {BENCH} (vlrl): accuracy 62.5% [{_pct(low)}, {_pct(high)}] (n=8) "
        f"→ {out}",
    ]
    assert scores.accuracy == 5 / 8
    assert (scores.ci_low, scores.ci_high) == pytest.approx((low, high))


def test_a_judges_protocol_without_a_judge_is_refused_naming_what_to_add(project: Path) -> None:
    bench = _bench("shapes_graded", protocols=["mmvet_official"])
    with pytest.raises(StageError) as err:
        score.run(EXP, load_experiment(EXP), "grpo", bench)
    assert str(err.value) == (
        "score: benchmark shapes_graded is scored by protocol 'mmvet_official', an LLM judge's, "
        "but experiment tiny_shapes sets no score.judge; add one (base_url, model)"
    )


def test_a_judges_protocol_judges_every_item_with_the_benchmarks_prompt(judged: dict) -> None:
    bench = _bench("shapes_graded", protocols=["mmvet_official"], judge={"prompt": "mmvet"})
    _predictions(bench)
    cfg = load_experiment(EXP, JUDGE)  # the experiment's mode (fallback) does not matter
    score.run(EXP, cfg, "grpo", bench)
    ((exp, judge, prompt, predictions, items, mode, log_dir),) = judged["calls"]
    assert (exp, judge, prompt, mode) == (EXP, cfg.score.judge, "mmvet", "always")
    assert [p.id for p in predictions] == [i.id for i in items] == [r[0] for r in ROWS]
    assert [i.correct for i in items] == [int(r[0] in RIGHT) for r in ROWS]  # the rules' verdicts
    assert log_dir == Path("logs", "score", EXP, "grpo", "shapes_graded")


def test_an_optional_protocol_is_judged_in_the_experiments_mode_with_each_items_prompt(
    judged: dict,
) -> None:
    _predictions()
    cfg = load_experiment(EXP, JUDGE)
    score.run(EXP, cfg, "grpo", BENCH)
    ((exp, judge, prompt, _, items, mode, log_dir),) = judged["calls"]
    assert (exp, judge, prompt, mode, len(items)) == (EXP, cfg.score.judge, None, "fallback", 8)
    assert log_dir == Path("logs", "score", EXP, "grpo", BENCH)


def test_unscored_items_are_counted_and_left_out_of_the_accuracy(
    judged: dict, caplog: pytest.LogCaptureFixture
) -> None:
    bench = _bench("shapes_graded", protocols=["mmvet_official"])
    _predictions(bench)
    judged["unscore"] = {"m2", "n1"}  # one the rules had wrong, one right: 3 of 6 left right
    with caplog.at_level(logging.INFO, logger="vlrl.stages.score"):
        scores = score.score_benchmark(EXP, load_experiment(EXP, JUDGE), "grpo", bench)
    assert (scores.n, scores.unscored, scores.accuracy) == (6, 2, 0.5)
    low, high = scipy_wilson(3, 6)
    out = paths.scores_file(EXP, "grpo", bench)
    assert _messages(caplog)[-1] == (
        f"score: {EXP}/grpo on {bench} (mmvet_official): accuracy 50.0% [{_pct(low)}, "
        f"{_pct(high)}] (n=6, 2 unscored) → {out}"
    )
    assert json.loads(out.read_text())["unscored"] == 2


def test_nothing_scored_is_an_error_naming_the_file(judged: dict) -> None:
    bench = _bench("shapes_graded", protocols=["mmvet_official"])
    source = _predictions(bench)
    judged["unscore"] = {r[0] for r in ROWS}
    with pytest.raises(StageError) as err:
        score.run(EXP, load_experiment(EXP, JUDGE), "grpo", bench)
    assert str(err.value) == (
        f"score: none of the 8 items of {source} could be scored (every judge call failed); "
        "see the log for why"
    )
    assert not paths.scores_file(EXP, "grpo", bench).exists()


def test_the_benchmarks_iou_threshold_wins_over_the_experiments(judged: dict) -> None:
    lenient = _bench("shapes_lenient", iou_threshold=0.3)
    strict = _bench("shapes_strict", iou_threshold=0.5)
    for bench in (lenient, strict):
        _predictions(bench)
    default = load_experiment(EXP)  # score.iou_threshold 0.5
    (g1,) = [i for i in score.score_benchmark(EXP, default, "grpo", lenient).items if i.id == "g1"]
    assert g1.correct == 1  # IoU 1/3 ≥ the benchmark's 0.3
    lenient_exp = load_experiment(EXP, ["score.iou_threshold=0.3"])
    (g1,) = [
        i for i in score.score_benchmark(EXP, lenient_exp, "grpo", strict).items if i.id == "g1"
    ]
    assert g1.correct == 0  # IoU 1/3 < the benchmark's 0.5, whatever the experiment's


def test_a_row_the_rules_refuse_is_named_by_the_predictions_file_and_line(project: Path) -> None:
    bench = _bench("shapes_framed", box_frame="model_input")
    source = _predictions(bench)
    with pytest.raises(StageError) as err:
        score.run(EXP, load_experiment(EXP), "grpo", bench)
    assert str(err.value) == (
        f"score: {source}:6: the benchmark's boxes are in the model-input frame (box_frame: "
        "model_input) but the row has no input_size / image_sizes; rerun infer"
    )


@pytest.mark.parametrize(
    ("failed", "listed"),
    [(2, "m1, m2"), (5, "m1, m2, n1, n2, n3"), (6, "m1, m2, n1, n2, n3, …")],
    ids=["two", "as-many-as-listed", "more-than-listed"],
)
def test_failed_generations_stop_the_stage_listing_at_most_five(
    project: Path, failed: int, listed: str
) -> None:
    source = _predictions(failed=failed)
    with pytest.raises(StageError) as err:
        score.run(EXP, load_experiment(EXP), "grpo", BENCH)
    assert str(err.value) == (
        f"score: {failed} of 8 predictions in {source} have no response (the infer stage's "
        f"endpoint failed for them: see their 'error'): {listed}. Rerun infer once the server "
        "answers (dvc repro --force on that infer stage), or set score.generation_failures: "
        "score_zero to score them 0"
    )
    assert not paths.scores_file(EXP, "grpo", BENCH).exists()


@pytest.mark.parametrize(
    ("failed", "listed", "rule_accuracy"),
    # the failed rows score 0: of the rows left, n3 and f1 are right, then f1 only
    [(4, "m1, m2, n1, n2", "25.0"), (5, "m1, m2, n1, n2, n3", "12.5"),
     (6, "m1, m2, n1, n2, n3, …", "12.5")],
    ids=["four", "as-many-as-listed", "more-than-listed"],
)  # fmt: skip
def test_failed_generations_scored_zero_are_warned_of_and_counted(
    judged: dict, caplog: pytest.LogCaptureFixture, failed: int, listed: str, rule_accuracy: str
) -> None:
    _predictions(failed=failed)
    cfg = load_experiment(EXP, ["score.generation_failures=score_zero"])
    with caplog.at_level(logging.INFO, logger="vlrl.stages.score"):
        scores = score.score_benchmark(EXP, cfg, "grpo", BENCH)
    assert _messages(caplog)[1:3] == [
        f"score: {failed} of 8 predictions have no response (generation failed; scored 0, "
        f"method 'failed'): {listed}",
        f"score: rules of protocol vlrl: accuracy {rule_accuracy}%",
    ]
    assert (scores.generation_failures, scores.n, scores.unscored) == (failed, 8, 0)
    assert [i.method for i in scores.items] == ["failed"] * failed + ["rule"] * (8 - failed)


def test_metrics_use_the_experiments_confidence(project: Path) -> None:
    _predictions()
    cfg = load_experiment(EXP, ["score.confidence=0.8"])
    scores = score.score_benchmark(EXP, cfg, "grpo", BENCH)
    low, high = scipy_wilson(4, 8, 0.8)
    accuracy = scores.metrics["accuracy"]
    assert (accuracy.value, accuracy.n) == (0.5, 8)
    assert (accuracy.ci_low, accuracy.ci_high) == pytest.approx((low, high))
    assert scores.confidence == 0.8
    assert (scores.ci_low, scores.ci_high) == pytest.approx((low, high))


def test_a_metric_that_cannot_be_computed_fails_naming_the_benchmark(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _predictions()

    def compute_metrics(items, specs, confidence):
        raise StageError("metric fAcc: no item has a group 'figure'")

    monkeypatch.setattr(score, "compute_metrics", compute_metrics)
    with pytest.raises(StageError) as err:
        score.run(EXP, load_experiment(EXP), "grpo", BENCH)
    assert str(err.value) == "score: shapes_test: metric fAcc: no item has a group 'figure'"
    assert err.value.__cause__ is None and err.value.__suppress_context__
