"""The mmvet format: lmms-lab/MMVet test parquet → canonical records (the grader prompt:
tests/scoring/test_judge_prompts.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

FILE = "data/test-00000-of-00001.parquet"


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 200, 90))


def mmvet_rows() -> list[dict[str, Any]]:
    """Five test-shaped rows: an <AND> answer, an <OR> answer, a long generation answer and
    capability strings in several orders."""
    rows = [
        ("v1_0", "What is x in the equation?", "-1<AND>-5", "ocr,math"),
        ("v1_13", "What is the price for tomatoes?", "eight<OR> 8.0", "ocr,spat"),
        (
            "v1_68",
            "Can you explain this meme?",
            "This meme is poking fun at the fact that the names of the countries Iceland and "
            "Greenland are misleading.",
            "rec,know,gen",
        ),
        ("v1_90", "Which room is bigger, the double garage or the living room?", "double garage",
         "ocr,spat,math"),
        ("v1_200", "What is the name of this landmark?", "Trevi Fountain", "know,rec"),
    ]  # fmt: skip
    return [
        {
            "question_id": qid,
            "image": _png(40 * i),
            "question": question,
            "answer": answer,
            "capability": capability,
        }
        for i, (qid, question, answer, capability) in enumerate(rows)
    ]


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (``datasets`` features; image as ``datasets.Image``)."""
    from datasets import Image, Value

    string = Value("string")
    features = {
        "question_id": string,
        "image": Image(),
        "question": string,
        "answer": string,
        "capability": string,
    }
    write_parquet(root / file, rows, features)


def write_mmvet_fixture(root: Path) -> None:
    """A small lmms-lab/MMVet test split under ``root`` in the hub's layout."""
    write_rows(root, mmvet_rows())


def test_converts_the_test_rows(tmp_path: Path) -> None:
    write_mmvet_fixture(tmp_path)
    assert convert_dataset("mmvet", tmp_path) == {"test": 5}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == ["v1_0", "v1_13", "v1_68", "v1_90", "v1_200"]
    assert all(r.image_sizes == [[32, 24]] and r.data_source == "mmvet" for r in records)
    assert all(r.problem_type == "free_form" and not r.options for r in records)
    first = records[0]
    assert (first.problem, first.answer, first.task) == (
        "What is x in the equation?",
        "-1<AND>-5",
        "ocr,math",
    )
    assert records[1].answer == "eight<OR> 8.0"
    # capabilities in MM-Vet's order, whatever the hub's
    assert [r.task for r in records] == [
        "ocr,math",
        "ocr,spat",
        "rec,know,gen",
        "ocr,spat,math",
        "rec,know",
    ]


def test_capability_as_a_list_is_accepted(tmp_path: Path) -> None:
    from datasets import Image, List, Value

    rows = mmvet_rows()[:2]
    rows[0]["capability"] = ["math", "ocr"]
    rows[1]["capability"] = ["ocr", "spat"]
    string = Value("string")
    features = {
        "question_id": string,
        "image": Image(),
        "question": string,
        "answer": string,
        "capability": List(string),
    }
    write_parquet(tmp_path / FILE, rows, features)
    convert_dataset("mmvet", tmp_path)
    lines = (tmp_path / "records" / "test.jsonl").read_text().splitlines()
    assert [json.loads(line)["task"] for line in lines] == ["ocr,math", "ocr,spat"]


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = mmvet_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("mmvet", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": " "}, "'answer' is empty"),
        (1, {"question": None}, "'question' is empty"),
        (2, {"question_id": None}, "'question_id' is empty"),
        (3, {"capability": "ocr,vision"}, "names ['vision'], not among"),
        (3, {"capability": ""}, "'capability' is empty"),
        (4, {"image": {"bytes": b"not an image", "path": None}}, "'image' is not a readable"),
        (4, {"image": None}, "'image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_mmvet_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["capability"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'capability'"):
        convert_dataset("mmvet", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches 'data/test-\*\.parquet'"):
        convert_dataset("mmvet", tmp_path)


# Single rows checked in process (the mutation tests of issue 40).

CAPABILITIES = "['rec', 'ocr', 'know', 'gen', 'spat', 'math']"


def _row_error(tmp_path: Path, **change: Any) -> str:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmvet import convert_row

    row = Row(FILE, 2, {**mmvet_rows()[2], **change})
    with pytest.raises(RowError) as info:
        convert_row(row, ImageStore(tmp_path))
    assert info.value.row_id == row.id
    return str(info.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"capability": ["ocr", 3]},
            "field 'capability' must be a string or a list of strings: ['ocr', 3]",
        ),
        (
            {"capability": 3},
            "field 'capability' must be a string or a list of strings: 3",
        ),
        (
            {"capability": []},
            f"field 'capability' [] names nothing, not among {CAPABILITIES}",
        ),
        (
            {"capability": "ocr, vision"},
            f"field 'capability' 'ocr, vision' names ['vision'], not among {CAPABILITIES}",
        ),
        ({"question_id": True}, "field 'question_id' must be a string: True"),
        ({"question_id": 1.5}, "field 'question_id' must be a string: 1.5"),
    ],
)
def test_a_bad_capability_or_question_id_is_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    assert _row_error(tmp_path, **change) == f"{FILE} row 2: {message}"


def test_an_integer_question_id_and_padded_texts_are_kept_trimmed(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.mmvet import convert_row

    fields = {**mmvet_rows()[0], "question_id": 7, "question": "  What is x?\n", "answer": " -1 "}
    rec = convert_row(Row(FILE, 0, fields), ImageStore(tmp_path))
    assert (rec.id, rec.problem, rec.answer, rec.task) == ("7", "What is x?", "-1", "ocr,math")
