"""The mathvista format: AI4Math/MathVista testmini parquet → canonical records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

FILE = "data/testmini-00000-of-00001-725687bf7a18d64b.parquet"
MC_HINT = (
    "Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, "
    "at the end."
)


def _meta(task: str, skills: list[str]) -> dict[str, Any]:
    return {
        "category": "math-targeted-vqa",
        "context": "geometry diagram",
        "grade": "high school",
        "img_height": 24,
        "img_width": 32,
        "language": "english",
        "skills": skills,
        "source": "Geometry3K",
        "split": "testmini",
        "task": task,
    }


def mathvista_rows() -> list[dict[str, Any]]:
    """Six testmini-shaped rows: multi_choice (one with a repeated choice), integer with a unit,
    float with one and with two decimals, list."""
    rows = [
        dict(
            pid="1",
            question="What is the measure of angle H?",
            choices=["97", "102", "107", "122"],
            unit=None,
            precision=None,
            answer="107",
            question_type="multi_choice",
            answer_type="text",
            metadata=_meta("geometry problem solving", ["geometry reasoning"]),
        ),
        dict(
            pid="2",
            question="How many years apart were the two people born?",
            choices=None,
            unit="years",
            precision=None,
            answer="7",
            question_type="free_form",
            answer_type="integer",
            metadata=_meta("visual question answering", ["numeric commonsense"]),
        ),
        dict(
            pid="3",
            question="By what distance is the spring compressed?",
            choices=None,
            unit=None,
            precision=1.0,
            answer="1.2",
            question_type="free_form",
            answer_type="float",
            metadata=_meta("textbook question answering", ["scientific reasoning"]),
        ),
        dict(
            pid="4",
            question="What is the average of the bottom two bars?",
            choices=None,
            unit="",
            precision=2.0,
            answer="51.04",
            question_type="free_form",
            answer_type="float",
            metadata=_meta("figure question answering", ["statistical reasoning"]),
        ),
        dict(
            pid="5",
            question="Between which two years is the line highest?",
            choices=None,
            unit=None,
            precision=None,
            answer="[2014, 2016]",
            question_type="free_form",
            answer_type="list",
            metadata=_meta("figure question answering", ["statistical reasoning"]),
        ),
        dict(
            pid="6",
            question="Find CD.",
            choices=["9", "12", "18", "18"],
            unit=None,
            precision=None,
            answer="18",
            question_type="multi_choice",
            answer_type="text",
            metadata=_meta("geometry problem solving", ["geometry reasoning"]),
        ),
    ]
    for i, row in enumerate(rows):
        row["image"] = f"images/{row['pid']}.jpg"
        row["decoded_image"] = encoded_image((40 * i, 90, 200))
        row["query"] = f"Hint: ...\nQuestion: {row['question']}"
    return rows


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (``datasets`` features of the dataset card)."""
    from datasets import Image, List, Value

    string = Value("string")
    features = {
        "pid": string,
        "question": string,
        "image": string,
        "decoded_image": Image(),
        "choices": List(string),
        "unit": string,
        "precision": Value("float64"),
        "answer": string,
        "question_type": string,
        "answer_type": string,
        "metadata": {
            "category": string,
            "context": string,
            "grade": string,
            "img_height": Value("int64"),
            "img_width": Value("int64"),
            "language": string,
            "skills": List(string),
            "source": string,
            "split": string,
            "task": string,
        },
        "query": string,
    }
    write_parquet(root / file, rows, features)


def write_mathvista_fixture(root: Path) -> None:
    """A small AI4Math/MathVista testmini under ``root`` in the hub's layout and schema."""
    write_rows(root, mathvista_rows())


def _records(root: Path) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / "testmini.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_converts_the_testmini_rows(tmp_path: Path) -> None:
    write_mathvista_fixture(tmp_path)
    assert convert_dataset("mathvista", tmp_path) == {"testmini": 6}
    records = read_records(tmp_path / "records" / "testmini.jsonl")
    assert [r.id for r in records] == ["1", "2", "3", "4", "5", "6"]
    assert all(r.image_sizes == [[32, 24]] and r.data_source == "mathvista" for r in records)
    by_id = {r.id: r for r in records}

    mc = by_id["1"]
    assert mc.problem_type == "multiple_choice"
    assert mc.options == ["97", "102", "107", "122"]
    assert mc.answer == "C"
    assert mc.task == "geometry problem solving"
    assert mc.problem == (
        "Question: What is the measure of angle H?\nChoices:\n(A) 97\n(B) 102\n(C) 107\n"
        f"(D) 122\n{MC_HINT}"
    )

    integer = by_id["2"]
    assert (integer.problem_type, integer.answer, integer.options) == ("numerical", "7", [])
    assert integer.problem == (
        "Question: How many years apart were the two people born? (Unit: years)\n"
        "Hint: Please answer the question requiring an integer answer and provide the final "
        "value, e.g., 1, 2, 3, at the end."
    )
    assert integer.task == "visual question answering"


def test_hints_follow_answer_type_and_precision(tmp_path: Path) -> None:
    write_mathvista_fixture(tmp_path)
    convert_dataset("mathvista", tmp_path)
    records = _records(tmp_path)
    one, two, listed = records["3"], records["4"], records["5"]
    assert one["problem"].endswith(
        "with one decimal place and provide the final value, e.g., 1.2, 1.3, 1.4, at the end."
    )
    assert (one["problem_type"], one["answer"]) == ("numerical", "1.2")
    # an empty unit adds nothing, as `if unit:` in the reference
    assert two["problem"].startswith("Question: What is the average of the bottom two bars?\n")
    assert "two decimal places" in two["problem"] and two["answer"] == "51.04"
    assert (listed["problem_type"], listed["answer"]) == ("free_form", "[2014, 2016]")
    assert listed["problem"].endswith(
        "provide the final list, e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end."
    )


def test_a_repeated_choice_text_accepts_each_of_its_letters(tmp_path: Path) -> None:
    # The reference compares choice texts: "18" is right as C and as D (testmini 781).
    write_mathvista_fixture(tmp_path)
    convert_dataset("mathvista", tmp_path)
    records = _records(tmp_path)
    repeated = records["6"]
    assert repeated["options"] == ["9", "12", "18", "18"]
    assert (repeated["answer"], repeated["accepted"]) == ("C", ["D"])
    assert "accepted" not in records["1"]  # one choice has the gold text


def test_float_answers_keep_their_precision(tmp_path: Path) -> None:
    # The reference rounds a float prediction to the answer's precision before comparing.
    write_mathvista_fixture(tmp_path)
    convert_dataset("mathvista", tmp_path)
    by_id = {r.id: r for r in read_records(tmp_path / "records" / "testmini.jsonl")}
    assert [by_id[i].precision for i in ["1", "2", "3", "4", "5"]] == [None, None, 1, 2, None]
    assert "precision" not in _records(tmp_path)["2"]  # integers carry none


def test_images_are_stored_once_under_records(tmp_path: Path) -> None:
    rows = mathvista_rows()
    rows[1]["decoded_image"] = rows[0]["decoded_image"]
    write_rows(tmp_path, rows)
    convert_dataset("mathvista", tmp_path)
    records = _records(tmp_path)
    assert records["1"]["images"] == records["2"]["images"]
    assert len(list((tmp_path / "records" / "images").iterdir())) == 5


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = mathvista_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("mathvista", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": "108"}, "'answer' '108' is not one of the choices"),
        (0, {"choices": None}, "'choices' is empty"),
        (0, {"answer_type": "integer"}, "'answer_type' is 'integer'"),
        (1, {"answer": "seven"}, "'answer' 'seven' is not a number"),
        (1, {"answer": " "}, "'answer' is empty"),
        (1, {"answer_type": "text"}, "'answer_type' is 'text'"),
        (2, {"precision": None}, "'precision' is empty"),
        (2, {"precision": 3.0}, "'precision' is 3"),
        (3, {"question_type": "short"}, "'question_type' is 'short'"),
        (4, {"decoded_image": {"bytes": b"not an image", "path": None}}, "'decoded_image'"),
        (4, {"decoded_image": None}, "'decoded_image' is empty"),
        (5, {"metadata": None}, "'metadata' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_mathvista_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["question"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'question'"):
        convert_dataset("mathvista", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches 'data/testmini-\*\.parquet'"):
        convert_dataset("mathvista", tmp_path)


# The precision field, checked in process (the mutation tests of issue 40).


@pytest.mark.parametrize("value", [1.5, float("nan"), "2"])
def test_a_precision_that_is_not_a_whole_number_is_the_whole_row_message(value: Any) -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.mathvista import _precision

    with pytest.raises(RowError) as info:
        _precision(Row(FILE, 2, {"pid": "3", "precision": value}))
    assert str(info.value) == (
        f"{FILE} row 2: field 'precision' must be a whole number for a float answer: {value!r}"
    )


def test_a_whole_float_precision_is_its_integer() -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.mathvista import _precision

    assert _precision(Row(FILE, 2, {"pid": "3", "precision": 2.0})) == 2


@pytest.mark.parametrize(
    ("question_type", "answer_type", "precision", "message"),
    [
        pytest.param(
            "multi_choice", "integer", None,
            "field 'answer_type' is 'integer'; multi_choice rows must be 'text' (lmms-eval "
            "create_one_query asserts it)",
            id="multi-choice-not-text",
        ),
        pytest.param(
            "free_form", "float", 3.0,
            "field 'precision' is 3; lmms-eval's prompt has a hint only for float answers with 1 "
            "or 2 decimals",
            id="three-decimals",
        ),
        pytest.param(
            "free_form", "text", None,
            "field 'answer_type' is 'text'; a free_form row must be integer, float or list "
            "(lmms-eval create_one_query asserts it)",
            id="free-form-text",
        ),
    ],
)  # fmt: skip
def test_a_row_without_an_lmms_eval_hint_is_the_whole_row_message(
    question_type: str, answer_type: str, precision: float | None, message: str
) -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.mathvista import _hint

    row = Row(FILE, 2, {"pid": "3", "precision": precision})
    with pytest.raises(RowError) as info:
        _hint(row, question_type, answer_type)
    assert str(info.value) == f"{FILE} row 2: {message}"


def _convert_row(tmp_path: Path, index: int, **change: Any):
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.mathvista import convert_row

    return convert_row(
        Row(FILE, index, {**mathvista_rows()[index], **change}), ImageStore(tmp_path)
    )


@pytest.mark.parametrize(
    ("index", "change", "message"),
    [
        pytest.param(0, {"answer": 107}, "field 'answer' must be a string: 107", id="answer-int"),
        pytest.param(0, {"metadata": "geometry"}, "field 'metadata' has no task: 'geometry'",
                     id="metadata-not-a-dict"),
        pytest.param(0, {"choices": None}, "field 'choices' is empty for a multi_choice question",
                     id="no-choices"),
        pytest.param(2, {"answer": "about 1"}, "field 'answer' 'about 1' is not a number (float)",
                     id="float-not-a-number"),
        pytest.param(1, {"metadata": {"task": 5}}, "task: Input should be a valid string",
                     id="task-not-a-string"),
        pytest.param(0, {"choices": "97"}, "field 'choices' must be a list of strings: '97'",
                     id="choices-a-string"),
        pytest.param(0, {"choices": ["97", 102]},
                     "field 'choices' must be a list of strings: ['97', 102]",
                     id="choices-with-a-number"),
        pytest.param(0, {"choices": [str(i) for i in range(27)]},
                     "field 'choices' has 27 entries, more than letters A-Z", id="27-choices"),
    ],
)  # fmt: skip
def test_a_bad_row_is_the_whole_row_message(
    tmp_path: Path, index: int, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError) as info:
        _convert_row(tmp_path, index, **change)
    assert str(info.value) == f"{FILE} row {index}: {message}"


def test_twenty_six_choices_take_every_letter(tmp_path: Path) -> None:
    choices = [f"c{i}" for i in range(26)]
    rec = _convert_row(tmp_path, 0, choices=choices, answer="c25")
    assert (rec.options, rec.answer) == (choices, "Z")
