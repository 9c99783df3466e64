"""The realworldqa format: xai-org/RealworldQA test (two shards) → records; a question with
options and a letter answer is ``multiple_choice``, a short answer ``numerical`` or
``free_form``; the answer instructions are taken out of the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.realworldqa import (
    MC_INSTRUCTION,
    SHORT_INSTRUCTION,
    is_number,
    parse_options,
    strip_instruction,
)
from vlrl.items.records import read_records

SHARDS = ("data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet")


def _webp(shade: int) -> dict[str, Any]:
    # The hub stores RealWorldQA's photographs as webp.
    return encoded_image((shade, 120, 255 - shade), (40, 30), "WEBP")


def _mc(question: str, options: list[str]) -> str:
    lines = [f"{'ABCDEFGH'[i]}. {option}" for i, option in enumerate(options)]
    return "\n".join([question, *lines, MC_INSTRUCTION])


def _short(question: str) -> str:
    return f"{question}\n{SHORT_INSTRUCTION}"


def shard_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Three rows per shard: multiple choice with 2 to 4 options, a number and a word."""
    first = [
        (_mc("In which direction is the front wheel of the car on the right side facing?",
             ["Left", "Straight", "Right"]), "C"),
        (_short("How many pedestrians are crossing the road?"), "2"),
        (_short("Is the road ahead going uphill or downhill?"), "Downhill"),
    ]  # fmt: skip
    second = [
        (_mc("How many bars are here?",
             ["There are two parallel bars in this photo.", "There are three bars in the photo.",
              "There is one bar in the photo.", "There are four bars in the photo."]), "B"),
        (_mc("Where is the dog in relation to the door?",
             ["The dog is behind the door", "The dog is in front of the door"]), "A"),
        (_short("How far away is the stop sign, in meters?"), "15.5"),
    ]  # fmt: skip
    shards = [
        [
            {"question": question, "answer": answer, "image": _webp(40 * (3 * s + i))}
            for i, (question, answer) in enumerate(rows)
        ]
        for s, rows in enumerate((first, second))
    ]
    return shards[0], shards[1]


def write_rows(root: Path, file: str, rows: list[dict[str, Any]]) -> None:
    """Write rows as the hub stores them (the card's features: question, answer, image)."""
    from datasets import Image, Value

    features = {"question": Value("string"), "answer": Value("string"), "image": Image()}
    write_parquet(root / file, rows, features)


def write_realworldqa_fixture(root: Path) -> None:
    """A small xai-org/RealworldQA test split under ``root`` in the hub's two-shard layout."""
    for file, rows in zip(SHARDS, shard_rows(), strict=True):
        write_rows(root, file, rows)


def test_converts_both_shards_in_order(tmp_path: Path) -> None:
    write_realworldqa_fixture(tmp_path)
    assert convert_dataset("realworldqa", tmp_path) == {"test": 6}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == ["0", "1", "2", "3", "4", "5"]
    assert all(r.images[0].endswith(".webp") and r.image_sizes == [[40, 30]] for r in records)
    assert all(r.data_source == "realworldqa" and r.task is None for r in records)
    assert [(r.problem_type, r.answer) for r in records] == [
        ("multiple_choice", "C"),
        ("numerical", "2"),
        ("free_form", "Downhill"),
        ("multiple_choice", "B"),
        ("multiple_choice", "A"),
        ("numerical", "15.5"),
    ]
    wheel, pedestrians = records[0], records[1]
    # the options stay in the problem, as lmms-eval sends them; the instruction goes
    assert wheel.problem == (
        "In which direction is the front wheel of the car on the right side facing?\n"
        "A. Left\nB. Straight\nC. Right"
    )
    assert wheel.options == ["Left", "Straight", "Right"]
    assert pedestrians.problem == "How many pedestrians are crossing the road?"
    assert not pedestrians.options
    assert records[3].options[1] == "There are three bars in the photo."
    assert all("Please answer directly" not in r.problem for r in records)


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        # the instruction decides; a lower-case letter is upper-cased
        (_mc("Which lane is the bus in?", ["Left", "Right"]), "b", ("multiple_choice", "B")),
        (_short("How many lanes are there?"), "-1", ("numerical", "-1")),
        (_short("How many cars are parked?"), "1,000", ("numerical", "1,000")),
        (_short("What colour is the light?"), "Green", ("free_form", "Green")),
        # a letter asked for as a short answer is a word
        (_short("Which letter is on the sign?"), "B", ("free_form", "B")),
        # without an instruction: options and a letter make it multiple choice ...
        ("Which side?\nA. Left\nB. Right", "A", ("multiple_choice", "A")),
        # ... a letter alone does not
        ("Which letter is on the sign?", "B", ("free_form", "B")),
        ("How many cones are there?", "7", ("numerical", "7")),
        # the instruction on the question's own line
        (f"How many trucks? {SHORT_INSTRUCTION}", "3", ("numerical", "3")),
    ],
)
def test_problem_type_per_row(
    tmp_path: Path, question: str, answer: str, expected: tuple[str, str]
) -> None:
    write_rows(tmp_path, SHARDS[0], [{"question": question, "answer": answer, "image": _webp(9)}])
    convert_dataset("realworldqa", tmp_path)
    (rec,) = read_records(tmp_path / "records" / "test.jsonl")
    assert (rec.problem_type, rec.answer) == expected
    assert "Please answer directly" not in rec.problem and rec.problem.endswith(("?", "Right"))


def test_instruction_and_option_helpers() -> None:
    assert strip_instruction("  Is it raining?  \n\n" + SHORT_INSTRUCTION + "\n") == (
        "Is it raining?",
        "short",
    )
    assert strip_instruction("Is it raining?") == ("Is it raining?", None)
    with pytest.raises(ValueError, match="both"):
        strip_instruction(f"Q?\n{MC_INSTRUCTION}\n{SHORT_INSTRUCTION}")
    # option texts may hold full stops of their own
    assert parse_options("Is it A.M. or P.M.?\nA. A.M.\nB. P.M.") == ["A.M.", "P.M."]
    with pytest.raises(ValueError, match=r"\['A', 'C'\]"):
        parse_options("Q?\nA. one\nC. three")
    assert is_number("0") and is_number("+3") and not is_number("two")


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = [*shard_rows()[0]]
    rows[index] = {**rows[index], **change}
    write_rows(tmp_path, SHARDS[0], rows)
    with pytest.raises(DataError) as info:
        convert_dataset("realworldqa", tmp_path)
    message = str(info.value)
    assert f"{SHARDS[0]} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"answer": "D"}, "'answer' 'D' is not one of the option letters ['A', 'B', 'C']"),
        (0, {"answer": "Right"}, "is not one of the option letters"),
        (0, {"question": "Which way?\n" + MC_INSTRUCTION}, "has no 'A. ...' lines"),
        (
            0,
            {"question": "Which way?\nA. Left\nC. Right\n" + MC_INSTRUCTION},
            "lettered ['A', 'C']",
        ),
        (1, {"question": f"How many?\n{MC_INSTRUCTION}\n{SHORT_INSTRUCTION}"}, "both"),
        (1, {"question": SHORT_INSTRUCTION}, "holds only the answer instruction"),
        (1, {"answer": " "}, "'answer' is empty"),
        (2, {"question": None}, "'question' is empty"),
        (2, {"image": {"bytes": b"not an image", "path": None}}, "'image' is not a readable"),
        (2, {"image": None}, "'image' is empty"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_missing_column_and_missing_files(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write_realworldqa_fixture(tmp_path)
    path = tmp_path / SHARDS[1]
    pq.write_table(pq.read_table(path).drop_columns(["answer"]), path)
    with pytest.raises(
        DataError, match=r"test-00001-of-00002\.parquet row 0: has no field 'answer'"
    ):
        convert_dataset("realworldqa", tmp_path)
    for file in SHARDS:
        (tmp_path / file).unlink()
    with pytest.raises(DataError, match=r"no file matches 'data/test-\*\.parquet'"):
        convert_dataset("realworldqa", tmp_path)


# Single rows checked in process (the mutation tests of issue 40).


def _convert_row(tmp_path: Path, question: str, answer: str):
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.realworldqa import convert_row

    row = Row(SHARDS[0], 1, {"question": question, "answer": answer, "image": _webp(10)})
    return convert_row(row, 1, ImageStore(tmp_path))


@pytest.mark.parametrize(
    ("question", "answer", "message"),
    [
        pytest.param(
            SHORT_INSTRUCTION, "2", "field 'question' holds only the answer instruction",
            id="only-the-instruction",
        ),
        pytest.param(
            f"Which side?\n{MC_INSTRUCTION}", "A",
            "field 'question' asks for an option letter but has no 'A. ...' lines",
            id="mc-without-options",
        ),
        pytest.param(
            f"Which side?\nA. Left\nB. Right\n{MC_INSTRUCTION}\n{SHORT_INSTRUCTION}", "A",
            "field 'question': it carries both the multiple-choice and the short-answer "
            "instruction",
            id="both-instructions",
        ),
        pytest.param(
            _mc("Which side?", ["Left", "Right"]), "ab",
            "field 'answer' 'ab' is not one of the option letters ['A', 'B']",
            id="two-letters",
        ),
    ],
)  # fmt: skip
def test_a_bad_row_is_the_whole_row_message(
    tmp_path: Path, question: str, answer: str, message: str
) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError) as info:
        _convert_row(tmp_path, question, answer)
    assert str(info.value) == f"{SHARDS[0]} row 1: {message}"


def test_a_short_answer_question_reads_no_option_lines(tmp_path: Path) -> None:
    # Lines like options, lettered out of order, in a short-answer question are just text.
    question = "Count the signs:\nB. one on the left\nD. one on the right"
    rec = _convert_row(tmp_path, _short(question), "2")
    assert (rec.problem, rec.answer, rec.problem_type, rec.options) == (
        question, "2", "numerical", []
    )  # fmt: skip


def test_a_one_digit_answer_to_lettered_options_without_instruction_is_a_number(
    tmp_path: Path,
) -> None:
    rec = _convert_row(tmp_path, "How many?\nA. 1\nB. 2", "2")
    assert (rec.answer, rec.problem_type, rec.options) == ("2", "numerical", [])


def test_the_instruction_leaves_indents_but_not_trailing_spaces() -> None:
    question = f"Look at:\n  the car on the left \nHow many doors?\n{SHORT_INSTRUCTION}"
    assert strip_instruction(question) == (
        "Look at:\n  the car on the left\nHow many doors?",
        "short",
    )
