"""vlm_r1_rec_train row by row, in process: the whole grounding record of a REC training row (its
box read from the gpt turn, fitted to the picture) and the whole message of each rejected row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.vlm_r1_jsonl import ImageFolder
from vlrl.data.formats.vlm_r1_rec_train import convert_row


def conv(answer: Any, image: Any = "coco/a.jpg") -> dict[str, Any]:
    return {
        "id": 5,
        "image": image,
        "conversations": [
            {"from": "human", "value": "<image>Please find the man on the left."},
            {"from": "gpt", "value": answer},
        ],
    }


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "images" / "coco").mkdir(parents=True)
    (tmp_path / "images" / "coco" / "a.jpg").write_bytes(image_bytes((1, 2, 3), (32, 24), "JPEG"))
    return tmp_path


def one(folder: Path, data: dict[str, Any]) -> dict[str, Any]:
    store = ImageStore(folder / "records")
    rec = convert_row(Row("refcoco_train.jsonl", 3, data), "refcoco_train", store,
                      ImageFolder(folder / "images"))  # fmt: skip
    return rec.model_dump(exclude_defaults=True)


@pytest.mark.parametrize(
    "answer", ["[1, 2.5, 32.4, 12]", " [1, 2.5, 32.4, 12] ", [1, 2.5, 32.4, 12]]
)
def test_a_row_becomes_a_grounding_record_with_its_box_fitted(folder, answer):
    rec = one(folder, conv(answer))
    assert rec.pop("images")[0].endswith(".jpg")
    assert rec == {
        "id": "refcoco_train-3",
        "image_sizes": [[32, 24]],
        "problem": "Please find the man on the left.",
        "answer": "[1, 2, 32, 12]",  # dumps_box: whole pixels, as VLM-R1's answers
        "problem_type": "grounding",
        "boxes": [[1.0, 2.5, 32, 12.0]],
        "data_source": "refcoco",
        "task": "refcoco_train",
    }


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (conv("[1, 2, 3, 4]", image=["coco/a.jpg"] * 2),
         "a REC row needs exactly one image, not 2"),
        ({k: v for k, v in conv("[1, 2, 3, 4]").items() if k != "image"},
         "a REC row needs exactly one image, not 0"),
        (conv("the man"), "the gpt turn is not a JSON box [x1, y1, x2, y2]: 'the man'"),
        (conv("[1, 2]"), "the gpt box must be 4 finite numbers [x1, y1, x2, y2]: [1, 2]"),
        (conv({"bbox": [1, 2, 3, 4]}),
         "the gpt turn must be a string or a number: {'bbox': [1, 2, 3, 4]}"),
        (conv([3, 1, 3, 4]), "the gpt box [3, 1, 3, 4] has x2 <= x1 or y2 <= y1"),
        (conv("[0, 0, 50, 5]"), "the gpt box [0.0, 0.0, 50.0, 5.0] is outside its 32x24 image"),
        (conv("[0, 0, 5, 5]", image="coco/b.jpg"),
         "image 'coco/b.jpg' does not exist (images/coco/b.jpg)"),
    ],
)  # fmt: skip
def test_a_bad_row_is_rejected_saying_why(folder, data, says):
    with pytest.raises(RowError) as exc:
        one(folder, data)
    assert (str(exc.value), exc.value.row_id) == (f"refcoco_train.jsonl row 3: {says}", "5")
