"""The ovdeval format: omlab/OVDEval's <task>.json annotation files and <task>.tar.gz pictures →
one detection record per image, asked about its text + neg_text labels in VLM-R1's OVD question,
its boxes the gold answer."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset, ovdeval
from vlrl.data.formats._detection import ovd_question
from vlrl.items.records import read_records

#: The human turn of the training row a VLM-R1 author posted in om-ai-lab/VLM-R1 issue #246,
#: as the issue has it (tests/data/formats/test_vlm_r1_ovd.py holds the whole row).
ISSUE_246_QUESTION = (
    "Please carefully check the image and detect the following objects: ['railings being "
    "crossed by horses', 'a horse running or jumping', \"equestrian rider's helmet\", 'an "
    "oversized glove worn on the left hand of a baseball player', 'person holding a torch']. "
    "Output the bbox coordinates of detected objects in JSON format in <answer></answer>. The "
    'bbox coordinate format should be: \n```json\n[{"bbox_2d": [x1, y1, x2, y2], "label": '
    '"object name"}]\n```\n. If no targets are detected in the image, simply respond with '
    '"None".'
)


def annotation_file(task: str) -> dict[str, Any]:
    """A sub-task's annotation file in the hub's schema (OVDEval Evaluation.md's example): two
    pictures, one with two boxes of its positive label, one with a box of each of two labels."""
    return {
        "categories": [
            {"supercategory": "object", "id": 0, "name": f"{task} without screen on"},
            {"supercategory": "object", "id": 1, "name": f"{task} with screen on"},
            {"supercategory": "object", "id": 2, "name": f"{task}'s red one"},
        ],
        "annotations": [
            {"id": 0, "bbox": [2, 3, 10, 8], "category_id": 0, "image_id": 0, "iscrowd": 0,
             "area": 80},
            {"id": 1, "bbox": [20, 12, 11.5, 11.5], "category_id": 0, "image_id": 0,
             "iscrowd": 0, "area": 132.25},
            {"id": 2, "bbox": [0, 0, 16, 24], "category_id": 1, "image_id": 7, "iscrowd": 0,
             "area": 384},
            {"id": 3, "bbox": [16, 0, 16.4, 24], "category_id": 2, "image_id": 7, "iscrowd": 0,
             "area": 393.6},
        ],
        "images": [
            {"file_name": f"{task}_a.jpg", "id": 0, "height": 24, "width": 32,
             "text": [f"{task} without screen on"], "neg_text": [f"{task} with screen on"]},
            {"file_name": f"{task}_b.jpg", "id": 7, "height": 24, "width": 32,
             "text": [f"{task} with screen on", f"{task}'s red one"],
             "neg_text": [f"{task} without screen on", f"{task}'s red one"]},
        ],
    }  # fmt: skip


def write_tar(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def write_ovdeval_fixture(root: Path) -> None:
    """omlab/OVDEval's files under ``root``: ``<task>.json`` and ``<task>.tar.gz`` (pictures in
    a ``<task>/`` folder, a macOS resource fork beside one) for the eight sub-tasks."""
    root.mkdir(parents=True, exist_ok=True)
    for n, task in enumerate(ovdeval.TASKS):
        (root / f"{task}.json").write_text(json.dumps(annotation_file(task)))
        colour = (20 * n, 200 - 20 * n, 90)
        write_tar(
            root / f"{task}.tar.gz",
            {
                f"{task}/{task}_a.jpg": image_bytes(colour, (32, 24), "JPEG"),
                f"{task}/._{task}_a.jpg": b"resource fork",
                f"{task}/{task}_b.jpg": image_bytes(colour[::-1], (32, 24), "JPEG"),
            },
        )


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ovdeval")
    write_ovdeval_fixture(root)
    assert convert_dataset("ovdeval", root) == {"test": 16}
    return root


def test_records(converted: Path) -> None:
    records = read_records(converted / "records" / "test.jsonl")
    assert [r.id for r in records[:4]] == ["celebrity-0", "celebrity-7", "logo-0", "logo-7"]
    assert [r.task for r in records[::2]] == list(ovdeval.TASKS)
    first, second = records[0], records[1]
    assert first.problem_type == "detection" and first.data_source == "ovdeval"
    assert first.options == ["celebrity without screen on", "celebrity with screen on"]
    assert first.problem == ovd_question(first.options)
    assert first.answer == (
        '```json\n[{"bbox_2d": [2.0, 3.0, 12.0, 11.0], "label": "celebrity without screen on"}, '
        '{"bbox_2d": [20.0, 12.0, 31.5, 23.5], "label": "celebrity without screen on"}]\n```'
    )
    assert first.boxes == [[2, 3, 12, 11], [20, 12, 31.5, 23.5]]
    assert first.image_sizes == [[32, 24]]
    # text then neg_text, a repeated label asked once; a box 0.4 px over the edge clamped
    assert second.options == [
        "celebrity with screen on", "celebrity's red one", "celebrity without screen on"
    ]  # fmt: skip
    assert json.loads(second.answer.strip("`").removeprefix("json"))[1]["bbox_2d"] == [
        16.0, 0.0, 32.4, 24.0
    ]  # fmt: skip
    assert second.boxes[1] == [16, 0, 32, 24]
    assert len({r.images[0] for r in records}) == 16


def test_the_question_is_vlm_r1_s_training_question() -> None:
    labels = [
        "railings being crossed by horses",
        "a horse running or jumping",
        "equestrian rider's helmet",
        "an oversized glove worn on the left hand of a baseball player",
        "person holding a torch",
    ]
    assert ovd_question(labels) == ISSUE_246_QUESTION


def test_an_image_without_boxes_answers_none(tmp_path: Path) -> None:
    write_ovdeval_fixture(tmp_path)
    data = annotation_file("logo")
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] != 7]
    (tmp_path / "logo.json").write_text(json.dumps(data))
    convert_dataset("ovdeval", tmp_path)
    records = {r.id: r for r in read_records(tmp_path / "records" / "test.jsonl")}
    assert (records["logo-7"].answer, records["logo-7"].boxes) == ("None", [])


def _broken(tmp_path: Path, task: str, change) -> str:
    write_ovdeval_fixture(tmp_path)
    data = annotation_file(task)
    change(data)
    (tmp_path / f"{task}.json").write_text(json.dumps(data))
    with pytest.raises(DataError) as err:
        convert_dataset("ovdeval", tmp_path)
    return str(err.value)


def test_bad_rows_are_named(tmp_path: Path) -> None:
    def unknown_category(data):
        data["annotations"][2]["category_id"] = 9

    assert _broken(tmp_path / "a", "logo", unknown_category) == (
        "logo.json annotations row 2: category_id 9 is not one of the file's categories"
    )

    def outside(data):
        data["annotations"][0]["bbox"] = [30, 3, 10, 8]

    assert _broken(tmp_path / "b", "color", outside) == (
        "color.json images row 0: box [30, 3, 10, 8] of 'color without screen on' (x, y, w, h) "
        "is empty or leaves its 32x24 picture"
    )

    def labels(data):
        data["images"][1]["neg_text"] = "a string"

    assert _broken(tmp_path / "c", "negation", labels) == (
        "negation.json images row 1: field 'neg_text' must be a list of labels: 'a string'"
    )

    def picture(data):
        data["images"][0]["file_name"] = "missing.jpg"

    assert _broken(tmp_path / "d", "celebrity", picture) == (
        "celebrity.json images row 0: picture 'missing.jpg' is not in celebrity.tar.gz"
    )

    def bbox(data):
        data["annotations"][1]["bbox"] = [1, 2, 3]

    assert _broken(tmp_path / "e", "position", bbox) == (
        "position.json annotations row 1: bbox must be 4 numbers [x, y, w, h]: [1, 2, 3]"
    )


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    write_ovdeval_fixture(tmp_path)
    (tmp_path / "material.json").unlink()
    with pytest.raises(DataError) as err:
        convert_dataset("ovdeval", tmp_path)
    assert str(err.value) == f"{tmp_path / 'material.json'}: the annotation file is missing"


def test_bad_archives_and_images_are_named(tmp_path: Path) -> None:
    write_ovdeval_fixture(tmp_path)
    (tmp_path / "logo.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(DataError, match=r"logo.tar.gz: not a readable tar or zip archive: "):
        convert_dataset("ovdeval", tmp_path)
    picture = image_bytes((1, 2, 3), (32, 24), "JPEG")
    write_tar(tmp_path / "logo.tar.gz", {"a/logo_a.jpg": picture, "b/logo_a.jpg": picture})
    with pytest.raises(DataError) as err:
        convert_dataset("ovdeval", tmp_path)
    assert str(err.value) == f"{tmp_path / 'logo.tar.gz'}: several pictures are named 'logo_a.jpg'"


def test_images_need_labels_and_objects(tmp_path: Path) -> None:
    def no_labels(data):
        data["images"][0]["text"] = []
        data["images"][0]["neg_text"] = []

    assert _broken(tmp_path / "a", "landmark", no_labels) == (
        "landmark.json images row 0: has no label to ask about (text and neg_text are empty)"
    )

    def not_an_object(data):
        data["images"].append(["x.jpg"])

    assert _broken(tmp_path / "b", "material", not_an_object) == (
        "material.json images row 2: is not an object: ['x.jpg']"
    )

    def empty_label(data):
        data["images"][0]["text"] = [""]

    assert _broken(tmp_path / "c", "relationship", empty_label) == (
        "relationship.json images row 0: field 'text' must be a list of labels: ['']"
    )


def test_bad_annotation_files_are_named(tmp_path: Path) -> None:
    write_ovdeval_fixture(tmp_path)
    (tmp_path / "celebrity.json").write_text("{not json")
    with pytest.raises(DataError, match=r"celebrity.json: not a JSON file: "):
        convert_dataset("ovdeval", tmp_path)
    (tmp_path / "celebrity.json").write_text(json.dumps({"images": [], "annotations": {}}))
    with pytest.raises(DataError) as err:
        convert_dataset("ovdeval", tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'celebrity.json'}: has no ['annotations', 'categories'] list (a COCO-style "
        "annotation file has them)"
    )

    def nameless(data):
        data["categories"][1] = {"id": 1}

    assert _broken(tmp_path / "a", "celebrity", nameless) == (
        "celebrity.json row 1: has no field 'name' (fields: ['id'])"
    )

    def no_id(data):
        data["categories"][0] = {"name": "x"}

    assert _broken(tmp_path / "b", "celebrity", no_id) == (
        "celebrity.json row 0: category {'name': 'x'} has no id"
    )

    def boolean(data):
        data["annotations"][0]["bbox"] = [True, 2, 3, 4]

    assert _broken(tmp_path / "c", "celebrity", boolean) == (
        "celebrity.json annotations row 0: bbox must be 4 numbers [x, y, w, h]: [True, 2, 3, 4]"
    )
