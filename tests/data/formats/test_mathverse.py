"""The mathverse format: AI4Math/MathVerse testmini parquet → canonical records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

FILE = "testmini.parquet"
MC_WO = (
    "Please directly answer the question and provide the correct option letter, e.g., A, B, C, D."
)
FF_WO = "Please directly answer the question and provide the final value, e.g., 1, 2.5, 300."
MC_COT = (
    "Please first conduct reasoning, and then answer the question and provide the correct option "
    "letter, e.g., A, B, C, D, at the end."
)
FF_COT = (
    "Please first conduct reasoning, and then answer the question and provide the final value, "
    "e.g., 1, 2.5, 300, at the end."
)
VISION_ONLY = "According to the question shown in the image, please directly answer the question"
ANGLE = (
    "As shown in the figure, AB parallel CD, EG bisects angle BEF, then angle 2 is equal to ()\n"
    "Choices:\nA:50°\nB:60°\nC:65°\nD:90°"
)


def _png(color: tuple[int, int, int]) -> dict[str, Any]:
    return encoded_image(color)


def _row(
    sample: str,
    problem: str,
    version: str,
    question: str,
    answer: str,
    question_type: str,
    question_for_eval: str | None = None,
) -> dict[str, Any]:
    multi = question_type == "multi-choice"
    if version == "Vision Only":
        kind = "the correct option letter, e.g., A, B, C, D." if multi else "the final value"
        query_wo = f"{VISION_ONLY} and provide {kind}"
        query_cot = f"According to the question shown in the image, {(MC_COT if multi else FF_COT)}"
    else:
        query_wo = f"{MC_WO if multi else FF_WO}\nQuestion: {question}"
        query_cot = f"{MC_COT if multi else FF_COT}\nQuestion: {question}"
    return {
        "sample_index": sample,
        "problem_index": problem,
        "problem_version": version,
        "question": question,
        "image": _png((int(sample) % 250, 90, 200)),
        "answer": answer,
        "question_type": question_type,
        "metadata": {
            "split": "testmini",
            "source": "GeoQA",
            "subject": "Plane Geometry",
            "subfield": "Angle",
        },
        "query_wo": query_wo,
        "query_cot": query_cot,
        "question_for_eval": question if question_for_eval is None else question_for_eval,
    }


def mathverse_rows() -> list[dict[str, Any]]:
    """Eight testmini-shaped rows: one multi-choice problem in three versions (Vision Only with
    an empty question), a numerical problem in two, a free-form expression, a "True or false"
    question answered by its option text, and a "Choose 2 answers" question."""
    return [
        _row("6", "2", "Text Dominant", ANGLE, "C", "multi-choice"),
        _row("9", "2", "Vision Dominant", ANGLE, "C", "multi-choice"),
        _row("10", "2", "Vision Only", "", "C", "multi-choice", question_for_eval=ANGLE),
        _row("3422", "685", "Text Lite", "The radius is 3 cm. Find L.", "14", "free-form"),
        _row("3425", "685", "Vision Only", "", "14", "free-form", question_for_eval="Find L."),
        _row(
            "1496", "300", "Vision Intensive", "Find the length of AC.", "4\\sqrt{6}", "free-form"
        ),
        _row(
            "2141",
            "429",
            "Text Lite",
            "True or false: the distance would be the opposite side.\nChoice:\nA. True\nB. False",
            "False",
            "multi-choice",
        ),
        _row(
            "2196",
            "440",
            "Text Dominant",
            "Which two expressions are OPPOSITE of $\\tan (\\theta)$ ?\nChoose 2 answers:\n"
            "Choices:\nA:$\\tan (\\pi+\\theta)$\nB:$\\tan (\\pi/2-\\theta)$\n"
            "C:$\\tan (2 \\pi-\\theta)$\nD:$\\tan (\\pi-\\theta)$",
            "C\nD",
            "multi-choice",
        ),
    ]


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (``datasets`` features of the dataset card)."""
    from datasets import Image, Value

    string = Value("string")
    features = {
        "sample_index": string,
        "problem_index": string,
        "problem_version": string,
        "question": string,
        "image": Image(),
        "answer": string,
        "question_type": string,
        "metadata": {"split": string, "source": string, "subject": string, "subfield": string},
        "query_wo": string,
        "query_cot": string,
        "question_for_eval": string,
    }
    write_parquet(root / file, rows, features)


def write_mathverse_fixture(root: Path) -> None:
    """A small AI4Math/MathVerse testmini under ``root`` in the hub's layout and schema."""
    write_rows(root, mathverse_rows())


def _records(root: Path) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / "testmini.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_converts_the_testmini_rows(tmp_path: Path) -> None:
    write_mathverse_fixture(tmp_path)
    assert convert_dataset("mathverse", tmp_path) == {"testmini": 8}
    records = read_records(tmp_path / "records" / "testmini.jsonl")
    assert [r.id for r in records] == ["6", "9", "10", "3422", "3425", "1496", "2141", "2196"]
    assert all(r.image_sizes == [[32, 24]] and r.data_source == "mathverse" for r in records)
    by_id = {r.id: r for r in records}

    text_dominant = by_id["6"]
    assert text_dominant.problem == f"{MC_WO}\nQuestion: {ANGLE}"
    assert text_dominant.problem_type == "multiple_choice"
    assert text_dominant.options == ["50°", "60°", "65°", "90°"]
    assert text_dominant.answer == "C"
    assert text_dominant.task == "Text Dominant"
    assert text_dominant.groups == {"problem": "2"}

    numerical = by_id["3422"]
    assert (numerical.problem_type, numerical.answer, numerical.options) == ("numerical", "14", [])
    assert numerical.problem == f"{FF_WO}\nQuestion: The radius is 3 cm. Find L."
    assert (numerical.task, numerical.groups) == ("Text Lite", {"problem": "685"})
    expression = by_id["1496"]
    assert (expression.problem_type, expression.answer) == ("free_form", "4\\sqrt{6}")


def test_vision_only_rows_keep_the_instruction_and_the_problem_cluster(tmp_path: Path) -> None:
    write_mathverse_fixture(tmp_path)
    convert_dataset("mathverse", tmp_path)
    records = _records(tmp_path)
    vision_only = records["10"]
    assert vision_only["problem"] == (
        f"{VISION_ONLY} and provide the correct option letter, e.g., A, B, C, D."
    )
    assert vision_only["problem_type"] == "multiple_choice"
    assert vision_only["options"] == ["50°", "60°", "65°", "90°"]  # from question_for_eval
    assert (vision_only["answer"], vision_only["task"]) == ("C", "Vision Only")
    assert records["3425"]["groups"] == records["3422"]["groups"] == {"problem": "685"}
    assert records["3425"]["problem_type"] == "numerical"
    assert {r["groups"]["problem"] for r in records.values() if r["id"] in {"6", "9", "10"}} == {
        "2"
    }


def test_options_come_from_another_version_when_the_row_shows_none(tmp_path: Path) -> None:
    rows = mathverse_rows()
    rows[2]["question_for_eval"] = "What is angle 2?"  # no choices anywhere in the row
    write_rows(tmp_path, rows)
    convert_dataset("mathverse", tmp_path)
    vision_only = _records(tmp_path)["10"]
    assert vision_only["options"] == ["50°", "60°", "65°", "90°"]
    assert (vision_only["problem_type"], vision_only["answer"]) == ("multiple_choice", "C")


def test_a_choice_problem_without_options_anywhere_stays_free_form(tmp_path: Path) -> None:
    rows = [_row("10", "2", "Vision Only", "", "C", "multi-choice", question_for_eval="Angle?")]
    write_rows(tmp_path, rows)
    convert_dataset("mathverse", tmp_path)
    alone = _records(tmp_path)["10"]
    assert (alone["problem_type"], alone["answer"]) == ("free_form", "C")
    assert "options" not in alone


def test_answer_forms_of_choice_questions(tmp_path: Path) -> None:
    rows = mathverse_rows()
    rows[0]["answer"] = "(C)"
    write_rows(tmp_path, rows)
    convert_dataset("mathverse", tmp_path)
    records = _records(tmp_path)
    assert records["6"]["answer"] == "C"
    true_false = records["2141"]
    assert true_false["options"] == ["True", "False"]
    assert (true_false["problem_type"], true_false["answer"]) == ("multiple_choice", "B")
    two_answers = records["2196"]
    assert (two_answers["problem_type"], two_answers["answer"]) == ("free_form", "C\nD")
    assert "options" not in two_answers


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = mathverse_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("mathverse", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": "E"}, "'answer' 'E' is not among the 4 options (A-D)"),
        (6, {"answer": "Maybe"}, "'answer' 'Maybe' is neither an option letter nor the text"),
        (3, {"answer": " "}, "'answer' is empty"),
        (3, {"problem_version": "Text Only"}, "'problem_version' is 'Text Only'"),
        (4, {"question_type": "short"}, "'question_type' is 'short'"),
        (5, {"query_wo": ""}, "'query_wo' is empty"),
        (5, {"sample_index": None}, "'sample_index' is empty"),
        (7, {"image": {"bytes": b"not an image", "path": None}}, "'image' is not a readable"),
        (7, {"image": None}, "'image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_mathverse_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["query_wo"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'query_wo'"):
        convert_dataset("mathverse", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches 'testmini\.parquet'"):
        convert_dataset("mathverse", tmp_path)


# The gold letter of single answers, checked in process (the mutation tests of issue 40).

OPTIONS = ["1", "2", "3", "4"]
ROW_DATA = {"sample_index": "7", "answer": "?"}


@pytest.mark.parametrize("answer", ["(A), (B)", "A\nC", "B, D"])
def test_several_option_letters_are_no_single_gold(answer: str) -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.mathverse import _gold

    assert _gold(Row(FILE, 3, ROW_DATA), answer, OPTIONS) is None


@pytest.mark.parametrize("answer", ["A, Q", "A,", "XA, XB"])
def test_an_answer_that_is_not_only_option_letters_is_an_error(answer: str) -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.mathverse import _gold

    with pytest.raises(RowError) as info:
        _gold(Row(FILE, 3, ROW_DATA), answer, OPTIONS)
    assert str(info.value) == (
        f"{FILE} row 3: field 'answer' {answer!r} is neither an option letter nor the text of "
        f"one of the options {OPTIONS}"
    )


# Options, ids and checked fields, in process (the mutation tests of issue 40).

#: A last "Choices:" line that lists no option: the options before it do not count.
TRAILING_CHOICES = "Find x.\nChoices:\nA:1\nB:2\nChoices:\n"


def test_option_lines_out_of_order_and_other_lines_are_skipped() -> None:
    from vlrl.data.formats.mathverse import parse_options

    assert parse_options("Find x.\nChoices:\nA:1\nnote\nC:3\nB:2") == ["1", "2"]


def test_a_single_option_is_no_options() -> None:
    from vlrl.data.formats.mathverse import parse_options

    assert parse_options("Find x.\nChoices:\nA:1") == []


@pytest.mark.parametrize(
    ("question", "question_for_eval", "options"),
    [
        pytest.param("What is x?", ANGLE, ["50°", "60°", "65°", "90°"], id="from-eval-text"),
        pytest.param("What is x?", "", [], id="empty-question-for-eval"),
        pytest.param(TRAILING_CHOICES, "", [], id="question-ends-with-choices"),
        pytest.param("What is x?", TRAILING_CHOICES, [], id="question-for-eval-ends-with-choices"),
    ],
)  # fmt: skip
def test_own_options_come_from_the_question_else_question_for_eval(
    question: str, question_for_eval: str, options: list[str]
) -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.mathverse import _own_options

    data = {"sample_index": "6", "question": question, "question_for_eval": question_for_eval}
    assert _own_options(Row(FILE, 0, data)) == options


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"problem_version": " Text Lite"},
            "field 'problem_version' is ' Text Lite', not one of ['Text Dominant', 'Text Lite', "
            "'Vision Intensive', 'Vision Dominant', 'Vision Only']",
        ),
        (
            {"question_type": "free-form "},
            "field 'question_type' is 'free-form ', not one of ('multi-choice', 'free-form')",
        ),
    ],
)
def test_a_padded_version_or_question_type_is_not_one_of_them(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mathverse import convert_row

    row = Row(FILE, 3, {**mathverse_rows()[3], **change})
    with pytest.raises(RowError) as info:
        convert_row(row, ImageStore(tmp_path), {})
    assert str(info.value) == f"{FILE} row 3: {message}"


def test_ids_and_shared_options_use_the_indices_as_written(tmp_path: Path) -> None:
    # convert() keys the shared options by the problem_index as the hub writes it.
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.mathverse import convert_row

    fields = {**mathverse_rows()[2], "sample_index": " 10", "problem_index": "2 "}
    options = ["50°", "60°", "65°", "90°"]
    fields["question_for_eval"] = "Find the angle."
    rec = convert_row(Row(FILE, 2, fields), ImageStore(tmp_path), {"2 ": options})
    assert (rec.id, rec.groups, rec.options, rec.answer) == (" 10", {"problem": "2 "}, options, "C")
