"""The wemath format: We-Math/We-Math testmini parquet → canonical records with the composite
problems in ``groups``; VLMEvalKit's prompt; the hub's irregular option strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.wemath import parse_options
from vlrl.items.records import read_records

FILE = "data/testmini-00000-of-00001-adbfe22dcd3558e6.parquet"


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 120, 200), (40, 30))


def wemath_rows() -> list[dict[str, Any]]:
    """A two-step problem (its 2 sub-questions and the composite question) and a three-step one
    (3 + 1), in the hub's row order, with the option strings' quirks: missing or extra spaces
    around ``;``, a stray ``;`` before "O." (``testmini.json`` row 94), markers after a space
    only (row 1118) and a skipped letter (A, B, C, F)."""
    rows = [
        ("2steps_1", "2steps_1", 1, "Circumference of Circles",
         "As shown in the diagram, if the circumference of a circle is 6.28 cm, then the radius "
         "of the circle is ( ) cm.",
         "A. 1 cm;B. 1.5 cm;C. 3.14 cm;D. 6.28 cm; E. No correct answer", "A"),
        ("2steps_1", "2steps_2", 361, "Area of Circles",
         "As shown in the diagram, the radius of the circle is 1 cm. Its area is ( ) cm².",
         "A. 3.14 ; B. 6.28 ; C. 1 ;D.2 ; E. No correct answer", "A"),
        ("2steps_1", "2steps_multi", 721, "Circumference of Circles;Area of Circles",
         "As shown in the diagram, the circumference of the circle is 6.28 cm. What is its area "
         "in cm²?", "A. 45° B. 3.14 ;C. 120°; D. No correct answer", "B"),
        ("3steps_1", "3steps_1", 1081, "Rotation",
         "Can the shaded area A in the diagram be rotated around point O to form shaded area B?",
         "A. Yes, A needs to be rotated 90 degrees clockwise around point ;O.;B. Yes, A needs to "
         "be rotated 45 degrees counterclockwise around point ;O.;C. No.; F. No correct answer",
         "F"),
        ("3steps_1", "3steps_2", 1246, "Area of Squares",
         "As shown in the diagram, the side of the square is 2 cm. Its area is ( ) cm².",
         "A. 2;B. 4;C. 8; D. No correct answer", "B"),
        ("3steps_1", "3steps_3", 1411, "Area of Rectangles",
         "As shown in the diagram, what is the area of the rectangle?",
         "A. 6 cm²;B. 8 cm²;C. 12 cm²;D. 24 cm²;E. 48 cm²;F. 96 cm²; G. No correct answer", "C"),
        ("3steps_1", "3steps_multi", 1576, "Rotation;Area of Squares;Area of Rectangles",
         "As shown in the diagram, what is the area of the shaded region after the rotation?",
         "A. 4 cm²;B. 8 cm²;C. 12 cm²; D. No correct answer", "C"),
    ]  # fmt: skip
    return [
        {
            "ID": problem,
            "split": "testmini",
            "knowledge concept": concept,
            "question": question,
            "option": option,
            "answer": answer,
            "image_path": _png(30 * i),
            "key": key,
            "question number": number,
            "knowledge concept description": f"{concept}:\n1. A definition.",
        }
        for i, (problem, key, number, concept, question, option, answer) in enumerate(rows)
    ]


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (``datasets`` features; ``image_path`` as
    ``datasets.Image``, ``question number`` int64)."""
    from datasets import Image, Value

    string = Value("string")
    features = {
        "ID": string,
        "split": string,
        "knowledge concept": string,
        "question": string,
        "option": string,
        "answer": string,
        "image_path": Image(),
        "key": string,
        "question number": Value("int64"),
        "knowledge concept description": string,
    }
    write_parquet(root / file, rows, features)


def write_wemath_fixture(root: Path) -> None:
    """A small We-Math/We-Math testmini split under ``root`` in the hub's layout."""
    write_rows(root, wemath_rows())


def test_converts_the_testmini_rows(tmp_path: Path) -> None:
    write_wemath_fixture(tmp_path)
    assert convert_dataset("wemath", tmp_path) == {"testmini": 7}
    records = read_records(tmp_path / "records" / "testmini.jsonl")
    assert [r.id for r in records] == ["1", "361", "721", "1081", "1246", "1411", "1576"]
    assert all(r.problem_type == "multiple_choice" and r.data_source == "wemath" for r in records)
    assert all(r.image_sizes == [[40, 30]] for r in records)
    assert [r.task for r in records] == ["one_step"] * 2 + ["two_step"] + ["one_step"] * 3 + [
        "three_step"
    ]
    assert [r.groups for r in records][:3] == [
        {"problem": "2steps_1", "step": "2steps_1"},
        {"problem": "2steps_1", "step": "2steps_2"},
        {"problem": "2steps_1", "step": "2steps_multi"},
    ]
    assert records[0].problem == (
        "Question: As shown in the diagram, if the circumference of a circle is 6.28 cm, then the "
        "radius of the circle is ( ) cm.\n"
        "Options:\nA. 1 cm\nB. 1.5 cm\nC. 3.14 cm\nD. 6.28 cm\nE. No correct answer"
    )
    assert (records[0].answer, records[0].options[-1]) == ("A", "No correct answer")


def test_irregular_option_strings(tmp_path: Path) -> None:
    write_wemath_fixture(tmp_path)
    convert_dataset("wemath", tmp_path)
    by_id = {r.id: r for r in read_records(tmp_path / "records" / "testmini.jsonl")}
    assert by_id["361"].options == ["3.14", "6.28", "1", "2", "No correct answer"]
    # markers after a space only
    assert by_id["721"].options == ["45°", "3.14", "120°", "No correct answer"]
    assert by_id["721"].answer == "B"
    # the stray ";" before "O." is not a separator; A, B, C, F: F is the fourth option
    rotation = by_id["1081"]
    assert rotation.options == [
        "Yes, A needs to be rotated 90 degrees clockwise around point O.",
        "Yes, A needs to be rotated 45 degrees counterclockwise around point O.",
        "No.",
        "No correct answer",
    ]
    assert rotation.answer == "D"
    assert rotation.problem.endswith("\nC. No.\nD. No correct answer")
    assert len(by_id["1411"].options) == 7 and by_id["1411"].answer == "C"


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (
            "A. 4 ; B. 3 ; C. 2 ;D.1 ; E. No correct answer",
            ["4", "3", "2", "1", "No correct answer"],
        ),
        ("A. 4 B. 3 C. 2 ;D. 1; E. No correct answer", ["4", "3", "2", "1", "No correct answer"]),
        (
            "A. Equal; B. Twice the area of triangle BE;G.; C. Cannot be determined",
            ["Equal", "Twice the area of triangle BEG.", "Cannot be determined"],
        ),
        (
            "A. Shape A moved to get Shape ;C.; B. Shape A turned to get Shape ;C.; C. None",
            ["Shape A moved to get Shape C.", "Shape A turned to get Shape C.", "None"],
        ),
        (
            "A. ①, ③ ; B. ②; C. ①; D. Cannot be determined",
            ["①, ③", "②", "①", "Cannot be determined"],
        ),
    ],
)
def test_parse_options_reads_the_hubs_quirks(option: str, expected: list[str]) -> None:
    parsed = parse_options(option)
    assert parsed is not None and parsed[1] == expected


@pytest.mark.parametrize(
    "option", ["", "just text", "B. first; C. second", "A. only one", "A.; B. x"]
)
def test_parse_options_refuses_non_options(option: str) -> None:
    assert parse_options(option) is None


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = wemath_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("wemath", tmp_path)
    return str(info.value)


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": " "}, "'answer' is empty"),
        (1, {"answer": "F"}, "'answer' 'F' is not one of the option letters"),
        (2, {"option": "1 cm, 2 cm, 3 cm"}, "'option' does not read as options"),
        (3, {"question": None}, "'question' is empty"),
        (4, {"key": "3steps_4"}, "'key' is '3steps_4', not"),
        (4, {"key": "2steps_2"}, "'ID' '3steps_1' is not a 2-step problem like its key"),
        (5, {"question number": None}, "'question number' is empty"),
        (6, {"image_path": {"bytes": b"not an image", "path": None}}, "'image_path' is not a"),
        (6, {"image_path": None}, "'image_path' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    message = _bad(tmp_path, index, **change)
    assert f"{FILE} row {index}" in message and needle in message


def test_a_problem_missing_a_question_or_repeating_one_is_refused(tmp_path: Path) -> None:
    rows = wemath_rows()
    write_rows(tmp_path, [row for row in rows if row["key"] != "3steps_2"])
    with pytest.raises(DataError, match=r"problem '3steps_1' has the questions \['3steps_1', "):
        convert_dataset("wemath", tmp_path)
    write_rows(tmp_path, [*rows, {**rows[1], "question number": 9999}])
    with pytest.raises(DataError) as info:
        convert_dataset("wemath", tmp_path)
    assert str(info.value) == (
        f"{FILE} row 7: repeats problem '2steps_1' step '2steps_2' of {FILE} row 1"
    )


def test_question_number_must_be_an_integer(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_wemath_fixture(tmp_path)
    path = tmp_path / FILE
    table = pq.read_table(path)
    column = table.schema.get_field_index("question number")
    table = table.set_column(column, "question number", pa.array(["1"] * table.num_rows))
    pq.write_table(table, path)
    with pytest.raises(DataError, match=r"row 0: field 'question number' must be an integer"):
        convert_dataset("wemath", tmp_path)


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_wemath_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["key"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'key'"):
        convert_dataset("wemath", tmp_path)
    path.unlink()
    with pytest.raises(DataError, match=r"no file matches 'data/testmini-\*\.parquet'"):
        convert_dataset("wemath", tmp_path)


# The prompt text, checked in process (the mutation tests of issue 40).


def test_the_problem_opens_with_the_hint_and_keeps_inner_trailing_spaces() -> None:
    from vlrl.data.formats.wemath import render_problem

    assert render_problem("How long is AB? ", ["3 cm", "X"], hint="AB is a side.") == (
        "Hint: AB is a side.\nQuestion: How long is AB? \nOptions:\nA. 3 cm\nB. X"
    )
    assert render_problem("How long is AB? ", []) == "Question: How long is AB? "


@pytest.mark.parametrize(
    ("option", "parsed"),
    [
        pytest.param("A. Yes; B. No", (["A", "B"], ["Yes", "No"]), id="two-options"),
        pytest.param("A. 5X; B. Y", (["A", "B"], ["5X", "Y"]), id="text-ending-in-x"),
        pytest.param("A. 1 C. 3", None, id="loose-markers-with-a-gap"),
        pytest.param("A. 1; B. 2; B. 3", None, id="a-repeated-letter"),
    ],
)  # fmt: skip
def test_option_strings_that_do_and_do_not_parse(
    option: str, parsed: tuple[list[str], list[str]] | None
) -> None:
    assert parse_options(option) == parsed


def _convert_row(tmp_path: Path, index: int, **change: Any):
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.wemath import convert_row

    return convert_row(Row(FILE, index, {**wemath_rows()[index], **change}), ImageStore(tmp_path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"key": "2steps_3"},
                     "field 'key' is '2steps_3', not 2steps_1/2/multi or 3steps_1/2/3/multi",
                     id="step-past-the-steps"),
        pytest.param({"key": "3steps_2"},
                     "field 'ID' '2steps_1' is not a 3-step problem like its key '3steps_2'",
                     id="id-of-another-step-count"),
    ],
)  # fmt: skip
def test_a_bad_key_is_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError) as info:
        _convert_row(tmp_path, 1, **change)
    assert str(info.value) == f"{FILE} row 1: {message}"


def test_a_hint_column_opens_the_problem(tmp_path: Path) -> None:
    rec = _convert_row(tmp_path, 4, hint=" Count the squares. ")
    assert rec.problem.startswith("Hint: Count the squares.\nQuestion: As shown in the diagram,")
    assert _convert_row(tmp_path, 4, hint=" ").problem.startswith("Question: ")
