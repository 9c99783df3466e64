"""refcoco's row pieces, in process: the box of a row (xywh → xyxy, rounded, fitted to its
picture with the edge tolerance), its id and expressions, the split of a file and the standard
split sizes, each bad value rejected with the whole message naming the row."""

from __future__ import annotations

import pytest

from vlrl.core.errors import DataError
from vlrl.data.formats import Row, RowError
from vlrl.data.formats.refcoco import (
    check_standard,
    expressions,
    fit_box,
    object_box,
    object_id,
    split_of,
    xywh_to_xyxy,
)


@pytest.mark.parametrize(
    ("box", "fitted"),
    [
        ([0, 0, 32, 24], [0, 0, 32, 24]),
        ([-1, -1, 33, 25], [0, 0, 32, 24]),
        ([-1.5, 0, 5, 5], None),
        ([0, -1.5, 5, 5], None),
        ([0, 0, 33.5, 5], None),
        ([0, 0, 5, 25.5], None),
        ([31.5, 0, 33, 5], [31.5, 0, 32, 5]),
        ([32, 0, 33, 5], None),
        ([0, 24, 5, 25], None),
        ([-1, 0, 0, 5], None),
        ([0, -1, 5, 0], None),
    ],
)
def test_a_box_is_clamped_within_the_tolerance_and_refused_beyond(box, fitted):
    assert fit_box(box, 32, 24) == fitted


def test_a_coco_box_becomes_corners_rounded_to_three_places():
    assert xywh_to_xyxy([1.00049, 2.0006, 3.0004, 4]) == [1.0, 2.001, 4.0, 6.001]
    assert xywh_to_xyxy(["1", 2, 3, 4]) == [1.0, 2.0, 4.0, 6.0]


def test_a_row_box_is_fitted_to_its_picture():
    assert object_box(Row("f", 0, {"bbox": [0.5, 1, 31.9, 23.5]}), 32, 24) == [0.5, 1.0, 32, 24]
    assert object_box(Row("f", 0, {"bbox": [1, 2, 1, 0.5]}), 32, 24) == [1.0, 2.0, 2.0, 2.5]


@pytest.mark.parametrize(
    ("bbox", "says"),
    [
        ([1, 2, 3], "field 'bbox' must be 4 finite numbers [x, y, w, h]: [1, 2, 3]"),
        ("1 2 3 4", "field 'bbox' must be 4 finite numbers [x, y, w, h]: '1 2 3 4'"),
        ([1, 2, 3, float("nan")],
         "field 'bbox' must be 4 finite numbers [x, y, w, h]: [1, 2, 3, nan]"),
        ([1, 2, "3", 4], "field 'bbox' must be 4 finite numbers [x, y, w, h]: [1, 2, '3', 4]"),
        ([1, 2, 0, 4], "field 'bbox' [1, 2, 0, 4] has a width or height <= 0"),
        ([1, 2, 3, 0], "field 'bbox' [1, 2, 3, 0] has a width or height <= 0"),
        ([1, 2, 3, -1], "field 'bbox' [1, 2, 3, -1] has a width or height <= 0"),
        ([30, 2, 5, 4],
         "field 'bbox' [30, 2, 5, 4] (x1, y1, x2, y2 = [30.0, 2.0, 35.0, 6.0]) is outside its "
         "32x24 image"),
    ],
)  # fmt: skip
def test_a_bad_box_is_rejected_naming_the_row(bbox, says):
    with pytest.raises(RowError) as exc:
        object_box(Row("data/val.parquet", 9, {"bbox": bbox, "question_id": "q9"}), 32, 24)
    assert (str(exc.value), exc.value.row_id) == (f"data/val.parquet row 9: {says}", "q9")


def test_the_id_is_the_question_id_as_a_string():
    assert object_id(Row("f", 0, {"question_id": " 12 "})) == "12"
    assert object_id(Row("f", 0, {"question_id": 7})) == "7"
    for value in (True, 1.5, ["1"]):
        with pytest.raises(RowError) as exc:
            object_id(Row("f", 2, {"question_id": value}))
        assert str(exc.value) == f"f row 2: field 'question_id' must be a string: {value!r}"


def test_the_expressions_are_stripped_and_none_may_be_empty():
    assert expressions(Row("f", 0, {"answer": [" the man ", "him"]})) == ["the man", "him"]
    cases = [
        ("a man", "field 'answer' must be a non-empty list of expressions: 'a man'"),
        ([], "field 'answer' must be a non-empty list of expressions: []"),
        (["a", " "], "field 'answer' item 1 is not an expression: ' '"),
        (["a", 3], "field 'answer' item 1 is not an expression: 3"),
    ]
    for value, says in cases:
        with pytest.raises(RowError) as exc:
            expressions(Row("f", 4, {"answer": value}))
        assert str(exc.value) == f"f row 4: {says}"


def test_the_split_is_the_file_name_up_to_the_first_dash():
    assert split_of("data/testA-00000-of-00001-1b1f.parquet") == "testA"
    assert split_of("val-x-y.parquet") == "val"


def test_a_split_of_another_size_is_refused_naming_the_standard_sizes():
    check_standard("val", 4_896, ["a"])
    with pytest.raises(DataError) as exc:
        check_standard("testA", 5_000, ["data/testA-0.parquet", "data/testA-1.parquet"])
    assert str(exc.value) == (
        "data/testA-0.parquet, data/testA-1.parquet: split 'testA' holds 5,000 expressions, "
        "expected one of 5,657 (RefCOCO (UNC) testA), 5,726 (RefCOCO+ (UNC) testA)"
    )
