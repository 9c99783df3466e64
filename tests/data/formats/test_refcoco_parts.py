"""refcoco's convert_row, in process: the whole records of one row (one per expression, the
picture's size among them), an undecodable picture rejected naming the row and its ``image``
field, and a record the schema refuses naming the row."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image

from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.refcoco import PROBLEM, convert_row

FILE = "data/val-00000-of-00001.parquet"
IMAGE = encoded_image((10, 128, 245), (32, 24), "JPEG")
#: Where :class:`ImageStore` puts :data:`IMAGE` (the SHA-256 of its bytes, 32 hex digits).
STORED = f"images/{hashlib.sha256(IMAGE['bytes']).hexdigest()[:32]}.jpg"


def a_row(**changes: Any) -> dict[str, Any]:
    data = {
        "question_id": "469306",
        "image": IMAGE,
        "answer": ["guy petting elephant", " green shirt "],
        "bbox": [2.5, 3.25, 10.0, 12.5],
    }
    return {**data, **changes}


def records(tmp_path: Path, data: dict[str, Any], question_id: Any = "469306"):
    store = ImageStore(tmp_path / "records")
    return convert_row(Row(FILE, 5, data), store, "val", question_id)


def test_a_row_becomes_one_record_per_expression_with_the_picture_size(tmp_path):
    got = [rec.model_dump(exclude_defaults=True) for rec in records(tmp_path, a_row())]
    same = {
        "images": [STORED],
        "image_sizes": [[32, 24]],
        "answer": "[2, 3, 12, 16]",
        "problem_type": "grounding",
        "boxes": [[2.5, 3.25, 12.5, 15.75]],
        "data_source": "refcoco",
        "task": "val",
        "groups": {"object": "469306"},
    }
    assert got == [
        {"id": "469306#0", **same, "problem": PROBLEM.format("guy petting elephant")},
        {"id": "469306#1", **same, "problem": PROBLEM.format("green shirt")},
    ]
    assert (tmp_path / "records" / STORED).read_bytes() == IMAGE["bytes"]


def test_a_row_without_picture_bytes_is_rejected_naming_the_image_field(tmp_path):
    with pytest.raises(RowError) as exc:
        records(tmp_path, a_row(image={"bytes": None, "path": "a.jpg"}))
    assert (str(exc.value), exc.value.row_id) == (
        f"{FILE} row 5: field 'image' holds no image bytes (NoneType)",
        "469306",
    )


def test_a_record_the_schema_refuses_names_the_row(tmp_path):
    # The object id is a string by the time convert_row gets it (object_id); any other value
    # fails the record's schema, and the error names the row.
    with pytest.raises(RowError) as exc:
        records(tmp_path, a_row(), question_id=469306)
    assert (str(exc.value), exc.value.row_id) == (
        f"{FILE} row 5: groups.object: Input should be a valid string",
        "469306",
    )
