"""The vlm_r1_rec format: VLM-R1's refcoco_val.json / refcocop_val.json / refcocog_val.json (in
rec_jsons_processed.zip) over the COCO pictures of train2014.zip → one grounding record per item,
in the json's order, each file holding its standard split's expressions."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_parquet import image_bytes

from vlrl.benchmarks import subsample
from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset, vlm_r1_rec
from vlrl.items.answers import dumps_box
from vlrl.items.records import read_records

ANNOTATIONS = "rec_jsons_processed.zip"
IMAGES = "train2014.zip"
FOLDER = "rec_jsons_processed/"
PROBLEM = "Please provide the bounding box coordinate of the region this sentence describes: {}."
#: The pictures of the fixture's train2014.zip: path → (width, height, colour).
PICTURES = {
    "train2014/COCO_train2014_000000581857.jpg": (427, 640, (200, 40, 40)),
    "train2014/COCO_train2014_000000000009.jpg": (64, 48, (40, 200, 40)),
    "train2014/COCO_train2014_000000000025.jpg": (40, 40, (40, 40, 200)),
}
#: The released counts (the format's ROWS), written here so a change there is a visible change.
RELEASED = {"refcoco_val.json": 10_834, "refcocop_val.json": 10_758, "refcocog_val.json": 4_896}


def item(
    image: str, caption: str, solution: list[float], index: int = 0, **extra: Any
) -> dict[str, Any]:
    """An item as VLM-R1's eval files hold it (VLM-R1 issue #11's example's keys)."""
    width, height, _ = PICTURES[image]
    x1, y1, x2, y2 = solution
    return {
        "height": height,
        "width": width,
        "id": index,
        "original_id": 1719310 + index,
        "dataset_name": "refcoco",
        "area": (x2 - x1) * (y2 - y1),
        "iscrowd": 0,
        "image_id": index,
        "category_id": 1,
        "bbox_list": [[x1, y1, x2 - 1, y2 - 1]],
        "text_type": "caption",
        "image": image,
        "problem": PROBLEM.format(caption),
        "normal_caption": caption,
        "solution": solution,
        "normalized_solution": [
            int(x1 / width * 1000),
            int(y1 / height * 1000),
            int(x2 / width * 1000),
            int(y2 / height * 1000),
        ],
        **extra,
    }


def head_items() -> list[dict[str, Any]]:
    """The first items of every file: issue #11's item, a box on two edges, a box 0.4 px over
    the right edge (annotation noise), a second expression on issue #11's picture."""
    big, small, square = PICTURES
    return [
        item(big, "the lady with the blue shirt", [103.93, 299.99, 238.15, 477.41]),
        item(small, "bowl at the bottom right", [40.0, 30.0, 64.0, 48.0], 1),
        item(square, "left cup", [0.0, 5.5, 12.25, 20.0], 2, width=None, height=None),
        item(square, "right edge thing", [30.0, 10.0, 40.4, 20.0], 3),
        item(big, "man behind her", [10.5, 20.0, 100.0, 300.0], 4),
    ]


def items(n: int, split: str) -> list[dict[str, Any]]:
    """``n`` items: :func:`head_items`, then distinct expressions on the three pictures."""
    out = head_items()[:n]
    names = list(PICTURES)
    for index in range(len(out), n):
        image = names[index % len(names)]
        width, height, _ = PICTURES[image]
        box = [index % 7, index % 5, width - index % 3, height - index % 11]
        out.append(item(image, f"{split} object number {index}", box, index))
    return out


def write_annotations(root: Path, files: dict[str, list[Any]]) -> None:
    """rec_jsons_processed.zip as the hub stores it: one folder with the eval jsons and the
    train files (not read)."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / ANNOTATIONS, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(FOLDER, "")
        for name, content in files.items():
            archive.writestr(FOLDER + name, json.dumps(content, indent=4))
        archive.writestr(FOLDER + "refcoco_train.jsonl", "")


def write_images(root: Path, names: list[str] | None = None) -> None:
    """train2014.zip as COCO ships it: ``train2014/COCO_train2014_<id>.jpg``."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / IMAGES, "w") as archive:
        archive.writestr("train2014/", "")
        for name in names if names is not None else list(PICTURES):
            width, height, colour = PICTURES[name]
            archive.writestr(name, image_bytes(colour, (width, height), "JPEG"))


def released_files() -> dict[str, list[Any]]:
    return {name: items(n, name.removesuffix(".json")) for name, n in RELEASED.items()}


def write_vlm_r1_rec_fixture(root: Path) -> None:
    """omlab/VLM-R1's REC evaluation files at the released sizes under ``root``:
    rec_jsons_processed.zip with the three val jsons (10,834 / 10,758 / 4,896 items) and
    train2014.zip with three pictures."""
    write_annotations(root, released_files())
    write_images(root)


def small(monkeypatch: pytest.MonkeyPatch, root: Path, n: int = 5) -> dict[str, list[Any]]:
    """A release of ``n`` items per file under ``root``, the format told to expect that."""
    monkeypatch.setattr(vlm_r1_rec, "ROWS", dict.fromkeys(RELEASED, n))
    files = {name: items(n, name.removesuffix(".json")) for name in RELEASED}
    write_annotations(root, files)
    write_images(root)
    return files


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The released-size fixture, converted once."""
    root = tmp_path_factory.mktemp("vlm_r1_rec")
    write_vlm_r1_rec_fixture(root)
    assert convert_dataset("vlm_r1_rec", root) == {
        "refcoco_val": 10_834,
        "refcocog_val": 4_896,
        "refcocop_val": 10_758,
        "refcoco_val_od": 10_834,
        "refcocog_val_od": 4_896,
        "refcocop_val_od": 10_758,
    }
    return root


def _raw(root: Path, split: str) -> list[dict[str, Any]]:
    lines = (root / "records" / f"{split}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_format_expects_the_released_counts() -> None:
    assert vlm_r1_rec.ROWS == RELEASED
    assert set(vlm_r1_rec.FILES.values()) == set(RELEASED) == set(vlm_r1_rec.ABOUT)


def test_each_item_becomes_a_grounding_record_in_the_json_order(released: Path) -> None:
    records = read_records(released / "records" / "refcoco_val.jsonl", limit=100)  # validated
    assert [r.id for r in records[:3]] == ["refcoco_val-0", "refcoco_val-1", "refcoco_val-2"]
    expected = items(10_834, "refcoco_val")
    assert [r["problem"] for r in _raw(released, "refcoco_val")] == [i["problem"] for i in expected]
    assert [r["id"] for r in _raw(released, "refcoco_val")][-1] == "refcoco_val-10833"
    first = records[0]
    assert first.problem == PROBLEM.format("the lady with the blue shirt")
    assert (first.problem_type, first.task, first.data_source) == (
        "grounding",
        "refcoco_val",
        "refcoco",
    )
    # VLM-R1's solution is COCO [x, y, x + w, y + h] in the picture's pixels: kept as it is
    assert first.boxes == [[103.93, 299.99, 238.15, 477.41]]
    assert first.answer == dumps_box([103.93, 299.99, 238.15, 477.41]) == "[104, 300, 238, 477]"
    assert first.image_sizes == [[427, 640]]
    assert first.groups == {"image": "train2014/COCO_train2014_000000581857.jpg"}


def test_boxes_on_the_edges_are_kept_and_edge_noise_is_clamped(released: Path) -> None:
    for split in vlm_r1_rec.FILES:
        boxes = [r["boxes"][0] for r in _raw(released, split)[:5]]
        assert boxes[1] == [40.0, 30.0, 64.0, 48.0]  # right and bottom edge of the 64 x 48
        assert boxes[2] == [0.0, 5.5, 12.25, 20.0]  # left edge
        assert boxes[3] == [30.0, 10.0, 40.0, 20.0]  # x2 40.4 clamped to the 40 px edge


def test_image_sizes_are_the_pictures(released: Path) -> None:
    for split in vlm_r1_rec.FILES:
        raw = _raw(released, split)
        sources = items(len(raw), split)
        assert [r["image_sizes"] for r in raw] == [
            [list(PICTURES[i["image"]][:2])] for i in sources
        ]
        # a picture used by many items is stored once
        assert len({r["images"][0] for r in raw}) == len(PICTURES)
    assert len(list((released / "records" / "images").iterdir())) == len(PICTURES)


def test_the_subsample_draws_the_items_vlm_r1_draws(released: Path) -> None:
    """Records keep the json's order, so the benchmark's seeded subsample is test_rec_r1.py's
    ``random.seed(42); random.shuffle(data); data[:2000]`` item for item."""
    for split, name in vlm_r1_rec.FILES.items():
        raw = _raw(released, split)
        data = items(RELEASED[name], split)
        random.seed(42)
        random.shuffle(data)
        chosen = subsample(raw, 2000, 42)
        assert [r["problem"] for r in chosen] == [d["problem"] for d in data[:2000]]


def test_the_ovd_evaluation_asks_the_normal_caption_of_the_same_items(released: Path) -> None:
    """``<split>_od``: test_od_r1.py formats its template with ``x['normal_caption']`` as it is;
    everything else is the REC record's, and its ``random.seed(42)`` 500 are the benchmark's."""
    for split, name in vlm_r1_rec.FILES.items():
        rec, od = _raw(released, split), _raw(released, split + "_od")
        data = items(RELEASED[name], split)
        assert [r["problem"] for r in od] == [d["normal_caption"] for d in data]
        assert [{**r, "problem": None} for r in od] == [{**r, "problem": None} for r in rec]
        random.seed(42)
        random.shuffle(data)
        chosen = subsample(od, 500, 42)
        assert [r["problem"] for r in chosen] == [d["normal_caption"] for d in data[:500]]
    first = read_records(released / "records" / "refcoco_val_od.jsonl", limit=1)[0]
    assert first.problem == "the lady with the blue shirt"


def test_an_item_without_its_caption_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = small(monkeypatch, tmp_path)
    files["refcoco_val.json"][1]["normal_caption"] = 7
    write_annotations(tmp_path, files)
    message = r"refcoco_val.json row 1: field 'normal_caption' must be a non-empty string: 7"
    with pytest.raises(DataError, match=message):
        convert_dataset("vlm_r1_rec", tmp_path)
    files["refcoco_val.json"][1]["normal_caption"] = "fine"
    del files["refcocog_val.json"][2]["normal_caption"]
    write_annotations(tmp_path, files)
    with pytest.raises(DataError, match=r"refcocog_val.json row 2: .*'normal_caption'"):
        convert_dataset("vlm_r1_rec", tmp_path)


def test_lmms_labs_val_size_fails_naming_the_file_expected_and_found(tmp_path: Path) -> None:
    """A refcocog_val.json of lmms-lab's val size (7,573 objects, 5,000 over the UMD val) is
    refused before any picture is read or any records file written."""
    files = released_files()
    files["refcocog_val.json"] = items(7_573, "other")
    write_annotations(tmp_path, files)
    write_images(tmp_path)
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec", tmp_path)
    assert str(info.value) == (
        f"{ANNOTATIONS}:{FOLDER}refcocog_val.json holds 7,573 items, expected 4,896 "
        "(RefCOCOg (UMD) val)"
    )
    assert not list((tmp_path / "records").glob("*.jsonl"))
    assert not list((tmp_path / "records" / "images").iterdir())


@pytest.mark.parametrize("name", list(RELEASED))
@pytest.mark.parametrize("found", [4, 6, 0])
def test_a_file_of_another_size_fails_naming_it_expected_and_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, found: int
) -> None:
    files = small(monkeypatch, tmp_path)
    files[name] = items(found, "other")
    write_annotations(tmp_path, files)
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec", tmp_path)
    assert str(info.value) == (
        f"{ANNOTATIONS}:{FOLDER}{name} holds {found} items, expected 5 ({vlm_r1_rec.ABOUT[name]})"
    )
    assert not list((tmp_path / "records").glob("*.jsonl"))


def test_the_row_check_counts_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small(monkeypatch, tmp_path)
    splits = [*vlm_r1_rec.FILES, *(f"{split}_od" for split in vlm_r1_rec.FILES)]
    assert convert_dataset("vlm_r1_rec", tmp_path) == dict.fromkeys(splits, 5)
    monkeypatch.setattr(vlm_r1_rec, "ROWS", {**dict.fromkeys(RELEASED, 5), "refcoco_val.json": 4})
    with pytest.raises(DataError, match=r"refcoco_val.json holds 5 items, expected 4 \(RefCOCO"):
        convert_dataset("vlm_r1_rec", tmp_path)
    monkeypatch.setattr(vlm_r1_rec, "ROWS", {**dict.fromkeys(RELEASED, 5), "refcocog_val.json": 1})
    files = {name: items(1 if name == "refcocog_val.json" else 5, "x") for name in RELEASED}
    write_annotations(tmp_path, files)
    assert convert_dataset("vlm_r1_rec", tmp_path)["refcocog_val"] == 1


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (0, {"width": 426}, "field 'width' is 426 but its picture is 427x640"),
        (1, {"solution": [40.0, 30.0, 66.0, 48.0]}, "is outside its 64x48 image"),
        (0, {"image": "train2014/COCO_train2014_000000000001.jpg"}, "is not in train2014.zip"),
        (2, {"solution": [12.0, 5.5, 3.0, 20.0]}, "has x2 <= x1 or y2 <= y1"),
        (4, {"problem": ""}, "field 'problem' is empty"),
    ],
)
def test_a_bad_item_names_file_item_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: int, change: dict, needle: str
) -> None:
    files = small(monkeypatch, tmp_path)
    files["refcocop_val.json"][index].update(change)
    write_annotations(tmp_path, files)
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_rec", tmp_path)
    assert f"{ANNOTATIONS}:{FOLDER}refcocop_val.json row {index}: " in str(info.value)
    assert needle in str(info.value)


def test_a_missing_file_or_image_archive_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = small(monkeypatch, tmp_path)
    del files["refcocog_val.json"]
    write_annotations(tmp_path, files)
    with pytest.raises(DataError, match=r"rec_jsons_processed.zip: no member named 'refcocog_val"):
        convert_dataset("vlm_r1_rec", tmp_path)
    small(monkeypatch, tmp_path)
    (tmp_path / IMAGES).unlink()
    with pytest.raises(DataError, match=r"no image archive; expected one of \['train2014.zip'\]"):
        convert_dataset("vlm_r1_rec", tmp_path)


def test_the_configs_read_the_files_the_format_writes(project: Path) -> None:
    """The val benchmarks read VLM-R1's files at the pinned revision, under VLM-R1's protocol.
    (Read as YAML: the benchmark schema's scoring keys are another change's.)"""
    data = load_dataset("vlm_r1_rec")
    assert (data.repo_id, data.revision, data.format) == (
        "omlab/VLM-R1",
        "e5b48b7c5ed7e407f89924b225a6c6c5ebc356af",
        "vlm_r1_rec",
    )
    assert data.allow_patterns == [ANNOTATIONS, IMAGES]
    for bench, split in [
        ("refcoco_val", "refcoco_val"),
        ("refcoco_plus_val", "refcocop_val"),
        ("refcocog_val", "refcocog_val"),
    ]:
        cfg = yaml.safe_load((project / "config" / "benchmarks" / f"{bench}.yaml").read_text())
        assert (cfg["dataset"], cfg["file"]) == ("vlm_r1_rec", f"records/{split}.jsonl")
        assert split in vlm_r1_rec.FILES
        assert (cfg["subsample"], cfg["max_new_tokens"]) == ({"n": 2000, "seed": 42}, 256)
