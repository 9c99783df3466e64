"""The vqa_verify format: SATORI-R1's VQA-Verify rows (ms-swift messages / query + images, and
plugin.py's image_caption, bboxs, width, height, possible_answers) → free-form records whose
answer, accepted, boxes, caption and image_sizes are what vlrl.rewards.satori reads.

The release's files could not be listed, so both layouts the format reads are written here:
ms-swift jsonl with an image folder, and hub parquet with image bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, image_bytes, write_parquet

from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.prompt_texts import CAPTION_BBOX_ANSWER_SYSTEM_PROMPT
from vlrl.items.records import read_records
from vlrl.rewards.satori import BBoxIoUReward, CaptionReward, vqa_reward

#: A value that leaves its field out of the row.
MISSING: Any = object()
#: The fixture's pictures: file name → (width, height, colour).
PICTURES = {"bus.jpg": (64, 48, (200, 30, 30)), "sign.png": (40, 56, (20, 120, 220))}


def row(picture: str = "bus.jpg", **change: Any) -> dict[str, Any]:
    """A row as ms-swift's GRPO reads it for SATORI's plugin.py (messages with an <image> tag,
    images as paths beside the jsonl)."""
    width, height, _ = PICTURES[picture]
    data = {
        "messages": [{"role": "user", "content": "<image>What colour is the bus?"}],
        "images": [f"images/{picture}"],
        "image_caption": "A red bus parked on a street.",
        "bboxs": [[4, 6.5, 30, 40], [30.0, 0.0, float(width), float(height)]],
        "width": width,
        "height": height,
        "possible_answers": ["red", "Red", "red", "dark red"],
    }
    data.update(change)
    return {key: value for key, value in data.items() if value is not MISSING}


def write_jsonl(root: Path, rows: list[dict[str, Any]], name: str = "vqa_verify.jsonl") -> Path:
    """The ms-swift layout: one jsonl and an ``images/`` folder beside it."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    for name_, (width, height, colour) in PICTURES.items():
        fmt = "JPEG" if name_.endswith(".jpg") else "PNG"
        (root / "images" / name_).write_bytes(image_bytes(colour, (width, height), fmt))
    path = root / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_vqa_verify_fixture(root: Path) -> None:
    """A small VQA-Verify release in the ms-swift layout under ``root``: ``vqa_verify.jsonl``
    (two rows, one per picture) and ``images/``."""
    write_jsonl(
        root,
        [
            row(),
            row(
                "sign.png",
                messages=[
                    {"role": "system", "content": CAPTION_BBOX_ANSWER_SYSTEM_PROMPT},
                    {"role": "user", "content": "What does the sign say?\n<image>"},
                    {"role": "assistant", "content": "<answer>stop</answer>"},
                ],
                possible_answers=["stop"],
                bboxs=[[0, 0, 40.4, 10]],
            ),
        ],
    )


def records(root: Path, split: str = "train") -> list[dict[str, Any]]:
    lines = (root / "records" / f"{split}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_a_jsonl_row_becomes_a_free_form_record(tmp_path: Path) -> None:
    write_vqa_verify_fixture(tmp_path)
    assert convert_dataset("vqa_verify", tmp_path) == {"train": 2}
    first, second = read_records(tmp_path / "records" / "train.jsonl")  # validated
    assert first.id == "train-0" and second.id == "train-1"
    assert first.problem == "What colour is the bus?"
    assert (first.answer, first.accepted) == ("red", ["Red", "dark red"])
    assert first.caption == "A red bus parked on a street."
    assert first.boxes == [[4.0, 6.5, 30.0, 40.0], [30.0, 0.0, 64.0, 48.0]]
    assert first.image_sizes == [[64, 48]]
    assert (first.problem_type, first.data_source) == ("free_form", "vqa_verify")
    assert second.problem == "What does the sign say?"
    assert (second.answer, second.accepted) == ("stop", [])
    assert second.boxes == [[0.0, 0.0, 40.0, 10.0]]  # 0.4 px over the edge: clamped
    assert second.image_sizes == [[40, 56]]
    # converting again reads the release, not the records it wrote
    assert convert_dataset("vqa_verify", tmp_path) == {"train": 2}


def test_the_records_fit_satoris_rewards(tmp_path: Path) -> None:
    """[answer, *accepted] is plugin.py's possible_answers, boxes and image_sizes its bboxs and
    width / height, caption its image_caption."""
    write_jsonl(tmp_path, [row()])
    convert_dataset("vqa_verify", tmp_path)
    (rec,) = read_records(tmp_path / "records" / "train.jsonl")
    golds = [[rec.answer, *rec.accepted]]
    for said, score in [("red", 1.0), (" dark red ", 1.0), ("Red", 1.0), ("RED", 0.0)]:
        assert vqa_reward([f"<answer>{said}</answer>"], possible_answers=golds) == [score]
    boxes = json.dumps(rec.boxes)
    iou = BBoxIoUReward(prediction_frame="original")(
        [f"<bbox>{boxes}</bbox>"], boxes=[rec.boxes], image_sizes=[rec.image_sizes]
    )
    assert iou[0] == pytest.approx(1.0)
    assert CaptionReward()([f"<caption>{rec.caption}</caption>"], caption=[rec.caption]) == [1.0]


def test_query_layout_single_image_and_own_ids(tmp_path: Path) -> None:
    """ms-swift's query-response layout (``query``) with ``image`` and the row's own id."""
    data = row(id=17, query="How many wheels?", image="images/bus.jpg")
    del data["messages"], data["images"]
    write_jsonl(tmp_path, [data], name="test.jsonl")
    assert convert_dataset("vqa_verify", tmp_path) == {"test": 1}
    (rec,) = records(tmp_path, "test")
    assert (rec["id"], rec["problem"]) == ("17", "How many wheels?")


def test_hub_parquet_with_image_bytes(tmp_path: Path) -> None:
    import datasets

    features = datasets.Features(
        {
            "messages": [{"role": datasets.Value("string"), "content": datasets.Value("string")}],
            "images": datasets.Sequence(datasets.Image()),
            "image_caption": datasets.Value("string"),
            "bboxs": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
            "width": datasets.Value("int64"),
            "height": datasets.Value("int64"),
            "possible_answers": datasets.Sequence(datasets.Value("string")),
        }
    )
    picture = encoded_image((200, 30, 30), (64, 48), "JPEG", path="bus.jpg")
    rows = [row(images=[picture]), row(images=[picture], width=63)]
    write_parquet(tmp_path / "data" / "train-00000-of-00001.parquet", rows, features)
    assert convert_dataset("vqa_verify", tmp_path, bad_rows="report") == {"train": 1}
    (rec,) = read_records(tmp_path / "records" / "train.jsonl")
    assert (rec.problem, rec.answer, rec.image_sizes) == (
        "What colour is the bus?",
        "red",
        [[64, 48]],
    )
    (rejected,) = [json.loads(line) for line in (tmp_path / "records/rejected.jsonl").open()]
    assert rejected["id"] == "train-1"
    assert rejected["why"] == (
        "data/train-00000-of-00001.parquet row 1: fields 'width' / 'height' are 63x48 but its "
        "picture is 64x48"
    )


#: Malformed rows: (change, what the error says). Row i of the fixture is BAD[i - 1].
BAD = [
    ({"bboxs": [[4, 6, 30, 40], [50, 10, 70, 40]]}, "bboxs[1] [50.0, 10.0, 70.0, 40.0] is outside"),
    ({"possible_answers": []}, "field 'possible_answers' is empty"),
    ({"image_caption": MISSING}, "has no field 'image_caption'"),
    ({"images": ["images/broken.jpg"]}, "field 'images' is not a readable image"),
    ({"width": 48, "height": 64}, "'width' / 'height' are 48x64 but its picture is 64x48"),
    ({"height": None}, "field 'height' is empty"),
    ({"bboxs": [1, 2, 3, 4]}, "bboxs[0] is not 4 finite numbers"),
    ({"bboxs": [[30, 6, 4, 40]]}, "bboxs[0] [30, 6, 4, 40] has x2 <= x1"),
    ({"possible_answers": "red"}, "field 'possible_answers' must be a list of strings"),
    ({"images": ["images/missing.jpg"]}, "picture 'images/missing.jpg' is not a file"),
    (
        {"messages": [{"role": "system", "content": "Think."}, {"role": "user", "content": "Q?"}]},
        "messages has its own system turn",
    ),
]


def bad_release(root: Path) -> None:
    write_jsonl(root, [row()] + [row(**change) for change, _ in BAD])
    (root / "images" / "broken.jpg").write_bytes(b"not a picture")


#: (id, where, what) each malformed row is reported with: no row has its own id.
EXPECTED = [
    (f"train-{i}", f"vqa_verify.jsonl row {i}: ", needle) for i, (_, needle) in enumerate(BAD, 1)
]


def test_bad_rows_stop_names_every_malformed_row_with_its_id(tmp_path: Path) -> None:
    bad_release(tmp_path)
    with pytest.raises(DataError) as info:
        convert_dataset("vqa_verify", tmp_path)
    first, *lines = str(info.value).splitlines()
    assert f"{len(BAD)} rows cannot be converted" in first
    assert len(lines) == len(BAD)
    for line, (row_id, where, needle) in zip(lines, EXPECTED, strict=True):
        assert line.startswith(f"  train id {row_id}: {where}")
        assert needle in line
    assert not (tmp_path / "records" / "train.jsonl").exists()


def test_bad_rows_report_lists_every_malformed_row_with_its_id(tmp_path: Path) -> None:
    bad_release(tmp_path)
    assert convert_dataset("vqa_verify", tmp_path, bad_rows="report") == {"train": 1}
    assert [r["id"] for r in records(tmp_path)] == ["train-0"]
    rejected = [json.loads(line) for line in (tmp_path / "records/rejected.jsonl").open()]
    assert len(rejected) == len(BAD)
    for got, (row_id, where, needle) in zip(rejected, EXPECTED, strict=True):
        assert (got["split"], got["id"]) == ("train", row_id)
        assert got["why"].startswith(where) and needle in got["why"]
    report = json.loads((tmp_path / "records" / "report.json").read_text())
    assert report == {"train": {"records": 1, "rejected": len(BAD)}}


def test_a_release_in_both_layouts_or_none_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no VQA-Verify rows"):
        convert_dataset("vqa_verify", tmp_path)
    write_jsonl(tmp_path, [row()])
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train-00000-of-00001.parquet").write_bytes(b"")
    with pytest.raises(DataError, match="both parquet and json row files are present"):
        convert_dataset("vqa_verify", tmp_path)


def test_the_config_names_the_repository_unpinned(project: Path) -> None:
    data = load_dataset("vqa_verify")
    assert (data.repo_id, data.revision, data.format, data.bad_rows) == (
        "justairr/VQA-Verify",
        None,
        "vqa_verify",
        "report",
    )
    assert data.unpinned and "justairr/VQA-Verify" in data.unpinned
    assert {"*.parquet", "*.jsonl", "*.jpg", "*.png"} <= set(data.allow_patterns or [])
