"""llamafactory_sharegpt row by row, in process: the whole message of each rejected row (its file,
row and id), the record of each kind of row, the final answer read off a response, and the errors
about the files themselves."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.llamafactory_sharegpt import (
    SUBSETS,
    convert,
    final_answer,
    sharegpt_turns,
)

SEE = "A-vision_see_think.json"
TEXT = "A-caption_reasoners(text).json"


def write(root: Path, **rows: list[Any]) -> None:
    """The three files, each with the rows given by subset key (``see``, ``reasoner``, ``text``)
    and ``[]`` otherwise, and a picture ``cold_start/1.jpg`` (16x12)."""
    keys = dict(see="vision_see_think", reasoner="vision_reasoner", text="caption_reasoners(text)")
    for key, task in keys.items():
        (root / SUBSETS[task][0]).write_text(
            json.dumps(rows.get(key, []), ensure_ascii=False), encoding="utf-8"
        )
    (root / "cold_start").mkdir(exist_ok=True)
    (root / "cold_start" / "1.jpg").write_bytes(image_bytes((9, 9, 9), (16, 12), "JPEG"))


def run(root: Path) -> list[Any]:
    return [rec for _, rec in convert(root, ImageStore(root / "records"))]


def chat(user: str, assistant: str, images: Any = None, **extra) -> dict[str, Any]:
    row = {"messages": [{"role": "user", "content": user},
                        {"role": "assistant", "content": assistant}], **extra}  # fmt: skip
    if images is not None:
        row["images"] = images
    return row


def rejected(tmp_path: Path, **rows: list[Any]) -> list[tuple[str, str | None]]:
    write(tmp_path, **rows)
    out = run(tmp_path)
    assert all(isinstance(r, RowError) for r in out)
    return [(str(r), r.row_id) for r in out]


def test_a_row_that_is_no_object_is_rejected_by_its_position(tmp_path):
    write(tmp_path, see=[chat("Hi", "\\boxed{1}"), ["a"]], text=["b"])
    good, *bad = run(tmp_path)
    assert good.id == "vision_see_think-0"
    assert [(str(r), r.row_id) for r in bad] == [
        (f"{SEE} row 1: is a list, not an object", "vision_see_think-1"),
        (f"{TEXT} row 0: is a str, not an object", "caption_reasoners(text)-0"),
    ]


def test_image_token_count_must_match_the_images(tmp_path):
    assert rejected(
        tmp_path, see=[chat("<image><image>Hi", "\\boxed{1}", ["cold_start/1.jpg"])]
    ) == [
        (
            f"{SEE} row 0: its turns have 2 <image> tokens but the row has 1 images "
            "(LLaMA-Factory needs one per image)",
            "vision_see_think-0",
        )
    ]


def test_an_empty_last_assistant_turn_is_rejected(tmp_path):
    assert rejected(tmp_path, see=[chat("Hi", " \n")]) == [
        (f"{SEE} row 0: the last assistant turn is empty", "vision_see_think-0")
    ]


def test_a_missing_picture_names_the_images_field(tmp_path):
    assert rejected(tmp_path, see=[chat("<image>Hi", "1", ["cold_start/2.jpg"])]) == [
        (
            f"{SEE} row 0: images[0] 'cold_start/2.jpg' does not exist (looked in {tmp_path})",
            "vision_see_think-0",
        )
    ]


def test_an_unreadable_picture_names_the_images_field(tmp_path):
    write(tmp_path)
    (tmp_path / "cold_start" / "bad.jpg").write_bytes(b"not a picture")
    (tmp_path / SEE).write_text(
        json.dumps([chat("<image><image>Hi", "1", ["cold_start/1.jpg", "cold_start/bad.jpg"])])
    )
    (err,) = run(tmp_path)
    assert re.fullmatch(
        re.escape(f"{SEE} row 0: field 'images[1]' is not a readable image: ")
        + r"cannot identify image file <_io\.BytesIO object at 0x[0-9a-f]+>",
        str(err),
    )
    assert err.row_id == "vision_see_think-0"


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"instruction": 5, "output": "1"}, "field 'instruction' must be a string: 5"),
        ({"instruction": "Hi", "input": ["x"], "output": "1"},
         "field 'input' must be a string: ['x']"),
        ({"instruction": " ", "input": "", "output": "1"},
         "the user turn is empty (fields 'instruction' and 'input')"),
        ({"instruction": "Hi", "output": " "},
         "the assistant turn is missing: field 'output' is ' '"),
        ({"instruction": "Hi"}, "the assistant turn is missing: field 'output' is None"),
    ],
)  # fmt: skip
def test_a_bad_alpaca_row_is_rejected_saying_why(tmp_path, row, says):
    assert rejected(tmp_path, text=[row]) == [
        (f"{TEXT} row 0: {says}", "caption_reasoners(text)-0")
    ]


def test_an_alpaca_row_without_input_is_its_instruction(tmp_path):
    write(tmp_path, text=[{"instruction": "Which?\n(A) red\n(B) blue", "output": "\\boxed{B}"}])
    (rec,) = run(tmp_path)
    assert rec.model_dump(exclude_defaults=True) == {
        "id": "caption_reasoners(text)-0",
        "images": [],
        "problem": "Which?\n(A) red\n(B) blue",
        "answer": "B",
        "problem_type": "multiple_choice",
        "options": ["red", "blue"],
        "response": "\\boxed{B}",
        "data_source": "vision_sr1_cold_9k",
        "task": "caption_reasoners(text)",
    }


def test_a_sharegpt_row_keeps_its_system_prompt_and_turns(tmp_path):
    row = {"messages": [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": " Which?\n(A) red\n(B) blue <image>"},
                        {"role": "assistant", "content": "<answer>A</answer>"}],
           "images": "cold_start/1.jpg"}  # fmt: skip
    write(tmp_path, reasoner=[row])
    (rec,) = run(tmp_path)
    dumped = rec.model_dump(exclude_defaults=True)
    assert dumped.pop("images")[0].startswith("images/")
    assert dumped == {
        "id": "vision_reasoner-0",
        "problem": "Which?\n(A) red\n(B) blue",
        "answer": "A",
        "problem_type": "multiple_choice",
        "options": ["red", "blue"],
        "response": "<answer>A</answer>",
        "turns": row["messages"][1:],
        "system": "Be brief.",
        "data_source": "vision_sr1_cold_9k",
        "task": "vision_reasoner",
    }


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "field 'messages' must be a non-empty list of turns: []"),
        ("hi", "field 'messages' must be a non-empty list of turns: 'hi'"),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": 1}],
         "turn 1 must be {'role': ..., 'content': text}: {'role': 'assistant', 'content': 1}"),
        (["a"], "turn 0 must be {'role': ..., 'content': text}: 'a'"),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
         "turn 1 has role 'user' where LLaMA-Factory reads one of ('assistant', 'function_call') "
         "(turns ['user', 'user']): it skips such a row"),
        ([{"role": "gpt", "content": "a"}],
         "turn 0 has role 'gpt' where LLaMA-Factory reads one of ('user', 'observation') "
         "(turns ['gpt']): it skips such a row"),
        ([{"role": "system", "content": "s"}],
         "has 0 turns []: LLaMA-Factory skips an odd count or none"),
        ([{"role": "user", "content": "a"}],
         "has 1 turns ['user']: LLaMA-Factory skips an odd count or none"),
    ],
)  # fmt: skip
def test_a_turn_sequence_llamafactory_skips_is_rejected_saying_why(messages, says):
    with pytest.raises(RowError) as exc:
        sharegpt_turns(Row("f.json", 3, {"messages": messages}))
    assert str(exc.value) == f"f.json row 3: {says}"


@pytest.mark.parametrize("images", [[""], [" "], [1], {"a": 1}])
def test_image_paths_must_be_non_blank_strings(images):
    row = Row("f.json", 0, chat("Hi", "1", images))
    with pytest.raises(RowError) as exc:
        sharegpt_turns(row)
    assert (
        str(exc.value) == f"f.json row 0: field 'images' must be a list of image paths: {images!r}"
    )


def test_sharegpt_turns_are_the_roles_and_contents_only():
    messages = [{"role": "user", "content": "a", "loss": 0},
                {"role": "function_call", "content": "f"},
                {"role": "observation", "content": "o"},
                {"role": "assistant", "content": "b"}]  # fmt: skip
    system, turns, files = sharegpt_turns(Row("f.json", 0, {"messages": messages, "images": None}))
    assert system is None and files == []
    assert turns == [{"role": m["role"], "content": m["content"]} for m in messages]


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("so \\boxed{None}", "None"),
        ("\\boxed{ }", None),
        ("<answer>A</answer> then <answer> C </answer>", "C"),
        ("<answer>A</answer><answer>B</answer><answer>C</answer>", "C"),
        ("<answer>A</answer><answer> </answer>", None),
        ("<answer>B</answer>", "B"),
        ("it is red", None),
        ("<answer>A</answer> \\boxed{2}", "2"),
    ],
)
def test_the_final_answer_is_the_last_box_else_the_last_answer_tag(response, answer):
    assert final_answer(response) == answer


def test_a_file_that_is_not_json_is_an_error_naming_it(tmp_path):
    write(tmp_path)
    (tmp_path / SEE).write_text("[{")
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == (
        f"{SEE}: not valid json: Expecting property name enclosed in double quotes: "
        "line 1 column 3 (char 2)"
    )


def test_a_file_that_is_not_a_list_is_an_error_naming_it(tmp_path):
    write(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / SEE).rename(tmp_path / "sub" / SEE)
    (tmp_path / "sub" / SEE).write_text('{"messages": []}')
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == f"sub/{SEE}: holds a dict, not a list of rows"


def test_a_file_that_is_there_twice_is_an_error_naming_both(tmp_path):
    write(tmp_path)
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / SEE).write_text("[]")
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path}: several files {[str(tmp_path / SEE), str(tmp_path / 'copy' / SEE)]} "
        f"named {SEE!r} (Vision-SR1-Cold-9K's {SEE})"
    )


def test_a_file_that_is_missing_is_an_error_naming_it(tmp_path):
    write(tmp_path)
    (tmp_path / TEXT).unlink()
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == f"{tmp_path}: no file named {TEXT!r} (Vision-SR1-Cold-9K's {TEXT})"


def test_the_files_are_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    write(tmp_path, text=[{"instruction": "Welche Farbe hat die Ampel? \u00c4", "output": "rot"}])
    (rec,) = run(tmp_path)
    assert rec.problem == "Welche Farbe hat die Ampel? \u00c4"
