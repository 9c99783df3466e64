"""The detection formats' pieces (ovdeval, coco_filtered and what they share), in process: an
image's ``text`` / ``neg_text`` that is null or blank rejected as not a list of labels, a
``records/`` folder inside the source ignored when finding the annotation file and the pictures,
several annotation files named whole, a bad category or annotation named by its file and row,
a category name kept as written, the annotation file read as UTF-8 whatever the locale,
non-ASCII labels kept unescaped in the gold answer, the whole record of an image (its picture's
size among them), and an unreadable picture named by its archive and field."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from hub_parquet import image_bytes
from test_coco_filtered import instances, write_coco_filtered_fixture
from test_ovdeval import write_tar

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError, coco_filtered
from vlrl.data.formats._detection import (
    Pictures,
    boxes_by_image,
    category_names,
    detection_record,
    gold_answer,
    load_json,
)
from vlrl.data.formats.coco_filtered import _find
from vlrl.data.formats.ovdeval import labels_of

ANNOTATIONS = "annotations/instances_val2017.json"
#: The picture of :func:`test_an_image_becomes_one_detection_record_with_its_picture_size`.
JPEG = image_bytes((40, 200, 40), (32, 24), "JPEG")
#: Where :class:`ImageStore` puts :data:`JPEG` (the SHA-256 of its bytes, 32 hex digits).
STORED = f"images/{hashlib.sha256(JPEG).hexdigest()[:32]}.jpg"


def convert_coco(root: Path, change=None) -> list:
    """coco_filtered's records of the fixture under ``root``, its annotation file changed by
    ``change`` first (on a copy: :func:`instances` shares its categories); the pictures stored
    outside the source files' names."""
    if change is not None:
        data = copy.deepcopy(instances())
        change(data)
        (root / ANNOTATIONS).write_text(json.dumps(data))
    return list(coco_filtered.convert(root, ImageStore(root / "out")))


# --- ovdeval.labels_of ---------------------------------------------------------------------


def test_labels_are_text_then_neg_text_each_asked_once():
    row = Row("logo.json images", 0, {"text": ["a", "b"], "neg_text": ["b", "c", "a"]})
    assert labels_of(row) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"text": None, "neg_text": ["b"]}, "field 'text' must be a list of labels: None"),
        ({"text": ["a"], "neg_text": None}, "field 'neg_text' must be a list of labels: None"),
        ({"text": ["a"], "neg_text": "  "}, "field 'neg_text' must be a list of labels: '  '"),
    ],
)
def test_null_or_blank_labels_are_not_a_list_of_labels(data, says):
    with pytest.raises(RowError) as err:
        labels_of(Row("logo.json images", 3, {"id": 12, **data}))
    assert (str(err.value), err.value.row_id) == (f"logo.json images row 3: {says}", "12")


# --- coco_filtered: finding the files ------------------------------------------------------


def test_an_annotation_file_in_a_records_folder_is_not_found(tmp_path):
    write_coco_filtered_fixture(tmp_path)
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "instances_val2017.json").write_text("{}")
    found = _find(tmp_path, "instances_val2017.json")
    assert found == tmp_path / "annotations" / "instances_val2017.json"


def test_several_annotation_files_are_named_whole(tmp_path):
    for folder in ("b", "a"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "instances_val2017.json").write_text("{}")
    with pytest.raises(DataError) as err:
        _find(tmp_path, "instances_val2017.json")
    assert str(err.value) == (
        f"{tmp_path}: expected one instances_val2017.json, found several: "
        f"['{tmp_path}/a/instances_val2017.json', '{tmp_path}/b/instances_val2017.json']"
    )


def test_pictures_in_a_records_folder_are_not_found(tmp_path):
    write_coco_filtered_fixture(tmp_path)
    (tmp_path / "records").mkdir()
    (tmp_path / "val2017").rename(tmp_path / "records" / "val2017")
    with pytest.raises(DataError) as err:
        convert_coco(tmp_path)
    assert str(err.value) == f"{tmp_path}: no COCO val2017 pictures (val2017.zip or val2017)"


# --- coco_filtered: bad rows named by the annotation file ----------------------------------


def test_a_category_without_id_is_named_by_the_annotation_file(tmp_path):
    write_coco_filtered_fixture(tmp_path)

    def no_id(data):
        data["categories"][1] = {"name": "car"}

    with pytest.raises(RowError) as err:
        convert_coco(tmp_path, no_id)
    assert str(err.value) == f"{ANNOTATIONS} row 1: category {{'name': 'car'}} has no id"


def test_an_annotation_of_an_unknown_category_is_named_by_the_annotation_file(tmp_path):
    write_coco_filtered_fixture(tmp_path)

    def unknown(data):
        data["annotations"][2]["category_id"] = 9

    with pytest.raises(RowError) as err:
        convert_coco(tmp_path, unknown)
    assert (str(err.value), err.value.row_id) == (
        f"{ANNOTATIONS} annotations row 2: category_id 9 is not one of the file's categories",
        "3",
    )


@pytest.mark.parametrize("annotation", [5, None, "box"])
def test_an_annotation_that_is_not_an_object_is_named(annotation):
    data = {"annotations": [{"category_id": 1, "bbox": [0, 0, 1, 1], "image_id": 4}, annotation]}
    with pytest.raises(RowError) as err:
        boxes_by_image(data, {1: "cup"}, "logo.json")
    assert str(err.value) == f"logo.json annotations row 1: is not an object: {annotation!r}"


@pytest.mark.parametrize("image", [5, None, "x.jpg"])
def test_a_coco_image_entry_that_is_not_an_object_is_named(tmp_path, image):
    write_coco_filtered_fixture(tmp_path)

    def broken(data):
        data["images"][1] = image

    with pytest.raises(RowError) as err:
        convert_coco(tmp_path, broken)
    assert str(err.value) == f"{ANNOTATIONS} images row 1: is not an object: {image!r}"


# --- _detection: categories, the annotation file, the gold answer --------------------------


def test_a_category_name_is_kept_as_written():
    data = {"categories": [{"id": 10, "name": " traffic light "}, {"id": 3, "name": "car\t"}]}
    assert category_names(data, "logo.json") == {10: " traffic light ", 3: "car\t"}


def test_the_annotation_file_is_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    data = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "café 猫"}]}
    path = tmp_path / "logo.json"
    path.write_bytes(
        b'{"images": [], "annotations": [], '
        b'"categories": [{"id": 1, "name": "caf\xc3\xa9 \xe7\x8c\xab"}]}'
    )
    assert load_json(path) == data


def test_non_ascii_labels_are_kept_unescaped_in_the_gold_answer():
    assert gold_answer([("café", [1, 2, 3.5, 4]), ("猫", [0, 0, 1, 1])]) == (
        '```json\n[{"bbox_2d": [1, 2, 3.5, 4], "label": "café"}, '
        '{"bbox_2d": [0, 0, 1, 1], "label": "猫"}]\n```'
    )


# --- _detection.detection_record -----------------------------------------------------------


@pytest.fixture()
def pictures(tmp_path):
    (tmp_path / "pics" / "sub").mkdir(parents=True)
    (tmp_path / "pics" / "sub" / "a.jpg").write_bytes(JPEG)
    return Pictures(tmp_path / "pics", ["a.jpg"], ImageStore(tmp_path / "records"))


def an_image_record(pictures, **kw):
    row = Row("celebrity.json images", 1, {"id": 7, "file_name": "celebrity/a.jpg"})
    boxes = [("café", [2, 3, 10, 8]), ("rider's hat", [20, 12, 12.4, 11.5])]
    args = {"id": "celebrity-7", "data_source": "ovdeval", "task": "celebrity", **kw}
    return detection_record(row, pictures, boxes, ["café", "rider's hat", "dog"], **args)


def test_an_image_becomes_one_detection_record_with_its_picture_size(tmp_path, pictures):
    assert an_image_record(pictures).model_dump(exclude_defaults=True) == {
        "id": "celebrity-7",
        "images": [STORED],
        "problem": (
            "Please carefully check the image and detect the following objects: ['café', "
            "\"rider's hat\", 'dog']. Output the bbox coordinates of detected objects in JSON "
            "format in <answer></answer>. The bbox coordinate format should be: \n```json\n"
            '[{"bbox_2d": [x1, y1, x2, y2], "label": "object name"}]\n```\n. If no targets are '
            'detected in the image, simply respond with "None".'
        ),
        "answer": (
            '```json\n[{"bbox_2d": [2.0, 3.0, 12.0, 11.0], "label": "café"}, '
            '{"bbox_2d": [20.0, 12.0, 32.4, 23.5], "label": "rider\'s hat"}]\n```'
        ),
        "problem_type": "detection",
        "options": ["café", "rider's hat", "dog"],
        "boxes": [[2.0, 3.0, 12.0, 11.0], [20.0, 12.0, 32.0, 23.5]],
        "image_sizes": [[32, 24]],
        "data_source": "ovdeval",
        "task": "celebrity",
    }
    assert (tmp_path / "records" / STORED).read_bytes() == JPEG


def test_a_record_the_schema_refuses_names_the_image_row(pictures):
    with pytest.raises(RowError) as err:
        an_image_record(pictures, data_source=None)
    assert (str(err.value), err.value.row_id) == (
        "celebrity.json images row 1: data_source: Input should be a valid string",
        "7",
    )


# --- _detection.Pictures -------------------------------------------------------------------


def test_an_empty_picture_is_named_by_its_archive_and_the_image_field(tmp_path):
    write_tar(tmp_path / "logo.tar.gz", {"logo/a.jpg": JPEG, "logo/b.jpg": b""})
    with pytest.raises(RowError) as err:
        Pictures(tmp_path / "logo.tar.gz", ["a.jpg", "b.jpg"], ImageStore(tmp_path / "records"))
    assert (str(err.value), err.value.row_id) == (
        "logo.tar.gz row 0: field 'image' holds no image bytes (bytes)",
        None,
    )
