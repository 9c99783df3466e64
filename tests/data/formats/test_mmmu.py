"""The mmmu format: MMMU/MMMU validation (one parquet per subject) → canonical records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

ART = "Art/validation-00000-of-00001.parquet"
MATH = "Math/validation-00000-of-00001.parquet"
IMAGES = [f"image_{i}" for i in range(1, 8)]


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 128, 255 - shade))


def _row(
    item_id: str,
    question: str,
    options: str,
    answer: str,
    question_type: str,
    images: int = 1,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": item_id,
        "question": question,
        "options": options,
        "explanation": "",
        "img_type": "['Paintings']",
        "answer": answer,
        "topic_difficulty": "Medium",
        "question_type": question_type,
        "subfield": "Art History",
    }
    for i, name in enumerate(IMAGES):
        row[name] = _png(30 * i + len(item_id)) if i < images else None
    return row


def art_rows() -> list[dict[str, Any]]:
    return [
        _row(
            "validation_Art_1",
            "Which style is the painting <image 1>?",
            "['Baroque', 'Cubism', 'Fauvism', 'Rococo']",
            "B",
            "multiple-choice",
        ),
        # images in the options; image_5 is set but no token references it
        _row(
            "validation_Art_2",
            "Which work is by the painter of <image 1>?",
            "['<image 2>', '<image 3>', '<image 4>']",
            "C",
            "multiple-choice",
            images=5,
        ),
    ]


def math_rows() -> list[dict[str, Any]]:
    return [
        _row("validation_Math_1", "Compute x in <image 1>.", "[]", "1.06", "open"),
        _row(
            "validation_Math_2",
            "How fast does the ladder slide? <image 1>",
            "[]",
            "['24/7', '3.429']",
            "open",
        ),
        _row("validation_Math_3", "Name the map in <image 1>.", "[]", "Transformation", "open"),
        _row(
            "validation_Math_4",
            "Compare <image 2> with <image 1>; how many dollars?",
            "[]",
            "7,243,000",
            "open",
            images=2,
        ),
    ]


def write_rows(root: Path, file: str, rows: list[dict[str, Any]]) -> None:
    """Write one subject's rows as the hub stores them (the dataset card's features)."""
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
        "question_type": string,
        "subfield": string,
    }
    write_parquet(root / file, rows, features)


def write_mmmu_fixture(root: Path) -> None:
    """A small MMMU/MMMU validation under ``root``: two subject configs, six rows."""
    write_rows(root, ART, art_rows())
    write_rows(root, MATH, math_rows())


def _records(root: Path) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / "validation.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_multiple_choice_rows(tmp_path: Path) -> None:
    write_mmmu_fixture(tmp_path)
    assert convert_dataset("mmmu", tmp_path) == {"validation": 6}
    records = {r.id: r for r in read_records(tmp_path / "records" / "validation.jsonl")}
    art = records["validation_Art_1"]
    assert art.problem == (
        "Which style is the painting <image 1>?\nA. Baroque\nB. Cubism\nC. Fauvism\nD. Rococo"
    )
    assert (art.problem_type, art.answer, art.task) == ("multiple_choice", "B", "Art")
    assert art.options == ["Baroque", "Cubism", "Fauvism", "Rococo"]
    assert art.data_source == "mmmu" and art.image_sizes == [[32, 24]]

    in_options = records["validation_Art_2"]
    assert in_options.problem == (
        "Which work is by the painter of <image 1>?\nA. <image 2>\nB. <image 3>\nC. <image 4>"
    )
    assert in_options.answer == "C"
    assert len(in_options.images) == 4  # image_1..image_4; image_5 is not referenced


def test_images_follow_the_sorted_tokens(tmp_path: Path) -> None:
    write_mmmu_fixture(tmp_path)
    convert_dataset("mmmu", tmp_path)
    records = _records(tmp_path)
    two = records["validation_Math_4"]
    # "<image 2> … <image 1>": lmms-eval sends image_1 then image_2
    first, second = (tmp_path / "records" / p for p in two["images"])
    rows = math_rows()
    assert first.read_bytes() == rows[3]["image_1"]["bytes"]
    assert second.read_bytes() == rows[3]["image_2"]["bytes"]


def test_open_questions(tmp_path: Path) -> None:
    write_mmmu_fixture(tmp_path)
    convert_dataset("mmmu", tmp_path)
    records = _records(tmp_path)
    number = records["validation_Math_1"]
    assert (number["problem_type"], number["answer"]) == ("numerical", "1.06")
    assert number["problem"] == "Compute x in <image 1>."
    assert "options" not in number  # default [] is not written
    assert records["validation_Math_4"]["problem_type"] == "numerical"  # 7,243,000
    listed = records["validation_Math_2"]
    # every gold of the list is kept: MMMU's eval_open accepts any of them
    assert (listed["problem_type"], listed["answer"], listed["accepted"]) == (
        "free_form",
        "24/7",
        ["3.429"],
    )
    assert "accepted" not in number  # a single gold: nothing else is accepted
    text = records["validation_Math_3"]
    assert (text["problem_type"], text["answer"], text["task"]) == (
        "free_form",
        "Transformation",
        "Math",
    )


def test_lmms_lab_layout_is_read_too(tmp_path: Path) -> None:
    write_rows(tmp_path, "data/validation-00000-of-00001.parquet", art_rows() + math_rows())
    assert convert_dataset("mmmu", tmp_path) == {"validation": 6}
    assert _records(tmp_path)["validation_Math_1"]["task"] == "Math"


def _bad(tmp_path: Path, file: str, index: int, **change: Any) -> str:
    art, math = art_rows(), math_rows()
    (art if file == ART else math)[index].update(change)
    write_rows(tmp_path, ART, art)
    write_rows(tmp_path, MATH, math)
    with pytest.raises(DataError) as info:
        convert_dataset("mmmu", tmp_path)
    message = str(info.value)
    assert f"{file} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("file", "index", "change", "needle"),
    [
        (ART, 0, {"options": "['Baroque', 'Cubism'"}, "'options' is not a Python list literal"),
        (ART, 0, {"options": "{'A': 'x'}"}, "'options' is not a list of strings"),
        (ART, 0, {"options": "[]"}, "'options' is an empty list"),
        (ART, 0, {"answer": "E"}, "'answer' 'E' is not a letter among the 4 options (A-D)"),
        (ART, 0, {"answer": "AB"}, "'answer' 'AB' is not a letter"),
        (ART, 1, {"image_3": None}, "'image_3' is empty but <image 3> is referenced"),
        (ART, 1, {"image_2": {"bytes": b"junk", "path": None}}, "'image_2' is not a readable"),
        (ART, 1, {"question": "See <image 8>."}, "has no field 'image_8'"),
        (ART, 0, {"id": "validation_Math_9"}, "names subject 'Math', not 'Art'"),
        (MATH, 0, {"id": "Math-1"}, "'id' 'Math-1' is not <split>_<Subject>_<number>"),
        (MATH, 2, {"question_type": "short-answer"}, "'question_type' is 'short-answer'"),
        (MATH, 2, {"answer": ""}, "'answer' is empty"),
        (MATH, 1, {"answer": "[]"}, "'answer' lists no usable answer"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, file: str, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, file, index, **change)


# Open answers, checked in process (the mutation tests of issue 40).


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (5, "field 'answer' must be a string: 5"),
        ("['4', ' ']", "field 'answer' lists no usable answer: \"['4', ' ']\""),
        ("['4', 5]", "field 'answer' lists no usable answer: \"['4', 5]\""),
    ],
)
def test_a_bad_open_answer_is_the_whole_row_message(answer: Any, message: str) -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.mmmu import open_answer

    with pytest.raises(RowError) as info:
        open_answer(Row(MATH, 2, {"id": "validation_Math_3", "answer": answer}))
    assert str(info.value) == f"{MATH} row 2: {message}"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[' 4 ', '4.0']", ("4", ["4.0"])),
        ("['4'] # cm", ("['4'] # cm", [])),
        ("[4", ("[4", [])),
    ],
)
def test_only_a_whole_list_literal_is_a_list_of_accepted_answers(
    answer: str, expected: tuple[str, list[str]]
) -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.mmmu import open_answer

    assert open_answer(Row(MATH, 2, {"id": "validation_Math_3", "answer": answer})) == expected


def test_a_multiple_choice_question_with_no_options_is_the_whole_row_message(
    tmp_path: Path,
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmmu import convert_row

    row = Row(ART, 1, {**art_rows()[1], "options": "[]"})
    with pytest.raises(RowError) as info:
        convert_row(row, ImageStore(tmp_path))
    assert str(info.value) == (
        f"{ART} row 1: field 'options' is an empty list for a multiple-choice question"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"answer": 5}, "field 'answer' 5 is not a letter among the 4 options (A-D)",
                     id="answer-int"),
        pytest.param({"options": 5}, "field 'options' must be a string holding a Python list: 5",
                     id="options-int"),
        pytest.param({"options": str([f"o{i}" for i in range(27)])},
                     "field 'options' has 27 options, more than letters A-Z", id="27-options"),
        pytest.param({"question": "Compare <image 8>."},
                     "references <image 8> but has no field 'image_8'", id="no-image-8"),
    ],
)  # fmt: skip
def test_a_bad_multiple_choice_row_is_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmmu import convert_row

    with pytest.raises(RowError) as info:
        convert_row(Row(ART, 0, {**art_rows()[0], **change}), ImageStore(tmp_path))
    assert str(info.value) == f"{ART} row 0: {message}"


def test_twenty_six_options_take_every_letter() -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.mmmu import parse_options

    options = [f"o{i}" for i in range(26)]
    assert parse_options(Row(ART, 0, {"id": "validation_Art_1", "options": str(options)})) == (
        options
    )
