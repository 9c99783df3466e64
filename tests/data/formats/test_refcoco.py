"""The refcoco format: lmms-lab/RefCOCO(+/g) rows (one object, several expressions, xywh box)
→ one grounding record per expression, boxes xyxy in pixels (VLM-R1's REC protocol); every split
holds a standard split's expressions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset, refcoco
from vlrl.data.formats.refcoco import PROBLEM
from vlrl.items.answers import dumps_box
from vlrl.items.records import read_records

VAL = "data/val-00000-of-00001-3f7a1c2d.parquet"
TESTA = "data/testA-00000-of-00001-9b2e4d10.parquet"
TESTB = "data/testB-00000-of-00001-5c0d7e21.parquet"
TEST = "data/test-00000-of-00002.parquet"
#: The standard expression counts the full-size fixture holds (RefCOCO testA / testB, RefCOCOg
#: test), written here as well as in the format.
STANDARD = {"testA": 5_657, "testB": 5_095, "test": 9_602}
#: The fixture's images are 32 x 24.
WIDTH, HEIGHT = 32, 24
INSTRUCTION = (
    "Please carefully observe the area circled in the image and come up with a caption for the "
    "area."
)


def _jpeg(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 128, 255 - shade), (WIDTH, HEIGHT), "JPEG")


def _row(
    question_id: str, answer: list[str], bbox: list[float], shade: int, name: str
) -> dict[str, Any]:
    x, y, w, h = bbox
    return {
        "question_id": question_id,
        "image": _jpeg(shade),
        "question": INSTRUCTION,
        "answer": answer,
        "segmentation": [x, y, x + w, y, x + w, y + h, x, y + h],
        "bbox": bbox,
        "iscrowd": 0,
        "file_name": f"COCO_train2014_{name}_0.jpg",
    }


def rows_val() -> list[dict[str, Any]]:
    return [
        # three expressions of one object
        _row(
            "469306",
            ["guy petting elephant", "foremost person", " green shirt "],
            [2.5, 3.25, 10.0, 12.5],
            10,
            "000000296747",
        ),
        # float32 storage: 0.93 + 31.07 is a hair over 32 before rounding
        _row("1719310", ["the lady with the blue shirt"], [0.93, 2.99, 31.07, 21.01], 90, "581857"),
        # annotation noise: the box leaves the image by 0.4 px and is clamped to it
        _row("55", ["right edge thing"], [20.0, 0.0, 12.4, 24.0], 170, "000000000055"),
    ]


def rows_testa() -> list[dict[str, Any]]:
    return [
        _row("7001", ["man on left", "guy in red"], [0.0, 0.0, 16.0, 24.0], 40, "000000007001"),
        _row("7002", ["woman right"], [16.0, 6.0, 16.0, 18.0], 40, "000000007001"),
    ]


def rows_testb() -> list[dict[str, Any]]:
    return [_row("8001", ["bowl on the right", "white bowl"], [18.0, 10.0, 12.0, 8.0], 220, "8001")]


def write_rows(root: Path, file: str, rows: list[dict[str, Any]]) -> None:
    """Write rows as the hub stores them (the dataset card's features)."""
    from datasets import Image, Sequence, Value

    features = {
        "question_id": Value("string"),
        "image": Image(),
        "question": Value("string"),
        "answer": Sequence(Value("string")),
        "segmentation": Sequence(Value("float32")),
        "bbox": Sequence(Value("float32")),
        "iscrowd": Value("int8"),
        "file_name": Value("string"),
    }
    write_parquet(root / file, rows, features)


def filler(split: str, expressions: int, first_id: int) -> list[dict[str, Any]]:
    """Rows of up to three distinct expressions each, ``expressions`` in all, question ids from
    ``first_id``, on four pictures."""
    rows = []
    done = 0
    while done < expressions:
        n = len(rows)
        texts = [f"{split} object {n} said way {k}" for k in range(min(3, expressions - done))]
        box = [float(n % 9), float(n % 7), 8.0 + n % 5, 6.0 + n % 3]
        rows.append(_row(str(first_id + n), texts, box, 60 * (n % 4), f"{n % 4:012d}"))
        done += len(texts)
    return rows


def _expressions(rows: list[dict[str, Any]]) -> int:
    return sum(len(r["answer"]) for r in rows)


def write_refcoco_fixture(root: Path) -> None:
    """lmms-lab's RefCOCO test splits at the standard sizes under ``root``: ``testA`` (5,657
    expressions, the first three :func:`rows_testa`'s), ``testB`` (5,095, first
    :func:`rows_testb`'s) and ``test`` (9,602, RefCOCOg's); 32 x 24 JPEG images."""
    testa, testb = rows_testa(), rows_testb()
    write_rows(root, TESTA, testa + filler("testA", STANDARD["testA"] - _expressions(testa), 10**6))
    write_rows(root, TESTB, testb + filler("testB", STANDARD["testB"] - _expressions(testb), 10**6))
    write_rows(root, TEST, filler("test", STANDARD["test"], 10**6))


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """The format told the standard sizes are the hand-made rows' (val 5, testA 3, testB 2)."""
    monkeypatch.setattr(
        refcoco,
        "STANDARD_EXPRESSIONS",
        {"val": {5: "fixture"}, "testA": {3: "fixture"}, "testB": {2: "fixture"}, "test": {}},
    )


def write_small(root: Path) -> None:
    """The hand-made rows: ``val`` (3 objects, 5 expressions), ``testA`` (2 objects on one
    image, 3 expressions), ``testB`` (1 object, 2 expressions)."""
    write_rows(root, VAL, rows_val())
    write_rows(root, TESTA, rows_testa())
    write_rows(root, TESTB, rows_testb())


def _records(root: Path, split: str) -> list[dict[str, Any]]:
    lines = (root / "records" / f"{split}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_each_expression_becomes_a_grounding_record(tmp_path: Path, small: None) -> None:
    write_small(tmp_path)
    assert convert_dataset("refcoco", tmp_path) == {"testA": 3, "testB": 2, "val": 5}
    records = read_records(tmp_path / "records" / "val.jsonl")  # checks images and boxes
    assert [r.id for r in records] == ["469306#0", "469306#1", "469306#2", "1719310#0", "55#0"]
    first = records[0]
    assert first.problem == (
        "Please provide the bounding box coordinate of the region this sentence describes: "
        "guy petting elephant."
    )
    assert first.problem == PROBLEM.format("guy petting elephant")
    assert (first.problem_type, first.task, first.data_source) == ("grounding", "val", "refcoco")
    # xywh [2.5, 3.25, 10, 12.5] -> xyxy, in pixels of the 32 x 24 image
    assert first.boxes == [[2.5, 3.25, 12.5, 15.75]]
    assert first.answer == dumps_box([2.5, 3.25, 12.5, 15.75]) == "[2, 3, 12, 16]"
    assert first.image_sizes == [[WIDTH, HEIGHT]]
    assert first.groups == {"object": "469306"}


def test_the_expressions_of_one_object_share_box_image_and_group(
    tmp_path: Path, small: None
) -> None:
    write_small(tmp_path)
    convert_dataset("refcoco", tmp_path)
    same = [r for r in _records(tmp_path, "val") if r["groups"]["object"] == "469306"]
    assert [r["problem"].rsplit(": ", 1)[1] for r in same] == [
        "guy petting elephant.",
        "foremost person.",
        "green shirt.",  # stripped
    ]
    assert len({json.dumps(r["boxes"]) for r in same}) == 1
    assert len({r["images"][0] for r in same}) == 1
    # testA: two objects on one picture, stored once
    testa = _records(tmp_path, "testA")
    assert [r["groups"]["object"] for r in testa] == ["7001", "7001", "7002"]
    assert len({r["images"][0] for r in testa}) == 1
    assert testa[2]["boxes"] == [[16.0, 6.0, 32.0, 24.0]]
    assert {r["task"] for r in testa} == {"testA"}


def test_float32_noise_is_rounded_and_edge_noise_clamped(tmp_path: Path, small: None) -> None:
    write_small(tmp_path)
    convert_dataset("refcoco", tmp_path)
    boxes = {r["id"]: r["boxes"][0] for r in _records(tmp_path, "val")}
    assert boxes["1719310#0"] == [0.93, 2.99, 32.0, 24.0]
    assert boxes["55#0"] == [20.0, 0.0, 32.0, 24.0]  # x2 = 32.4 clamped to the 32 px edge


def _bad(tmp_path: Path, file: str, index: int, **change: Any) -> str:
    """Convert the hand-made val and testA with one row changed (use with ``small``)."""
    val, testa = rows_val(), rows_testa()
    (val if file == VAL else testa)[index].update(change)
    write_rows(tmp_path, VAL, val)
    write_rows(tmp_path, TESTA, testa)
    with pytest.raises(DataError) as info:
        convert_dataset("refcoco", tmp_path)
    return str(info.value)


@pytest.mark.parametrize(
    ("file", "index", "change", "needle"),
    [
        (VAL, 1, {"bbox": [20.0, 2.0, 14.0, 10.0]}, "is outside its 32x24 image"),
        (VAL, 0, {"bbox": [-3.0, 2.0, 10.0, 10.0]}, "x1, y1, x2, y2 = [-3.0, 2.0, 7.0, 12.0]"),
        (TESTA, 1, {"bbox": [1.0, 30.0, 4.0, 4.0]}, "field 'bbox' [1.0, 30.0, 4.0, 4.0]"),
        (VAL, 0, {"bbox": [1.0, 2.0, 0.0, 5.0]}, "has a width or height <= 0"),
        (VAL, 2, {"bbox": [1.0, 2.0, 3.0]}, "field 'bbox' must be 4 finite numbers"),
        (VAL, 0, {"answer": []}, "field 'answer' must be a non-empty list"),
        (VAL, 0, {"answer": ["left man", "  "]}, "field 'answer' item 1 is not an expression"),
        (TESTA, 0, {"question_id": None}, "field 'question_id' is empty"),
        (VAL, 1, {"image": {"bytes": b"junk", "path": None}}, "'image' is not a readable"),
        (VAL, 2, {"question_id": "469306"}, "repeats question_id '469306' of"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, small: None, file: str, index: int, change: dict[str, Any], needle: str
) -> None:
    message = _bad(tmp_path, file, index, **change)
    assert f"{file} row {index}" in message
    assert needle in message


def test_a_file_of_an_unknown_split_is_an_error(tmp_path: Path, small: None) -> None:
    write_rows(tmp_path, "data/train-00000-of-00001.parquet", rows_testa())
    with pytest.raises(DataError, match=r"train-00000-of-00001.parquet row 0: is in split 'train'"):
        convert_dataset("refcoco", tmp_path)


def test_the_standard_sizes_are_the_public_counts() -> None:
    assert refcoco.STANDARD_EXPRESSIONS == {
        "val": {10_834: "RefCOCO (UNC)", 10_758: "RefCOCO+ (UNC)", 4_896: "RefCOCOg (UMD)"},
        "testA": {5_657: "RefCOCO (UNC)", 5_726: "RefCOCO+ (UNC)"},
        "testB": {5_095: "RefCOCO (UNC)", 4_889: "RefCOCO+ (UNC)"},
        "test": {9_602: "RefCOCOg (UMD)"},
    }


def test_the_standard_test_splits_convert(tmp_path: Path) -> None:
    write_refcoco_fixture(tmp_path)
    assert convert_dataset("refcoco", tmp_path) == STANDARD
    testa = read_records(tmp_path / "records" / "testA.jsonl", limit=3)  # validated
    assert [r.id for r in testa] == ["7001#0", "7001#1", "7002#0"]
    assert testa[2].boxes == [[16.0, 6.0, 32.0, 24.0]]
    assert testa[2].image_sizes == [[WIDTH, HEIGHT]]
    assert {r["task"] for r in _records(tmp_path, "test")} == {"test"}


@pytest.mark.parametrize(("split", "delta"), [("testA", -1), ("testB", 1), ("test", -3)])
def test_a_split_of_another_size_fails_naming_files_found_and_expected(
    tmp_path: Path, split: str, delta: int
) -> None:
    file = {"testA": TESTA, "testB": TESTB, "test": TEST}[split]
    found = STANDARD[split] + delta
    write_rows(tmp_path, file, filler(split, found, 10**6))
    with pytest.raises(DataError) as info:
        convert_dataset("refcoco", tmp_path)
    accepted = ", ".join(
        f"{n:,} ({name} {split})" for n, name in refcoco.STANDARD_EXPRESSIONS[split].items()
    )
    assert str(info.value) == (
        f"{file}: split {split!r} holds {found:,} expressions, expected one of {accepted}"
    )
    assert not list((tmp_path / "records").glob("*.jsonl")), "nothing is written"


def test_a_val_split_over_the_standard_val_fails(tmp_path: Path) -> None:
    """lmms-lab's RefCOCO val holds objects beyond the UNC val: any val of a non-standard size,
    over several files, is refused naming every file."""
    rows = filler("val", 10_835, 10**6)
    write_rows(tmp_path, "data/val-00000-of-00002.parquet", rows[:2000])
    write_rows(tmp_path, "data/val-00001-of-00002.parquet", rows[2000:])
    with pytest.raises(DataError) as info:
        convert_dataset("refcoco", tmp_path)
    assert str(info.value) == (
        "data/val-00000-of-00002.parquet, data/val-00001-of-00002.parquet: split 'val' holds "
        "10,835 expressions, expected one of 10,834 (RefCOCO (UNC) val), 10,758 (RefCOCO+ (UNC) "
        "val), 4,896 (RefCOCOg (UMD) val)"
    )


def test_the_configs_fetch_only_standard_splits(project: Path) -> None:
    """lmms-lab's val files are no longer fetched; the test splits are, each read by a
    benchmark. (Read as YAML: the benchmark schema's scoring keys are another change's.)"""
    import yaml

    from vlrl.config import load_dataset

    fetched = {name: load_dataset(name).allow_patterns for name in ("refcoco", "refcoco_plus")}
    assert fetched == {k: ["data/testA-*.parquet", "data/testB-*.parquet"] for k in fetched}
    assert load_dataset("refcocog").allow_patterns == ["data/test-*.parquet"]
    for bench, dataset, split in [
        ("refcoco_testa", "refcoco", "testA"),
        ("refcoco_testb", "refcoco", "testB"),
        ("refcoco_plus_testa", "refcoco_plus", "testA"),
        ("refcoco_plus_testb", "refcoco_plus", "testB"),
        ("refcocog_test", "refcocog", "test"),
    ]:
        cfg = yaml.safe_load((project / "config" / "benchmarks" / f"{bench}.yaml").read_text())
        assert (cfg["dataset"], cfg["file"]) == (dataset, f"records/{split}.jsonl")
        assert (cfg["subsample"], cfg["max_new_tokens"]) == ({"n": 2000, "seed": 42}, 256)
