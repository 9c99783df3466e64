"""The vlm_r1_jsonl format: VLM-R1's general GRPO jsonl (grpo_jsonl.py: id,
image str or list, conversations human/gpt, optional accu_reward_method) in a folder of
``<split>.jsonl`` files with their pictures under ``images/`` → one record per row; malformed rows
are reported with their ids, never dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records

HORSES = "equestrian/006_14295751692.jpg"
#: A detection answer as issue #246's gpt turn writes one.
DETECTED = '```json\n[{"bbox_2d": [247, 118, 540, 533], "label": "horse"}]\n```'
#: Pictures under images/: path → (width, height, format).
PICTURES = {
    HORSES: (800, 534, "JPEG"),
    "clevr/CLEVR_trainA_000001_16885.png": (48, 32, "PNG"),
    "clevr/CLEVR_trainA_000001_16886.png": (32, 32, "PNG"),
    "geo/triangle.jpg": (60, 40, "JPEG"),
}


def conv(question: str, answer: Any, **extra: Any) -> dict[str, Any]:
    """A row in the README's format ("For your own data")."""
    return {
        "conversations": [{"from": "human", "value": question}, {"from": "gpt", "value": answer}],
        **extra,
    }


def write_folder(root: Path, files: dict[str, list[Any]], pictures: dict = PICTURES) -> Path:
    """A dataset folder: ``<split>.jsonl`` files (a str item is written as the raw line) and
    their pictures under images/."""
    root.mkdir(parents=True, exist_ok=True)
    for name, items in files.items():
        text = "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items)
        (root / name).write_text(text)
    for rel, (width, height, fmt) in pictures.items():
        (root / "images" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "images" / rel).write_bytes(image_bytes((90, 120, 30), (width, height), fmt))
    return root


def general_rows() -> list[Any]:
    """The README's single- and multi-image rows and the kinds of answer VLM-R1's rewards read."""
    return [
        conv(
            "<image>What number of purple metallic balls are there?",
            "<answer> 0 </answer>",
            id=1,
            image="clevr/CLEVR_trainA_000001_16885.png",
        ),
        conv(
            "<image><image>Is the number of balls the same in both images?",
            "yes",
            id=2,
            image=["clevr/CLEVR_trainA_000001_16885.png", "clevr/CLEVR_trainA_000001_16886.png"],
            accu_reward_method="yes_no",
        ),
        conv("What is 1/2 as a decimal?", 0.5, id=3),  # text-only, a float answer
        conv(
            "<image>What fraction of the triangle is shaded?",
            "\\frac{1}{2}",
            id=4,
            image="geo/triangle.jpg",
            accu_reward_method="math",
        ),
        conv(
            "<image>Which option? A. red B. blue",
            "B",
            id=5,
            image="geo/triangle.jpg",
            accu_reward_method="mcq",
        ),
        conv(
            "<image>Detect the following objects: ['horse']. Output the bbox coordinates of "
            "detected objects in JSON format in <answer></answer>.",
            DETECTED,
            id=6,
            image=HORSES,
            accu_reward_method="odLength",
        ),
    ]


def write_vlm_r1_jsonl_fixture(root: Path) -> None:
    """A user's dataset folder: train.jsonl with :func:`general_rows`, geo.jsonl with one row,
    and their pictures under images/."""
    write_folder(root, {"train.jsonl": general_rows(), "geo.jsonl": general_rows()[3:4]})


def _raw(root: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "records" / name).read_text().splitlines()]


def test_each_row_becomes_a_record_as_grpo_jsonl_reads_it(tmp_path: Path) -> None:
    write_vlm_r1_jsonl_fixture(tmp_path)
    root = tmp_path
    assert convert_dataset("vlm_r1_jsonl", root) == {"geo": 1, "train": 6}
    records = read_records(root / "records" / "train.jsonl")  # validated: images, boxes
    assert [r.id for r in records] == [f"train-{i}" for i in range(6)]
    got = [(r.problem_type, r.answer, r.task, len(r.images)) for r in records]
    assert got[:5] == [
        ("numerical", "0", "train", 1),  # answer tags removed; no method: the split
        ("yes_no", "yes", "yes_no", 2),
        ("numerical", "0.5", "train", 0),  # str() of the float
        ("free_form", "\\frac{1}{2}", "math", 1),
        ("free_form", "B", "mcq", 1),  # no options in this format
    ]
    assert records[0].problem == "What number of purple metallic balls are there?"
    assert records[1].problem == "Is the number of balls the same in both images?"
    assert records[1].image_sizes == [[48, 32], [32, 32]]
    assert records[0].data_source == "train"
    detection = records[5]
    assert (detection.problem_type, detection.task) == ("detection", "odLength")
    assert (detection.answer, detection.boxes) == (DETECTED, [[247, 118, 540, 533]])
    assert read_records(root / "records" / "geo.jsonl")[0].id == "geo-0"
    # a picture used by several rows and files is stored once
    assert len(list((root / "records" / "images").iterdir())) == len(PICTURES)


GENERAL_BAD = {
    "j-missing": "row 1: image 'clevr/absent.png' does not exist (images/clevr/absent.png)",
    "j-escape": "row 2: image '../secret.png' must be a path inside images/",
    "j-empty": "row 3: the gpt turn is empty: ''",
    "j-method": "row 4: field 'accu_reward_method' is 'maths', not one of VLM-R1's [",
    "j-turns": "row 5: field 'conversations' must hold 2 turns (human, gpt), not 3",
    "j-roles": "row 6: turn 0 must be {'from': 'human', 'value': ...}",
    "j-broken": "row 7: is not valid JSON: ",
    None: "row 8: is a JSON list, not an object",
}


def bad_general_rows() -> list[Any]:
    good = general_rows()[0]
    three = conv("<image>Q", "1", id="j-turns", image="geo/triangle.jpg")
    three["conversations"].append({"from": "human", "value": "and?"})
    roles = conv("<image>Q", "1", id="j-roles", image="geo/triangle.jpg")
    roles["conversations"][0]["from"] = "user"
    return [
        good,
        conv("<image>Q", "1", id="j-missing", image="clevr/absent.png"),
        conv("<image>Q", "1", id="j-escape", image="../secret.png"),
        conv("<image>Q", "", id="j-empty", image="geo/triangle.jpg"),
        conv("<image>Q", "1", id="j-method", image="geo/triangle.jpg", accu_reward_method="maths"),
        three,
        roles,
        '{"id": "j-broken", "conversations": [{"from": "human", "value": "Q"}',
        "[1, 2]",
    ]


@pytest.mark.parametrize("bad_rows", ["stop", "report"])
def test_bad_general_rows_are_named_with_their_ids(tmp_path: Path, bad_rows: str) -> None:
    root = write_folder(tmp_path, {"mix.jsonl": bad_general_rows()})
    if bad_rows == "stop":
        with pytest.raises(DataError) as info:
            convert_dataset("vlm_r1_jsonl", root)
        message = str(info.value)
        assert "format vlm_r1_jsonl: 8 rows cannot be converted" in message
        for row_id, why in GENERAL_BAD.items():
            assert f"  mix{'' if row_id is None else f' id {row_id}'}: mix.jsonl {why}" in message
        return
    assert convert_dataset("vlm_r1_jsonl", root, bad_rows=bad_rows) == {"mix": 1}
    rejected = _raw(root, "rejected.jsonl")
    assert [r["id"] for r in rejected] == list(GENERAL_BAD)
    for entry, why in zip(rejected, GENERAL_BAD.values(), strict=True):
        assert why in entry["why"]


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        ({}, "no *.jsonl file; put VLM-R1 jsonl files (one per split) there"),
        ({"report.jsonl": []}, "'report' cannot name a split"),
        ({"a.jsonl": [], "sub/b.jsonl": []}, "only the folder's own *.jsonl files are read, not"),
    ],
)
def test_a_folder_that_is_not_the_layout_is_named(
    tmp_path: Path, files: dict[str, list], needle: str
) -> None:
    (tmp_path / "sub").mkdir()
    write_folder(tmp_path, files, pictures={})
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_jsonl", tmp_path)
    assert str(info.value).startswith(f"{tmp_path}")
    assert needle in str(info.value)


def test_the_maths_config_is_a_user_provided_folder(project: Path) -> None:
    math = load_dataset("vlm_r1_math")
    assert (math.local, math.format, math.repo_id) == ("data/vlm_r1_math", "vlm_r1_jsonl", None)
    for needle in ('"accu_reward_method": "math"', "#175", "images/"):
        assert needle in math.description
