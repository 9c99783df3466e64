"""The vlm_r1_rec_train format: VLM-R1's refcoco_train.jsonl / refcocop_train.jsonl /
refcocog_train.jsonl (conversation jsonl inside rec_jsons_processed.zip) over the COCO pictures of
train2014.zip → one grounding record per row; malformed rows are reported, never dropped."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, convert_dataset, vlm_r1_rec_train
from vlrl.items.answers import dumps_box
from vlrl.items.records import read_records
from vlrl.rewards.vlm_r1 import rec_iou_reward

ANNOTATIONS = "rec_jsons_processed.zip"
IMAGES = "train2014.zip"
FOLDER = "rec_jsons_processed/"
PROBLEM = "Please provide the bounding box coordinate of the region this sentence describes: {}."
BIG = "train2014/COCO_train2014_000000581857.jpg"
SMALL = "train2014/COCO_train2014_000000000009.jpg"
SQUARE = "train2014/COCO_train2014_000000000025.jpg"
#: The pictures of the fixture's train2014.zip: path → (width, height, colour).
PICTURES = {
    BIG: (427, 640, (200, 40, 40)),
    SMALL: (64, 48, (40, 200, 40)),
    SQUARE: (40, 40, (40, 40, 200)),
}
#: The released counts (the format's ROWS), written here so a change there is a visible change.
RELEASED = {
    "refcoco_train.jsonl": 120_624,
    "refcocop_train.jsonl": 120_191,
    "refcocog_train.jsonl": 80_512,
}


def row(row_id: Any, image: Any, caption: str, box: Any) -> dict[str, Any]:
    """A row as grpo_jsonl.py reads it: the human REC question, the gpt box (a JSON string)."""
    return {
        "id": row_id,
        "image": image,
        "conversations": [
            {"from": "human", "value": "<image>" + PROBLEM.format(caption)},
            {"from": "gpt", "value": box if not isinstance(box, list) else json.dumps(box)},
        ],
    }


def good_rows(split: str) -> list[dict[str, Any]]:
    """Four convertible rows: issue #11's expression, a box on two edges, a box 0.4 px over the
    right edge (annotation noise), a gpt value that is the list itself (str()-ed by VLM-R1)."""
    fourth = row(f"{split}-4", SQUARE, "left cup", [0.0, 5.5, 12.25, 20.0])
    fourth["conversations"][1]["value"] = [0.0, 5.5, 12.25, 20.0]
    return [
        row(f"{split}-1", BIG, "the lady with the blue shirt", [103.93, 299.99, 238.15, 477.41]),
        row(f"{split}-2", SMALL, "bowl at the bottom right", [40.0, 30.0, 64.0, 48.0]),
        row(f"{split}-3", SQUARE, "right edge thing", [30.0, 10.0, 40.4, 20.0]),
        fourth,
    ]


def lines(items: list[Any]) -> str:
    return "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)


def write_release(root: Path, files: dict[str, str]) -> None:
    """rec_jsons_processed.zip (one folder: the val jsons, not read here, and the train jsonl)
    and train2014.zip (``train2014/COCO_train2014_<id>.jpg``)."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / ANNOTATIONS, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(FOLDER, "")
        for name in ("refcoco_val.json", "refcocop_val.json", "refcocog_val.json"):
            archive.writestr(FOLDER + name, "[]")
        for name, text in files.items():
            archive.writestr(FOLDER + name, text)
    with zipfile.ZipFile(root / IMAGES, "w") as archive:
        archive.writestr("train2014/", "")
        for name, (width, height, colour) in PICTURES.items():
            archive.writestr(name, image_bytes(colour, (width, height), "JPEG"))


def release(root: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, list[Any]]) -> None:
    """A release holding ``files`` (member → rows), the format told to expect their sizes."""
    texts = {name: lines(items) for name, items in files.items()}
    counts = {
        name: sum(1 for line in text.splitlines() if line.strip()) for name, text in texts.items()
    }
    monkeypatch.setattr(vlm_r1_rec_train, "ROWS", counts)
    write_release(root, texts)


def good_release(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release(root, monkeypatch, {name: good_rows(name.split("_")[0]) for name in RELEASED})


def write_vlm_r1_rec_train_fixture(root: Path) -> None:
    """omlab/VLM-R1's REC training files at the released sizes under ``root``: the three
    ``*_train.jsonl`` members of rec_jsons_processed.zip (120,624 / 120,191 / 80,512 rows, the
    first four :func:`good_rows`, then distinct expressions on the three pictures) and
    train2014.zip."""
    names = list(PICTURES)
    texts = {}
    for name, count in RELEASED.items():
        head = lines(good_rows(name.split("_")[0]))
        # Formatted, not json.dumps-ed: 321,327 rows are written in well under a second.
        template = (
            '{{"id": {i}, "image": "{image}", "conversations": [{{"from": "human", "value": '
            '"<image>{question}"}}, {{"from": "gpt", "value": "[{i3}, {i5}, {w}, {h}]"}}]}}\n'
        )
        body = "".join(
            template.format(
                i=i,
                image=names[i % 3],
                question=PROBLEM.format(f"object number {i}"),
                i3=i % 3,
                i5=i % 5,
                w=PICTURES[names[i % 3]][0],
                h=PICTURES[names[i % 3]][1],
            )
            for i in range(4, count)
        )
        texts[name] = head + body
    write_release(root, texts)


def _raw(root: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "records" / name).read_text().splitlines()]


def test_the_format_reads_the_three_released_train_files(tmp_path: Path) -> None:
    assert vlm_r1_rec_train.ROWS == RELEASED
    assert set(vlm_r1_rec_train.FILES.values()) == set(RELEASED) == set(vlm_r1_rec_train.ABOUT)
    assert list(vlm_r1_rec_train.FILES) == ["refcoco_train", "refcocop_train", "refcocog_train"]
    # files of the released sizes pass the count check, then convert from their first row on
    write_vlm_r1_rec_train_fixture(tmp_path)
    split, first = next(vlm_r1_rec_train.convert(tmp_path, ImageStore(tmp_path / "records")))
    assert (split, first.id, first.boxes) == (
        "refcoco_train",
        "refcoco_train-0",
        [[103.93, 299.99, 238.15, 477.41]],
    )


def test_each_row_becomes_a_grounding_record_in_the_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good_release(tmp_path, monkeypatch)
    assert convert_dataset("vlm_r1_rec_train", tmp_path) == dict.fromkeys(
        ["refcoco_train", "refcocog_train", "refcocop_train"], 4
    )
    records = read_records(tmp_path / "records" / "refcocop_train.jsonl")  # validated
    assert [r.id for r in records] == [f"refcocop_train-{i}" for i in range(4)]
    first = records[0]
    assert first.problem == PROBLEM.format("the lady with the blue shirt")  # <image> removed
    assert (first.problem_type, first.task, first.data_source) == (
        "grounding",
        "refcocop_train",
        "refcoco",
    )
    assert first.boxes == [[103.93, 299.99, 238.15, 477.41]]
    assert first.answer == dumps_box(first.boxes[0]) == "[104, 300, 238, 477]"
    assert first.image_sizes == [[427, 640]]
    assert [r.boxes[0] for r in records[1:]] == [
        [40.0, 30.0, 64.0, 48.0],  # right and bottom edge of the 64 x 48
        [30.0, 10.0, 40.0, 20.0],  # x2 40.4 clamped to the 40 px edge
        [0.0, 5.5, 12.25, 20.0],  # the gpt value was the list itself
    ]
    assert [r.image_sizes for r in records] == [[[427, 640]], [[64, 48]], [[40, 40]], [[40, 40]]]
    # every picture stored once across the three files
    assert len(list((tmp_path / "records" / "images").iterdir())) == len(PICTURES)
    assert json.loads((tmp_path / "records" / "report.json").read_text())["refcoco_train"] == {
        "records": 4,
        "rejected": 0,
    }


def test_the_records_feed_vlm_r1s_rec_reward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vlm_r1.rec_iou`` reads the records' boxes: the reference box scores IoU 1."""
    good_release(tmp_path, monkeypatch)
    convert_dataset("vlm_r1_rec_train", tmp_path)
    raw = _raw(tmp_path, "refcoco_train.jsonl")
    completions = [
        f'<think>x</think><answer>{{"bbox_2d": {r["answer"]}}}</answer>' for r in raw[1:3]
    ]
    assert rec_iou_reward(completions, boxes=[r["boxes"] for r in raw[1:3]]) == [1.0, 1.0]


def malformed_release(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """refcocog_train.jsonl with four bad rows among good ones: a picture not in the zip, a box
    outside its picture, an empty gpt turn, a line that is not JSON (its id still readable)."""
    bad = good_rows("refcocog")
    bad += [
        row("g-missing", "train2014/COCO_train2014_000000000001.jpg", "gone", [1, 2, 3, 4]),
        row("g-outside", SMALL, "too wide", [40.0, 30.0, 66.0, 48.0]),
        row("g-empty", SQUARE, "no answer", "<answer> </answer>"),
        '{"id": "g-broken", "image": "' + SQUARE + '", "conversations": [{"from": "human"',
        "",  # a blank line is no row
    ]
    files = {name: good_rows(name.split("_")[0]) for name in RELEASED}
    files["refcocog_train.jsonl"] = bad
    release(root, monkeypatch, files)


BAD = {
    "g-missing": "row 4: image 'train2014/COCO_train2014_000000000001.jpg' is not in train2014.zip",
    "g-outside": "row 5: the gpt box [40.0, 30.0, 66.0, 48.0] is outside its 64x48 image",
    "g-empty": "row 6: the gpt turn is empty: '<answer> </answer>'",
    "g-broken": "row 7: is not valid JSON: ",
}


def test_bad_rows_stop_the_conversion_naming_every_one_with_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    malformed_release(tmp_path, monkeypatch)
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec_train", tmp_path)
    message = str(info.value)
    assert "format vlm_r1_rec_train: 4 rows cannot be converted" in message
    for row_id, why in BAD.items():
        assert (
            f"  refcocog_train id {row_id}: {ANNOTATIONS}:{FOLDER}refcocog_train.jsonl {why}"
            in message
        )
    assert not list((tmp_path / "records").glob("*.jsonl"))


def test_bad_rows_reported_are_left_out_and_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    malformed_release(tmp_path, monkeypatch)
    counts = convert_dataset("vlm_r1_rec_train", tmp_path, bad_rows="report")
    assert counts == dict.fromkeys(["refcoco_train", "refcocog_train", "refcocop_train"], 4)
    rejected = _raw(tmp_path, "rejected.jsonl")
    assert [(r["split"], r["id"]) for r in rejected] == [("refcocog_train", i) for i in BAD]
    for entry, why in zip(rejected, BAD.values(), strict=True):
        assert why in entry["why"]
    report = json.loads((tmp_path / "records" / "report.json").read_text())
    assert report["refcocog_train"] == {"records": 4, "rejected": 4}
    # the good rows keep their line numbers as ids
    assert [r["id"] for r in _raw(tmp_path, "refcocog_train.jsonl")] == [
        f"refcocog_train-{i}" for i in range(4)
    ]


@pytest.mark.parametrize("name", list(RELEASED))
def test_a_file_of_another_size_fails_naming_it_expected_and_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    good_release(tmp_path, monkeypatch)
    monkeypatch.setattr(vlm_r1_rec_train, "ROWS", {**vlm_r1_rec_train.ROWS, name: 5})
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec_train", tmp_path)
    assert str(info.value) == (
        f"{ANNOTATIONS}:{FOLDER}{name} holds 4 items, expected 5 ({vlm_r1_rec_train.ABOUT[name]})"
    )
    assert not list((tmp_path / "records" / "images").iterdir())  # before any picture is read


def test_a_missing_train_file_or_image_archive_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release(tmp_path, monkeypatch, {"refcoco_train.jsonl": good_rows("refcoco")})
    with pytest.raises(
        DataError, match=r"rec_jsons_processed.zip: no member named 'refcocop_train"
    ):
        convert_dataset("vlm_r1_rec_train", tmp_path)
    good_release(tmp_path, monkeypatch)
    (tmp_path / IMAGES).unlink()
    with pytest.raises(DataError, match=r"no image archive; expected one of \['train2014.zip'\]"):
        convert_dataset("vlm_r1_rec_train", tmp_path)


def test_the_val_format_still_reads_only_the_val_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The train jsonl beside the val jsons does not change what vlm_r1_rec converts."""
    from vlrl.data.formats import vlm_r1_rec

    good_release(tmp_path, monkeypatch)
    monkeypatch.setattr(vlm_r1_rec, "ROWS", dict.fromkeys(vlm_r1_rec.ROWS, 0))
    with pytest.raises(DataError, match="found no rows"):
        convert_dataset("vlm_r1_rec", tmp_path)


def test_the_config_reads_the_released_files_at_the_val_sets_revision(project: Path) -> None:
    data, val = load_dataset("vlm_r1_rec_train"), load_dataset("vlm_r1_rec")
    assert (data.repo_id, data.revision, data.format, data.bad_rows) == (
        "omlab/VLM-R1",
        val.revision,
        "vlm_r1_rec_train",
        "report",
    )
    assert data.allow_patterns == [ANNOTATIONS, IMAGES] == val.allow_patterns


def test_a_train_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    write_release(tmp_path, {"refcoco_train.jsonl": b'{"id": 1}\n\xff\n'})
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec_train", tmp_path)
    assert str(info.value).startswith(
        f"{ANNOTATIONS}:{FOLDER}refcoco_train.jsonl: not UTF-8 text: 'utf-8' codec can't decode"
    )
