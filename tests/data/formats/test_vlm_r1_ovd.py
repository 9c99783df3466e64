"""The vlm_r1_ovd format: VLM-R1's OVD training rows (issue #246's line: the detection prompt,
a gpt turn that is a ```json list of {"bbox_2d", "label"} or "None") in a folder of
``<split>.jsonl`` files with their pictures under ``images/`` → one detection record per row whose
answer VLM-R1's od rewards read; malformed rows are reported with their ids, never dropped."""

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
from vlrl.rewards.vlm_r1 import odlength_reward, weighted_sum_reward

#: Issue #246's OVD training line, as a VLM-R1 author posted it (om-ai-lab/VLM-R1, 2025-04-28).
ISSUE_246 = r"""{"id": 1, "image": "equestrian/006_14295751692.jpg", "conversations": [{"from": "human", "value": "Please carefully check the image and detect the following objects: ['railings being crossed by horses', 'a horse running or jumping', \"equestrian rider's helmet\", 'an oversized glove worn on the left hand of a baseball player', 'person holding a torch']. Output the bbox coordinates of detected objects in JSON format in <answer></answer>. The bbox coordinate format should be: \n```json\n[{\"bbox_2d\": [x1, y1, x2, y2], \"label\": \"object name\"}]\n```\n. If no targets are detected in the image, simply respond with \"None\"."}, {"from": "gpt", "value": "```json\n[{\"bbox_2d\": [3, 218, 799, 533], \"label\": \"railings being crossed by horses\"}, {\"bbox_2d\": [247, 118, 540, 533], \"label\": \"a horse running or jumping\"}, {\"bbox_2d\": [377, 59, 416, 109], \"label\": \"equestrian rider's helmet\"}]\n```"}]}"""  # noqa: E501
HORSES = "equestrian/006_14295751692.jpg"


def write_vlm_r1_ovd_fixture(root: Path, rows: list[Any] | None = None) -> None:
    """A user's OVD folder: train.jsonl (``rows``, default :func:`ovd_rows`; a str is written
    as the raw line) and the D³ picture the rows name under images/ (800 x 534, JPEG)."""
    root.mkdir(parents=True, exist_ok=True)
    items = ovd_rows() if rows is None else rows
    text = "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items)
    (root / "train.jsonl").write_text(text)
    (root / "images" / HORSES).parent.mkdir(parents=True, exist_ok=True)
    (root / "images" / HORSES).write_bytes(image_bytes((90, 120, 30), (800, 534), "JPEG"))


def _raw(root: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (root / "records" / name).read_text().splitlines()]


def ovd_rows() -> list[Any]:
    """Issue #246's line and a row with nothing to detect ("None")."""
    nothing = json.loads(ISSUE_246) | {"id": 2}
    nothing["conversations"][1]["value"] = "None"
    return [ISSUE_246, nothing]


def test_ovd_rows_are_detection_records_whose_answer_the_od_rewards_read(tmp_path: Path) -> None:
    write_vlm_r1_ovd_fixture(tmp_path)
    root = tmp_path
    assert convert_dataset("vlm_r1_ovd", root) == {"train": 2}
    found, nothing = read_records(root / "records" / "train.jsonl")
    line = json.loads(ISSUE_246)
    assert found.problem == line["conversations"][0]["value"]
    assert (found.problem_type, found.task, found.data_source) == ("detection", "train", "train")
    assert found.answer == line["conversations"][1]["value"]
    assert found.boxes == [[3, 218, 799, 533], [247, 118, 540, 533], [377, 59, 416, 109]]
    assert found.image_sizes == [[800, 534]]
    assert (nothing.answer, nothing.boxes) == ("None", [])
    # the ground truth as VLM-R1's od rewards read it: the reference itself scores 1
    perfect = [f"<think>x</think><answer>{r.answer}</answer>" for r in (found, nothing)]
    answers = [found.answer, nothing.answer]
    assert weighted_sum_reward(perfect, answer=answers) == [1.0, 1.0]
    assert odlength_reward(perfect, answer=answers) == pytest.approx([1.0, 1.0])


def bad_ovd_rows() -> list[Any]:
    line = json.loads(ISSUE_246)
    gpt = line["conversations"][1]["value"]

    def variant(row_id: str, **change: Any) -> dict[str, Any]:
        out = json.loads(ISSUE_246) | {"id": row_id}
        if "gpt" in change:
            out["conversations"][1]["value"] = change.pop("gpt")
        return out | change

    return [
        ISSUE_246,
        variant("o-missing", image="equestrian/absent.jpg"),
        variant("o-outside", gpt=gpt.replace("[3, 218, 799, 533]", "[3, 218, 899, 533]")),
        variant("o-empty", gpt="<answer></answer>"),
        variant("o-json", gpt=gpt.replace('"label": "a horse', '"label" "a horse')),
        '{"id": "o-broken", "image": "' + HORSES + '", "conversations": [',
        variant("o-method", accu_reward_method="math"),
    ]


OVD_BAD = {
    "o-missing": "row 1: image 'equestrian/absent.jpg' does not exist (images/equestrian/absent",
    "o-outside": "row 2: detection 0's bbox_2d [3.0, 218.0, 899.0, 533.0] is outside its 800x534",
    "o-empty": "row 3: the gpt turn is empty: '<answer></answer>'",
    "o-json": "row 4: the gpt turn's ```json block is not valid JSON: ",
    "o-broken": "row 5: is not valid JSON: ",
    "o-method": "row 6: field 'accu_reward_method' is 'math', not a detection reward",
}


def test_bad_ovd_rows_stop_naming_each_with_its_id(tmp_path: Path) -> None:
    write_vlm_r1_ovd_fixture(tmp_path, bad_ovd_rows())
    root = tmp_path
    with pytest.raises(DataError) as info:
        convert_dataset("vlm_r1_ovd", root)
    message = str(info.value)
    assert "format vlm_r1_ovd: 6 rows cannot be converted" in message
    for row_id, why in OVD_BAD.items():
        assert f"  train id {row_id}: train.jsonl {why}" in message
    assert not list((root / "records").glob("*.jsonl"))


def test_bad_ovd_rows_reported_are_left_out_and_listed(tmp_path: Path) -> None:
    write_vlm_r1_ovd_fixture(tmp_path, bad_ovd_rows())
    root = tmp_path
    assert convert_dataset("vlm_r1_ovd", root, bad_rows="report") == {"train": 1}
    rejected = _raw(root, "rejected.jsonl")
    assert [(r["split"], r["id"]) for r in rejected] == [("train", i) for i in OVD_BAD]
    for entry, why in zip(rejected, OVD_BAD.values(), strict=True):
        assert why in entry["why"]
    report = json.loads((root / "records" / "report.json").read_text())
    assert report == {"train": {"records": 1, "rejected": 6}}


def test_the_config_is_a_user_provided_folder_documenting_the_rows(project: Path) -> None:
    ovd = load_dataset("vlm_r1_ovd_d3")
    assert (ovd.local, ovd.format, ovd.repo_id) == ("data/vlm_r1_ovd_d3", "vlm_r1_ovd", None)
    for needle in ("issue #246", "bbox_2d", "images/", "#284", "#301", "None"):
        assert needle in ovd.description
