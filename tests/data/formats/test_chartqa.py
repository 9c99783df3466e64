"""The chartqa format: lmms-lab/ChartQA test (human + augmented questions on charts) → records
scored by relaxed accuracy; a numeric answer is ``numerical``, any other ``free_form``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

TEST = "data/test-00000-of-00001.parquet"


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 255 - shade, 128), path=f"{shade}.png")


def _row(kind: str, question: str, answer: str, shade: int) -> dict[str, Any]:
    return {"type": kind, "question": question, "answer": answer, "image": _png(shade)}


def rows() -> list[dict[str, Any]]:
    """Human questions first, then augmented ones, as lmms-eval's upload_chartqa.py wrote them."""
    return [
        _row("human_test", "How many food item is shown in the bar graph?", "14", 0),
        _row("human_test", "Is the value of Favorable 38 in 2015?", "Yes", 30),
        _row("human_test", "What's the share of the largest segment? ", " 0.57 ", 30),
        _row("augmented_test", "Which party has the highest value?", "Democrats", 60),
        _row("augmented_test", "What is the total of the two bars?", "1,000", 90),
        _row("augmented_test", "What percentage is shown for Spain?", "12%", 120),
    ]


def write_rows(root: Path, file: str, items: list[dict[str, Any]]) -> None:
    """Write rows as the hub stores them (lmms-eval's upload_chartqa.py features)."""
    from datasets import Image, Value

    features = {
        "type": Value("string"),
        "question": Value("string"),
        "answer": Value("string"),
        "image": Image(),
    }
    write_parquet(root / file, items, features)


def write_chartqa_fixture(root: Path) -> None:
    """A small lmms-lab/ChartQA test under ``root``: 3 human and 3 augmented questions."""
    write_rows(root, TEST, rows())


def test_rows_become_records_numbered_in_file_order(tmp_path: Path) -> None:
    write_chartqa_fixture(tmp_path)
    assert convert_dataset("chartqa", tmp_path) == {"test": 6}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == ["0", "1", "2", "3", "4", "5"]
    first = records[0]
    # the bare question: lmms-eval's post-prompt ("Answer the question with a single word.") is
    # model-specific and replaced by vlrl's prompt format
    assert first.problem == "How many food item is shown in the bar graph?"
    assert (first.answer, first.problem_type, first.task) == ("14", "numerical", "human")
    assert first.data_source == "chartqa" and first.image_sizes == [[32, 24]]
    assert (records[2].problem, records[2].answer) == (
        "What's the share of the largest segment?",
        "0.57",
    )
    assert [r.task for r in records] == ["human"] * 3 + ["augmented"] * 3


def test_numbers_are_numerical_and_the_rest_free_form(tmp_path: Path) -> None:
    write_chartqa_fixture(tmp_path)
    convert_dataset("chartqa", tmp_path)
    types = {
        r["answer"]: r["problem_type"]
        for r in (json.loads(line) for line in (tmp_path / "records/test.jsonl").open())
    }
    # "12%" is a number to relaxed_correctness (0.12); "1,000" is not (float() rejects commas)
    assert types == {
        "14": "numerical",
        "Yes": "free_form",
        "0.57": "numerical",
        "Democrats": "free_form",
        "1,000": "free_form",
        "12%": "numerical",
    }


def test_ids_continue_across_files(tmp_path: Path) -> None:
    items = rows()
    write_rows(tmp_path, "data/test-00000-of-00002.parquet", items[:4])
    write_rows(tmp_path, "data/test-00001-of-00002.parquet", items[4:])
    convert_dataset("chartqa", tmp_path)
    lines = (tmp_path / "records/test.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["0", "1", "2", "3", "4", "5"]


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"type": "val"}, "field 'type' is 'val', not one of ['human_test', 'augmented_test']"),
        (1, {"answer": " "}, "field 'answer' is empty"),
        (2, {"answer": None}, "field 'answer' is empty"),
        (3, {"question": ""}, "field 'question' is empty"),
        (4, {"image": {"bytes": b"junk", "path": None}}, "'image' is not a readable image"),
        (5, {"image": None}, "field 'image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    items = rows()
    items[index].update(change)
    write_rows(tmp_path, TEST, items)
    with pytest.raises(DataError) as info:
        convert_dataset("chartqa", tmp_path)
    assert f"{TEST} row {index}" in str(info.value)
    assert needle in str(info.value)
