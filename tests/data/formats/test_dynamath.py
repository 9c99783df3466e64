"""The dynamath format: DynaMath/DynaMath_Sample (one split per variant) → records whose ids
name seed and variant, options read from the question, the seed as a group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.dynamath import parse_options
from vlrl.items.records import read_records

#: The card's feature order.
COLUMNS = ("id", "question", "image", "decoded_image", "ground_truth", "answer_type", "subject",
           "knowledge_level")  # fmt: skip
#: Three seeds as the authors' dataset/dataset.json writes them (ids 1, 5 and 366, 2 and 21).
SEEDS = [
    ("1", "What is the period of this function? Answer the question with a floating-point "
     "number.", "float", "analytic geometry", "high school"),
    ("5", "Is Dark Magenta greater than Rosy Brown? Choices: (A) yes (B) no", "multiple choice",
     "statistics", "elementary school"),
    ("366", "Which group has the largest Y value?\nA. Group 1\nB. Group 2\nC. Group 3",
     "multiple choice", "statistics", "high school"),
    ("21", "What time is shown? Please answer in the form like __:__.", "text", "arithmetic",
     "elementary school"),
]  # fmt: skip
ANSWERS = {1: ["2.0944", "B", "A", "5:0"], 2: ["6.2832", "A", "C", "11:15"]}


def dynamath_rows(variant: int) -> list[dict[str, Any]]:
    """The seeds drawn as variant ``variant`` (its own answers and images)."""
    return [
        dict(
            zip(
                COLUMNS,
                (seed, question, f"image/image{seed}.png",
                 encoded_image((40 * i, 20 * variant, 90), (30, 20)), answer, kind, subject,
                 level),
                strict=True,
            )
        )
        for i, ((seed, question, kind, subject, level), answer) in enumerate(
            zip(SEEDS, ANSWERS[variant], strict=True)
        )
    ]  # fmt: skip


def write_rows(root: Path, rows: list[dict[str, Any]], file: str) -> None:
    """Write rows as the hub stores them (the card's features)."""
    from datasets import Image, Value

    features = {n: Image() if n == "decoded_image" else Value("string") for n in COLUMNS}
    write_parquet(root / file, rows, features)


def write_dynamath_fixture(root: Path, names=("sample_variant{}", "sample_variant{}")) -> None:
    """A small DynaMath/DynaMath_Sample under ``root``: two variants, named as ``names`` say."""
    for variant, name in zip((1, 2), names, strict=True):
        write_rows(
            root, dynamath_rows(variant), f"data/{name.format(variant)}-00000-of-00001.parquet"
        )


def test_converts_every_variant_into_one_test_split(tmp_path: Path) -> None:
    write_dynamath_fixture(tmp_path)
    assert convert_dataset("dynamath", tmp_path) == {"test": 8}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == [
        "1-v1", "5-v1", "366-v1", "21-v1", "1-v2", "5-v2", "366-v2", "21-v2"
    ]  # fmt: skip
    assert [r.problem_type for r in records[:4]] == [
        "numerical", "multiple_choice", "multiple_choice", "free_form"
    ]  # fmt: skip
    assert [r.answer for r in records] == [*ANSWERS[1], *ANSWERS[2]]
    assert records[1].options == ["yes", "no"] and records[2].options == [
        "Group 1", "Group 2", "Group 3"
    ]  # fmt: skip
    assert records[1].problem == SEEDS[1][1], "the question as it is, its options inside"
    assert records[6].groups == {"seed": "366", "variant": "2", "knowledge_level": "high school"}
    assert [r.task for r in records[:4]] == ["analytic geometry", "statistics", "statistics",
                                            "arithmetic"]  # fmt: skip
    assert all(r.data_source == "dynamath" and r.image_sizes == [[30, 20]] for r in records)
    assert records[0].images != records[4].images, "each variant its own picture"


def test_the_first_revisions_file_names_are_read_too(tmp_path: Path) -> None:
    write_dynamath_fixture(tmp_path, names=("sample{}", "sample_variant{}"))
    assert convert_dataset("dynamath", tmp_path) == {"test": 8}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.groups["variant"] for r in records] == ["1"] * 4 + ["2"] * 4


def test_a_variant_missing_a_seed_is_an_error(tmp_path: Path) -> None:
    write_rows(tmp_path, dynamath_rows(1), "data/sample_variant1-0.parquet")
    write_rows(tmp_path, dynamath_rows(2)[:3], "data/sample_variant2-0.parquet")
    with pytest.raises(DataError, match=r"variant 2 lacks seeds \['21'\] that other variants"):
        convert_dataset("dynamath", tmp_path)
    assert not (tmp_path / "records" / "test.jsonl").exists(), "nothing half-written"


def test_no_variant_file_is_an_error(tmp_path: Path) -> None:
    write_rows(tmp_path, dynamath_rows(1), "data/train-0.parquet")
    with pytest.raises(DataError, match=r"no file named sample_variant<k>-\*\.parquet"):
        convert_dataset("dynamath", tmp_path)


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        pytest.param(1, {"ground_truth": "C"}, "'ground_truth' 'C' is not one of the letters of "
                     "the 2 options", id="letter-past-the-options"),
        pytest.param(1, {"question": "Is it greater?"}, "multiple-choice row lists no options",
                     id="no-options"),
        pytest.param(0, {"ground_truth": "2π/3"}, "'ground_truth' '2π/3' of a float row is not",
                     id="float-not-a-number"),
        pytest.param(3, {"id": None}, "field 'id' is empty", id="no-id"),
        pytest.param(2, {"decoded_image": {"bytes": b"no", "path": None}},
                     "'decoded_image' is not a readable image", id="bad-image"),
    ],
)  # fmt: skip
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    rows = dynamath_rows(1)
    rows[index].update(change)
    write_rows(tmp_path, rows, "data/sample_variant1-0.parquet")
    with pytest.raises(DataError) as info:
        convert_dataset("dynamath", tmp_path)
    assert "data/sample_variant1-0.parquet row" in str(info.value) and needle in str(info.value)


@pytest.mark.parametrize(
    ("question", "options"),
    [
        pytest.param("how many zeros? choice: (A) 2 (B) 1 (C) 0", ["2", "1", "0"], id="choice"),
        pytest.param("Which? (A) heap (B) stack (C) binary tree", ["heap", "stack", "binary tree"],
                     id="inline-without-keyword"),
        pytest.param("Point (A) or (B)? choice: (A) A (B) B (C) C (D)", ["A", "B", "C", "D"],
                     id="last-run-and-empty-last-option"),
        pytest.param("Sets?\nA: [2, 8]\nB: [1]\nC: [3]\nD: [4]\n", ["[2, 8]", "[1]", "[3]", "[4]"],
                     id="lines-with-colons"),
        pytest.param("Label (A) then (C) x", [], id="labels-out-of-order"),
        pytest.param("Only (A) one", [], id="a-single-option-is-none"),
        pytest.param("What is 2+2?", [], id="none"),
    ],
)  # fmt: skip
def test_parse_options(question: str, options: list[str]) -> None:
    assert parse_options(question) == options


# Single rows and the option parser, checked in process (the mutation tests of issue 40).


def test_option_lines_start_again_at_a_later_a_line() -> None:
    question = "Facts:\nA. 1\nB. 2\nWhich group?\nA. Group 1\nB. Group 2\nC. Group 3"
    assert parse_options(question) == ["Group 1", "Group 2", "Group 3"]


def test_the_question_is_kept_as_written_padding_included(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.dynamath import convert_row

    question = "  Is it greater? Choices: (A) yes (B) no\n"
    fields = {**dynamath_rows(1)[1], "question": question}
    rec = convert_row(Row("data/sample_variant1-0.parquet", 1, fields), 1, ImageStore(tmp_path))
    assert (rec.id, rec.problem, rec.answer, rec.options) == ("5-v1", question, "B", ["yes", "no"])


def test_a_multiple_choice_question_without_options_is_the_whole_row_message(
    tmp_path: Path,
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.dynamath import convert_row

    fields = {**dynamath_rows(1)[1], "question": "Is it greater?"}
    with pytest.raises(RowError) as info:
        convert_row(Row("data/sample_variant1-0.parquet", 1, fields), 1, ImageStore(tmp_path))
    assert str(info.value) == (
        "data/sample_variant1-0.parquet row 1: field 'question' of a multiple-choice row lists "
        "no options"
    )


def test_a_variant_missing_many_seeds_names_the_first_five(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore
    from vlrl.data.formats.dynamath import convert

    text_row = dynamath_rows(1)[3]
    write_rows(
        tmp_path,
        [{**text_row, "id": str(seed)} for seed in range(20, 27)],
        "data/sample_variant1-0.parquet",
    )
    write_rows(tmp_path, [{**text_row, "id": "20"}], "data/sample_variant2-0.parquet")
    with pytest.raises(DataError) as info:
        list(convert(tmp_path, ImageStore(tmp_path / "records")))
    assert str(info.value) == (
        f"{tmp_path}/data: variant 2 lacks seeds ['21', '22', '23', '24', '25'] that other "
        "variants have (6 in all): the worst case needs every seed in every variant"
    )
