"""The olympiadbench format: Hothan/OlympiadBench open-ended subsets → canonical records, with
VLMEvalKit's instruction (less its \\boxed{} directive) and a problem type per answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

SUBSET = "OE_MM_maths_en_COMP"
FILE = f"OlympiadBench/{SUBSET}/{SUBSET}.parquet"
INSTRUCTION_TAIL = (
    "Please calculate the answer according to the given requirements and the information "
    "provided. Please use LaTeX format to represent the variables and formulas used in the "
    "solution process and results."
)


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 60, 160), (48, 36))


def _row(
    item_id: int,
    question: str,
    final_answer: list[str],
    answer_type: str,
    subfield: str,
    images: int = 1,
    *,
    multiple: bool = False,
    error: str | None = None,
    unit: str | None = None,
    context: str | None = None,
    subject: str = "Math",
    language: str = "English",
    modality: str = "Multimodal",
) -> dict[str, Any]:
    row = {
        "id": item_id,
        "question": question,
        "solution": ["A worked solution, with $x$ in it."],
        "final_answer": final_answer,
        "context": context,
        "modality": modality,
        "difficulty": "Competition",
        "is_multiple_answer": multiple,
        "unit": unit,
        "answer_type": answer_type,
        "error": error,
        "question_type": "Open-ended",
        "subfield": subfield,
        "subject": subject,
        "language": language,
    }
    for i in range(1, 6):
        row[f"image_{i}"] = _png(40 * i + item_id % 7) if i <= images else None
    return row


def olympiadbench_rows() -> list[dict[str, Any]]:
    """Six OE_MM_maths_en_COMP-shaped rows: a fraction, an expression in a variable, an
    interval, two answers, two images with a tolerance, and several tuples (the hub writes a
    problem's answers in one string: ``["$(1,8,19), (2,7,13), (4,5,7)$"]``)."""
    return [
        _row(1606, "<image_1>\nIn triangle $A B C$, find $\\cos A$.", ["$\\frac{1}{2}$"],
             "Numerical", "Geometry"),
        _row(1607, "<image_1>\nFind $a_{n}$ for every positive integer $n$.", ["$2 n+1$"],
             "Expression", "Algebra"),
        _row(1608, "<image_1>\nDetermine all real $x$ for which the inequality holds.",
             ["$(-\\infty, 1]$"], "Interval", "Algebra"),
        _row(1609, "<image_1>\nSolve the equation shown.", ["$x=1, x=2$"], "Expression",
             "Algebra", multiple=True),
        _row(1610, "<image_1>\n<image_2>\nHow many regions are there?", ["$12$"], "Numerical",
             "Combinatorics", images=2, error="1e-1"),
        _row(1611, "<image_1>\nFind all triples $(a, b, c)$ shown in the figure.",
             ["$(1,8,19), (2,7,13), (4,5,7)$"], "Tuple", "Number Theory", multiple=True),
    ]  # fmt: skip


def write_rows(root: Path, rows: list[dict[str, Any]], file: str = FILE) -> None:
    """Write rows as the hub stores them (``datasets`` features: ``final_answer`` a list of
    strings, ``image_1`` … ``image_5`` ``datasets.Image``, ``id`` int64)."""
    from datasets import Image, List, Value

    string = Value("string")
    features = {
        "id": Value("int64"),
        "question": string,
        "solution": List(string),
        "final_answer": List(string),
        "context": string,
        **{f"image_{i}": Image() for i in range(1, 6)},
        "modality": string,
        "difficulty": string,
        "is_multiple_answer": Value("bool"),
        "unit": string,
        "answer_type": string,
        "error": string,
        "question_type": string,
        "subfield": string,
        "subject": string,
        "language": string,
    }
    write_parquet(root / file, rows, features)


def write_olympiadbench_fixture(root: Path) -> None:
    """A small Hothan/OlympiadBench OE_MM_maths_en_COMP subset under ``root`` in the hub's
    layout."""
    write_rows(root, olympiadbench_rows())


def test_converts_the_subset(tmp_path: Path) -> None:
    write_olympiadbench_fixture(tmp_path)
    assert convert_dataset("olympiadbench", tmp_path) == {SUBSET: 6}
    records = read_records(tmp_path / "records" / f"{SUBSET}.jsonl")
    assert [r.id for r in records] == ["1606", "1607", "1608", "1609", "1610", "1611"]
    assert all(r.data_source == "olympiadbench" and not r.options for r in records)
    assert [r.task for r in records] == [
        "Geometry",
        "Algebra",
        "Algebra",
        "Algebra",
        "Combinatorics",
        "Number Theory",
    ]
    assert [len(r.images) for r in records] == [1, 1, 1, 1, 2, 1]
    assert records[4].image_sizes == [[48, 36], [48, 36]]
    assert records[0].problem == (
        "The following is an open-ended problem from an International Math competition. The "
        f"answer of The problem should be a numerical value. {INSTRUCTION_TAIL}\n"
        "<image_1>\nIn triangle $A B C$, find $\\cos A$."
    )
    assert "\\boxed" not in "".join(r.problem for r in records)


def test_problem_type_follows_what_math_verify_can_read(tmp_path: Path) -> None:
    write_olympiadbench_fixture(tmp_path)
    convert_dataset("olympiadbench", tmp_path)
    records = read_records(tmp_path / "records" / f"{SUBSET}.jsonl")
    # numerical answers keep their $ (Math-Verify's LaTeX reader needs them); free-form ones
    # lose them, as MathJudger.preprocess does
    assert [(r.problem_type, r.answer) for r in records] == [
        ("numerical", "$\\frac{1}{2}$"),
        ("free_form", "2 n+1"),
        ("numerical", "$(-\\infty, 1]$"),
        ("free_form", "x=1, x=2"),
        ("numerical", "$12$"),
        ("free_form", "(1,8,19), (2,7,13), (4,5,7)"),
    ]
    assert "The problem has multiple answers, each of them should be an expression. " in (
        records[3].problem
    )
    assert "should be an interval. " in records[2].problem
    # VLMEvalKit names no answer type for tuples
    assert "competition. Please calculate" in records[5].problem


def test_an_answer_as_the_hub_writes_it_matches_the_record(tmp_path: Path) -> None:
    """A response that states the hub's answer, ``$`` signs and all, or without them, is right
    against the record's gold under vlrl.scoring.maths.equivalent (a string comparison fails the
    free-form rows, whose gold has lost its ``$``)."""
    from vlrl.scoring.candidate import Candidate
    from vlrl.scoring.maths import equivalent_match

    write_olympiadbench_fixture(tmp_path)
    convert_dataset("olympiadbench", tmp_path)
    records = read_records(tmp_path / "records" / f"{SUBSET}.jsonl")
    for row, record in zip(olympiadbench_rows(), records, strict=True):
        hub = row["final_answer"][0]
        for stated in (hub, hub.replace("$", ""), hub.replace(" ", "")):
            candidate = Candidate(f"<answer>{stated}</answer>", record.answer, record.problem_type)
            assert equivalent_match(candidate).correct == 1, (stated, record.answer)
        wrong = Candidate("<answer>$2 n+3$</answer>", record.answer, record.problem_type)
        assert equivalent_match(wrong).correct == 0, record.answer


def test_physics_context_chinese_and_text_only_subsets(tmp_path: Path) -> None:
    physics = "OE_MM_physics_en_COMP"
    write_rows(
        tmp_path,
        [
            _row(
                2001,
                "<image_1>\nFind the speed of the ball.",
                ["$3$"],
                "Numerical",
                "Mechanics",
                unit="m/s",
                context="A ball rolls down a ramp.",
                subject="Physics",
            ),
        ],
        f"OlympiadBench/{physics}/{physics}.parquet",
    )
    text_only = "OE_TO_maths_zh_COMP"
    write_rows(
        tmp_path,
        [
            _row(
                3001,
                "求 $x$ 的值。",
                ["$5$"],
                "Numerical",
                "Algebra",
                images=0,
                language="Chinese",
                modality="Text-only",
            ),
        ],
        f"OlympiadBench/{text_only}/{text_only}.parquet",
    )
    assert convert_dataset("olympiadbench", tmp_path) == {physics: 1, text_only: 1}
    (ball,) = read_records(tmp_path / "records" / f"{physics}.jsonl")
    assert ball.problem.startswith(
        "The following is an open-ended problem from an International Physics competition. "
    )
    assert ball.problem.endswith(
        "results.\nA ball rolls down a ramp.\n<image_1>\nFind the speed of the ball."
    )
    (zh,) = read_records(tmp_path / "records" / f"{text_only}.jsonl")
    assert zh.images == [] and zh.problem == (
        "以下是中国数学竞赛中的解答题，答案类型为数值。请根据题目的要求和所提供的信息计算得出答案。"
        "解答过程和结果中使用的变量和公式请使用LaTeX格式表示。\n求 $x$ 的值。"
    )


def _bad(tmp_path: Path, index: int, **change: Any) -> str:
    rows = olympiadbench_rows()
    rows[index].update(change)
    write_rows(tmp_path, rows)
    with pytest.raises(DataError) as info:
        convert_dataset("olympiadbench", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"final_answer": []}, "'final_answer' must be a non-empty list of strings"),
        (1, {"final_answer": None}, "'final_answer' is empty"),
        (1, {"final_answer": [" ", "$3$"]}, "'final_answer' starts with an empty answer"),
        (2, {"final_answer": ["$$"]}, "'final_answer' holds only '$' signs"),
        (2, {"answer_type": "Proof"}, "'answer_type' 'Proof' names none of"),
        (3, {"answer_type": None}, "'answer_type' is empty"),
        (3, {"question": None}, "'question' is empty"),
        (4, {"image_1": None, "image_2": None}, "has no image in ['image_1'"),
        (4, {"image_2": {"bytes": b"not an image", "path": None}}, "'image_2' is not a readable"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_no_subset_and_a_missing_column(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with pytest.raises(DataError, match=r"no file matches any of .*OE_MM_maths_en_COMP"):
        convert_dataset("olympiadbench", tmp_path)
    write_olympiadbench_fixture(tmp_path)
    path = tmp_path / FILE
    pq.write_table(pq.read_table(path).drop_columns(["final_answer"]), path)
    with pytest.raises(DataError, match=r"row 0: has no field 'final_answer'"):
        convert_dataset("olympiadbench", tmp_path)


# Prompt pieces and optional fields, checked in process (the mutation tests of issue 40).


@pytest.mark.parametrize(
    ("answer_type", "text"),
    [
        ("Need_human_evaluate", ""),
        ("Expression-Numerical", "The answer of The problem should be an expression. "),
    ],
)
def test_answer_type_text_of_unjudged_and_dashed_types(answer_type: str, text: str) -> None:
    from vlrl.data.formats.olympiadbench import answer_type_text

    assert answer_type_text(answer_type, False, False) == text


def test_the_chinese_physics_instruction() -> None:
    from vlrl.data.formats.olympiadbench import instruction

    assert instruction("OE_MM_physics_zh_CEE", "，答案类型为数值") == (
        "以下是中国物理竞赛中的解答题，答案类型为数值。请根据题目的要求和所提供的信息计算得出答案。"
        "解答过程和结果中使用的变量和公式请使用LaTeX格式表示。"
    )


@pytest.mark.parametrize(("value", "text"), [(None, None), ("  ", None), (" Optics ", "Optics")])
def test_an_optional_text_field(value: str | None, text: str | None) -> None:
    from vlrl.data.formats import Row
    from vlrl.data.formats.olympiadbench import _optional_text

    assert _optional_text(Row(FILE, 2, {"id": 7, "subfield": value}), "subfield") == text


def test_an_optional_text_field_that_is_not_a_string_is_the_whole_row_message() -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.olympiadbench import _optional_text

    with pytest.raises(RowError) as info:
        _optional_text(Row(FILE, 2, {"id": 7, "subfield": 5}), "subfield")
    assert str(info.value) == f"{FILE} row 2: field 'subfield' must be a string or null: 5"


@pytest.mark.parametrize(
    ("answer_type", "chinese", "text"),
    [
        pytest.param("Numerical,Interval", False,
                     "The problem has multiple answers, with the answers in order being a "
                     "numerical value, an interval. ", id="english-two-types"),
        pytest.param("Numerical,Interval", True, "，题目有多个答案，答案类型分别为数值、区间",
                     id="chinese-two-types"),
        pytest.param("Numerical", True, "，题目有多个答案，答案类型均为数值",
                     id="chinese-one-type"),
    ],
)  # fmt: skip
def test_answer_type_text_of_multiple_answers(answer_type: str, chinese: bool, text: str) -> None:
    from vlrl.data.formats.olympiadbench import answer_type_text

    assert answer_type_text(answer_type, chinese, True) == text


def _convert_row(tmp_path: Path, index: int, **change: Any):
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.olympiadbench import convert_row

    fields = {**olympiadbench_rows()[index], **change}
    return convert_row(Row(FILE, index, fields), ImageStore(tmp_path), SUBSET)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"id": True}, "field 'id' must be an integer: True", id="id-bool"),
        pytest.param({"question": 5}, "field 'question' must be a string: 5", id="question-int"),
        pytest.param({"answer_type": 5}, "field 'answer_type' must be a string: 5",
                     id="answer-type-int"),
        pytest.param({"is_multiple_answer": "yes"},
                     "field 'is_multiple_answer' must be a bool or null: 'yes'",
                     id="multiple-a-string"),
        pytest.param({"final_answer": ["$$"]}, "field 'final_answer' holds only '$' signs",
                     id="only-dollars"),
    ],
)  # fmt: skip
def test_a_bad_row_is_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import RowError

    with pytest.raises(RowError) as info:
        _convert_row(tmp_path, 1, **change)
    assert str(info.value) == f"{FILE} row 1: {message}"


def test_a_null_multiple_answer_flag_and_a_maths_context_are_left_out(tmp_path: Path) -> None:
    rec = _convert_row(tmp_path, 1, is_multiple_answer=None, context="Let n be positive.")
    assert rec.problem.endswith(
        f"{INSTRUCTION_TAIL}\n<image_1>\nFind $a_{{n}}$ for every positive integer $n$."
    )
    assert "an expression. " in rec.problem and "Let n be positive." not in rec.problem


def test_no_subset_names_every_pattern(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore
    from vlrl.data.formats.olympiadbench import SUBSETS, convert, pattern

    with pytest.raises(DataError) as info:
        list(convert(tmp_path, ImageStore(tmp_path / "records")))
    assert str(info.value) == (
        f"{tmp_path}: no file matches any of {[pattern(s) for s in SUBSETS]} (the open-ended "
        "OlympiadBench subsets)"
    )
