"""The lisa_grounding format: VLM-R1's lisa_test.json (in rec_jsons_processed.zip, 1,658 items)
and the pictures in lisa_test.zip → one grounding record per item, in the json's order."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hub_parquet import image_bytes

from vlrl.benchmarks import BenchmarkConfig, subsample
from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset, lisa_grounding
from vlrl.items.answers import dumps_box
from vlrl.items.predictions import prediction_of
from vlrl.items.records import read_records
from vlrl.stages.score import rule_scores

ANNOTATIONS = "rec_jsons_processed.zip"
JSON_MEMBER = "rec_jsons_processed/lisa_test.json"
IMAGES = "lisa_test.zip"
WHERE = f"{ANNOTATIONS}:{JSON_MEMBER}"
PROBLEM = "Please provide the bounding box coordinate of the region this sentence describes: {}."
#: name → (width, height, colour) of the fixture's pictures.
PICTURES = {
    "test/3412_kitchen.jpg": (40, 30, (200, 40, 40)),
    "test/0077_street.jpg": (32, 48, (40, 200, 40)),
    "test/1201_desk.jpg": (24, 24, (40, 40, 200)),
}


def _jpeg(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    return image_bytes(colour, (width, height), "JPEG")


def _item(image: str, caption: str, solution: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "image": image,
        "problem": PROBLEM.format(caption),
        "normal_caption": caption,
        "solution": solution,
        **extra,
    }


def lisa_items() -> list[dict[str, Any]]:
    """Six test items: two queries on one picture, a box on the picture's edge, a box over the
    edge by annotation noise, float and integer coordinates, with and without width/height."""
    return [
        _item(
            "test/3412_kitchen.jpg",
            "the utensil used for flipping pancakes",
            [3.5, 4.25, 20.75, 18.0],
            width=40,
            height=30,
        ),
        _item("test/0077_street.jpg", "where a pedestrian should wait", [0, 20, 16, 48]),
        # right and bottom edge exactly
        _item("test/3412_kitchen.jpg", "the appliance that keeps food cold", [22, 2, 40, 30]),
        # 0.4 px over the right edge: clamped to it
        _item("test/1201_desk.jpg", "something to write with", [10.0, 5.0, 24.4, 12.0]),
        _item(
            "test/0077_street.jpg",
            "the thing that tells cars to stop",
            [20.2, 1.8, 31.6, 14.4],
            width=32,
            height=48,
        ),
        _item("test/1201_desk.jpg", "the source of light at night", [0.0, 0.0, 8.0, 9.0]),
    ]


def write_annotations(root: Path, items: list[Any], member: str = JSON_MEMBER) -> None:
    """rec_jsons_processed.zip as the hub stores it: the folder with the eval jsons (and the
    train jsonl files, which the format does not read)."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / ANNOTATIONS, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("rec_jsons_processed/", "")
        archive.writestr(member, json.dumps(items, indent=4))
        archive.writestr("rec_jsons_processed/refcoco_val.json", json.dumps([]))
        archive.writestr("rec_jsons_processed/refcoco_train.jsonl", "")


def write_images(
    root: Path,
    names: list[str] | None = None,
    prefix: str = "",
    file: str = IMAGES,
) -> None:
    """The image archive: ``test/<name>.jpg`` members (under ``prefix``)."""
    root.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / file, "w") as archive:
        archive.writestr(prefix + "test/", "")
        for name in names if names is not None else list(PICTURES):
            archive.writestr(prefix + name, _jpeg(*PICTURES[name]))


#: The items of the released lisa_test.json (the format's ROWS, written here as well).
RELEASED = 1_658


def released_items(n: int = RELEASED) -> list[dict[str, Any]]:
    """:func:`lisa_items`, then distinct queries on the three pictures, ``n`` in all."""
    out = lisa_items()[:n]
    names = list(PICTURES)
    for index in range(len(out), n):
        name = names[index % len(names)]
        width, height, _ = PICTURES[name]
        box = [index % 5, index % 3, width - index % 7, height - index % 4]
        out.append(_item(name, f"the thing asked for in query {index}", box))
    return out


def write_lisa_grounding_fixture(root: Path) -> None:
    """omlab/VLM-R1's LISA-Grounding at the released size under ``root``:
    rec_jsons_processed.zip with rec_jsons_processed/lisa_test.json (1,658 items, the first six
    :func:`lisa_items`) and lisa_test.zip with 3 test/*.jpg pictures."""
    write_annotations(root, released_items())
    write_images(root)


@pytest.fixture
def six(monkeypatch: pytest.MonkeyPatch) -> None:
    """The format told to expect the six :func:`lisa_items` instead of the released 1,658."""
    monkeypatch.setitem(lisa_grounding.ROWS, "lisa_test.json", len(lisa_items()))


def write_six(root: Path) -> None:
    """The six :func:`lisa_items` and their pictures (use with the ``six`` fixture)."""
    write_annotations(root, lisa_items())
    write_images(root)


def _raw(root: Path) -> list[dict[str, Any]]:
    lines = (root / "records" / "lisa_test.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_each_item_becomes_a_grounding_record(tmp_path: Path, six: None) -> None:
    write_six(tmp_path)
    assert convert_dataset("lisa_grounding", tmp_path) == {"lisa_test": 6}
    records = read_records(tmp_path / "records" / "lisa_test.jsonl")  # checks images and boxes
    assert [r.id for r in records] == [f"lisa_test-{i}" for i in range(6)]
    first = records[0]
    assert first.problem == PROBLEM.format("the utensil used for flipping pancakes")
    assert (first.problem_type, first.task, first.data_source) == (
        "grounding",
        "lisa_test",
        "lisa_grounding",
    )
    assert first.boxes == [[3.5, 4.25, 20.75, 18.0]]
    assert first.answer == dumps_box([3.5, 4.25, 20.75, 18.0]) == "[4, 4, 21, 18]"
    assert first.image_sizes == [[40, 30]]
    assert first.groups == {"image": "test/3412_kitchen.jpg"}
    assert [r.image_sizes[0] for r in records] == [
        [40, 30],
        [32, 48],
        [40, 30],
        [24, 24],
        [32, 48],
        [24, 24],
    ]


def test_edges_are_kept_and_edge_noise_is_clamped(tmp_path: Path, six: None) -> None:
    write_six(tmp_path)
    convert_dataset("lisa_grounding", tmp_path)
    boxes = {r["id"]: r["boxes"][0] for r in _raw(tmp_path)}
    assert boxes["lisa_test-2"] == [22.0, 2.0, 40.0, 30.0]  # on the right and bottom edge
    assert boxes["lisa_test-3"] == [10.0, 5.0, 24.0, 12.0]  # x2 24.4 clamped to the 24 px edge
    assert boxes["lisa_test-5"] == [0.0, 0.0, 8.0, 9.0]  # on the left and top edge


def test_a_picture_shared_by_items_is_stored_once(tmp_path: Path, six: None) -> None:
    write_six(tmp_path)
    convert_dataset("lisa_grounding", tmp_path)
    raw = _raw(tmp_path)
    assert raw[0]["images"] == raw[2]["images"]
    assert raw[0]["groups"] == raw[2]["groups"] == {"image": "test/3412_kitchen.jpg"}
    assert len({r["images"][0] for r in raw}) == 3
    assert len(list((tmp_path / "records" / "images").iterdir())) == 3


def test_ids_and_records_do_not_depend_on_the_image_archive(tmp_path: Path, six: None) -> None:
    """The id is the item's place in the pinned json: converting again, from an image archive
    with its members in another order (or under an extra top folder), gives the same records."""
    write_six(tmp_path / "a")
    convert_dataset("lisa_grounding", tmp_path / "a")
    write_annotations(tmp_path / "b", lisa_items())
    write_images(tmp_path / "b", names=sorted(PICTURES, reverse=True), prefix="lisa_test/")
    convert_dataset("lisa_grounding", tmp_path / "b")
    assert _raw(tmp_path / "a") == _raw(tmp_path / "b")


def test_the_readme_spelling_of_the_image_archive_is_read(tmp_path: Path, six: None) -> None:
    write_annotations(tmp_path, lisa_items())
    write_images(tmp_path, file="lisa-test.zip")
    assert convert_dataset("lisa_grounding", tmp_path) == {"lisa_test": 6}


def test_the_subsample_draws_the_items_vlm_r1_draws(tmp_path: Path, six: None) -> None:
    """Records keep the json's order, so vlrl's seeded subsample is test_rec_r1.py's
    ``random.seed(42); random.shuffle(data); data[:n]`` item for item."""
    write_six(tmp_path)
    convert_dataset("lisa_grounding", tmp_path)
    records = read_records(tmp_path / "records" / "lisa_test.jsonl")
    data = lisa_items()
    random.seed(42)
    random.shuffle(data)
    expected = [r.problem for r in records]
    assert [r.problem for r in subsample(records, 4, 42)] == [d["problem"] for d in data[:4]]
    # LISA's test file is smaller than VLM-R1's 2,000: the cut keeps every item.
    assert sorted(r.problem for r in subsample(records, 2000, 42)) == sorted(expected)


def test_the_vlm_r1_protocol_scores_the_references_right(
    tmp_path: Path, six: None, project: Path
) -> None:
    """The shipped benchmark (config/benchmarks/lisa_grounding.yaml) parses; it scores every
    reference box, as VLM-R1's model writes it, right and an empty answer wrong."""
    raw = yaml.safe_load((project / "config" / "benchmarks" / "lisa_grounding.yaml").read_text())
    # Only the keys this checkout's schema knows: the scoring keys (iou_strict → protocols) are
    # another change's.
    bench = BenchmarkConfig.model_validate(
        {k: v for k, v in raw.items() if k in BenchmarkConfig.model_fields}
    )
    assert (bench.dataset, bench.file, bench.box_frame) == (
        "lisa_grounding",
        "records/lisa_test.jsonl",
        "model_input",
    )
    write_six(tmp_path)
    convert_dataset("lisa_grounding", tmp_path)
    records = read_records(tmp_path / "records" / "lisa_test.jsonl")
    # The answers are in the images' own pixels here (no model-input frame to rescale from).
    protocol = bench.model_copy(update={"box_frame": "original"})
    chosen = subsample(records, bench.subsample.n, bench.subsample.seed)
    answers = [f'<think>.</think><answer>{{"bbox_2d": {r.answer}}}</answer>' for r in chosen]
    right = [prediction_of(r, answer) for r, answer in zip(chosen, answers, strict=True)]
    scored = rule_scores(right, protocol, 0.5, tmp_path / "records")
    assert [s.correct for s in scored] == [1] * 6
    empty = [prediction_of(r, "<answer></answer>") for r in chosen]
    assert [s.correct for s in rule_scores(empty, protocol, 0.5, tmp_path)] == [0] * 6


@pytest.mark.parametrize(
    ("index", "change", "needle"),
    [
        (1, {"solution": [0, 20, 40, 48]}, "is outside its 32x48 image 'test/0077_street.jpg'"),
        (3, {"solution": [-2.0, 5.0, 10.0, 12.0]}, "is outside its 24x24 image"),
        (4, {"image": "test/9999_missing.jpg"}, "image 'test/9999_missing.jpg' is not in"),
        (0, {"solution": [3, 4, 20]}, "field 'solution' must be 4 finite numbers"),
        (0, {"solution": "[3, 4, 2, 18]"}, "has x2 <= x1 or y2 <= y1"),
        (2, {"solution": None}, "field 'solution' is empty"),
        (5, {"problem": "  "}, "field 'problem' is empty"),
        (0, {"width": 41}, "field 'width' is 41 but its picture is 40x30"),
        (1, {"image": 7}, "field 'image' must be a path"),
    ],
)
def test_bad_items_name_file_item_and_field(
    tmp_path: Path, six: None, index: int, change: dict[str, Any], needle: str
) -> None:
    items = lisa_items()
    items[index].update(change)
    write_annotations(tmp_path, items)
    write_images(tmp_path)
    with pytest.raises(DataError) as info:
        convert_dataset("lisa_grounding", tmp_path)
    assert f"{WHERE} row {index}: " in str(info.value)
    assert needle in str(info.value)


def test_a_solution_given_as_a_json_string_is_read(tmp_path: Path, six: None) -> None:
    items = lisa_items()
    items[0]["solution"] = "[3.5, 4.25, 20.75, 18.0]"
    write_annotations(tmp_path, items)
    write_images(tmp_path)
    convert_dataset("lisa_grounding", tmp_path)
    assert _raw(tmp_path)[0]["boxes"] == [[3.5, 4.25, 20.75, 18.0]]


def test_a_missing_picture_member_names_the_item_and_the_archive(tmp_path: Path, six: None) -> None:
    write_annotations(tmp_path, lisa_items())
    write_images(tmp_path, names=["test/3412_kitchen.jpg", "test/1201_desk.jpg"])
    with pytest.raises(DataError) as info:
        convert_dataset("lisa_grounding", tmp_path)
    assert str(info.value) == (
        f"{WHERE} row 1: image 'test/0077_street.jpg' is not in lisa_test.zip"
    )


def test_an_ambiguous_picture_is_an_error(tmp_path: Path, six: None) -> None:
    write_annotations(tmp_path, lisa_items())
    with zipfile.ZipFile(tmp_path / IMAGES, "w") as archive:
        for prefix in ("a/", "b/"):
            for name, spec in PICTURES.items():
                archive.writestr(prefix + name, _jpeg(*spec))
    with pytest.raises(DataError, match=r"row 0: image .* matches several members .*a/test/"):
        convert_dataset("lisa_grounding", tmp_path)


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        ("no_images", "no image archive; expected one of ['lisa_test.zip', 'lisa-test.zip']"),
        ("both_images", "both ['lisa_test.zip', 'lisa-test.zip'] are present"),
        ("no_annotations", "rec_jsons_processed.zip: the annotation archive is missing"),
        ("no_member", "no member named 'lisa_test.json'"),
        ("not_a_list", f"{WHERE}: holds a dict, not a list of items"),
        ("not_json", f"{WHERE}: not valid json"),
        ("corrupt_zip", "lisa_test.zip: not a readable zip archive"),
        ("item_not_object", f"{WHERE} row 0: is a list, not an object"),
    ],
)
def test_bad_archives_are_named(tmp_path: Path, six: None, setup: str, needle: str) -> None:
    write_six(tmp_path)
    if setup == "no_images":
        (tmp_path / IMAGES).unlink()
    elif setup == "both_images":
        write_images(tmp_path, file="lisa-test.zip")
    elif setup == "no_annotations":
        (tmp_path / ANNOTATIONS).unlink()
    elif setup == "no_member":
        write_annotations(tmp_path, lisa_items(), member="rec_jsons_processed/lisa_val.json")
    elif setup == "not_a_list":
        write_annotations(tmp_path, {"items": lisa_items()})  # type: ignore[arg-type]
    elif setup == "not_json":
        with zipfile.ZipFile(tmp_path / ANNOTATIONS, "w") as archive:
            archive.writestr(JSON_MEMBER, "[{")
    elif setup == "corrupt_zip":
        (tmp_path / IMAGES).write_bytes(b"PK not really a zip")
    elif setup == "item_not_object":
        write_annotations(tmp_path, [[1, 2], *lisa_items()[1:]])
    with pytest.raises(DataError) as info:
        convert_dataset("lisa_grounding", tmp_path)
    assert needle in str(info.value)


def test_mac_resource_forks_are_not_members(tmp_path: Path, six: None) -> None:
    write_six(tmp_path)
    with zipfile.ZipFile(tmp_path / ANNOTATIONS, "a") as archive:
        archive.writestr("__MACOSX/rec_jsons_processed/._lisa_test.json", b"\x00\x05junk")
    with zipfile.ZipFile(tmp_path / IMAGES, "a") as archive:
        archive.writestr("__MACOSX/test/._3412_kitchen.jpg", b"\x00\x05junk")
    assert convert_dataset("lisa_grounding", tmp_path) == {"lisa_test": 6}


def test_the_released_size_converts_and_the_2000_cut_keeps_every_item(tmp_path: Path) -> None:
    write_lisa_grounding_fixture(tmp_path)
    assert convert_dataset("lisa_grounding", tmp_path) == {"lisa_test": 1_658}
    records = read_records(tmp_path / "records" / "lisa_test.jsonl", limit=10)
    assert records[0].problem == PROBLEM.format("the utensil used for flipping pancakes")
    raw = _raw(tmp_path)
    assert [r["id"] for r in raw] == [f"lisa_test-{i}" for i in range(1_658)]
    assert len(subsample(raw, 2000, 42)) == 1_658


@pytest.mark.parametrize("found", [1_657, 1_659, 2_000])
def test_another_size_fails_naming_the_file_expected_and_found(tmp_path: Path, found: int) -> None:
    assert lisa_grounding.ROWS == {"lisa_test.json": RELEASED}
    write_annotations(tmp_path, released_items(found))
    write_images(tmp_path)
    with pytest.raises(DataError) as info:
        convert_dataset("lisa_grounding", tmp_path)
    assert str(info.value) == (
        f"{WHERE} holds {found:,} items, expected 1,658 (VLM-R1's LISA-Grounding test)"
    )
    assert not list((tmp_path / "records").glob("*.jsonl"))


def test_the_config_pins_vlm_r1s_repository(project: Path) -> None:
    """Read as YAML: the benchmark schema's scoring keys are another change's."""

    data = load_dataset("lisa_grounding")
    assert (data.repo_id, data.revision, data.format) == (
        "omlab/VLM-R1",
        "e5b48b7c5ed7e407f89924b225a6c6c5ebc356af",
        "lisa_grounding",
    )
    assert data.allow_patterns == [ANNOTATIONS, IMAGES]
    bench = yaml.safe_load((project / "config" / "benchmarks" / "lisa_grounding.yaml").read_text())
    assert (bench["dataset"], bench["file"]) == ("lisa_grounding", "records/lisa_test.jsonl")
    assert (bench["subsample"], bench["max_new_tokens"]) == ({"n": 2000, "seed": 42}, 256)
