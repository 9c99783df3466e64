"""The llamafactory_sharegpt format: Vision-SR1-Cold-9K's LLaMA-Factory files (two sharegpt sets
over cold_start/ pictures, one alpaca text set) → one train record per conversation, the
conversation kept verbatim (system turn, every round, ``<image>`` where it is), the rows
LLaMA-Factory trains kept (checked against its own converter) and the others rejected by id,
each saying why."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes
from sft_env import run_in_sft_env

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


#: rows LLaMA-Factory trains that are not one plain round: a system turn, two rounds, a response
#: without a final answer
SYSTEM_ROW = {"messages": [{"role": "system", "content": "Be brief."},
                           {"role": "user", "content": "Hi, what is 1 + 0?"},
                           {"role": "assistant", "content": "\\boxed{1}"}]}  # fmt: skip
TWO_ROUNDS = {"messages": [{"role": "user", "content": "Describe it. <image>"},
                           {"role": "assistant", "content": "Three red apples."},
                           {"role": "user", "content": "How many?"},
                           {"role": "assistant", "content": "\\boxed{3}"}],
              "images": ["cold_start/4384.jpg"]}  # fmt: skip
NO_ANSWER = chat("How many?<image>", "<think>hmm</think> three", ["cold_start/4384.jpg"])


def good_rows() -> dict[str, list[dict[str, Any]]]:
    return {
        "vision_see_think": [
            chat(f"How many apples are there?{FORMAT}<image>", SEE_THINK, ["cold_start/4384.jpg"]),
            TWO_ROUNDS,
            NO_ANSWER,
        ],
        "vision_reasoner": [
            chat("<image>What is the slope of the line?", REASONER, ["cold_start/30172.jpg"]),
            SYSTEM_ROW,
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
    assert convert_dataset("llamafactory_sharegpt", tmp_path) == {"train": 6}
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
    assert caption.task == "caption_reasoners(text)" and caption.turns is None


def test_what_llamafactory_trains_is_kept_verbatim(tmp_path: Path) -> None:
    """The SFT row of each record is the source's row: the system prompt, every round, the
    ``<image>`` tags where the source put them."""
    from vlrl.data.convert import to_sharegpt
    from vlrl.items.prompts import PROMPTS

    write_release(tmp_path, good_rows())
    convert_dataset("llamafactory_sharegpt", tmp_path)
    records = {r.id: r for r in read_records(tmp_path / "records" / "train.jsonl")}
    for rid, raw in [("vision_see_think-0", good_rows()["vision_see_think"][0]),
                     ("vision_see_think-1", TWO_ROUNDS), ("vision_see_think-2", NO_ANSWER),
                     ("vision_reasoner-1", SYSTEM_ROW)]:  # fmt: skip
        row = to_sharegpt(records[rid], PROMPTS["see_think_boxed"])
        messages = [m for m in raw["messages"] if m["role"] != "system"]
        assert row["messages"] == messages, rid
        assert row["system"] == ("Be brief." if rid == "vision_reasoner-1" else ""), rid
    two = records["vision_see_think-1"]
    assert (two.problem, two.answer, two.response) == ("Describe it.", "3", "\\boxed{3}")
    # no final answer: the whole response stands in (SFT trains on the turns)
    assert records["vision_see_think-2"].answer == "<think>hmm</think> three"


#: Role sequences (after the messages' own roles) and whether LLaMA-Factory trains them.
ROLE_SEQUENCES = [
    ["user", "assistant"], ["system", "user", "assistant"], ["user", "assistant"] * 3,
    ["user"], ["assistant", "user"], ["system"], [], ["user", "user"],
    ["user", "function_call", "observation", "assistant"], ["system", "system", "user"],
    ["user", "assistant", "user"], ["human", "gpt"], ["user", "assistant", "system", "assistant"],
]  # fmt: skip

LLAMAFACTORY_TRAINS = """
import json, sys
from llamafactory.data.converter import SharegptDatasetConverter
from llamafactory.data.parser import DatasetAttr
from llamafactory.hparams import DataArguments

attr = DatasetAttr("file", dataset_name="vision_see_think", formatting="sharegpt")
# LLaMA-Factory-Cold-Start/data/dataset_info.json's registration of the cold-start sets
attr.messages, attr.images = "messages", "images"
attr.role_tag, attr.content_tag = "role", "content"
attr.user_tag, attr.assistant_tag = "user", "assistant"
convert = SharegptDatasetConverter(attr, DataArguments())
out = []
for roles in json.load(sys.stdin):
    turns = [{"role": r, "content": f"t{i}"} for i, r in enumerate(roles)]
    row = convert({"messages": turns, "images": None})
    # data/processor/supervised.py drops what does not end in one response after a prompt
    out.append(len(row["_prompt"]) % 2 == 1 and len(row["_response"]) == 1)
print(json.dumps(out))
"""


def test_the_rows_kept_are_the_rows_llamafactory_trains() -> None:
    """LLaMA-Factory's own SharegptDatasetConverter (.venv-sft) on every role sequence."""
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.llamafactory_sharegpt import sharegpt_turns

    trains = run_in_sft_env(LLAMAFACTORY_TRAINS, ROLE_SEQUENCES)
    for roles, trained in zip(ROLE_SEQUENCES, trains, strict=True):
        row = Row("x.json", 0, {"messages": [{"role": r, "content": f"t{i}"}
                                              for i, r in enumerate(roles)]})  # fmt: skip
        try:
            sharegpt_turns(row)
            kept = True
        except RowError as exc:
            kept = False
            assert "LLaMA-Factory" in str(exc) or not roles, (roles, str(exc))
        assert kept == trained, roles


#: (subset, row) of malformed rows → the words of their error, by id (position after the good).
BAD = {
    "vision_see_think-3": ("vision_see_think",
                           chat("How many?<image>", SEE_THINK, ["cold_start/999.jpg"]),
                           "'cold_start/999.jpg' does not exist"),
    "vision_see_think-4": ("vision_see_think", chat("How many?<image>", None),
                           "LLaMA-Factory skips an odd count"),
    "vision_reasoner-2": ("vision_reasoner",
                          chat("Compare them.", REASONER, ["cold_start/4384.jpg"]),
                          "0 <image> tokens but the row has 1 images"),
    "vision_reasoner-3": ("vision_reasoner",
                          {"messages": [{"role": "assistant", "content": "\\boxed{1}"},
                                        {"role": "user", "content": "Hi"}]},
                          "turn 0 has role 'assistant'"),
    "vision_reasoner-4": ("vision_reasoner",
                          {"messages": [{"role": "user", "content": "<image>"},
                                        {"role": "assistant", "content": "\\boxed{1}"}],
                           "images": ["cold_start/4384.jpg"]},
                          "holds nothing but <image>"),
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
    assert convert_dataset("llamafactory_sharegpt", tmp_path, bad_rows="report") == {"train": 6}
    lines = (tmp_path / "records" / "rejected.jsonl").read_text().splitlines()
    rejected = {r["id"]: r["why"] for r in map(json.loads, lines)}
    assert set(rejected) == set(BAD)
    assert all(why in rejected[rid] for rid, (_, _, why) in BAD.items())
    assert json.loads((tmp_path / "records" / "report.json").read_text()) == {
        "train": {"records": 6, "rejected": len(BAD)}
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
