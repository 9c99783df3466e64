"""The visnumbench format: GML-FMGroup/VisNumBench (synthetic and real-world scenarios, one
``train`` split) → multiple-choice records in the authors' prompt layout, the attribute as the
task, ids made unique by the scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.visnumbench import answer_letter, parse_options
from vlrl.items.records import read_records

FILE = "data/train-00000-of-00001.parquet"
#: The card's feature order.
COLUMNS = ("class", "id", "question", "option", "answer", "task_class", "Attributes", "image")


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 90, 200), (36, 28))


def visnumbench_rows() -> list[dict[str, Any]]:
    """Six rows shaped like the authors' Synthetic.json / Real.json: 3 to 5 options, options
    holding parentheses, and the raw id "17_Scale" in both scenarios."""
    rows = [
        ("Synthetic", "17_Scale",
         "Which of the following ranges is most likely to be the value of the class C in the "
         "figure?",
         "(a) (0.50, 0.60) (b) (0.0, 0.10) (c) (0.80, 0.90) (d) (0.20, 0.30)",
         "(b) (0.0, 0.10)", "range estimation", "Scale"),
        ("Synthetic", "121_Depth",
         "Four points are circled on the figure, labeled by A, B, C and D beside each circle. "
         "Which of the following options is most likely to be the order in which these points "
         "are located from closest to farthest from the viewer?",
         "(a) CDAB (b) ADCB (c) DBCA (d) ACBD", "(a) CDAB", "value comparison", "Depth"),
        ("Synthetic", "8_Area",
         "Which of the following options is a reasonable estimate of the area ratio of the "
         "red shape to the blue shape?",
         "(a) 0.5 (b) 1.5 (c) 2.5 (d) 3.5 (e) 4.5", "(e) 4.5", "multiplicative estimation",
         "Area"),
        ("Real", "17_Scale",
         "Which of the following options is a reasonable estimate of the time the clock in the "
         "figure is pointing to?",
         "(a) 1 hours and 26 minutes (b) 10 hours and 43 minutes (c) 3 hours and 55 minutes",
         "(c) 3 hours and 55 minutes", "value estimation", "Scale"),
        ("Real", "11_Angle",
         "Which of the following options best estimates the angle between the two chopsticks "
         "in the figure?",
         "(a) (50, 60) degrees (b) (150, 160) degrees (c) (20, 30) degrees (d) (130, 140) degrees",
         "(a) (50, 60) degrees", "range estimation", "Angle"),
        ("Real", "72_Volume",
         "The total capacity of the bottle is 1500 ml. Which of the following options is a "
         "reasonable estimate of the volume of water in the bottle?",
         "(a) 200 ml (b) 1000 ml (c) 700 ml (d) 500 ml", "(d) 500 ml", "value estimation",
         "Volume"),
    ]  # fmt: skip
    return [dict(zip(COLUMNS, (*row, _png(30 * i)), strict=True)) for i, row in enumerate(rows)]


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (the card's features; image as ``datasets.Image``)."""
    from datasets import Image, Value

    features = {name: Image() if name == "image" else Value("string") for name in COLUMNS}
    write_parquet(root / file, rows, features)


def write_visnumbench_fixture(root: Path) -> None:
    """A small GML-FMGroup/VisNumBench under ``root`` in the hub's layout."""
    write_rows(root, visnumbench_rows())


def test_converts_the_rows(tmp_path: Path) -> None:
    write_visnumbench_fixture(tmp_path)
    assert convert_dataset("visnumbench", tmp_path) == {"test": 6}
    records = read_records(tmp_path / "records" / "test.jsonl")
    # the raw id repeats across scenarios; the scenario makes it unique
    assert [r.id for r in records] == [
        "Synthetic_17_Scale",
        "Synthetic_121_Depth",
        "Synthetic_8_Area",
        "Real_17_Scale",
        "Real_11_Angle",
        "Real_72_Volume",
    ]
    assert all(
        r.problem_type == "multiple_choice" and r.data_source == "visnumbench" for r in records
    )
    assert all(r.image_sizes == [[36, 28]] for r in records)
    assert [r.answer for r in records] == ["B", "A", "E", "C", "A", "D"]
    assert [r.task for r in records] == ["Scale", "Depth", "Area", "Scale", "Angle", "Volume"]
    assert [len(r.options) for r in records] == [4, 4, 5, 3, 4, 4]
    angle = records[4]
    assert angle.options == [
        "(50, 60) degrees",
        "(150, 160) degrees",
        "(20, 30) degrees",
        "(130, 140) degrees",
    ]
    # build_prompt's layout, its answer instruction left out, the labels upper-cased
    assert angle.problem == (
        "Question: Which of the following options best estimates the angle between the two "
        "chopsticks in the figure?\n"
        "Options: (A) (50, 60) degrees (B) (150, 160) degrees (C) (20, 30) degrees "
        "(D) (130, 140) degrees"
    )
    assert angle.groups == {"scenario": "Real", "task_class": "range estimation"}


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("(a) 1.2 (b) 2.5", ["1.2", "2.5"]),
        ("  (a) [1, 10) (b) [10, 20) (c) More than 30 ", ["[1, 10)", "[10, 20)", "More than 30"]),
        ("(A) CDAB (B) ADCB", ["CDAB", "ADCB"]),
        ("(a) (1 hours and 50 minutes, 1 hours and 59 minutes) (b) (8 hours, 9 hours)",
         ["(1 hours and 50 minutes, 1 hours and 59 minutes)", "(8 hours, 9 hours)"]),
    ],
)  # fmt: skip
def test_parse_options(option: str, expected: list[str]) -> None:
    assert parse_options(option) == expected


@pytest.mark.parametrize(
    ("option", "answer", "needle"),
    [
        ("1.2 (a) 2.5 (b)", "(a) 2.5", "is not labelled (a), (b), (c)"),
        ("(a) 1.2 (c) 2.5", "(a) 1.2", "is not labelled"),
        ("(a) 1.2 (b)", "(a) 1.2", "has an empty option"),
        ("(a) 1.2 (b) 2.5", "(c) 3.8", "names option C, past the 2 options"),
        ("(a) 1.2 (b) 2.5", "(b) 3.8", "disagrees with option (B) '2.5'"),
        ("(a) 1.2 (b) 2.5", "2.5", "does not open with an option label"),
    ],
)
def test_bad_options_and_answers(option: str, answer: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        answer_letter(answer, parse_options(option))


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = visnumbench_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("visnumbench", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": "(e) 0.9"}, "field 'answer' '(e) 0.9' names option E, past the 4 options"),
        (1, {"answer": "(a) ADCB"}, "field 'answer' '(a) ADCB' disagrees with option (A) 'CDAB'"),
        (2, {"option": "(a) 0.5 (c) 1.5"}, "field 'option' is not labelled"),
        (3, {"Attributes": "Time"}, "field 'Attributes' is 'Time', not one of ['Angle'"),
        (3, {"class": ""}, "field 'class' is empty"),
        (4, {"question": None}, "field 'question' is empty"),
        (4, {"task_class": " "}, "field 'task_class' is empty"),
        (5, {"image": {"bytes": b"not an image", "path": None}}, "'image' is not a readable"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_repeated_scenario_and_id_is_an_error(tmp_path: Path) -> None:
    rows = visnumbench_rows()
    rows[3]["class"] = "Synthetic"  # now "Synthetic_17_Scale" twice
    write_rows(tmp_path, rows)
    with pytest.raises(DataError, match="id 'Synthetic_17_Scale' appears twice in test"):
        convert_dataset("visnumbench", tmp_path)


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_visnumbench_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["Attributes"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'Attributes'"):
        convert_dataset("visnumbench", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches 'data/train-\*\.parquet'"):
        convert_dataset("visnumbench", tmp_path)
