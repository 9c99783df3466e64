"""The score stage on synthetic predictions files (rules only; the judge is tested against a real
server in tests/scoring/test_judge.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from independent_stats import scipy_wilson
from typer.testing import CliRunner

from vlrl.cli import app
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import score

REPO = Path(__file__).resolve().parents[2]
EXP, BENCH = "tiny_shapes", "shapes_test"

# id, task, problem_type, answer, options, boxes, response, expected correct, expected score
# fmt: off
ROWS = [
    ("c1", "color", "multiple_choice", "B", ["red", "blue", "green", "yellow"], [],
     "<think>it is blue</think><answer>B</answer>", 1, 1.0),
    ("c2", "color", "multiple_choice", "C", ["red", "blue", "green", "yellow"], [],
     "<think>hmm</think><answer>green</answer>", 1, 1.0),
    ("c3", "color", "multiple_choice", "A", ["red", "blue", "green", "yellow"], [],
     "<think>hmm</think><answer>D</answer>", 0, 0.0),
    ("n1", "count", "numerical", "3", [], [], "<think>1 2 3</think><answer>3</answer>", 1, 1.0),
    ("n2", "count", "numerical", "2", [], [], "<think>one, two</think><answer>4</answer>", 0, 0.0),
    ("n3", "arithmetic", "numerical", "5", [], [], "<think>2 plus 3</think> 5", 1, 1.0),
    ("g1", "grounding", "grounding", "[10, 10, 30, 30]", [], [[10, 10, 30, 30]],
     "<answer>[10, 10, 30, 30]</answer>", 1, 1.0),
    ("g2", "grounding", "grounding", "[10, 10, 30, 30]", [], [[10, 10, 30, 30]],
     "<answer>[20, 10, 40, 30]</answer>", 0, 1 / 3),
    ("f1", "caption", "free_form", "a red circle", [], [],
     "<answer>a red circle</answer>", 1, 1.0),
    ("f2", "caption", "free_form", "a red circle and a blue square", [], [],
     "<answer>a red circle</answer>", 0, 0.6),
]
# fmt: on


def write_predictions(rows, checkpoint: str = "grpo", bench: str = BENCH) -> Path:
    path = paths.predictions_file(EXP, checkpoint, bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for rid, task, ptype, answer, options, boxes, response, *_ in rows:
        lines.append(
            json.dumps(
                {
                    "id": rid,
                    "task": task,
                    "problem_type": ptype,
                    "problem": f"question {rid}",
                    "answer": answer,
                    "options": options,
                    "boxes": boxes,
                    "images": [f"images/test/{rid}.png"],
                    "prompt": f"question {rid} First output the thinking process…",
                    "response": response,
                    "model": f"results/{EXP}/{checkpoint}",
                    "checkpoint": checkpoint,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_scores_file_contract(project):
    write_predictions(ROWS)
    score.run(EXP, load_experiment(EXP), "grpo", BENCH)
    data = json.loads(paths.scores_file(EXP, "grpo", BENCH).read_text())

    assert list(data)[:9] == [
        "experiment", "checkpoint", "benchmark", "protocol", "n", "accuracy", "ci_low", "ci_high",
        "per_task",
    ]  # fmt: skip
    assert (data["experiment"], data["checkpoint"], data["benchmark"]) == (EXP, "grpo", BENCH)
    assert data["protocol"] == "vlrl"  # shapes_test's only protocol
    assert data["judge"] is None
    expected = {r[0]: (r[7], r[8]) for r in ROWS}
    for item in data["items"]:
        assert (item["correct"], item["score"]) == pytest.approx(expected[item["id"]]), item["id"]
        assert item["method"] == "rule" and item["judge_reply"] is None
        assert set(item) >= {"id", "task", "problem_type", "extracted", "correct", "score"}
    k = sum(r[7] for r in ROWS)
    assert data["n"] == len(ROWS) and data["accuracy"] == k / len(ROWS)
    assert (data["ci_low"], data["ci_high"]) == pytest.approx(scipy_wilson(k, len(ROWS)))
    assert sorted(data["per_task"]) == ["arithmetic", "caption", "color", "count", "grounding"]
    color = data["per_task"]["color"]
    assert (color["n"], color["accuracy"]) == (3, pytest.approx(2 / 3))
    assert (color["ci_low"], color["ci_high"]) == pytest.approx(scipy_wilson(2, 3))
    by_id = {item["id"]: item for item in data["items"]}
    assert by_id["n3"]["extracted"] == "5"  # text after </think> when there is no answer tag
    assert not list(paths.scores_file(EXP, "grpo", BENCH).parent.glob("*.tmp-*"))


def test_a_failed_generation_stops_the_stage_or_is_recorded_not_scored(project, caplog):
    path = write_predictions(ROWS)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["response"] = ""  # c1: the infer stage's openai backend got no response
    rows[0]["error"] = "http_status: InternalServerError (HTTP 500) after 4 attempt(s): down"
    for row in rows[1:]:
        row["error"] = None
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(StageError, match=r"1 of 10 predictions .* have no response .*: c1\."):
        score.run(EXP, load_experiment(EXP), "grpo", BENCH)  # the default stops
    assert not paths.scores_file(EXP, "grpo", BENCH).exists()
    with caplog.at_level("WARNING"):
        cfg = load_experiment(EXP, ["score.generation_failures=score_zero"])
        score.run(EXP, cfg, "grpo", BENCH)
    data = json.loads(paths.scores_file(EXP, "grpo", BENCH).read_text())
    by_id = {item["id"]: item for item in data["items"]}
    failed = by_id["c1"]
    assert failed["method"] == "failed" and failed["extracted"] is None
    assert failed["generation_error"] == rows[0]["error"]
    assert (failed["correct"], failed["score"]) == (0, 0.0)
    assert data["generation_failures"] == 1 and data["n"] == len(ROWS)
    assert all(by_id[r[0]]["generation_error"] is None for r in ROWS[1:])
    assert "1 of 10 predictions have no response (generation failed" in caplog.text


def test_a_failed_generation_is_never_judged(project, endpoint):
    path = write_predictions(ROWS)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["response"], row["error"] = "", "timeout: APITimeoutError after 2 attempt(s)"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    endpoint.state.reply = "1"  # a judge that says "correct" to whatever it is asked
    cfg = load_experiment(
        EXP,
        [
            f"score.judge.base_url={endpoint.base_url}",
            "score.judge.model=judge-m",
            "score.judge.mode=always",
            "score.generation_failures=score_zero",
        ],
    )
    score.run(EXP, cfg, "grpo", BENCH)
    data = json.loads(paths.scores_file(EXP, "grpo", BENCH).read_text())
    assert endpoint.state.requests == 0 and data["judge"]["calls"] == 0
    assert {item["method"] for item in data["items"]} == {"failed"}
    assert data["accuracy"] == 0.0 and data["generation_failures"] == len(ROWS)


def test_iou_threshold_comes_from_the_config(project):
    write_predictions(ROWS)
    cfg = load_experiment(EXP, ["score.iou_threshold=0.3"])
    score.run(EXP, cfg, "grpo", BENCH)
    items = json.loads(paths.scores_file(EXP, "grpo", BENCH).read_text())["items"]
    assert {i["id"]: i["correct"] for i in items}["g2"] == 1  # IoU 1/3 ≥ 0.3


def test_missing_predictions_name_the_file(project):
    with pytest.raises(StageError, match=r"predictions/grpo/shapes_test\.jsonl do not exist"):
        score.run(EXP, load_experiment(EXP), "grpo", BENCH)


def test_checkpoint_not_evaluated_is_an_error(project):
    write_predictions(ROWS, checkpoint="sft")
    cfg = load_experiment(EXP, ["sft.enabled=false"])
    with pytest.raises(StageError, match=r"'sft' is not evaluated"):
        score.run(EXP, cfg, "sft", BENCH)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda text: text + "{not json\n", r"shapes_test\.jsonl:11: not valid JSON"),
        (lambda text: text + text.splitlines()[0] + "\n", r":11: id 'c1' appears twice"),
        (lambda text: text.replace('"response"', '"reply"', 1), r":1: response: Field required"),
        (lambda text: text.replace('"numerical"', '"detection"', 1), r":4: protocol 'vlrl' has no"),
        (lambda text: text.replace('"checkpoint"', '"error": 1, "checkpoint"', 1), r":1: error"),
        (lambda text: "", r"has no predictions"),
        # a file cut in the middle of its last line (a killed writer, a full disk)
        (lambda text: text[: text.rindex("\n", 0, -1) + 30], r"shapes_test\.jsonl:10: not valid"),
    ],
    ids=["bad-json", "duplicate-id", "missing-key", "unknown-type", "bad-error", "empty", "cut"],
)
def test_bad_predictions_name_the_line(project, mutate, match):
    path = write_predictions(ROWS)
    path.write_text(mutate(path.read_text()))
    with pytest.raises(StageError, match=match):
        score.run(EXP, load_experiment(EXP), "grpo", BENCH)
    assert not paths.scores_file(EXP, "grpo", BENCH).exists()


def test_cli_runs_the_stage_and_reports_errors(project):
    runner = CliRunner()
    missing = runner.invoke(app, ["score", EXP, "grpo", BENCH])
    assert missing.exit_code == 2
    write_predictions(ROWS)
    ok = runner.invoke(app, ["score", EXP, "grpo", BENCH])
    assert ok.exit_code == 0, ok.output
    assert paths.scores_file(EXP, "grpo", BENCH).is_file()


def test_model_input_boxes_without_their_frames_are_refused(tmp_path: Path) -> None:
    from vlrl.benchmarks import BenchmarkConfig
    from vlrl.items.predictions import Prediction
    from vlrl.stages.score import rule_scores

    common = {"id": "r1", "task": "grounding", "problem": "Where?", "prompt": "p", "model": "m"}
    row = Prediction(
        **common,
        problem_type="grounding",
        answer="[0, 0, 10, 10]",
        boxes=[[0, 0, 10, 10]],
        response="<answer>[0, 0, 5, 5]</answer>",
        checkpoint="base",
    )
    protocol = BenchmarkConfig(box_frame="model_input")
    with pytest.raises(StageError, match=r"preds.jsonl:1: .*box_frame: model_input.*rerun infer"):
        rule_scores([row], protocol, 0.5, tmp_path / "preds.jsonl")
    framed = row.model_copy(update={"input_size": [5, 5], "image_sizes": [[10, 10]]})
    (item,) = rule_scores([framed], protocol, 0.5, tmp_path / "preds.jsonl")
    assert item.correct == 1 and item.score == 1.0


def test_a_judge_failure_in_fallback_mode_keeps_the_rule_verdict(project, endpoint, caplog):
    """A failed judge call must not move a metric: in fallback mode only rule-wrong items are
    asked, so dropping a failure would drop a probably-wrong item from the denominator."""
    write_predictions(ROWS)
    endpoint.state.reply = "perhaps"  # never parses as a verdict
    cfg = load_experiment(
        EXP, [f"score.judge.base_url={endpoint.base_url}", "score.judge.model=judge-m"]
    )
    with caplog.at_level("WARNING"):
        score.run(EXP, cfg, "grpo", BENCH)
    data = json.loads(paths.scores_file(EXP, "grpo", BENCH).read_text())
    wrong = [r[0] for r in ROWS if r[7] == 0 and r[2] != "grounding"]
    assert data["judge"]["failures"] == len(wrong) and "unscored" not in data
    assert data["n"] == len(ROWS) and data["accuracy"] == sum(r[7] for r in ROWS) / len(ROWS)
    by_id = {item["id"]: item for item in data["items"]}
    for rid in wrong:
        assert (by_id[rid]["correct"], by_id[rid]["method"]) == (0, "rule")
        assert by_id[rid]["judge_error"], rid
    assert "their rule verdicts kept" in caplog.text


MC_ROWS = [r for r in ROWS if r[2] == "multiple_choice"]


def _mc_benchmark(project: Path, protocols: list[str]) -> str:
    """A shapes benchmark scored under ``protocols`` (the first is its default)."""
    name = "shapes_mc"
    (project / "config" / "benchmarks" / f"{name}.yaml").write_text(
        f"loader: experiment_split\nprotocols: [{', '.join(protocols)}]\n"
    )
    write_predictions(MC_ROWS, bench=name)
    return name


def test_a_rules_only_protocol_is_judged_only_when_the_experiment_says_so(project, endpoint):
    bench = _mc_benchmark(project, ["vlmevalkit_2608", "vlrl"])
    endpoint.state.reply = "1"
    judge = [f"score.judge.base_url={endpoint.base_url}", "score.judge.model=judge-m"]
    score.run(EXP, load_experiment(EXP, judge), "grpo", bench)
    data = json.loads(paths.scores_file(EXP, "grpo", bench).read_text())
    assert endpoint.state.requests == 0 and data["judge"] is None
    assert data["protocol"] == "vlmevalkit_2608"
    assert data["accuracy"] == pytest.approx(2 / 3)

    score.run(
        EXP,
        load_experiment(EXP, [*judge, f"score.judge.benchmarks.{bench}=fallback"]),
        "grpo",
        bench,
    )
    data = json.loads(paths.scores_file(EXP, "grpo", bench).read_text())
    assert endpoint.state.requests == 1 and data["judge"]["mode"] == "fallback"
    assert data["accuracy"] == 1.0  # the judge said "correct" to the one rule-wrong item

    score.run(EXP, load_experiment(EXP, [*judge, f"score.protocol.{bench}=vlrl"]), "grpo", bench)
    data = json.loads(paths.scores_file(EXP, "grpo", bench).read_text())
    assert data["protocol"] == "vlrl" and data["judge"]["mode"] == "fallback"  # optional: judged


def test_a_protocol_the_benchmark_does_not_support_is_refused(project):
    bench = _mc_benchmark(project, ["vlmevalkit_2608"])
    cfg = load_experiment(EXP, [f"score.protocol.{bench}=vlrl"])
    with pytest.raises(StageError, match=r"score.protocol.shapes_mc: 'vlrl' is not a protocol"):
        score.run(EXP, cfg, "grpo", bench)


def test_rescore_compares_protocols_without_inference(project):
    bench = _mc_benchmark(project, ["vlrl", "vlmevalkit_2608"])
    path = paths.predictions_file(EXP, "grpo", bench)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["response"] = "<answer>It is B.</answer>"  # a letter in prose: VLMEvalKit reads it
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    assert runner.invoke(app, ["score", EXP, "grpo", bench]).exit_code == 0
    before = paths.predictions_file(EXP, "grpo", bench).stat().st_mtime_ns
    out = runner.invoke(
        app,
        ["rescore", EXP, "-p", "vlmevalkit_2608", "-b", bench, "-c", "grpo"],
        env={"COLUMNS": "200"},
    )
    assert out.exit_code == 0, out.output
    rescored = json.loads(paths.rescored_file(EXP, "vlmevalkit_2608", "grpo", bench).read_text())
    stage = json.loads(paths.scores_file(EXP, "grpo", bench).read_text())
    assert (stage["protocol"], rescored["protocol"]) == ("vlrl", "vlmevalkit_2608")
    assert (stage["accuracy"], rescored["accuracy"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert "66.7" in out.output and "33.3 (vlrl)" in out.output
    assert paths.predictions_file(EXP, "grpo", bench).stat().st_mtime_ns == before
    refused = runner.invoke(app, ["rescore", EXP, "-p", "mmvet_official", "-b", bench])
    assert refused.exit_code == 2 and "no benchmark supports protocol 'mmvet_official'" in (
        refused.output
    )
