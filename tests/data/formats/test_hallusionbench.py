"""The hallusionbench format: lmms-lab/HallusionBench, split image → canonical records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

IMAGE = "data/image-00000-of-00001.parquet"
NON_IMAGE = "data/non_image-00000-of-00001.parquet"
#: The fields of the hub parquet, in the order of the official HallusionBench.json, then image.
FIELDS = (
    "category",
    "subcategory",
    "visual_input",
    "set_id",
    "figure_id",
    "sample_note",
    "question_id",
    "question",
    "gt_answer_details",
    "gt_answer",
    "filename",
)


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 128, 255 - shade))


def _row(
    category: str,
    subcategory: str,
    set_id: str,
    figure_id: str,
    question_id: str,
    question: str,
    gt_answer: str,
    visual_input: str = "1",
) -> dict[str, Any]:
    figure = f"{category}/{subcategory}/{set_id}_{figure_id}"
    return {
        "category": category,
        "subcategory": subcategory,
        "visual_input": visual_input,
        "set_id": set_id,
        "figure_id": figure_id,
        "sample_note": "note",
        "question_id": question_id,
        "question": question,
        "gt_answer_details": "The reference sentence.",
        "gt_answer": gt_answer,
        "filename": f"./{figure}.png" if visual_input != "0" else None,
        # one picture per figure: the questions on a figure share its bytes
        "image": _png(sum(map(ord, figure)) % 256) if visual_input != "0" else None,
    }


SAME = "Is the right orange circle the same size as the left orange circle?"
LARGER = "Is the right orange circle larger than the left orange circle?"
CHINA = (
    "Is China, Hongkong SAR, the leading importing country of gold, silverware, and jewelry "
    "with the highest import value in 2018?"
)


def image_rows() -> list[dict[str, Any]]:
    return [
        # VD: the original figure 0 and its edited figure 1, two questions each
        _row("VD", "illusion", "0", "0", "0", SAME, "1"),
        _row("VD", "illusion", "0", "0", "1", LARGER, "0"),
        _row("VD", "illusion", "0", "1", "0", SAME, "0", visual_input="2"),
        _row("VD", "illusion", "0", "1", "1", LARGER, "1", visual_input="2"),
        # VS: figures start at 1 (figure 0 is the no-figure control of the non_image split)
        _row("VS", "chart", "0", "1", "0", CHINA, "0"),
        # "ocr" is a subcategory of both VD and VS: the groups keep them apart
        _row("VS", "ocr", "3", "1", "0", "Is the text in the sign 'STOP'?", "1"),
        _row(
            "VD",
            "ocr",
            "3",
            "1",
            "0",
            "According to the image, is the text 'STOP'? Answer in one sentence.",
            "0",
            visual_input="2",
        ),
    ]


def non_image_rows() -> list[dict[str, Any]]:
    return [_row("VS", "chart", "0", "0", "0", CHINA, "0", visual_input="0")]


def write_rows(
    root: Path, file: str, rows: list[dict[str, Any]], drop: tuple[str, ...] = ()
) -> None:
    """Write rows as the hub stores them: string fields and a ``datasets.Image`` column."""
    from datasets import Image, Value

    features = {
        **{name: Value("string") for name in FIELDS if name not in drop},
        "image": Image(),
    }
    write_parquet(root / file, rows, features)


def write_hallusionbench_fixture(root: Path) -> None:
    """A small lmms-lab/HallusionBench under ``root``: seven image-split rows over five figures
    (VD and VS), and a non_image split the format does not read."""
    write_rows(root, IMAGE, image_rows())
    write_rows(root, NON_IMAGE, non_image_rows())


def _records(root: Path) -> dict[str, dict[str, Any]]:
    lines = (root / "records" / "image.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_rows_become_yes_no_records(tmp_path: Path) -> None:
    write_hallusionbench_fixture(tmp_path)
    assert convert_dataset("hallusionbench", tmp_path) == {"image": 7}
    records = {r.id: r for r in read_records(tmp_path / "records" / "image.jsonl")}
    assert list(records) == [
        "VD_illusion_0_0_0",
        "VD_illusion_0_0_1",
        "VD_illusion_0_1_0",
        "VD_illusion_0_1_1",
        "VS_chart_0_1_0",
        "VS_ocr_3_1_0",
        "VD_ocr_3_1_0",
    ]
    first = records["VD_illusion_0_0_0"]
    assert first.problem == SAME  # the bare question: no yes/no instruction is added
    assert (first.answer, first.problem_type, first.task) == ("yes", "yes_no", "VD_illusion")
    assert first.data_source == "hallusionbench" and first.image_sizes == [[32, 24]]
    assert first.groups == {"figure": "VD_illusion_0_0", "question": "VD_illusion_0_0"}
    assert records["VD_illusion_0_1_0"].answer == "no"  # the edited figure flips the answer
    assert records["VS_chart_0_1_0"].problem == CHINA
    video = records["VD_ocr_3_1_0"]
    assert video.problem.endswith("Answer in one sentence.")
    assert video.task == "VD_ocr"


def test_groups_are_the_reference_keys(tmp_path: Path) -> None:
    """figure: category_subcategory_set_id_figure_id (fAcc); question:
    category_subcategory_set_id_question_id (qAcc), as lmms-eval joins them."""
    write_hallusionbench_fixture(tmp_path)
    convert_dataset("hallusionbench", tmp_path)
    records = list(_records(tmp_path).values())
    for rec, raw in zip(records, image_rows(), strict=True):
        head = "_".join(raw[k] for k in ("category", "subcategory", "set_id"))
        assert rec["groups"] == {
            "figure": f"{head}_{raw['figure_id']}",
            "question": f"{head}_{raw['question_id']}",
        }
    figures = {r["groups"]["figure"] for r in records}
    questions = {r["groups"]["question"] for r in records}
    assert figures == {
        "VD_illusion_0_0",
        "VD_illusion_0_1",
        "VS_chart_0_1",
        "VS_ocr_3_1",
        "VD_ocr_3_1",
    }
    # the same question over figures 0 and 1 is one qAcc group; VD ocr and VS ocr stay apart
    assert questions == {
        "VD_illusion_0_0",
        "VD_illusion_0_1",
        "VS_chart_0_0",
        "VS_ocr_3_0",
        "VD_ocr_3_0",
    }


def test_a_figure_is_stored_once(tmp_path: Path) -> None:
    write_hallusionbench_fixture(tmp_path)
    convert_dataset("hallusionbench", tmp_path)
    records = _records(tmp_path)
    same_figure = {records[f"VD_illusion_0_0_{q}"]["images"][0] for q in "01"}
    assert len(same_figure) == 1
    assert len(list((tmp_path / "records" / "images").iterdir())) == 5


def test_the_non_image_split_is_not_read(tmp_path: Path) -> None:
    write_hallusionbench_fixture(tmp_path)
    convert_dataset("hallusionbench", tmp_path)
    assert sorted(p.name for p in (tmp_path / "records").glob("*.jsonl")) == ["image.jsonl"]
    assert "VS_chart_0_0_0" not in _records(tmp_path)
    only_non_image = tmp_path / "only"
    write_rows(only_non_image, NON_IMAGE, non_image_rows())
    with pytest.raises(DataError, match="no file matches 'data/image-"):
        convert_dataset("hallusionbench", only_non_image)


def test_integer_ids_are_read_as_their_strings(tmp_path: Path) -> None:
    from datasets import Image, Value

    ints = {"set_id", "figure_id", "question_id"}
    features = {**{n: Value("int64" if n in ints else "string") for n in FIELDS}, "image": Image()}
    rows = [{n: int(v) if n in ints else v for n, v in r.items()} for r in image_rows()[:1]]
    write_parquet(tmp_path / IMAGE, rows, features)
    convert_dataset("hallusionbench", tmp_path)
    assert list(_records(tmp_path)) == ["VD_illusion_0_0_0"]


def _bad(tmp_path: Path, index: int, drop: tuple[str, ...] = (), **change: Any) -> str:
    rows = image_rows()
    rows[index].update(change)
    write_rows(tmp_path, IMAGE, rows, drop)
    with pytest.raises(DataError) as info:
        convert_dataset("hallusionbench", tmp_path)
    message = str(info.value)
    assert f"{IMAGE} row {index}" in message
    return message


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"gt_answer": "2"}, "'gt_answer' is '2', not '1' (yes) or '0' (no)"),
        (1, {"gt_answer": ""}, "field 'gt_answer' is empty"),
        (2, {"category": "VX"}, "'category' is 'VX', not one of ('VD', 'VS')"),
        (3, {"visual_input": "0"}, "'visual_input' is '0'"),
        (4, {"figure_id": "0"}, "VS question on figure 0"),
        (4, {"set_id": "a"}, "'set_id' is 'a', not a decimal number"),
        (5, {"subcategory": "o c r"}, "'subcategory' 'o c r' is not a plain word"),
        (5, {"image": None}, "field 'image' is empty"),
        (6, {"image": {"bytes": b"junk", "path": None}}, "'image' is not a readable image"),
        (6, {"question": None}, "field 'question' is empty"),
        # the same (category, subcategory, set, figure, question) twice
        (1, {"question_id": "0"}, f"repeats the question 'VD_illusion_0_0_0' of {IMAGE} row 0"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, index: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, index, **change)


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    message = _bad(tmp_path, 0, drop=("question_id",))
    assert "has no field 'question_id'" in message


# The id fields, checked in process (the mutation tests of issue 40).


@pytest.mark.parametrize("value", [True, 1.5])
def test_an_id_that_is_not_a_string_or_an_integer_is_the_whole_row_message(value: Any) -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.hallusionbench import text

    with pytest.raises(RowError) as info:
        text(Row(IMAGE, 3, {"set_id": value}), "set_id")
    assert str(info.value) == f"{IMAGE} row 3: field 'set_id' must be a string: {value!r}"


@pytest.mark.parametrize(
    ("index", "change", "message"),
    [
        pytest.param(
            3, {"visual_input": "0"},
            "field 'visual_input' is '0': the image split holds questions asked with a figure "
            "(1 or 2); 0 belongs to the non_image split",
            id="visual-input-0",
        ),
        pytest.param(
            4, {"figure_id": "0"},
            "is a VS question on figure 0, the no-figure control lmms-eval leaves out of fAcc "
            "(get_eval_fig); it belongs to the non_image split",
            id="vs-figure-0",
        ),
        pytest.param(6, {"question": 5}, "field 'question' must be a string: 5", id="question-int"),
    ],
)  # fmt: skip
def test_a_bad_row_is_the_whole_row_message(
    tmp_path: Path, index: int, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.hallusionbench import convert_row

    with pytest.raises(RowError) as info:
        convert_row(Row(IMAGE, index, {**image_rows()[index], **change}), ImageStore(tmp_path))
    assert str(info.value) == f"{IMAGE} row {index}: {message}"
