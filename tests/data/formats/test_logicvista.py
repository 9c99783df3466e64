"""The logicvista format: the authors' data/dataset.json and data/images/ → canonical records."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records


def _png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (shade, 120, 60)).save(buffer, format="PNG")
    return buffer.getvalue()


def logicvista_items() -> dict[str, dict[str, Any]]:
    """Items shaped as at e5795f17: one letter, two letters, a numbered answer, and v1_382's
    empty question and answer."""
    rows = [
        ("v1_0", "What choice (A, B, C, or D) should be in place of the question mark?", "C",
         "inductive"),
        ("v1_1", "Which choices in the image (A-D) belong to the green category?", "A, C",
         "inductive"),
        ("v1_20", "Which is the correct answer according to the image? Select from 1-5", "3",
         "deductive"),
        ("v1_382", "", "", "spatial"),
        ("v1_447", "How many gears turn clockwise? Select from A-D.", "B", "mechanical"),
    ]  # fmt: skip
    return {
        key: {
            "imagename": f"{key}.png",
            "question": question,
            "answer": answer,
            "reasoning": "because",
            "skill": [skill],
            "broad_capability": ["diagram"],
            "specific_capability": ["sequence pattern"],
            "imagesource": "aptitudetests",
            "sourcelink": "https://example.org",
            "liscenced": "yes",
        }
        for key, question, answer, skill in rows
    }


def write_logicvista_fixture(root: Path, items: dict[str, dict[str, Any]] | None = None) -> None:
    """The release's layout under ``root``: data/dataset.json and one PNG per item."""
    items = logicvista_items() if items is None else items
    (root / "data" / "images").mkdir(parents=True, exist_ok=True)
    (root / "data" / "dataset.json").write_text(json.dumps(items, indent=4))
    for i, fields in enumerate(items.values()):
        (root / "data" / "images" / fields["imagename"]).write_bytes(_png(40 * i))


def test_converts_every_item_and_reports_the_empty_one(tmp_path: Path) -> None:
    write_logicvista_fixture(tmp_path)
    assert convert_dataset("logicvista", tmp_path, bad_rows="report") == {"test": 4}
    records = read_records(tmp_path / "records" / "test.jsonl")
    assert [r.id for r in records] == ["v1_0", "v1_1", "v1_20", "v1_447"]
    assert [(r.answer, r.task) for r in records] == [
        ("C", "inductive"),
        ("A, C", "inductive"),
        ("3", "deductive"),
        ("B", "mechanical"),
    ]
    assert all(r.problem_type == "free_form" and not r.options for r in records)
    assert all(r.data_source == "logicvista" and r.image_sizes == [[32, 24]] for r in records)
    assert records[1].problem == "Which choices in the image (A-D) belong to the green category?"
    # four different pictures, each stored once under records/images
    assert len({r.images[0] for r in records}) == 4
    rejected = [json.loads(line) for line in (tmp_path / "records" / "rejected.jsonl").open()]
    assert rejected == [
        {
            "split": "test",
            "id": "v1_382",
            "why": "data/dataset.json row 3: field 'question' is empty",
        }
    ]


def test_the_empty_item_stops_a_run_that_reports_nothing(tmp_path: Path) -> None:
    write_logicvista_fixture(tmp_path)
    with pytest.raises(
        DataError,
        match=r"format logicvista: 1 row cannot be converted .*\n  test id v1_382: "
        r"data/dataset.json row 3: field 'question' is empty$",
    ):
        convert_dataset("logicvista", tmp_path)


def _bad(tmp_path: Path, key: str, **change: Any) -> str:
    items = {k: v for k, v in logicvista_items().items() if k != "v1_382"}
    items[key].update(change)
    write_logicvista_fixture(tmp_path, items)
    with pytest.raises(DataError) as info:
        convert_dataset("logicvista", tmp_path)
    return str(info.value)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"answer": " "}, "field 'answer' is empty"),
        ({"skill": ["inductive", "spatial"]}, "field 'skill' must list one of"),
        ({"skill": ["logic"]}, "field 'skill' must list one of"),
        ({"skill": "inductive"}, "field 'skill' must list one of"),
        ({"question": 3}, "field 'question' must be a string: 3"),
    ],
)
def test_bad_items_name_the_file_row_and_field(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    message = _bad(tmp_path, "v1_1", **change)
    assert "data/dataset.json row 1" in message and needle in message, message


def test_a_missing_picture_and_a_missing_or_malformed_file(tmp_path: Path) -> None:
    write_logicvista_fixture(tmp_path)
    (tmp_path / "data" / "images" / "v1_1.png").unlink()
    with pytest.raises(DataError, match=r"row 1: field 'imagename' 'v1_1.png': no such file"):
        convert_dataset("logicvista", tmp_path)
    (tmp_path / "data" / "dataset.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="must be an object of items by id, not list"):
        convert_dataset("logicvista", tmp_path)
    (tmp_path / "data" / "dataset.json").write_text("{")
    with pytest.raises(DataError, match="not readable JSON"):
        convert_dataset("logicvista", tmp_path)
    (tmp_path / "data" / "dataset.json").unlink()
    with pytest.raises(DataError, match="no such file"):
        convert_dataset("logicvista", tmp_path)


# Single rows and the reader, checked in process (the mutation tests of issue 40).

UNREADABLE = (
    r"field 'imagename' is not a readable image: cannot identify image file "
    r"<_io\.BytesIO object at 0x[0-9a-f]+>$"
)


def test_an_unreadable_picture_names_the_row_and_the_imagename_field(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.logicvista import convert_row

    (tmp_path / "data" / "images").mkdir(parents=True)
    (tmp_path / "data" / "images" / "v1_1.png").write_bytes(b"not a picture")
    row = Row("data/dataset.json", 1, {"id": "v1_1", **logicvista_items()["v1_1"]})
    with pytest.raises(RowError, match=r"^data/dataset\.json row 1: " + UNREADABLE) as info:
        convert_row(row, tmp_path, ImageStore(tmp_path / "records"))
    assert info.value.row_id == "v1_1"


def test_an_item_that_is_not_an_object_is_named_by_its_key(tmp_path: Path) -> None:
    from vlrl.data.formats import RowError
    from vlrl.data.formats.logicvista import rows

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dataset.json").write_text('{"v1_0": ["C"]}')
    with pytest.raises(RowError) as info:
        list(rows(tmp_path))
    assert str(info.value) == "data/dataset.json row 0: item 'v1_0' must be an object, not list"
    assert info.value.row_id == "v1_0"


def test_the_dataset_file_is_read_as_utf8_whatever_the_locale(
    tmp_path: Path, ascii_locale: None
) -> None:
    from vlrl.data.formats.logicvista import rows

    items = {"v1_0": {**logicvista_items()["v1_0"], "question": "Which shape — A or B?"}}
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dataset.json").write_text(
        json.dumps(items, ensure_ascii=False), encoding="utf-8"
    )
    [row] = rows(tmp_path)
    assert row.data["question"] == "Which shape — A or B?"
