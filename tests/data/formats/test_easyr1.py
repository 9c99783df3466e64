"""The easyr1 format: EasyR1 RL parquet (Vision-SR1-47K: problem / answer / one image struct per
row) → train records, ``<image>`` tokens removed, malformed rows rejected by id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hub_parquet import image_bytes

from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.easyr1 import split_of
from vlrl.items.records import read_records

#: datasets.Image as the hub parquet stores it: a {bytes, path} struct.
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def picture(shade: int, size: tuple[int, int] = (30, 20)) -> dict[str, Any]:
    return {"bytes": image_bytes((shade, 90, 40), size), "path": None}


def write(path: Path, rows: list[dict[str, Any]], images: pa.DataType = IMAGE) -> None:
    """Rows as Vision-SR1-47K's parquet holds them: problem, answer, images."""
    schema = pa.schema([("problem", pa.string()), ("answer", pa.string()), ("images", images)])
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    pq.write_table(pa.table(columns, schema=schema), path)


#: (problem, answer) of the good rows, in file order.
GOOD = [
    ("<image>How many apples are on the table?", "3"),
    ("Which animal is shown?\n(A) cat\n(B) dog\n<image>", "B"),
    ("What colour is the car? <image>", " red "),
    ("Find x in the triangle.<image>", "\\frac{1}{2}"),
]


def write_release(root: Path) -> None:
    """Two train shards with the good rows and a test shard that must not be read."""
    rows = [{"problem": p, "answer": a, "images": picture(40 * i)} for i, (p, a) in enumerate(GOOD)]
    write(root / "data" / "train-00000-of-00002.parquet", rows[:3])
    write(root / "data" / "train-00001-of-00002.parquet", rows[3:])
    write(root / "data" / "test-00000-of-00001.parquet", [rows[0] | {"answer": "9"}])


def test_rows_become_train_records_in_file_order(tmp_path: Path) -> None:
    write_release(tmp_path)
    assert convert_dataset("easyr1", tmp_path) == {"train": 4}
    records = read_records(tmp_path / "records" / "train.jsonl")  # validated, images opened
    assert [r.id for r in records] == ["0", "1", "2", "3"]
    assert [r.problem for r in records] == [
        "How many apples are on the table?",
        "Which animal is shown?\n(A) cat\n(B) dog",
        "What colour is the car?",
        "Find x in the triangle.",
    ]
    assert [r.answer for r in records] == ["3", "B", "red", "\\frac{1}{2}"]
    assert [r.problem_type for r in records] == [
        "numerical",
        "multiple_choice",
        "free_form",
        "free_form",
    ]
    assert records[1].options == ["cat", "dog"]
    assert all(r.data_source == "vision_sr1_47k" and len(r.images) == 1 for r in records)
    assert records[0].image_sizes == [[30, 20]]
    assert not (tmp_path / "records" / "rejected.jsonl").exists()


def test_lists_of_pictures_and_paths_are_read(tmp_path: Path) -> None:
    # upstream EasyR1: a list of pictures (multi-image), or paths relative to image_dir
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.png").write_bytes(image_bytes((1, 2, 3), (8, 6)))
    write(
        tmp_path / "train.parquet",
        [{"problem": "<image><image>Which is larger?", "answer": "left",
          "images": [picture(10), picture(20, (12, 9))]},
         {"problem": "Solve 2+2.", "answer": "4", "images": []}],
        pa.list_(IMAGE),
    )  # fmt: skip
    write(
        tmp_path / "more" / "train-paths.parquet",
        [{"problem": "What is drawn?", "answer": "a square", "images": ["pics/a.png"]}],
        pa.list_(pa.string()),
    )
    assert convert_dataset("easyr1", tmp_path) == {"train": 3}
    records = read_records(tmp_path / "records" / "train.jsonl")
    by_problem = {r.problem: r for r in records}
    assert by_problem["Which is larger?"].image_sizes == [[30, 20], [12, 9]]
    assert by_problem["Solve 2+2."].images == []  # EasyR1's text-only row
    assert by_problem["What is drawn?"].image_sizes == [[8, 6]]


def test_split_names_are_read_from_file_names() -> None:
    assert split_of("data/train-00000-of-00001.parquet") == "train"
    assert split_of("data/validation-00000-of-00001.parquet") == "validation"
    assert split_of("data/part-0.parquet") is None


#: Malformed rows → the words of their error.
BAD = {
    "4": ({"problem": "<image>What is it?", "answer": "cat", "images": None}, "no image"),
    "5": ({"problem": "What is it?", "answer": "cat", "images": {"bytes": None, "path": None}},
          "holds no image bytes"),
    "6": ({"problem": "<image>How many?", "answer": "  ", "images": picture(5)},
          "field 'answer' is empty"),
    "7": ({"problem": "<image><image>Compare.", "answer": "x", "images": picture(6)},
          "2 <image> tokens but the row has 1 images"),
    "8": ({"problem": "Look.", "answer": "x", "images": {"bytes": b"not a picture", "path": None}},
          "not a readable image"),
    "9": ({"problem": "Look.", "answer": "x", "images": {"bytes": None, "path": "gone.png"}},
          "'gone.png' does not exist"),
}  # fmt: skip


def write_with_bad_rows(root: Path) -> None:
    write_release(root)
    write(root / "data" / "train-00002-of-00002.parquet", [row for row, _ in BAD.values()])


def test_malformed_rows_stop_the_conversion_each_named(tmp_path: Path) -> None:
    write_with_bad_rows(tmp_path)
    with pytest.raises(DataError) as caught:
        convert_dataset("easyr1", tmp_path)
    message = str(caught.value)
    assert f"{len(BAD)} rows cannot be converted" in message
    for rid, (_, why) in BAD.items():
        line = next(x for x in message.splitlines() if f"id {rid}:" in x)
        assert why in line and "train-00002-of-00002.parquet row" in line


def test_malformed_rows_are_reported_with_their_ids(tmp_path: Path) -> None:
    write_with_bad_rows(tmp_path)
    assert convert_dataset("easyr1", tmp_path, bad_rows="report") == {"train": 4}
    lines = (tmp_path / "records" / "rejected.jsonl").read_text().splitlines()
    rejected = {r["id"]: r["why"] for r in map(json.loads, lines)}
    assert set(rejected) == set(BAD)
    assert all(why in rejected[rid] for rid, (_, why) in BAD.items())
    report = json.loads((tmp_path / "records" / "report.json").read_text())
    assert report == {"train": {"records": 4, "rejected": len(BAD)}}


def test_no_train_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "data" / "test-00000-of-00001.parquet", [])
    with pytest.raises(DataError, match="no train parquet"):
        convert_dataset("easyr1", tmp_path)


def test_the_dataset_config_uses_this_format() -> None:
    cfg = load_dataset("vision_sr1_47k")
    assert (cfg.repo_id, cfg.format, cfg.bad_rows) == (
        "LMMs-Lab-Turtle/Vision-SR1-47K",
        "easyr1",
        "stop",
    )
    assert cfg.revision is None and cfg.unpinned


def write_easyr1_fixture(root: Path) -> None:
    """A small Vision-SR1-47K in the released layout (the fixture every format provides)."""
    write_release(root)
