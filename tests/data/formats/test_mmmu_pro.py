"""The mmmu_pro format: MMMU/MMMU_Pro ``standard (4 options)``, ``standard (10 options)`` and
``vision`` → records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.mmmu_pro import VISION_PROMPT
from vlrl.items.records import read_records

STANDARD = (
    "standard (10 options)/test-00000-of-00002.parquet",
    "standard (10 options)/test-00001-of-00002.parquet",
)
STANDARD_4 = (
    "standard (4 options)/test-00000-of-00002.parquet",
    "standard (4 options)/test-00001-of-00002.parquet",
)
VISION = "vision/test-00000-of-00001.parquet"
IMAGES = [f"image_{i}" for i in range(1, 8)]
TEN = "['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']"


def _png(shade: int, size: tuple[int, int] = (32, 24)) -> dict[str, Any]:
    return encoded_image((shade, 60, 200), size)


def _standard(
    item_id: str, question: str, options: str, answer: str, subject: str, images: int = 1
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": item_id,
        "question": question,
        "options": options,
        "explanation": "",
        "img_type": "['Diagrams']",
        "answer": answer,
        "topic_difficulty": "Hard",
        "subject": subject,
    }
    for i, name in enumerate(IMAGES):
        row[name] = _png(20 * i + len(item_id)) if i < images else None
    return row


def standard_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two shards, as the hub splits the config in two files."""
    first = [
        _standard("test_History_1", "Which event does <image 1> show?", TEN, "J", "History"),
        _standard(
            "validation_Chemistry_12",
            "Which structure matches <image 1>?",
            "['<image 2>', '<image 3>', 'neither']",
            "B",
            "Chemistry",
            images=3,
        ),
    ]
    second = [_standard("test_Art_7", "Who painted <image 1>?", TEN, "A", "Art")]
    return first, second


def vision_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": "test_History_1",
            "image": _png(10, (48, 36)),
            "options": TEN,
            "answer": "J",
            "subject": "History",
        },
        {
            "id": "test_Art_7",
            "image": _png(90, (48, 36)),
            "options": TEN,
            "answer": "A",
            "subject": "Art",
        },
    ]


def standard_4_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The same questions with four options (two shards, as on the hub)."""
    four = "['a', 'b', 'c', 'd']"
    first = [_standard("test_History_1", "Which event does <image 1> show?", four, "D", "History")]
    second = [_standard("test_Art_7", "Who painted <image 1>?", four, "A", "Art")]
    return first, second


def write_standard(
    root: Path, shards: tuple[list[dict[str, Any]], ...], files: tuple[str, ...] = STANDARD
) -> None:
    from datasets import Image, Value

    string = Value("string")
    features = {
        "id": string,
        "question": string,
        "options": string,
        "explanation": string,
        **{name: Image() for name in IMAGES},
        "img_type": string,
        "answer": string,
        "topic_difficulty": string,
        "subject": string,
    }
    for file, rows in zip(files, shards, strict=True):
        write_parquet(root / file, rows, features)


def write_vision(root: Path, rows: list[dict[str, Any]]) -> None:
    from datasets import Image, Value

    string = Value("string")
    features = {
        "id": string,
        "image": Image(),
        "options": string,
        "answer": string,
        "subject": string,
    }
    write_parquet(root / VISION, rows, features)


def write_mmmu_pro_fixture(root: Path) -> None:
    """A small MMMU/MMMU_Pro under ``root``: ``standard (10 options)`` (3 rows in two shards),
    ``standard (4 options)`` (2 rows) and ``vision`` (2 rows), in the hub's layout and schema."""
    write_standard(root, standard_rows())
    write_standard(root, standard_4_rows(), STANDARD_4)
    write_vision(root, vision_rows())


def _records(root: Path, split: str) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / f"{split}.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_standard_rows(tmp_path: Path) -> None:
    write_mmmu_pro_fixture(tmp_path)
    assert convert_dataset("mmmu_pro", tmp_path) == {"standard_4": 2, "standard_10": 3, "vision": 2}
    records = {r.id: r for r in read_records(tmp_path / "records" / "standard_10.jsonl")}
    assert list(records) == ["test_History_1", "validation_Chemistry_12", "test_Art_7"]
    history = records["test_History_1"]
    assert history.problem == (
        "Which event does <image 1> show?\n"
        + "\n".join(f"{letter}. {letter.lower()}" for letter in "ABCDEFGHIJ")
    )
    assert history.options == list("abcdefghij")
    assert (history.answer, history.problem_type, history.task) == (
        "J",
        "multiple_choice",
        "History",
    )
    assert history.data_source == "mmmu_pro" and history.image_sizes == [[32, 24]]
    chemistry = records["validation_Chemistry_12"]
    assert chemistry.problem.endswith("\nA. <image 2>\nB. <image 3>\nC. neither")
    assert len(chemistry.images) == 3 and chemistry.answer == "B"


def test_vision_rows(tmp_path: Path) -> None:
    write_mmmu_pro_fixture(tmp_path)
    convert_dataset("mmmu_pro", tmp_path)
    records = {r.id: r for r in read_records(tmp_path / "records" / "vision.jsonl")}
    history = records["test_History_1"]
    assert history.problem == VISION_PROMPT
    assert history.image_sizes == [[48, 36]]
    assert (history.answer, history.options[-1], history.task) == ("J", "j", "History")
    assert records["test_Art_7"].answer == "A"


def test_standard_4_options_rows(tmp_path: Path) -> None:
    write_mmmu_pro_fixture(tmp_path)
    counts = convert_dataset("mmmu_pro", tmp_path)
    assert counts == {"standard_4": 2, "standard_10": 3, "vision": 2}
    records = {r.id: r for r in read_records(tmp_path / "records" / "standard_4.jsonl")}
    history = records["test_History_1"]
    assert history.problem == "Which event does <image 1> show?\nA. a\nB. b\nC. c\nD. d"
    assert (history.answer, history.options, history.task) == ("D", list("abcd"), "History")
    assert history.problem_type == "multiple_choice" and history.image_sizes == [[32, 24]]
    assert records["test_Art_7"].answer == "A"
    ten = {r.id: r for r in read_records(tmp_path / "records" / "standard_10.jsonl")}
    assert ten["test_History_1"].answer == "J", "each config keeps its own options"


def test_a_4_option_answer_past_d_names_the_file(tmp_path: Path) -> None:
    first, second = standard_4_rows()
    second[0]["answer"] = "E"
    write_standard(tmp_path, (first, second), STANDARD_4)
    with pytest.raises(DataError) as info:
        convert_dataset("mmmu_pro", tmp_path)
    assert f"{STANDARD_4[1]} row 0" in str(info.value)
    assert "'answer' 'E' is not a letter among the 4 options (A-D)" in str(info.value)


def test_one_config_alone(tmp_path: Path) -> None:
    write_vision(tmp_path, vision_rows())
    assert convert_dataset("mmmu_pro", tmp_path) == {"vision": 2}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="no file matches any of"):
        convert_dataset("mmmu_pro", empty)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"answer": "K"}, "'answer' 'K' is not a letter among the 10 options (A-J)"),
        ({"options": "not a list"}, "'options' is not a Python list literal"),
        ({"options": "[]"}, "'options' is an empty list"),
        ({"subject": None}, "'subject' is empty"),
        ({"image_1": None}, "'image_1' is empty but <image 1> is referenced"),
        ({"question": None}, "'question' is empty"),
    ],
)
def test_bad_standard_rows(tmp_path: Path, change: dict[str, Any], needle: str) -> None:
    first, second = standard_rows()
    second[0].update(change)
    write_standard(tmp_path, (first, second))
    with pytest.raises(DataError) as info:
        convert_dataset("mmmu_pro", tmp_path)
    assert f"{STANDARD[1]} row 0" in str(info.value)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"image": {"bytes": b"junk", "path": None}}, "'image' is not a readable image"),
        ({"image": None}, "'image' is empty"),
        ({"answer": None}, "'answer' is empty"),
        ({"id": ""}, "'id' is empty"),
    ],
)
def test_bad_vision_rows(tmp_path: Path, change: dict[str, Any], needle: str) -> None:
    rows = vision_rows()
    rows[1].update(change)
    write_vision(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("mmmu_pro", tmp_path)
    assert f"{VISION} row 1" in str(info.value)
    assert needle in str(info.value)


# Single rows checked in process (the mutation tests of issue 40).


def test_a_vision_row_whose_id_is_not_a_string_is_a_schema_error_naming_the_row(
    tmp_path: Path,
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmmu_pro import vision_row

    with pytest.raises(RowError) as info:
        vision_row(Row(VISION, 1, {**vision_rows()[1], "id": 7}), ImageStore(tmp_path))
    assert str(info.value) == f"{VISION} row 1: id: Input should be a valid string"


def test_a_standard_row_whose_id_is_not_a_string_is_a_schema_error_naming_the_row(
    tmp_path: Path,
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmmu_pro import standard_row

    row = Row(STANDARD[0], 0, {**standard_rows()[0][0], "id": 7})
    with pytest.raises(RowError) as info:
        standard_row(row, ImageStore(tmp_path))
    assert str(info.value) == f"{STANDARD[0]} row 0: id: Input should be a valid string"


def test_empty_options_are_the_whole_row_message(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmmu_pro import vision_row

    with pytest.raises(RowError) as info:
        vision_row(Row(VISION, 0, {**vision_rows()[0], "options": "[]"}), ImageStore(tmp_path))
    assert str(info.value) == f"{VISION} row 0: field 'options' is an empty list"
