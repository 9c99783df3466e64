"""vlrl.reporting.blind: the answer prior (the most common training answer per question, else per
task and problem type) and how the report tells a model's accuracy against it."""

from __future__ import annotations

import pandas as pd

from vlrl.reporting.blind import Prior, blind_lines, blind_table, question_key


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
