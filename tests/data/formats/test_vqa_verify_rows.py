"""vqa_verify row by row, in process: the whole record of a row, the whole message of each
rejected row (its file, position and id), how a picture value is read, which file is which split,
and the errors about the files themselves."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.vqa_verify import convert, convert_row, row_files, split_of
from vlrl.items.prompt_texts import CAPTION_BBOX_ANSWER_SYSTEM_PROMPT

MISSING: Any = object()
BUS = image_bytes((200, 30, 30), (64, 48), "JPEG")


def row(**change: Any) -> dict[str, Any]:
    data = {
        "messages": [{"role": "user", "content": " <image>What colour is the bus? "}],
        "images": ["images/bus.jpg"],
        "image_caption": " A red bus. ",
        "bboxs": [[4, 6.5, 30, 40], [0, 0, 64.5, 48]],
        "width": 64,
        "height": 48,
        "possible_answers": ["red", "Red", "red", "dark red", "Red"],
    }
    data.update(change)
    return {key: value for key, value in data.items() if value is not MISSING}


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    (tmp_path / "data" / "images").mkdir(parents=True)
    (tmp_path / "data" / "images" / "bus.jpg").write_bytes(BUS)
    (tmp_path / "data" / "images" / "bad.jpg").write_bytes(b"not a picture")
    (tmp_path / "top.png").write_bytes(image_bytes((1, 1, 1), (64, 48)))
    return tmp_path


def one(source: Path, data: Any, row_id: str = "r-1") -> dict[str, Any]:
    store = ImageStore(source / "records")
    rec = convert_row(Row("data/t.jsonl", 2, data), row_id, source, source / "data", store)
    return rec.model_dump(exclude_defaults=True)


def error(source: Path, data: Any) -> str:
    with pytest.raises(RowError) as exc:
        one(source, data)
    return str(exc.value)


def test_a_row_becomes_a_free_form_record_with_its_boxes_fitted(source):
    rec = one(source, row())
    assert rec.pop("images")[0].endswith(".jpg")
    assert rec == {
        "id": "r-1",
        "image_sizes": [[64, 48]],
        "problem": "What colour is the bus?",
        "answer": "red",
        "accepted": ["Red", "dark red"],
        "problem_type": "free_form",
        "boxes": [[4.0, 6.5, 30.0, 40.0], [0.0, 0.0, 64, 48.0]],
        "caption": "A red bus.",
        "data_source": "vqa_verify",
    }


@pytest.mark.parametrize(
    "change",
    [
        {"messages": MISSING, "query": None, "prompt": "How? <image>"},
        {"messages": MISSING, "question": "How?", "problem": "Else?"},
        {"messages": [{"role": "system", "content": f" {CAPTION_BBOX_ANSWER_SYSTEM_PROMPT}\n"},
                      {"role": "user", "content": "How?"},
                      {"role": "assistant", "content": "<answer>red</answer>"}]},
    ],
)  # fmt: skip
def test_the_question_is_the_user_turn_or_the_first_query_key(source, change):
    assert one(source, row(**change))["problem"] in ("How?",)


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"bytes": BUS, "path": "x.jpg"}, "images"),
        ({"bytes": None, "path": "images/bus.jpg"}, "images"),
        ("data:image/jpeg;base64," + base64.b64encode(BUS).decode(), "images"),
        (base64.b64encode(BUS).decode(), "image"),
        (" top.png ", "image"),
    ],
)
def test_a_picture_is_bytes_a_path_or_base64(source, value, key):
    change = {"images": MISSING, key: value} if key == "image" else {"images": [value]}
    assert one(source, row(**change))["image_sizes"] == [[64, 48]]


def test_an_absolute_picture_path_is_read_as_it_is(source):
    assert one(source, row(images=str(source / "top.png")))["image_sizes"] == [[64, 48]]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"messages": "hi"}, "field 'messages' must be a list of turns: 'hi'"),
        ({"messages": [{"role": "user", "content": 5}]},
         "messages[0] is not a {role, content} text turn: {'role': 'user', 'content': 5}"),
        ({"messages": [{"role": 1, "content": "a"}]},
         "messages[0] is not a {role, content} text turn: {'role': 1, 'content': 'a'}"),
        ({"messages": ["a"]}, "messages[0] is not a {role, content} text turn: 'a'"),
        ({"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": "Q"}]},
         "messages has its own system turn, which ms-swift uses instead of --system prompt.txt: "
         "'Be brief.'"),
        ({"messages": [{"role": "user", "content": "Q"}, {"role": "user", "content": "R"}]},
         "messages has 2 user turns, expected one"),
        ({"messages": []}, "messages has 0 user turns, expected one"),
        ({"messages": MISSING, "query": None},
         "has no question: no 'messages' nor any of ['query', 'prompt', 'input', 'instruction', "
         "'question', 'problem'] (fields: ['bboxs', 'height', 'image_caption', 'images', "
         "'possible_answers', 'query', 'width'])"),
        ({"messages": [{"role": "user", "content": " <image> "}]},
         "the question is empty once its <image> tags are removed"),
        ({"messages": [{"role": "user", "content": "<image>Q<image>"}]},
         "the question has 2 <image> tags for its one picture"),
        ({"possible_answers": "red"},
         "field 'possible_answers' must be a list of strings (plugin.py tests "
         "`answer in possible_answers`): 'red'"),
        ({"possible_answers": []}, "field 'possible_answers' is empty: no answer could be correct"),
        ({"possible_answers": ["red", " "]}, "possible_answers[1] is ' ', not a non-empty string"),
        ({"possible_answers": ["red", 3]}, "possible_answers[1] is 3, not a non-empty string"),
        ({"bboxs": []}, "field 'bboxs' must be a non-empty list of [x1, y1, x2, y2] boxes: []"),
        ({"bboxs": "0 0 1 1"},
         "field 'bboxs' must be a non-empty list of [x1, y1, x2, y2] boxes: '0 0 1 1'"),
        ({"bboxs": [[0, 0, 5, 5], [0, 0, 5]]},
         "bboxs[1] is not 4 finite numbers [x1, y1, x2, y2]: [0, 0, 5]"),
        ({"bboxs": [[0, 0, 5, True]]},
         "bboxs[0] is not 4 finite numbers [x1, y1, x2, y2]: [0, 0, 5, True]"),
        ({"bboxs": [[0, 0, 5, float("inf")]]},
         "bboxs[0] is not 4 finite numbers [x1, y1, x2, y2]: [0, 0, 5, inf]"),
        ({"bboxs": [(0, 0, 5, 5)]},
         "bboxs[0] is not 4 finite numbers [x1, y1, x2, y2]: (0, 0, 5, 5)"),
        ({"bboxs": [[5, 0, 5, 5]]}, "bboxs[0] [5, 0, 5, 5] has x2 <= x1 or y2 <= y1"),
        ({"bboxs": [[0, 5, 5, 4]]}, "bboxs[0] [0, 5, 5, 4] has x2 <= x1 or y2 <= y1"),
        ({"bboxs": [[0, 5, 5, 5]]}, "bboxs[0] [0, 5, 5, 5] has x2 <= x1 or y2 <= y1"),
        ({"bboxs": [[0, 0, 5, 5], [0, 0, 66, 5]]},
         "bboxs[1] [0.0, 0.0, 66.0, 5.0] is outside its 64x48 picture"),
        ({"width": 48, "height": 64},
         "fields 'width' / 'height' are 48x64 but its picture is 64x48"),
        ({"images": MISSING}, "has no picture: no 'images' / 'image' field"),
        ({"images": None, "image": None}, "has no picture: no 'images' / 'image' field"),
        ({"images": ["images/bus.jpg"] * 2},
         "field 'images' holds 2 pictures; width, height and bboxs describe one"),
        ({"images": []}, "field 'images' holds 0 pictures; width, height and bboxs describe one"),
        ({"images": MISSING, "image": "http://x/bus.jpg "},
         "field 'image' is a URL ('http://x/bus.jpg'); the pictures must be in the files"),
        ({"images": ["pics/bus.jpg"]},
         "field 'images': picture 'pics/bus.jpg' is not a file (looked at {data}/pics/bus.jpg, "
         "{source}/pics/bus.jpg)"),
        ({"images": ["/no/bus.jpg"]},
         "field 'images': picture '/no/bus.jpg' is not a file (looked at /no/bus.jpg)"),
        ({"images": ["p" * 196 + ".jpg"]},
         f"field 'images': picture '{'p' * 196}.jpg' is not a file "
         f"(looked at {{data}}/{'p' * 196}.jpg, {{source}}/{'p' * 196}.jpg)"),
        ({"images": ["data:image/png;base64,AAAA,junk"]},
         "field 'images' is a string but not base64 image data"),
        ({"images": ["data:nocomma"]}, "field 'images' is a string but not base64 image data"),
        ({"images": [""]}, "field 'images' holds no image bytes (str)"),
        ({"images": [b""]}, "field 'images' holds no image bytes (bytes)"),
    ],
)  # fmt: skip
def test_a_bad_row_is_rejected_saying_why(source, change, says):
    message = says.replace("{data}", str(source / "data")).replace("{source}", str(source))
    assert error(source, row(**change)) == f"data/t.jsonl row 2: {message}"


def test_a_long_value_is_shown_cut(source):
    fits, long = ["x" * 116], ["x" * 117]  # their reprs: 120 and 121 characters
    says = "data/t.jsonl row 2: possible_answers[1] is {}, not a non-empty string"
    assert error(source, row(possible_answers=["red", fits])) == says.format(repr(fits))
    assert error(source, row(possible_answers=["red", long])) == says.format(
        repr(long)[:117] + "..."
    )


def test_a_long_string_that_is_no_file_is_read_as_base64(source):
    text = "A" * 201
    assert error(source, row(images=[text])) == (
        "data/t.jsonl row 2: field 'images' is a string but not base64 image data"
    )


def test_an_unreadable_picture_names_its_field(source):
    assert re.fullmatch(
        r"data/t\.jsonl row 2: field 'images' is not a readable image: "
        r"cannot identify image file <_io\.BytesIO object at 0x[0-9a-f]+>",
        error(source, row(images=["images/bad.jpg"])),
    )


def test_a_row_that_is_no_object_is_rejected():
    with pytest.raises(RowError) as exc:
        convert_row(Row("t.json", 0, ["a"]), "x", Path("."), Path("."), None)
    assert str(exc.value) == "t.json row 0: is a list, not an object"


@pytest.mark.parametrize(
    ("name", "split"),
    [("Validation-0.jsonl", "validation"), ("test_a.json", "test"), ("train.x.json", "train"),
     ("testing.jsonl", "train"), ("dev.jsonl", "train"), ("val-test.jsonl", "train")],
)  # fmt: skip
def test_the_split_is_the_head_of_the_file_name(name, split):
    assert split_of(name) == split


def test_rows_are_numbered_per_split_and_keep_their_own_ids(source):
    data = source / "data"
    (data / "b.jsonl").write_text(
        json.dumps(row(id=7))
        + "\n"
        + json.dumps(row(messages=5))
        + "\n"
        + json.dumps(row(id=8, messages=5))
        + "\n"
        + json.dumps(row(id="", messages=5))
        + "\n"
    )
    (data / "test.json").write_text(json.dumps([row(), ["x"]]))
    (data / "a.jsonl").write_text(json.dumps(row()) + "\n")
    out = [(split, rec.id if hasattr(rec, "id") else (str(rec), rec.row_id))
           for split, rec in convert(source, ImageStore(source / "records"))]  # fmt: skip
    assert out == [
        ("train", "train-0"),
        ("train", "7"),
        ("train", ("data/b.jsonl row 1: field 'messages' must be a list of turns: 5", "train-2")),
        ("train", ("data/b.jsonl row 2: field 'messages' must be a list of turns: 5", "8")),
        ("train", ("data/b.jsonl row 3: field 'messages' must be a list of turns: 5", "train-4")),
        ("test", "test-0"),
        ("test", ("data/test.json row 1: is a list, not an object", "test-1")),
    ]


def test_row_files_leave_out_records_hidden_folders_and_the_manifest(source):
    for rel in ["records/train.jsonl", ".cache/x.jsonl", "data/.hidden.json", "vlrl_dataset.json",
                "data/notes.txt", "b.json", "data/a.jsonl"]:  # fmt: skip
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text("[]")
    (source / "dir.json").mkdir()
    assert row_files(source) == [source / "b.json", source / "data" / "a.jsonl"]


def test_a_release_in_both_layouts_is_refused(source):
    (source / "a.parquet").write_bytes(b"")
    (source / "b.jsonl").write_text("")
    with pytest.raises(DataError) as exc:
        row_files(source)
    assert str(exc.value) == (
        f"{source}: both parquet and json row files are present (['a.parquet', 'b.jsonl']); "
        "fetch one layout (allow_patterns)"
    )


def test_a_release_without_row_files_is_refused(source):
    with pytest.raises(DataError) as exc:
        row_files(source)
    assert str(exc.value) == f"{source}: no VQA-Verify rows: no .parquet, .jsonl or .json file"


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("t.json", "[1,",
         "{path}: not a readable json file: Expecting value: line 1 column 4 (char 3)"),
        ("t.json", '{"a": 1}', "{path}: holds a dict, not a list of rows"),
        ("t.jsonl", "[1,\n", "{path}:1: not valid JSON: Expecting value"),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_read_is_an_error_naming_it(source, name, text, says):
    (source / name).write_text(text)
    with pytest.raises(DataError) as exc:
        list(convert(source, ImageStore(source / "records")))
    assert str(exc.value) == says.format(path=source / name)


def test_json_files_are_read_as_utf8_whatever_the_locale(source, ascii_locale):
    (source / "data" / "t.json").write_text(
        json.dumps([row(image_caption="Ein roter Bus \u00e4")], ensure_ascii=False),
        encoding="utf-8",
    )
    (rec,) = [r for _, r in convert(source, ImageStore(source / "records"))]
    assert rec.caption == "Ein roter Bus \u00e4"
