"""The mathvision format: MathLLMs/MathVision test and testmini parquet → canonical records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

TEST = "data/test-00000-of-00001-3532b8d3f1b4047a.parquet"
TESTMINI = "data/testmini-00000-of-00001-f8ff70fcb2f29b1d.parquet"
WEEKDAYS = ["Wednesday", "Thursday", "Friday", "Tuesday", "Sunday"]


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 120, 60))


def _row(
    item_id: str,
    question: str,
    answer: str,
    subject: str,
    options: list[str] | None = None,
    level: int = 2,
) -> dict[str, Any]:
    return {
        "id": item_id,
        "question": question,
        "options": options or [],
        "image": f"images/{item_id}.jpg",
        "decoded_image": _png(int(item_id) % 250),
        "answer": answer,
        "solution": None,
        "level": level,
        "subject": subject,
    }


def split_test_rows() -> list[dict[str, Any]]:
    """Five test-shaped rows: multiple choice with text options and with options drawn in the
    image, a number, an expression (with the hub's form-feed ``\\frac``), and a letter answer
    without options."""
    return [
        _row("1", "Which number should be written in place of the question mark?\n<image1>",
             "60", "arithmetic"),
        _row("12", "Which day of the week is it?\n<image1>", "C", "logic", WEEKDAYS),
        _row("17", "Which picture shows the shape from above?\n<image1>\n<image2>", "E",
             "descriptive geometry", ["A", "B", "C", "D", "E"]),
        _row("2830", "What is the radius of the small circle?\n<image1>", "\x0crac{36}{13}",
             "metric geometry - length", level=5),
        _row("59", "<image1>\nWhich side is opposite to <image3>?\n<image4>", "C",
             "solid geometry", level=1),
    ]  # fmt: skip


def split_testmini_rows() -> list[dict[str, Any]]:
    """Two testmini-shaped rows (testmini is a subset of test: its ids recur)."""
    return [
        _row("4", "How many different digits can you find in this picture?\n<image1>", "6",
             "counting", level=1),
        _row("12", "Which day of the week is it?\n<image1>", "C", "logic", WEEKDAYS),
    ]  # fmt: skip


def write_rows(root: Path, rows: list[dict[str, Any]], file: str) -> None:
    """Write rows as the hub stores them (``datasets`` features of the dataset card)."""
    from datasets import Image, List, Value

    string = Value("string")
    features = {
        "id": string,
        "question": string,
        "options": List(string),
        "image": string,
        "decoded_image": Image(),
        "answer": string,
        "solution": string,
        "level": Value("int64"),
        "subject": string,
    }
    write_parquet(root / file, rows, features)


def write_mathvision_fixture(root: Path) -> None:
    """A small MathLLMs/MathVision (test + testmini) under ``root`` in the hub's layout."""
    write_rows(root, split_test_rows(), TEST)
    write_rows(root, split_testmini_rows(), TESTMINI)


def _records(root: Path, split: str) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / f"{split}.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_converts_both_splits(tmp_path: Path) -> None:
    write_mathvision_fixture(tmp_path)
    assert convert_dataset("mathvision", tmp_path) == {"test": 5, "testmini": 2}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == ["1", "12", "17", "2830", "59"]
    assert all(r.image_sizes == [[32, 24]] and r.data_source == "mathvision" for r in records)
    by_id = {r.id: r for r in records}

    choice = by_id["12"]
    assert choice.problem == (
        "Which day of the week is it?\n<image1>\nChoices: A. Wednesday\nB. Thursday\nC. Friday\n"
        "D. Tuesday\nE. Sunday"
    )
    assert (choice.problem_type, choice.answer, choice.options) == (
        "multiple_choice",
        "C",
        WEEKDAYS,
    )
    assert choice.task == "logic"

    number = by_id["1"]
    assert (
        number.problem == "Which number should be written in place of the question mark?\n<image1>"
    )
    assert (number.problem_type, number.answer, number.options) == ("numerical", "60", [])
    assert number.task == "arithmetic"

    mini = read_records(tmp_path / "records" / "testmini.jsonl")
    assert [(r.id, r.problem_type, r.answer) for r in mini] == [
        ("4", "numerical", "6"),
        ("12", "multiple_choice", "C"),
    ]


def test_edge_rows(tmp_path: Path) -> None:
    write_mathvision_fixture(tmp_path)
    convert_dataset("mathvision", tmp_path)
    records = _records(tmp_path, "test")
    in_image = records["17"]  # the options are drawn: lmms-eval still lists the letters
    assert in_image["options"] == ["A", "B", "C", "D", "E"]
    assert in_image["problem"].endswith("<image2>\nChoices: A. A\nB. B\nC. C\nD. D\nE. E")
    assert (in_image["problem_type"], in_image["answer"]) == ("multiple_choice", "E")
    expression = records["2830"]
    assert (expression["problem_type"], expression["answer"]) == ("free_form", "\\frac{36}{13}")
    letter = records["59"]  # options only in the image, none on the hub
    assert (letter["problem_type"], letter["answer"], letter["task"]) == (
        "free_form",
        "C",
        "solid geometry",
    )
    assert "Choices" not in letter["problem"]


def test_one_split_alone(tmp_path: Path) -> None:
    write_rows(tmp_path, split_testmini_rows(), TESTMINI)
    assert convert_dataset("mathvision", tmp_path) == {"testmini": 2}


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = split_test_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows, TEST)
    with pytest.raises(DataError) as info:
        convert_dataset("mathvision", tmp_path)
    message = str(info.value)
    assert f"{TEST} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (1, {"answer": "F"}, "'answer' 'F' is not an option letter (A-E) of the 5 options"),
        (1, {"answer": "Friday"}, "'answer' 'Friday' is not an option letter"),
        (1, {"options": ["Monday", " "]}, "'options' has an empty option"),
        (0, {"answer": ""}, "'answer' is empty"),
        (0, {"question": None}, "'question' is empty"),
        (3, {"subject": None}, "'subject' is empty"),
        (4, {"decoded_image": {"bytes": b"not an image", "path": None}}, "'decoded_image'"),
        (4, {"decoded_image": None}, "'decoded_image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_missing_column_and_missing_files(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_rows(tmp_path, split_test_rows(), TEST)
    path = tmp_path / TEST
    pq.write_table(pq.read_table(path).drop_columns(["options"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'options'"):
        convert_dataset("mathvision", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches any of"):
        convert_dataset("mathvision", tmp_path)


# Single rows checked in process (the mutation tests of issue 40).


def _convert_row(tmp_path: Path, index: int, **change: Any):
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.mathvision import convert_row

    row = Row(TEST, index, {**split_test_rows()[index], **change})
    return convert_row(row, ImageStore(tmp_path))


def test_id_question_and_subject_are_kept_as_written(tmp_path: Path) -> None:
    rec = _convert_row(tmp_path, 0, id=" 1", question=" How many?\n", subject="arithmetic ")
    assert (rec.id, rec.problem, rec.task, rec.answer) == (
        " 1",
        " How many?\n",
        "arithmetic ",
        "60",
    )


def test_null_options_are_no_options(tmp_path: Path) -> None:
    rec = _convert_row(tmp_path, 0, options=None)
    assert (rec.options, rec.problem_type) == ([], "numerical")


def test_twenty_six_options_take_every_letter(tmp_path: Path) -> None:
    options = [f"o{i}" for i in range(26)]
    rec = _convert_row(tmp_path, 1, options=options, answer="Z")
    assert (rec.options, rec.answer, rec.problem_type) == (options, "Z", "multiple_choice")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"options": "AB"}, "field 'options' must be a list of strings: 'AB'",
                     id="options-a-string"),
        pytest.param({"options": ["A", 2]}, "field 'options' must be a list of strings: ['A', 2]",
                     id="options-with-a-number"),
        pytest.param({"options": [f"o{i}" for i in range(27)]},
                     "field 'options' has 27 entries, more than letters A-Z", id="27-options"),
    ],
)  # fmt: skip
def test_bad_options_are_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError) as info:
        _convert_row(tmp_path, 1, **change)
    assert str(info.value) == f"{TEST} row 1: {message}"


def test_an_unreadable_picture_names_the_decoded_image_field(tmp_path: Path) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError, match=r"^" + re.escape(TEST) + r" row 0: field 'decoded_image' "
                       r"is not a readable image: cannot identify image file <_io\.BytesIO "
                       r"object at 0x[0-9a-f]+>$"):  # fmt: skip
        _convert_row(tmp_path, 0, decoded_image={"bytes": b"not a picture", "path": None})
