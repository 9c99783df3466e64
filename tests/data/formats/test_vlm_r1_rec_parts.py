"""vlm_r1_rec's pieces, in process: the ``_od`` copy of an item asks its ``normal_caption``, the
row-count error's wording, how an item's ``image`` path finds its zip member (a leading ``/`` or
``./`` dropped, a bare file name found in its folder, that folder remembered), the picture stored
under the row's name, the ``solution`` box checks, a stated ``height`` checked against the
picture, and the whole record of an item; each bad value rejected with the whole message naming
the row."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.vlm_r1_rec import (
    ImageArchive,
    _members,
    check_rows,
    convert_item,
    convert_rec_jsons,
    read_member,
    solution_box,
)

LABEL = "rec_jsons_processed.zip:rec/tiny_val.json"
#: The picture every test item points at, and its bytes (a 40 x 30 JPEG).
PICTURE = "train2014/COCO_train2014_000000000009.jpg"
JPEG = image_bytes((40, 200, 40), (40, 30), "JPEG")
#: Where :class:`ImageStore` puts :data:`JPEG` (the SHA-256 of its bytes, 32 hex digits).
STORED = f"images/{hashlib.sha256(JPEG).hexdigest()[:32]}.jpg"


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def an_item(**changes: Any) -> dict[str, Any]:
    data = {
        "id": 7,
        "image": PICTURE,
        "problem": " Please provide the bounding box of: the cup. ",
        "normal_caption": " the cup ",
        "solution": [2.0, 3.0, 20.5, 28.0],
        "width": 40,
        "height": 30,
    }
    return {**data, **changes}


@pytest.fixture()
def archive(tmp_path: Path):
    zipped = ImageArchive(write_zip(tmp_path / "train2014.zip", {PICTURE: JPEG}))
    yield zipped
    zipped.close()


def convert_one(tmp_path: Path, archive: ImageArchive, data: dict[str, Any], **kw: Any):
    args = {"split": "tiny_val", "data_source": "refcoco", **kw}
    rec = convert_item(Row(LABEL, 4, data), ImageStore(tmp_path / "records"), archive, **args)
    return rec.model_dump(exclude_defaults=True)


# --- convert_rec_jsons: the _od copy ---------------------------------------------------------


def test_the_od_copy_of_an_item_asks_its_normal_caption_as_it_is(tmp_path):
    with zipfile.ZipFile(tmp_path / "rec_jsons_processed.zip", "w") as zipped:
        zipped.writestr("rec/tiny_val.json", json.dumps([an_item()]))
    write_zip(tmp_path / "train2014.zip", {PICTURE: JPEG})
    out = list(
        convert_rec_jsons(
            tmp_path,
            ImageStore(tmp_path / "records"),
            files={"tiny_val": "tiny_val.json"},
            rows={"tiny_val.json": 1},
            about={"tiny_val.json": "a tiny val"},
            image_archives=("train2014.zip",),
            data_source="refcoco",
            od_splits=True,
        )
    )
    got = [(split, rec.model_dump(exclude_defaults=True)) for split, rec in out]
    same = {
        "id": "tiny_val-0",
        "images": [STORED],
        "image_sizes": [[40, 30]],
        "answer": "[2, 3, 20, 28]",
        "problem_type": "grounding",
        "boxes": [[2.0, 3.0, 20.5, 28.0]],
        "data_source": "refcoco",
        "task": "tiny_val",
        "groups": {"image": PICTURE},
    }
    assert got == [
        ("tiny_val", {**same, "problem": "Please provide the bounding box of: the cup."}),
        ("tiny_val_od", {**same, "problem": " the cup "}),
    ]


# --- check_rows --------------------------------------------------------------------------------


def test_a_file_of_one_item_says_item_not_items():
    with pytest.raises(DataError) as exc:
        check_rows(LABEL, [{}], 2, "a tiny val")
    assert str(exc.value) == f"{LABEL} holds 1 item, expected 2 (a tiny val)"


# --- ImageArchive.member -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        PICTURE,
        "/" + PICTURE,
        "//" + PICTURE,
        " /" + PICTURE + " ",
        "./" + PICTURE,
        "COCO_train2014_000000000009.jpg",
        "/COCO_train2014_000000000009.jpg",
    ],
)
def test_an_image_path_finds_its_member_whatever_its_leading_slash_or_dot(archive, image):
    assert archive.member(image, Row(LABEL, 0, {})) == PICTURE


def test_a_member_whose_name_starts_with_x_is_found_as_it_is(tmp_path):
    # Only "/" is stripped from the front: a folder starting with X keeps its X.
    zipped = ImageArchive(write_zip(tmp_path / "x.zip", {"XMEM/a.jpg": JPEG}))
    try:
        assert zipped.member("/XMEM/a.jpg", Row(LABEL, 0, {})) == "XMEM/a.jpg"
        assert zipped.member("XMEM/a.jpg", Row(LABEL, 0, {})) == "XMEM/a.jpg"
    finally:
        zipped.close()


def test_a_bare_name_found_by_suffix_remembers_its_folder(tmp_path):
    members = {"pics/apple.jpg": JPEG, "pics/b.jpg": JPEG, "other/c.jpg": JPEG}
    zipped = ImageArchive(write_zip(tmp_path / "x.zip", members))
    try:
        assert zipped.member("apple.jpg", Row(LABEL, 0, {})) == "pics/apple.jpg"
        assert zipped.prefixes == ["pics/"]
        # The folder is remembered once: a second name found in it adds nothing.
        assert zipped.member("b.jpg", Row(LABEL, 1, {})) == "pics/b.jpg"
        assert zipped.prefixes == ["pics/"]
    finally:
        zipped.close()


def test_a_bare_name_in_two_folders_is_rejected_naming_both(tmp_path):
    zipped = ImageArchive(write_zip(tmp_path / "x.zip", {"b/c.jpg": JPEG, "a/c.jpg": JPEG}))
    try:
        with pytest.raises(RowError) as exc:
            zipped.member("c.jpg", Row(LABEL, 1, {"id": 8}))
    finally:
        zipped.close()
    assert (str(exc.value), exc.value.row_id) == (
        f"{LABEL} row 1: image 'c.jpg' matches several members of x.zip: ['a/c.jpg', 'b/c.jpg']",
        "8",
    )


def test_a_missing_image_is_rejected_naming_the_row(archive):
    with pytest.raises(RowError) as exc:
        archive.member("./train2014/nope.jpg", Row(LABEL, 2, {"id": 9}))
    assert (str(exc.value), exc.value.row_id) == (
        f"{LABEL} row 2: image './train2014/nope.jpg' is not in train2014.zip",
        "9",
    )


# --- ImageArchive.save -------------------------------------------------------------------------


def test_an_empty_member_is_rejected_naming_the_row_and_the_image_field(tmp_path):
    zipped = ImageArchive(write_zip(tmp_path / "train2014.zip", {PICTURE: b""}))
    try:
        with pytest.raises(RowError) as exc:
            zipped.save(PICTURE, Row(LABEL, 3, {"id": 11}), ImageStore(tmp_path / "records"))
    finally:
        zipped.close()
    assert (str(exc.value), exc.value.row_id) == (
        f"{LABEL} row 3: field 'image' holds no image bytes (bytes)",
        "11",
    )


def test_a_picture_is_stored_once_with_its_size(tmp_path, archive):
    store = ImageStore(tmp_path / "records")
    assert archive.save("./" + PICTURE, Row(LABEL, 0, {}), store) == (STORED, 40, 30)
    assert archive.save(PICTURE, Row(LABEL, 1, {}), store) == (STORED, 40, 30)
    assert (tmp_path / "records" / STORED).read_bytes() == JPEG


# --- solution_box ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("solution", "box"),
    [
        ([1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0]),
        ("[1.5, 2, 3, 4.25]", [1.5, 2.0, 3.0, 4.25]),
        ([0, 0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]),
    ],
)
def test_a_solution_is_four_numbers_with_x1_below_x2_and_y1_below_y2(solution, box):
    assert solution_box(Row(LABEL, 0, {"solution": solution})) == box


@pytest.mark.parametrize(
    ("solution", "says"),
    [
        ("[1, 2, 3", "field 'solution' is not a box [x1, y1, x2, y2]: '[1, 2, 3'"),
        ("the cup", "field 'solution' is not a box [x1, y1, x2, y2]: 'the cup'"),
        ([True, 1, 5, 5],
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [True, 1, 5, 5]"),
        ([1, 1, 5, False],
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [1, 1, 5, False]"),
        ([1, 1, float("nan"), 5],
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [1, 1, nan, 5]"),
        ([1, 1, 5, float("inf")],
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [1, 1, 5, inf]"),
        ("[1, 1, 5, NaN]",
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [1, 1, 5, nan]"),
        ([1, 1, "5", 5],
         "field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: [1, 1, '5', 5]"),
        ([5, 1, 5, 4], "field 'solution' [5, 1, 5, 4] has x2 <= x1 or y2 <= y1"),
        ([1, 4, 5, 4], "field 'solution' [1, 4, 5, 4] has x2 <= x1 or y2 <= y1"),
        ([6, 1, 5, 4], "field 'solution' [6, 1, 5, 4] has x2 <= x1 or y2 <= y1"),
        ([1, 5, 5, 4], "field 'solution' [1, 5, 5, 4] has x2 <= x1 or y2 <= y1"),
    ],
)  # fmt: skip
def test_a_bad_solution_is_rejected_naming_the_row(solution, says):
    with pytest.raises(RowError) as exc:
        solution_box(Row(LABEL, 6, {"id": 12, "solution": solution}))
    assert (str(exc.value), exc.value.row_id) == (f"{LABEL} row 6: {says}", "12")


# --- convert_item ------------------------------------------------------------------------------


def test_an_item_becomes_a_grounding_record_with_its_picture_size(tmp_path, archive):
    assert convert_one(tmp_path, archive, an_item(image=" ./" + PICTURE)) == {
        "id": "tiny_val-4",
        "images": [STORED],
        "image_sizes": [[40, 30]],
        "problem": "Please provide the bounding box of: the cup.",
        "answer": "[2, 3, 20, 28]",
        "problem_type": "grounding",
        "boxes": [[2.0, 3.0, 20.5, 28.0]],
        "data_source": "refcoco",
        "task": "tiny_val",
        "groups": {"image": "./" + PICTURE},
    }


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"problem": 5}, "field 'problem' must be a string: 5"),
        ({"problem": ["a"]}, "field 'problem' must be a string: ['a']"),
        ({"image": 3}, "field 'image' must be a path: 3"),
        ({"height": 31}, "field 'height' is 31 but its picture is 40x30"),
        ({"width": 41}, "field 'width' is 41 but its picture is 40x30"),
        ({"width": None, "height": 29}, "field 'height' is 29 but its picture is 40x30"),
        ({"solution": [0, 0, 42, 10]},
         f"field 'solution' [0.0, 0.0, 42.0, 10.0] is outside its 40x30 image {PICTURE!r}"),
    ],
)  # fmt: skip
def test_a_bad_item_is_rejected_naming_the_row(tmp_path, archive, changes, says):
    with pytest.raises(RowError) as exc:
        convert_one(tmp_path, archive, an_item(**changes))
    assert (str(exc.value), exc.value.row_id) == (f"{LABEL} row 4: {says}", "7")


def test_a_record_the_schema_refuses_names_the_row(tmp_path, archive):
    with pytest.raises(RowError) as exc:
        convert_one(tmp_path, archive, an_item(), data_source=None)
    assert (str(exc.value), exc.value.row_id) == (
        f"{LABEL} row 4: data_source: Input should be a valid string",
        "7",
    )


def test_an_archives_files_leave_out_folders_and_macos_resource_forks(tmp_path):
    path = write_zip(
        tmp_path / "a.zip",
        {
            "rec/": b"",
            "rec/a.json": b"[]",
            "__MACOSX/rec/a.json": b"fork",
            "rec/._b.json": b"fork",
            "x__MACOSX/c.json": b"[]",
        },
    )
    with zipfile.ZipFile(path) as archive:
        assert _members(archive) == ["rec/a.json", "x__MACOSX/c.json"]


def test_a_member_name_found_in_two_folders_is_named_with_both(tmp_path):
    path = write_zip(tmp_path / "a.zip", {"a/x.json": b"[]", "b/x.json": b"[]"})
    with pytest.raises(DataError) as err:
        read_member(path, "x.json")
    assert str(err.value) == f"{path}: several members ['a/x.json', 'b/x.json'] named 'x.json'"
