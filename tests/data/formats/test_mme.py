"""The mme format: lmms-lab/MME test (two yes/no questions per image) → canonical records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.mme import COGNITION, PERCEPTION
from vlrl.items.records import read_records

FIRST = "data/test-00000-of-00004-a25dbe3b44c4fda6.parquet"
SECOND = "data/test-00001-of-00004-7d22c7f1aba6fca4.parquet"


def _png(name: str) -> dict[str, Any]:
    shade = sum(map(ord, name)) % 256
    return encoded_image((shade, 128, 255 - shade), path=name.replace("/", "_"))


def _row(question_id: str, question: str, answer: str, category: str) -> dict[str, Any]:
    return {
        "question_id": question_id,
        "image": _png(question_id),
        "question": question,
        "answer": answer,
        "category": category,
    }


def first_rows() -> list[dict[str, Any]]:
    return [
        _row(
            "code_reasoning/0020.png",
            "Is a python code shown in the picture? Please answer yes or no.",
            "Yes",
            "code_reasoning",
        ),
        _row(
            "code_reasoning/0020.png",
            "Is a c++ code shown in the picture? Please answer yes or no.",
            "No",
            "code_reasoning",
        ),
        _row(
            "existence/000000006040.jpg",
            "Is there a train in this image? Please answer yes or no.",
            "Yes",
            "existence",
        ),
    ]


def second_rows() -> list[dict[str, Any]]:
    return [
        # the pair of existence/000000006040.jpg spans the two files
        _row(
            "existence/000000006040.jpg",
            "Is there a bed in this image? Please answer yes or no. ",
            "No.",
            "existence",
        ),
        # a question_id without its category folder is keyed as <category>/<question_id>
        _row(
            "0001.jpg",
            'Is the word in the logo "high\'style"? Please answer yes or no.',
            "Yes",
            "OCR",
        ),
        _row(
            "0001.jpg",
            'Is the word in the logo "high\'styles"? Please answer yes or no.',
            "No",
            "OCR",
        ),
    ]


def write_rows(root: Path, file: str, rows: list[dict[str, Any]]) -> None:
    """Write rows as the hub stores them (the dataset card's features)."""
    from datasets import Image, Value

    string = Value("string")
    features = {
        "question_id": string,
        "image": Image(),
        "question": string,
        "answer": string,
        "category": string,
    }
    write_parquet(root / file, rows, features)


def write_mme_fixture(root: Path) -> None:
    """A small lmms-lab/MME test under ``root``: three images, two questions each, over two of
    the four parquet files (one pair spans both)."""
    write_rows(root, FIRST, first_rows())
    write_rows(root, SECOND, second_rows())


def _records(root: Path) -> list[dict[str, Any]]:
    lines = (root / "records" / "test.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_rows_become_yes_no_records(tmp_path: Path) -> None:
    write_mme_fixture(tmp_path)
    assert convert_dataset("mme", tmp_path) == {"test": 6}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == [  # file order
        "code_reasoning/0020.png#0",
        "code_reasoning/0020.png#1",
        "existence/000000006040.jpg#0",
        "existence/000000006040.jpg#1",
        "OCR/0001.jpg#0",
        "OCR/0001.jpg#1",
    ]
    first = records[0]
    # MME's own instruction stays: lmms-eval drops it only when it appends its post-prompt
    assert first.problem == "Is a python code shown in the picture? Please answer yes or no."
    assert (first.answer, first.problem_type, first.task) == ("yes", "yes_no", "code_reasoning")
    assert first.groups == {"image": "code_reasoning/0020.png"}
    assert first.data_source == "mme" and first.image_sizes == [[32, 24]]
    assert records[1].answer == "no"
    bed = records[3]
    assert bed.problem == "Is there a bed in this image? Please answer yes or no."  # stripped
    assert bed.answer == "no"  # "No." as lmms-eval normalises it
    assert {r.groups["image"] for r in records[4:]} == {"OCR/0001.jpg"}
    assert records[4].task == "OCR"


def test_each_image_is_one_group_of_two(tmp_path: Path) -> None:
    write_mme_fixture(tmp_path)
    convert_dataset("mme", tmp_path)
    groups: dict[str, list[str]] = {}
    for rec in _records(tmp_path):
        groups.setdefault(rec["groups"]["image"], []).append(rec["answer"])
    assert groups == {
        "code_reasoning/0020.png": ["yes", "no"],
        "existence/000000006040.jpg": ["yes", "no"],
        "OCR/0001.jpg": ["yes", "no"],
    }
    # the two questions of an image share one stored picture
    images = {tuple(r["images"]) for r in _records(tmp_path)}
    assert len(images) == 3


def test_categories_are_lmms_eval_perception_and_cognition() -> None:
    assert len(PERCEPTION) == 10 and len(COGNITION) == 4
    assert "OCR" in PERCEPTION and "code_reasoning" in COGNITION


def _bad(tmp_path: Path, file: str, index: int | None, **change: Any) -> str:
    first, second = first_rows(), second_rows()
    rows = first if file == FIRST else second
    if index is not None and change:
        rows[index].update(change)
    elif index is not None:
        del rows[index]
    write_rows(tmp_path, FIRST, first)
    write_rows(tmp_path, SECOND, second)
    with pytest.raises(DataError) as info:
        convert_dataset("mme", tmp_path)
    return str(info.value)


@pytest.mark.parametrize(
    ("file", "index", "change", "needle"),
    [
        (FIRST, 0, {"answer": "Maybe"}, "'answer' is 'Maybe', not Yes or No"),
        (FIRST, 1, {"answer": ""}, "field 'answer' is empty"),
        (FIRST, 2, {"category": "ocr"}, "'category' is 'ocr', not one of MME's 14 subtasks"),
        (FIRST, 0, {"question_id": None}, "field 'question_id' is empty"),
        (FIRST, 1, {"question": None}, "field 'question' is empty"),
        (FIRST, 2, {"image": {"bytes": b"junk", "path": None}}, "'image' is not a readable"),
        (FIRST, 2, {"image": None}, "field 'image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, file: str, index: int, change: dict[str, Any], needle: str
) -> None:
    message = _bad(tmp_path, file, index, **change)
    assert f"{file} row {index}" in message
    assert needle in message


def test_a_third_question_on_an_image_is_an_error(tmp_path: Path) -> None:
    message = _bad(
        tmp_path, SECOND, 1, question_id="existence/000000006040.jpg", category="existence"
    )
    assert f"{SECOND} row 1: is a third question on image 'existence/000000006040.jpg'" in message
    assert f"{FIRST} row 2, {SECOND} row 0" in message


def test_an_image_with_one_question_is_an_error(tmp_path: Path) -> None:
    message = _bad(tmp_path, SECOND, 0)  # the second question of existence/000000006040.jpg
    assert message == (
        f"{FIRST} row 2: is the only question on image 'existence/000000006040.jpg'; MME asks "
        "two on each image (lmms-eval: 'MME only supports pairwise evaluation')"
    )
