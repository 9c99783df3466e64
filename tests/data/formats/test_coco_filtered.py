"""The coco_filtered format: COCO 2017 val (annotations/instances_val2017.json and the val2017
pictures, a folder or val2017.zip) → VLM-R1's COCO_filtered, one detection record per image with
at most 10 boxes of any category, asked about every category."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats._detection import ovd_question
from vlrl.items.records import read_records

CATEGORIES = [
    {"supercategory": "person", "id": 1, "name": "person"},
    {"supercategory": "vehicle", "id": 3, "name": "car"},
    {"supercategory": "kitchen", "id": 47, "name": "cup"},
]


def _annotation(n: int, image_id: int, category_id: int, bbox: list, crowd: int = 0) -> dict:
    return {"id": n, "image_id": image_id, "category_id": category_id, "bbox": bbox,
            "area": bbox[2] * bbox[3], "iscrowd": crowd, "segmentation": []}  # fmt: skip


def instances() -> dict[str, Any]:
    """instances_val2017.json's schema: image 139 (two people, a cup, a crowd region), image 285
    (eleven cups: left out), image 632 (no annotation: left out), image 724 (ten cars: kept)."""
    annotations = [
        _annotation(1, 139, 1, [1.5, 2.25, 10.0, 12.0]),
        _annotation(2, 139, 1, [20, 2, 8, 20]),
        _annotation(3, 139, 47, [14.29, 10.01, 4.7, 5.36]),
        _annotation(4, 139, 1, [0, 14, 32, 10], crowd=1),
        *(_annotation(10 + k, 285, 47, [k, k, 2, 2]) for k in range(11)),
        *(_annotation(30 + k, 724, 3, [k, 0, 3, 3]) for k in range(10)),
    ]
    images = [
        {"license": 4, "file_name": f"{i:012d}.jpg", "height": 24, "width": 32, "id": i}
        for i in (139, 285, 632, 724)
    ]
    return {"info": {}, "licenses": [], "images": images, "annotations": annotations,
            "categories": CATEGORIES}  # fmt: skip


def _pictures() -> dict[str, bytes]:
    return {
        f"{i:012d}.jpg": image_bytes((i % 255, 90, 30), (32, 24), "JPEG")
        for i in (139, 285, 632, 724)
    }


def write_coco_filtered_fixture(root: Path) -> None:
    """merve/coco's layout under ``root``: ``annotations/instances_val2017.json`` and the
    pictures in ``val2017/``."""
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(instances()))
    (root / "val2017").mkdir(exist_ok=True)
    for name, data in _pictures().items():
        (root / "val2017" / name).write_bytes(data)


def test_records(tmp_path: Path) -> None:
    write_coco_filtered_fixture(tmp_path)
    assert convert_dataset("coco_filtered", tmp_path) == {"test": 2}
    first, second = read_records(tmp_path / "records" / "test.jsonl")
    assert (first.id, second.id) == ("coco-139", "coco-724")
    assert first.options == ["person", "car", "cup"]
    assert first.problem == ovd_question(["person", "car", "cup"])
    assert (first.task, first.problem_type, first.data_source) == (
        "coco_filtered", "detection", "coco"
    )  # fmt: skip
    gold = json.loads(first.answer.removeprefix("```json\n").removesuffix("\n```"))
    assert gold == [
        {"bbox_2d": [1.5, 2.25, 11.5, 14.25], "label": "person"},
        {"bbox_2d": [20.0, 2.0, 28.0, 22.0], "label": "person"},
        {"bbox_2d": [14.29, 10.01, 18.99, 15.37], "label": "cup"},
        {"bbox_2d": [0.0, 14.0, 32.0, 24.0], "label": "person"},
    ]
    assert len(second.boxes) == 10


def test_pictures_from_val2017_zip(tmp_path: Path) -> None:
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "instances_val2017.json").write_text(json.dumps(instances()))
    with zipfile.ZipFile(tmp_path / "val2017.zip", "w") as archive:
        archive.writestr("val2017/", "")
        for name, data in _pictures().items():
            archive.writestr(f"val2017/{name}", data)
    assert convert_dataset("coco_filtered", tmp_path) == {"test": 2}


def test_what_is_missing_is_named(tmp_path: Path) -> None:
    write_coco_filtered_fixture(tmp_path)
    (tmp_path / "val2017" / "000000000724.jpg").unlink()
    with pytest.raises(DataError) as err:
        convert_dataset("coco_filtered", tmp_path)
    assert str(err.value) == (
        "annotations/instances_val2017.json images row 3: picture '000000000724.jpg' is not in "
        "val2017"
    )
    (tmp_path / "annotations" / "instances_val2017.json").unlink()
    with pytest.raises(DataError) as err:
        convert_dataset("coco_filtered", tmp_path)
    assert str(err.value) == f"{tmp_path}: expected one instances_val2017.json, found nothing"


def test_no_image_kept_is_an_error(tmp_path: Path) -> None:
    write_coco_filtered_fixture(tmp_path)
    data = instances()
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] == 285]
    (tmp_path / "annotations" / "instances_val2017.json").write_text(json.dumps(data))
    with pytest.raises(DataError) as err:
        convert_dataset("coco_filtered", tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'annotations' / 'instances_val2017.json'}: no image has boxes of at most "
        "10 per category"
    )


def test_two_annotation_files_are_an_error(tmp_path: Path) -> None:
    write_coco_filtered_fixture(tmp_path)
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "instances_val2017.json").write_text(json.dumps(instances()))
    with pytest.raises(DataError, match=r"expected one instances_val2017.json, found several: "):
        convert_dataset("coco_filtered", tmp_path)
    (tmp_path / "copy" / "instances_val2017.json").unlink()
    for picture in (tmp_path / "val2017").iterdir():
        picture.unlink()
    (tmp_path / "val2017").rmdir()
    with pytest.raises(DataError) as err:
        convert_dataset("coco_filtered", tmp_path)
    assert str(err.value) == f"{tmp_path}: no COCO val2017 pictures (val2017.zip or val2017)"
