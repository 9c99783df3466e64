"""vlrl.reporting.blind: the answer prior (the most common training answer per question, else per
task and problem type) and how the report tells a model's accuracy against it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as C

import pandas as pd
import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.core.errors import StageError
from vlrl.core.files import write_jsonl
from vlrl.items.predictions import Prediction, ScoredItem, Scores, write_predictions
from vlrl.reporting import blind
from vlrl.reporting.blind import (
    Prior,
    PriorScores,
    blind_lines,
    blind_rows,
    blind_table,
    prior_scores,
    question_key,
)
from vlrl.reporting.frames import Evaluation
from vlrl.scoring.protocols import get_protocol


def record(problem: str, answer, task: str = "count", problem_type: str = "numerical") -> dict:
    return {"problem": problem, "answer": answer, "task": task, "problem_type": problem_type}


def test_a_question_is_matched_by_its_words_not_their_case_or_spacing() -> None:
    assert question_key("\tHow  many\ncircles? ") == "how many circles?"
    assert question_key("A B") != question_key("AB")


def test_the_prior_answers_a_known_question_with_its_most_common_answer() -> None:
    prior = Prior.of(
        [record("How many?", 2), record("how  many?", 3), record("HOW MANY?", 3)]
        + [record("Which one?", "A", "colour", "multiple_choice")] * 4
    )
    assert prior.by_question == {"how many?": "3", "which one?": "A"}
    assert prior.answer(" how many? ", "colour", "multiple_choice") == ("3", "question")


def test_an_unknown_question_gets_the_most_common_answer_of_its_task_and_type() -> None:
    prior = Prior.of(
        [record("a?", 1), record("b?", 5), record("c?", 5)]
        + [record("d?", "B", "count", "multiple_choice")]
        + [record("e?", 7, "sum", "numerical")] * 3
    )
    assert prior.by_type == {
        ("count", "numerical"): "5",
        ("count", "multiple_choice"): "B",
        ("sum", "numerical"): "7",
    }
    assert prior.answer("z?", "count", "numerical") == ("5", "type")
    assert prior.answer("z?", "count", "multiple_choice") == ("B", "type")
    assert prior.answer("z?", "sum", "multiple_choice") == (None, "none")
    assert prior.answer("z?", "colour", "numerical") == (None, "none")


def test_ties_go_to_the_answer_seen_first() -> None:
    prior = Prior.of([record("q?", "x"), record("q?", "y"), record("q?", "y"), record("q?", "x")])
    assert prior.answer("q?", "", "") == ("x", "question")
    assert Prior.of([record("p?", "y"), record("r?", "x")]).answer("s?", "count", "numerical") == (
        "y",
        "type",
    )


def test_a_record_without_a_task_counts_under_the_empty_task() -> None:
    prior = Prior.of([{"problem": "q?", "answer": "4", "problem_type": "numerical"}])
    assert prior.by_type == {("", "numerical"): "4"}
    assert prior.answer("other?", "", "numerical") == ("4", "type")


def test_an_answer_that_is_an_empty_string_is_still_an_answer() -> None:
    prior = Prior.of([record("q?", "")])
    assert prior.answer("q?", "count", "numerical") == ("", "question")
    assert prior.answer("r?", "count", "numerical") == ("", "type")


ROW = {
    "benchmark": "shapes_test",
    "n": 1200,
    "accuracy": 0.25,
    "ci_low": 0.2,
    "ci_high": 0.3,
    "by_question": 1000,
    "by_type": 150,
    "comparisons": [
        {"model": "SFT", "diff": -0.05, "ci_low": -0.1, "ci_high": 0.0},
        {"model": "SFT+GRPO", "diff": 0.1, "ci_low": 0.02, "ci_high": 0.2},
    ],
}


def test_the_table_has_the_prior_how_it_answered_and_each_model_against_it() -> None:
    table = blind_table([ROW], 0.9)
    assert list(table.columns) == [
        "benchmark",
        "answer prior",
        "answered from",
        "SFT − prior (90% CI)",
        "SFT+GRPO − prior (90% CI)",
    ]
    assert table.iloc[0].tolist() == [
        "shapes_test",
        "25.0 [20.0, 30.0]",
        "same question 1000, same task and type 150 of 1200",
        "-5.0 [-10.0, +0.0]",
        "+10.0 [+2.0, +20.0]",
    ]
    assert blind_table([], 0.95).equals(pd.DataFrame([]))


def test_the_sentence_says_under_and_indistinguishable_where_they_hold() -> None:
    (line,) = blind_lines([ROW], 0.95)
    assert line == (
        "Without the image, the training set's most common answer to each question scores "
        "25.0% on shapes_test [20.0, 30.0]; SFT 5.0 points under it [-10.0, +0.0], not "
        "distinguishable from it; SFT+GRPO 10.0 points over it [+2.0, +20.0]."
    )


def test_an_interval_that_touches_zero_from_above_is_indistinguishable() -> None:
    row = {**ROW, "comparisons": [{"model": "M", "diff": 0.0, "ci_low": 0.0, "ci_high": 0.1}]}
    assert blind_lines([row], 0.95)[0].endswith(
        "M 0.0 points over it [+0.0, +10.0], not distinguishable from it."
    )
    row = {**ROW, "comparisons": [{"model": "M", "diff": 0.05, "ci_low": 0.01, "ci_high": 0.1}]}
    assert blind_lines([row], 0.95)[0].endswith("M 5.0 points over it [+1.0, +10.0].")


def test_the_gains_where_the_prior_fails_get_a_sentence_of_their_own() -> None:
    gains = [
        {"comparison": "SFT+GRPO − SFT", "n": 900, "diff": 0.03, "ci_low": -0.01,
         "ci_high": 0.07, "p_mcnemar": 0.0004},
        {"comparison": "SFT − base", "n": 900, "diff": -0.02, "ci_low": -0.05,
         "ci_high": 0.01, "p_mcnemar": 0.25},
    ]  # fmt: skip
    lines = blind_lines([{**ROW, "where_prior_fails": gains}], 0.95)
    assert lines[1] == (
        "On the 900 items of shapes_test where that answer is wrong (the question alone does "
        "not give it): SFT+GRPO − SFT +3.0 points [-1.0, +7.0] (McNemar p < 0.001); "
        "SFT − base -2.0 points [-5.0, +1.0] (McNemar p = 0.250)."
    )
    assert len(blind_lines([{**ROW, "where_prior_fails": []}], 0.95)) == 1


def test_a_single_gain_where_the_prior_fails_names_its_own_item_count() -> None:
    gain = {"comparison": "SFT − base", "n": 40, "diff": 0.1, "ci_low": 0.0, "ci_high": 0.2,
            "p_mcnemar": 0.04}  # fmt: skip
    lines = blind_lines([{**ROW, "where_prior_fails": [gain]}], 0.95)
    assert lines[1] == (
        "On the 40 items of shapes_test where that answer is wrong (the question alone does "
        "not give it): SFT − base +10.0 points [+0.0, +20.0] (McNemar p = 0.040)."
    )


# --------------------------------------------------------------------------------- prior_scores
EXP, BENCH = "tiny_shapes", "shapes_test"
TRAIN = Path("results/tiny_shapes/data/train.jsonl")
PREDICTIONS = "results/tiny_shapes/predictions/{}/shapes_test.jsonl"
TRAINING = (
    [record("How many circles?", 3)]
    + [record("How many stars?", "5")] * 2
    + [record("Which colour is it?", "B", "colour", "multiple_choice")]
)


def prediction(id_: str, problem: str, answer: str, task: str = "count",
               problem_type: str = "numerical", **fields) -> Prediction:  # fmt: skip
    return Prediction(
        **{"id": id_, "task": task, "problem_type": problem_type, "problem": problem,
           "answer": answer, "prompt": f"<image>{problem}", "response": "<answer>9</answer>",
           "model": "tiny", "checkpoint": "sft", **fields}
    )  # fmt: skip


# By question ("how many circles?": "3"), twice; by task and type ((count, numerical): "5"),
# once; not at all (no training record asks about shapes), once.
ASKED = [
    prediction("p0", "How many circles?", "3"),
    prediction("p1", "  HOW many   circles? ", "2", error="timed out", response=""),
    prediction("p2", "How many squares?", "5"),
    prediction("p3", "Is it round?", "yes", task="shape", problem_type="yes_no"),
]


def scored_item(id_: str, correct: int | None) -> ScoredItem:
    return ScoredItem(id=id_, task="count", problem_type="numerical", extracted="1",
                      correct=correct, score=None if correct is None else float(correct),
                      method="rule")  # fmt: skip


def checkpoint_scores(checkpoint: str, correct: dict[str, int | None], protocol: str = "vlrl"):
    items = [scored_item(i, c) for i, c in correct.items()]
    return Scores(experiment=EXP, checkpoint=checkpoint, benchmark=BENCH, protocol=protocol,
                  n=len(items), accuracy=0.0, ci_low=0.0, ci_high=0.0, per_task={},
                  headline="accuracy", metrics={}, confidence=0.9, generation_failures=0,
                  judge=None, items=items)  # fmt: skip


def shapes_evaluation(**protocols: str) -> Evaluation:
    """shapes_test, scored for sft then grpo (predictions only under sft, the first)."""
    ids = {p.id: 1 for p in ASKED}
    return Evaluation(
        BENCH,
        load_benchmark(BENCH),
        {ck: checkpoint_scores(ck, ids, protocols.get(ck, "vlrl")) for ck in ("sft", "grpo")},
    )


def write_inputs(training: list[dict] | None = TRAINING, asked: list[Prediction] = ASKED) -> None:
    if training is not None:
        write_jsonl(TRAIN, training)
    write_predictions(Path(PREDICTIONS.format("sft")), asked)


def test_the_prior_answers_scores_and_counts_each_item_of_the_first_checkpoint(project) -> None:
    write_inputs()
    found = prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN)
    assert (found.by_question, found.by_type) == (2, 1)
    assert [(i.id, i.extracted, i.correct, i.method) for i in found.items] == [
        ("p0", "3", 1, "rule"),
        ("p1", "3", 0, "rule"),  # its generation failed, but the prior answers it
        ("p2", "5", 1, "rule"),
        ("p3", None, 0, "rule"),  # no answer: an empty response
    ]


@pytest.fixture()
def scoring(monkeypatch: pytest.MonkeyPatch) -> list:
    """``rule_scores`` in vlrl.reporting.blind replaced by a recorder answering ["verdicts"]."""
    calls = []

    def fake(answered, config, iou_threshold, where, protocol):
        calls.append((answered, config, iou_threshold, where, protocol))
        return ["verdicts"]

    monkeypatch.setattr(blind, "rule_scores", fake)
    return calls


def test_the_prior_answers_are_scored_by_the_first_checkpoints_protocol(project, scoring) -> None:
    write_inputs()
    ev = shapes_evaluation(sft="vlmevalkit_2505")
    assert prior_scores(EXP, ev, 0.7, TRAIN) == PriorScores(["verdicts"], 2, 1)
    ((answered, config, iou, where, protocol),) = scoring
    assert [(p.id, p.problem, p.answer, p.response, p.error) for p in answered] == [
        ("p0", "How many circles?", "3", "<answer>3</answer>", None),
        ("p1", "  HOW many   circles? ", "2", "<answer>3</answer>", None),
        ("p2", "How many squares?", "5", "<answer>5</answer>", None),
        ("p3", "Is it round?", "yes", "", None),
    ]
    assert config is ev.config
    assert iou == 0.7
    assert where == Path("results/tiny_shapes/predictions/sft/shapes_test.jsonl")
    assert protocol is get_protocol("vlmevalkit_2505")


def test_an_experiment_without_training_records_has_no_prior(project) -> None:
    write_inputs(training=None)
    assert prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN) is None


def test_a_benchmark_whose_answers_are_boxes_has_no_prior(project) -> None:
    boxes = [
        prediction(f"g{k}", "Where is the circle?", "[1, 2, 3, 4]", problem_type="grounding")
        for k in range(2)
    ]
    write_inputs(asked=boxes)
    assert prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN) is None
    write_inputs(asked=[ASKED[0], boxes[0]])  # one box is enough
    assert prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN) is None


def test_no_predictions_means_no_prior(project, monkeypatch) -> None:
    write_inputs()
    monkeypatch.setattr(blind, "read_predictions", lambda path, stage: [])
    assert prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN) is None


def test_missing_predictions_are_a_report_error_naming_the_first_checkpoints_file(project) -> None:
    write_jsonl(TRAIN, TRAINING)
    with pytest.raises(StageError) as raised:
        prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN)
    assert str(raised.value) == (
        "report: predictions results/tiny_shapes/predictions/sft/shapes_test.jsonl do not "
        "exist; run the infer stage first"
    )


def test_training_records_it_cannot_read_are_a_report_error_naming_the_file(project) -> None:
    write_inputs(training=[{"problem": "q?", "task": "count", "problem_type": "numerical"}])
    with pytest.raises(StageError) as raised:
        prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN)
    assert str(raised.value) == (
        "report: results/tiny_shapes/data/train.jsonl: cannot read its training records: 'answer'"
    )
    TRAIN.write_text('{"problem": "q?"}\nnot json\n')
    with pytest.raises(StageError) as raised:
        prior_scores(EXP, shapes_evaluation(), 0.5, TRAIN)
    assert str(raised.value) == (
        "report: results/tiny_shapes/data/train.jsonl: cannot read its training records: "
        "results/tiny_shapes/data/train.jsonl:2: not valid JSON: Expecting value"
    )


# ----------------------------------------------------------------------------------- blind_rows
RUN = C(confidence=0.9, bootstrap_resamples=300, iou_threshold=0.5)


def benchmark(blank_of: str | None = None, iou: float | None = None) -> C:
    """What blind_rows reads of a benchmark's config (prior_scores is a recorder here)."""
    return C(blank_images_of=blank_of, iou_threshold=iou)


def scores_file(checkpoint: str, bench: str = BENCH) -> str:
    return f"results/tiny_shapes/scores/{checkpoint}/{bench}.json"


def evaluation(
    bench: str, checkpoints: tuple[str, ...], ids: tuple[str, ...], **config
) -> Evaluation:
    scores = {ck: checkpoint_scores(ck, dict.fromkeys(ids, 1)) for ck in checkpoints}
    return Evaluation(bench, benchmark(**config), scores)


def prior_of(correct: dict[str, int], by_question: int, by_type: int) -> PriorScores:
    return PriorScores([scored_item(i, c) for i, c in correct.items()], by_question, by_type)


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict:
    """``prior_scores`` answers ``priors[bench]``; ``paired`` answers which files it paired.
    Both record their arguments."""
    state: dict = {"priors": {}, "prior_calls": [], "paired": []}

    def fake_prior(exp, ev, iou, train_file):
        state["prior_calls"].append((exp, ev.bench, iou, str(train_file)))
        return state["priors"][ev.bench]

    def fake_paired(a, b, score, seed):
        (file_a, scores_a), (file_b, scores_b) = a, b
        state["paired"].append((str(file_a), scores_a, str(file_b), scores_b, score, seed))
        return {"diff": f"{file_a} − {file_b}", "n": len(scores_a.items)}

    monkeypatch.setattr(blind, "prior_scores", fake_prior)
    monkeypatch.setattr(blind, "paired", fake_paired)
    return state


def test_a_prior_row_holds_its_accuracy_counts_and_each_checkpoint_against_it(
    project, recorded
) -> None:
    prior = prior_of({"q0": 1, "q1": 0, "q2": 0, "q3": 1, "q4": 0}, by_question=3, by_type=2)
    recorded["priors"][BENCH] = prior
    ev = evaluation(BENCH, ("base", "sft", "grpo"), ("q0", "q1", "q2", "q3", "q4"))
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=True)
    answer_prior = "<answer prior of shapes_test>"
    # Wilson at 90%: 2 of 5
    assert {k: v for k, v in row.items() if k != "where_prior_fails"} == {
        "benchmark": "shapes_test", "n": 5, "accuracy": pytest.approx(0.4),
        "ci_low": pytest.approx(0.1427064720), "ci_high": pytest.approx(0.7275168281),
        "by_question": 3, "by_type": 2,
        "comparisons": [
            {"checkpoint": "base", "model": "base",
             "diff": f"{scores_file('base')} − {answer_prior}", "n": 5},
            {"checkpoint": "sft", "model": "SFT",
             "diff": f"{scores_file('sft')} − {answer_prior}", "n": 5},
            {"checkpoint": "grpo", "model": "SFT+GRPO",
             "diff": f"{scores_file('grpo')} − {answer_prior}", "n": 5},
        ],
    }  # fmt: skip
    assert list(row) == ["benchmark", "n", "accuracy", "ci_low", "ci_high", "by_question",
                         "by_type", "comparisons", "where_prior_fails"]  # fmt: skip
    against = recorded["paired"][:3]
    assert [(a, s.checkpoint, b, p, score, seed) for a, s, b, p, score, seed in against] == [
        (scores_file(ck), ck, answer_prior, prior, RUN, 7) for ck in ("base", "sft", "grpo")
    ]
    assert all(s is ev.scores[ck] for (_, s, *_), ck in zip(against, ev.scores, strict=True))
    assert all(p is prior for (_, _, _, p, _, _) in against)


def test_each_gain_is_also_paired_on_the_items_the_prior_answers_wrong(project, recorded) -> None:
    recorded["priors"][BENCH] = prior_of({"q0": 1, "q1": 0, "q2": 0, "q3": 1, "q4": 0}, 3, 2)
    ev = evaluation(BENCH, ("base", "sft", "grpo"), ("q0", "q1", "q2", "q3", "q4"))
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=True)
    assert row["where_prior_fails"] == [
        {"comparison": "SFT − base", "diff": f"{scores_file('sft')} − {scores_file('base')}",
         "n": 3},
        {"comparison": "SFT+GRPO − SFT", "diff": f"{scores_file('grpo')} − {scores_file('sft')}",
         "n": 3},
        {"comparison": "SFT+GRPO − base",
         "diff": f"{scores_file('grpo')} − {scores_file('base')}", "n": 3},
    ]  # fmt: skip
    gains = recorded["paired"][3:]
    assert [
        (a, sa.checkpoint, [i.id for i in sa.items], b, sb.checkpoint, [i.id for i in sb.items],
         score, seed)
        for a, sa, b, sb, score, seed in gains
    ] == [
        (scores_file(a), a, ["q1", "q2", "q4"], scores_file(b), b, ["q1", "q2", "q4"], RUN, 7)
        for a, b in (("sft", "base"), ("grpo", "sft"), ("grpo", "base"))
    ]  # fmt: skip
    assert [i.id for i in ev.scores["sft"].items] == ["q0", "q1", "q2", "q3", "q4"]  # untouched


def test_a_prior_that_answers_every_item_right_has_no_gains_where_it_fails(
    project, recorded
) -> None:
    recorded["priors"][BENCH] = prior_of({"q0": 1, "q1": 1}, 2, 0)
    ev = evaluation(BENCH, ("base", "sft"), ("q0", "q1"))
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=True)
    assert row["where_prior_fails"] == []
    assert row["accuracy"] == 1.0
    assert len(recorded["paired"]) == 2  # each checkpoint against the prior, nothing else


def test_blank_twins_and_benchmarks_without_a_prior_get_no_row(project, recorded) -> None:
    recorded["priors"].update(
        {"boxes": None, BENCH: prior_of({"q0": 0}, 1, 0), "other": prior_of({"q0": 1}, 0, 1)}
    )
    evaluations = [
        evaluation("shapes_test_blank", ("base",), ("q0",), blank_of=BENCH),
        evaluation("boxes", ("base",), ("q0",)),
        evaluation(BENCH, ("base",), ("q0",)),
        evaluation("other", ("base",), ("q0",), iou=0.7),
    ]
    rows = blind_rows(EXP, evaluations, RUN, 7, sft_enabled=True)
    assert [r["benchmark"] for r in rows] == [BENCH, "other"]
    train = "results/tiny_shapes/data/train.jsonl"
    assert recorded["prior_calls"] == [
        (EXP, "boxes", 0.5, train),  # the experiment's threshold
        (EXP, BENCH, 0.5, train),
        (EXP, "other", 0.7, train),  # the benchmark's own
    ]


def test_without_sft_the_models_and_gains_are_named_grpo(project, recorded) -> None:
    recorded["priors"][BENCH] = prior_of({"q0": 0}, 1, 0)
    ev = evaluation(BENCH, ("base", "grpo"), ("q0",))
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=False)
    assert [c["model"] for c in row["comparisons"]] == ["base", "GRPO"]
    assert [g["comparison"] for g in row["where_prior_fails"]] == ["GRPO − base"]


def test_the_gains_follow_the_order_the_checkpoints_are_given_in(project, recorded) -> None:
    recorded["priors"][BENCH] = prior_of({"q0": 0}, 1, 0)
    ev = evaluation(BENCH, ("sft", "grpo", "base"), ("q0",))
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=True)
    assert [g["comparison"] for g in row["where_prior_fails"]] == [
        "SFT+GRPO − SFT", "base − SFT+GRPO", "base − SFT"]  # fmt: skip


def test_blind_rows_score_the_prior_from_the_experiments_files(project) -> None:
    """Unrecorded: the prior's verdicts on ASKED (right, wrong, right, wrong), paired with two
    checkpoints' scores, the numbers worked out by hand."""
    write_inputs()
    ev = shapes_evaluation()
    ev.scores["sft"] = checkpoint_scores("sft", {"p0": 1, "p1": 1, "p2": 0, "p3": 1})
    ev.scores["grpo"] = checkpoint_scores("grpo", {"p0": 1, "p1": 0, "p2": 0, "p3": 1})
    (row,) = blind_rows(EXP, [ev], RUN, 7, sft_enabled=True)
    assert (row["n"], row["accuracy"], row["by_question"], row["by_type"]) == (4, 0.5, 2, 1)
    assert [(c["model"], c["diff"], c["n"]) for c in row["comparisons"]] == [
        ("SFT", 0.25, 4),  # 3 of 4 against 2 of 4
        ("SFT+GRPO", 0.0, 4),
    ]
    (gain,) = row["where_prior_fails"]  # p1 and p3: sft right on both, grpo on p3 only
    assert (gain["comparison"], gain["n"], gain["diff"]) == ("SFT+GRPO − SFT", 2, -0.5)
