"""The llamafactory_sharegpt format: Vision-SR1-Cold-9K's LLaMA-Factory files (two sharegpt sets
over cold_start/ pictures, one alpaca text set) → one train record per conversation, the
assistant turn kept verbatim, rows without their picture or answer rejected by id."""

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
from vlrl.data.formats.llamafactory_sharegpt import SUBSETS
from vlrl.items.records import read_records

#: Vision-SR1's see-think instruction, shortened: the cold-start user turns carry theirs.
FORMAT = " You are tasked with analyzing an image/video to generate a detailed description."
SEE_THINK = "<description>Three red apples.</description><think>Count them.</think>\\boxed{3}"
REASONER = "<think>The slope is rise over run.</think>\\boxed{\\frac{1}{2}}"
CAPTION = "<think>The description says the sign is red.</think> \\boxed{B}"
PICTURES = {"cold_start/4384.jpg": (30, 20), "cold_start/30172.jpg": (16, 12)}


def chat(user: str, assistant: str | None, images: list[str] | None = None) -> dict[str, Any]:
    """A sharegpt row with the registered columns and tags (messages/images, role/content)."""
    messages = [{"role": "user", "content": user}]
    if assistant is not None:
        messages.append({"role": "assistant", "content": assistant})
    return {"messages": messages, "images": images or []}


def alpaca(instruction: str, output: str | None, input: str = "") -> dict[str, Any]:
    return {"instruction": instruction, "input": input, "output": output}


def good_rows() -> dict[str, list[dict[str, Any]]]:
    return {
        "vision_see_think": [
            chat(f"How many apples are there?{FORMAT}<image>", SEE_THINK, ["cold_start/4384.jpg"])
        ],
        "vision_reasoner": [
            chat("<image>What is the slope of the line?", REASONER, ["cold_start/30172.jpg"])
        ],
        "caption_reasoners(text)": [
            alpaca("Text description: a red sign.\nQuestion: What colour is the sign?",
                   CAPTION, input="Options: A. blue B. red")
        ],
    }  # fmt: skip


def write_release(root: Path, rows: dict[str, list[dict[str, Any]]]) -> None:
    """The hub repository as download-sft-data.py puts it into LLaMA-Factory's data folder."""
    for task, items in rows.items():
        root.mkdir(parents=True, exist_ok=True)
        (root / SUBSETS[task][0]).write_text(json.dumps(items, indent=2))
    for rel, size in PICTURES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(image_bytes((200, len(rel), 30), size, "JPEG"))


def test_each_conversation_becomes_a_record(tmp_path: Path) -> None:
    write_release(tmp_path, good_rows())
    assert convert_dataset("llamafactory_sharegpt", tmp_path) == {"train": 3}
    records = {r.id: r for r in read_records(tmp_path / "records" / "train.jsonl")}
    see = records["vision_see_think-0"]
    assert see.problem == f"How many apples are there?{FORMAT}"  # verbatim, <image> removed
    assert see.response == SEE_THINK  # verbatim
    assert (see.answer, see.problem_type, see.task) == ("3", "numerical", "vision_see_think")
    assert see.image_sizes == [[30, 20]] and see.data_source == "vision_sr1_cold_9k"
    reasoner = records["vision_reasoner-0"]
    assert reasoner.answer == "\\frac{1}{2}" and reasoner.image_sizes == [[16, 12]]
    caption = records["caption_reasoners(text)-0"]
    # alpaca: instruction and input joined by a newline, as LLaMA-Factory builds the user turn
    assert caption.problem == (
        "Text description: a red sign.\nQuestion: What colour is the sign?\nOptions: A. blue B. red"
    )
    assert (caption.images, caption.answer, caption.response) == ([], "B", CAPTION)
    assert caption.task == "caption_reasoners(text)"


#: (subset, row) of malformed rows → the words of their error, by id (position after the good).
BAD = {
    "vision_see_think-1": ("vision_see_think",
                           chat("How many?<image>", SEE_THINK, ["cold_start/999.jpg"]),
                           "'cold_start/999.jpg' does not exist"),
    "vision_see_think-2": ("vision_see_think", chat("How many?<image>", None),
                           "assistant turn is missing"),
    "vision_see_think-3": ("vision_see_think",
                           chat("How many?<image>", "<think>hmm</think> three",
                                ["cold_start/4384.jpg"]),
                           "no final answer"),
    "vision_reasoner-1": ("vision_reasoner",
                          chat("Compare them.", REASONER, ["cold_start/4384.jpg"]),
                          "0 <image> tokens but the row has 1 images"),
    "vision_reasoner-2": ("vision_reasoner",
                          {"messages": [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "Hi"},
                                        {"role": "assistant", "content": "\\boxed{1}"}]},
                          "has 3 turns"),
    "vision_reasoner-3": ("vision_reasoner",
                          {"messages": [{"role": "assistant", "content": "\\boxed{1}"},
                                        {"role": "user", "content": "Hi"}]},
                          "turn 0 must be the 'user' turn"),
    "caption_reasoners(text)-1": ("caption_reasoners(text)", alpaca("Question: why?", None),
                                  "assistant turn is missing"),
}  # fmt: skip


def write_with_bad_rows(root: Path) -> None:
    rows = good_rows()
    for task, row, _ in BAD.values():
        rows[task].append(row)
    write_release(root, rows)


def test_malformed_rows_stop_the_conversion_each_named(tmp_path: Path) -> None:
    write_with_bad_rows(tmp_path)
    with pytest.raises(DataError) as caught:
        convert_dataset("llamafactory_sharegpt", tmp_path)
    message = str(caught.value)
    assert f"{len(BAD)} rows cannot be converted" in message
    for rid, (task, _, why) in BAD.items():
        line = next(x for x in message.splitlines() if f"id {rid}:" in x)
        assert why in line and SUBSETS[task][0] in line


def test_malformed_rows_are_reported_with_their_ids(tmp_path: Path) -> None:
    write_with_bad_rows(tmp_path)
    assert convert_dataset("llamafactory_sharegpt", tmp_path, bad_rows="report") == {"train": 3}
    lines = (tmp_path / "records" / "rejected.jsonl").read_text().splitlines()
    rejected = {r["id"]: r["why"] for r in map(json.loads, lines)}
    assert set(rejected) == set(BAD)
    assert all(why in rejected[rid] for rid, (_, _, why) in BAD.items())
    assert json.loads((tmp_path / "records" / "report.json").read_text()) == {
        "train": {"records": 3, "rejected": len(BAD)}
    }


def test_a_missing_subset_file_is_an_error(tmp_path: Path) -> None:
    rows = good_rows()
    del rows["vision_reasoner"]
    write_release(tmp_path, rows)
    with pytest.raises(DataError, match=re.escape("no file named 'A-vision_reasoner.json'")):
        convert_dataset("llamafactory_sharegpt", tmp_path)


def test_the_dataset_config_reports_bad_rows() -> None:
    cfg = load_dataset("vision_sr1_cold_9k")
    assert (cfg.repo_id, cfg.format, cfg.bad_rows) == (
        "LMMs-Lab-Turtle/Vision-SR1-Cold-9K",
        "llamafactory_sharegpt",
        "report",
    )
    assert cfg.revision is None and cfg.unpinned


def write_llamafactory_sharegpt_fixture(root: Path) -> None:
    """A small Vision-SR1-Cold-9K in the released layout (the fixture every format provides)."""
    write_release(root, good_rows())
