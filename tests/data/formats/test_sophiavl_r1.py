"""The sophiavl format: SophiaVL-R1-130k's subset json files over an image folder → train
records with vlrl's problem types, options in the problem, malformed items rejected by id."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.config import load_dataset
from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.items.records import read_records
from vlrl.rewards.sophiavl import outcome_score

#: Subset → its json file, as SophiaVL's dataset_info.json (e6408a0) names them.
FILES = {
    "Knowledge": "Knowledge/merged_output_knowledge_add_viquae.json",
    "Math": "Math/merged_output_math_non_multimath_300k.json",
    "OCR": "OCR/merged_output_ocr.json",
    "Chart": "Chart/merged_output_chart.json",
    "General": "General/merged_output_general.json",
}
VIQUAE = "./Knowledge/viquae/images/512px-CE5301C.jpg"
ARXIV = "./Knowledge/ArxivQA/images/1702.04756_0.jpg"
CLEVR = "./Math/CLEVR-Math/images/CLEVR_train_036427.png"
TEXTOCR = "./OCR/TextOCR/2fb8fe3ffedbf815.png"
CHART = "./Chart/ChartQA/images/1.png"
PICTURES = {VIQUAE: (24, 16), ARXIV: (20, 20), CLEVR: (32, 24), TEXTOCR: (16, 8), CHART: (10, 30)}
OPTIONS = [
    "A) It is used to focus the laser for the LDV",
    "B) It is the main weight that is being measured",
    "C) It encases the piezo-actuator to insulate it",
    "D) It serves as a medium for the laser to pass through for measurements",
]


def item(
    problem_id: int,
    problem: str,
    problem_type: str,
    solution: str,
    path: str = "",
    options: list[str] | None = None,
    data_type: str = "image",
    **extra: Any,
) -> dict:
    """An item with the keys of SophiaVL's verl/data/demo.json."""
    return {"problem_id": problem_id, "problem": problem, "data_type": data_type,
            "problem_type": problem_type, "options": options or [], "solution": solution,
            "path": path, "data_source": extra.pop("data_source", "src"), **extra}  # fmt: skip


def good_items() -> dict[str, list[dict]]:
    return {
        "Knowledge": [
            item(37216, "Who did he shoot in November 1963?", "text",
                 "<answer>Lee Harvey Oswald</answer>", VIQUAE, data_source="viquae"),
            item(1, "Based on the figure, what role does the quartz cylinder play?",
                 "multiple choice", "<answer>D</answer>", ARXIV, OPTIONS,
                 process="<think> The laser passes through it. </think>"),
        ],
        "Math": [item(5, "Subtract 0 cyan cubes. How many objects are left?", "numerical",
                      "<answer>5</answer>", CLEVR, data_source="CLEVR-Math")],
        "OCR": [item(9, "<image>What does the sign say?", "OCR", "<answer>STOP HERE</answer>",
                     TEXTOCR)],
        "Chart": [item(3, "Summarise the trend.", "free-form",
                       "<answer>It rises.</answer>", CHART)],
        "General": [item(7, "What is 12 squared?", "numerical", "<answer>144</answer>",
                         data_type="text")],
    }  # fmt: skip


def write_release(root: Path, items: dict[str, list[dict]]) -> None:
    for subset, rows in items.items():
        path = root / FILES[subset]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=4))
    for rel, size in PICTURES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(image_bytes((len(rel) * 5 % 255, 80, 120), size))


def test_items_become_records_with_vlrl_types(tmp_path: Path) -> None:
    write_release(tmp_path, good_items())
    assert convert_dataset("sophiavl_r1", tmp_path) == {"train": 6}
    records = {r.id: r for r in read_records(tmp_path / "records" / "train.jsonl")}
    assert sorted(records) == sorted(
        ["Knowledge-37216", "Knowledge-1", "Math-5", "OCR-9", "Chart-3", "General-7"]
    )
    viquae = records["Knowledge-37216"]
    assert (viquae.problem_type, viquae.answer, viquae.task, viquae.data_source) == (
        "free_form",  # SophiaVL's "text": a short text answer
        "Lee Harvey Oswald",
        "Knowledge",
        "viquae",
    )
    assert viquae.problem == "Who did he shoot in November 1963?"
    assert viquae.image_sizes == [[24, 16]]
    choice = records["Knowledge-1"]
    assert choice.problem_type == "multiple_choice" and choice.answer == "D"
    # the text SophiaVL's model reads: options joined with "; ", appended with no separator
    assert choice.problem == (
        "Based on the figure, what role does the quartz cylinder play?" + "; ".join(OPTIONS)
    )
    assert choice.options[0] == "It is used to focus the laser for the LDV"
    assert choice.reasoning == "The laser passes through it."
    assert records["Math-5"].problem_type == "numerical"
    assert records["OCR-9"].problem_type == "ocr"
    assert records["OCR-9"].problem == "What does the sign say?"  # vlrl puts the image first
    assert records["Chart-3"].problem_type == "free_form"
    text_only = records["General-7"]
    assert text_only.images == [] and text_only.data_source == "src"


def test_records_fit_the_sophiavl_reward(tmp_path: Path) -> None:
    # the outcome reward reads answer and problem_type under vlrl's names: a response with the
    # gold answer scores 1.0 on every record
    write_release(tmp_path, good_items())
    convert_dataset("sophiavl_r1", tmp_path)
    for rec in read_records(tmp_path / "records" / "train.jsonl"):
        response = f"<think>t</think><answer>{rec.answer}</answer>"
        assert outcome_score(response, rec.answer, rec.problem_type) == 1.0, rec.id


#: (subset, item) of malformed items → the words of their error, by id.
BAD = {
    "Math-20": ("Math", item(20, "How many?", "numerical", "<answer>2</answer>",
                             "./Math/missing.png"), "does not exist"),
    "Math-21": ("Math", item(21, "How many?", "numerical", "<answer> </answer>", CLEVR),
                "empty answer"),
    "Chart-22": ("Chart", item(22, "Predict it.", "regression", "<answer>3</answer>", CHART),
                 "'regression', not one of"),
    "Knowledge-23": ("Knowledge", item(23, "Which?", "multiple choice", "<answer>A</answer>",
                                       ARXIV, ["only one"]), "two or more"),
    "Knowledge-24": ("Knowledge", item(24, "Which?", "multiple choice", "<answer>A</answer>",
                                       ARXIV, ["B) x", "A) y"]), "labelled"),
    "Knowledge-25": ("Knowledge", item(25, "Which?", "multiple choice", "<answer>E</answer>",
                                       ARXIV, OPTIONS), "not option letters A-D"),
    "OCR-9": ("OCR", item(9, "Again?", "OCR", "<answer>x</answer>", TEXTOCR),
              "repeats OCR/merged_output_ocr.json row 0"),
}  # fmt: skip


def write_with_bad_items(root: Path) -> None:
    items = good_items()
    for subset, bad, _ in BAD.values():
        items[subset].append(bad)
    write_release(root, items)


def test_malformed_items_stop_the_conversion_each_named(tmp_path: Path) -> None:
    write_with_bad_items(tmp_path)
    with pytest.raises(DataError) as caught:
        convert_dataset("sophiavl_r1", tmp_path)
    message = str(caught.value)
    assert f"{len(BAD)} rows cannot be converted" in message
    for rid, (subset, _, why) in BAD.items():
        line = next(x for x in message.splitlines() if f"id {rid}:" in x)
        assert why in line and FILES[subset] in line


def test_malformed_items_are_reported_with_their_ids(tmp_path: Path) -> None:
    write_with_bad_items(tmp_path)
    assert convert_dataset("sophiavl_r1", tmp_path, bad_rows="report") == {"train": 6}
    lines = (tmp_path / "records" / "rejected.jsonl").read_text().splitlines()
    rejected = {r["id"]: r["why"] for r in map(json.loads, lines)}
    assert set(rejected) == set(BAD)
    assert all(why in rejected[rid] for rid, (_, _, why) in BAD.items())
    assert json.loads((tmp_path / "records" / "report.json").read_text()) == {
        "train": {"records": 6, "rejected": len(BAD)}
    }


def test_an_id_repeated_in_another_file_of_its_subset_is_rejected(tmp_path: Path) -> None:
    write_release(tmp_path, good_items())
    again = [item(5, "Another question.", "numerical", "<answer>1</answer>", CLEVR)]
    (tmp_path / "Math" / "more_math.json").write_text(json.dumps(again))
    assert convert_dataset("sophiavl_r1", tmp_path, bad_rows="report") == {"train": 6}
    rejected = json.loads((tmp_path / "records" / "rejected.jsonl").read_text())
    assert rejected["id"] == "Math-5" and "Math/more_math.json row 0" in rejected["why"]


def test_subset_files_are_found_by_folder_or_name(tmp_path: Path) -> None:
    # the release's dataset_info.json at a818494 registers dataset/json/<subset>.json
    items = good_items()
    write_release(tmp_path, {"General": items["General"]})
    (tmp_path / FILES["General"]).rename(tmp_path / "general.json")
    assert convert_dataset("sophiavl_r1", tmp_path) == {"train": 1}
    (tmp_path / "notes.json").write_text("[]")
    with pytest.raises(DataError, match=re.escape("notes.json: not a SophiaVL subset file")):
        convert_dataset("sophiavl_r1", tmp_path)


def test_the_dataset_config_uses_this_format() -> None:
    cfg = load_dataset("sophiavl_r1_130k")
    assert (cfg.repo_id, cfg.format, cfg.bad_rows) == (
        "bunny127/SophiaVL-R1-130k",
        "sophiavl_r1",
        "stop",
    )
    assert cfg.revision is None and cfg.unpinned


def write_sophiavl_r1_fixture(root: Path) -> None:
    """A small SophiaVL-R1-130k in the released layout (the fixture every format provides)."""
    write_release(root, good_items())


def test_the_download_manifest_is_not_a_subset_file(tmp_path: Path) -> None:
    """The download stage writes its checksum manifest beside the raw files before converting."""
    from vlrl.core.files import DATASET_MANIFEST

    write_sophiavl_r1_fixture(tmp_path)
    (tmp_path / DATASET_MANIFEST).write_text("{}")
    assert convert_dataset("sophiavl_r1", tmp_path)["train"] == 6
