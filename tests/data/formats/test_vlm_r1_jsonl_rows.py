"""vlm_r1_jsonl row by row, in process: the whole record of each kind of row, the whole message
of each rejected row (its file, line and id), the detection answer's boxes, the pictures folder,
and the errors about the folder's files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.vlm_r1_jsonl import (
    ImageFolder,
    convert,
    convert_row,
    detection_boxes,
    jsonl_lines,
    read_sample,
    rows,
)

BOXES = '```json\n[{"bbox_2d": [2, 3.5, 20, 10], "label": "cat"}, {"bbox_2d": [0, 0, 4, 4], "label": "dog"}]\n```'  # noqa: E501


def conv(question: Any = "<image>How many?", answer: Any = "<answer> 3 </answer>", **extra) -> dict:
    return {
        "conversations": [{"from": "human", "value": question}, {"from": "gpt", "value": answer}],
        **extra,
    }


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """``images/a.png`` (32x24), ``images/b.jpg`` (16x8), ``images/bad.png`` (not a picture)."""
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(image_bytes((1, 2, 3), (32, 24)))
    (tmp_path / "images" / "b.jpg").write_bytes(image_bytes((4, 5, 6), (16, 8), "JPEG"))
    (tmp_path / "images" / "bad.png").write_bytes(b"not a picture")
    return tmp_path


def one(folder: Path, data: dict, *, detection: bool = False) -> dict[str, Any]:
    store = ImageStore(folder / "records")
    rec = convert_row(
        Row("train.jsonl", 4, data), "train", store, ImageFolder(folder / "images"),
        detection=detection,
    )  # fmt: skip
    dumped = rec.model_dump(exclude_defaults=True)
    dumped["images"] = [(store.records_dir / p).suffix for p in dumped["images"]]
    return dumped


def error(folder: Path, data: Any, *, detection: bool = False) -> str:
    with pytest.raises(RowError) as exc:
        one(folder, data, detection=detection)
    assert exc.value.row_id == (str(data.get("id")) if "id" in data else None)
    return str(exc.value)


def test_a_row_becomes_a_record_with_its_pictures_and_sizes(folder):
    assert one(folder, conv("<image> How many? <image>", image=["a.png", " b.jpg "], id=9)) == {
        "id": "train-4",
        "images": [".png", ".jpg"],
        "image_sizes": [[32, 24], [16, 8]],
        "problem": " How many? ",
        "answer": "3",
        "problem_type": "numerical",
        "data_source": "train",
        "task": "train",
    }


def test_a_detection_row_keeps_its_boxes_fitted_to_the_picture(folder):
    data = conv(answer=BOXES, image="a.png", accu_reward_method="od_ap")
    assert one(folder, data) == {
        "id": "train-4",
        "images": [".png"],
        "image_sizes": [[32, 24]],
        "problem": "How many?",
        "answer": BOXES,
        "problem_type": "detection",
        "boxes": [[2.0, 3.5, 20.0, 10.0], [0.0, 0.0, 4.0, 4.0]],
        "data_source": "train",
        "task": "od_ap",
    }
    assert one(folder, data, detection=True)["task"] == "od_ap"


def test_a_detection_file_makes_a_row_without_a_method_a_detection_row(folder):
    rec = one(folder, conv(answer="None", image="a.png"), detection=True)
    assert (rec["problem_type"], rec["answer"], rec.get("boxes"), rec["task"]) == (
        "detection",
        "None",
        None,
        "train",
    )


@pytest.mark.parametrize(
    ("answer", "method", "kind"),
    [("yes", "yes_no", "yes_no"), ("-2.5", None, "numerical"), ("2.", None, "free_form"),
     ("B", "mcq", "free_form"), (7, "math", "numerical"), (0.5, None, "numerical")],
)  # fmt: skip
def test_the_problem_type_comes_from_the_method_and_answer(folder, answer, method, kind):
    data = conv("What?", answer) | ({"accu_reward_method": method} if method else {})
    rec = one(folder, data)
    assert (rec["problem_type"], rec["answer"], rec["images"]) == (kind, str(answer), [])


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (conv(image=[]), "field 'image' must be a path or a non-empty list of paths: []"),
        (conv(image=["a.png", 3]),
         "field 'image' must be a path or a non-empty list of paths: ['a.png', 3]"),
        (conv(image=5), "field 'image' must be a path or a non-empty list of paths: 5"),
        ({"id": 1}, "has no field 'conversations' (fields: ['id'])"),
        ({"conversations": "hi"}, "field 'conversations' must hold 2 turns (human, gpt), not str"),
        ({"conversations": [{"from": "human", "value": "a"}]},
         "field 'conversations' must hold 2 turns (human, gpt), not 1"),
        ({"conversations": [{"from": "gpt", "value": "a"}, {"from": "gpt", "value": "b"}]},
         "turn 0 must be {'from': 'human', 'value': ...}: {'from': 'gpt', 'value': 'a'}"),
        ({"conversations": [{"from": "human", "value": "a"}, {"from": "gpt"}]},
         "turn 1 must be {'from': 'gpt', 'value': ...}: {'from': 'gpt'}"),
        ({"conversations": [{"from": "human", "value": "a"}, ["gpt", "b"]]},
         "turn 1 must be {'from': 'gpt', 'value': ...}: ['gpt', 'b']"),
        (conv(" <image> "), "the human turn is empty or not a string: ' <image> '"),
        (conv(["q"]), "the human turn is empty or not a string: ['q']"),
        (conv(answer="<answer> </answer>"), "the gpt turn is empty: '<answer> </answer>'"),
        (conv(answer=True), "the gpt turn must be a string or a number: True"),
        (conv(answer=[[1, 2, 3, 4]]), "the gpt turn must be a string or a number: [[1, 2, 3, 4]]"),
        (conv(accu_reward_method="exact"),
         "field 'accu_reward_method' is 'exact', not one of VLM-R1's ['all_match', 'default', "
         "'llm', 'map', 'math', 'mcq', 'odLength', 'od_ap', 'od_ap50', 'weighted_sum', 'yes_no']"),
        (conv(image=["a.png", "b.jpg"], answer="None", accu_reward_method="map"),
         "a detection row needs exactly one image, not 2"),
        (conv(answer="None", accu_reward_method="map"),
         "a detection row needs exactly one image, not 0"),
        (conv(image="c.png"), "image 'c.png' does not exist (images/c.png)"),
        (conv(image=" "), "image ' ' must be a path inside images/"),
        (conv(image="/abs/a.png"), "image '/abs/a.png' must be a path inside images/"),
        (conv(image="x/../a.png"), "image 'x/../a.png' must be a path inside images/"),
    ],
)  # fmt: skip
def test_a_bad_row_is_rejected_saying_why(folder, data, says):
    assert error(folder, {"id": "r7", **data}) == f"train.jsonl row 4: {says}"


def test_a_row_of_another_method_in_a_detection_file_is_rejected(folder):
    data = conv(image="a.png", accu_reward_method="math")
    assert error(folder, data, detection=True) == (
        "train.jsonl row 4: field 'accu_reward_method' is 'math', not a detection reward "
        "(['map', 'odLength', 'od_ap', 'od_ap50', 'weighted_sum'])"
    )


def test_an_unreadable_picture_names_the_image_field(folder):
    message = error(folder, conv(image="bad.png"))
    assert re.fullmatch(
        r"train\.jsonl row 4: field 'image' is not a readable image: "
        r"cannot identify image file <_io\.BytesIO object at 0x[0-9a-f]+>",
        message,
    )


def test_a_value_shown_in_an_error_is_cut_at_200_characters(folder):
    fits, long = ["x" * 196], ["x" * 197]  # their reprs: 200 and 201 characters
    says = "train.jsonl row 4: the gpt turn must be a string or a number: "
    assert error(folder, conv(answer=fits)) == says + repr(fits)
    assert error(folder, conv(answer=long)) == says + repr(long)[:200] + "…"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("two cats", 'the gpt turn must be "None" or one ```json block of boxes, not 0 blocks: '
                     "'two cats'"),
        ("```json[]``` and ```json[]```",
         'the gpt turn must be "None" or one ```json block of boxes, not 2 blocks: '
         "'```json[]``` and ```json[]```'"),
        ("```json [1, ```", "the gpt turn's ```json block is not valid JSON: "
                            "Expecting value: line 1 column 4 (char 3)"),
        ('```json {"a": 1} ```', "the gpt turn's ```json block is a dict, not a list"),
        ('```json [[1, 2, 3, 4]] ```',
         "detection 0 must be {'bbox_2d': [...], 'label': str}: [1, 2, 3, 4]"),
        ('```json [{"bbox_2d": [1, 2, 3, 4]}] ```',
         "detection 0 must be {'bbox_2d': [...], 'label': str}: {'bbox_2d': [1, 2, 3, 4]}"),
        ('```json [{"bbox_2d": [1, 2, 3, 4], "label": 5}] ```',
         "detection 0 must be {'bbox_2d': [...], 'label': str}: {'bbox_2d': [1, 2, 3, 4], "
         "'label': 5}"),
        ('```json [{"bbox_2d": [1, 2, 3, 4], "label": "a"}, {"bbox_2d": [1, 2], "label": "b"}] ```',
         "detection 1's bbox_2d must be 4 finite numbers [x1, y1, x2, y2]: [1, 2]"),
        ('```json [{"bbox_2d": [1, 2, true, 4], "label": "a"}] ```',
         "detection 0's bbox_2d must be 4 finite numbers [x1, y1, x2, y2]: [1, 2, True, 4]"),
        ('```json [{"bbox_2d": [1, 2, NaN, 4], "label": "a"}] ```',
         "detection 0's bbox_2d must be 4 finite numbers [x1, y1, x2, y2]: [1, 2, nan, 4]"),
        ('```json [{"label": "a"}] ```',
         "detection 0's bbox_2d must be 4 finite numbers [x1, y1, x2, y2]: None"),
        ('```json [{"bbox_2d": [3, 2, 3, 4], "label": "a"}] ```',
         "detection 0's bbox_2d [3, 2, 3, 4] has x2 <= x1 or y2 <= y1"),
        ('```json [{"bbox_2d": [1, 4, 3, 4], "label": "a"}] ```',
         "detection 0's bbox_2d [1, 4, 3, 4] has x2 <= x1 or y2 <= y1"),
    ],
)  # fmt: skip
def test_a_bad_detection_answer_is_rejected_saying_why(answer, says):
    with pytest.raises(RowError) as exc:
        detection_boxes(Row("f.jsonl", 2, {"id": 8}), answer)
    assert (str(exc.value), exc.value.row_id) == (f"f.jsonl row 2: {says}", "8")


def test_a_long_detection_answer_is_shown_cut_at_200_characters():
    answer = "a" * 199 + "bc"
    with pytest.raises(RowError) as exc:
        detection_boxes(Row("f.jsonl", 2, {}), answer)
    assert str(exc.value).endswith(f"not 0 blocks: {answer[:200]!r}")


def test_detection_boxes_are_floats_in_order():
    assert detection_boxes(Row("f", 0, {}), BOXES) == [[2.0, 3.5, 20.0, 10.0], [0.0, 0.0, 4.0, 4.0]]
    assert detection_boxes(Row("f", 0, {}), "None") == []
    assert detection_boxes(Row("f", 0, {}), "```json\n[]\n```") == []


@pytest.mark.parametrize(
    ("box", "says"),
    [([0, 0, 40, 5], "detection 0's bbox_2d [0.0, 0.0, 40.0, 5.0] is outside its 32x24 image"),
     ([0, -2, 5, 5], "detection 0's bbox_2d [0.0, -2.0, 5.0, 5.0] is outside its 32x24 image")],
)  # fmt: skip
def test_a_detection_box_outside_its_picture_is_rejected(folder, box, says):
    answer = f'```json [{{"bbox_2d": {box}, "label": "a"}}] ```'
    assert error(folder, conv(answer=answer, image="a.png", accu_reward_method="map")) == (
        f"train.jsonl row 4: {says}"
    )


def test_a_detection_box_on_the_edge_is_clamped(folder):
    answer = '```json [{"bbox_2d": [-0.4, 0, 32.3, 24], "label": "a"}] ```'
    rec = one(folder, conv(answer=answer, image="a.png", accu_reward_method="map"))
    assert rec["boxes"] == [[0, 0.0, 32, 24.0]]


def test_read_sample_keeps_a_box_list_when_asked():
    sample = read_sample(Row("f", 0, conv(answer=[[1, 2, 3, 4]], image="a.png")), box_list=True)
    assert (sample.images, sample.problem, sample.solution, sample.method) == (
        ["a.png"],
        "How many?",
        [[1, 2, 3, 4]],
        None,
    )


def test_each_picture_is_stored_once(folder):
    store = ImageStore(folder / "records")
    pictures = ImageFolder(folder / "images")
    first = pictures.save("a.png", Row("f", 0, {}), store)
    (folder / "images" / "a.png").unlink()
    assert pictures.save(" a.png", Row("f", 1, {}), store) == first
    assert first[1:] == (32, 24)


def test_jsonl_lines_split_at_universal_newlines_only():
    data = '{"a": "x\u2028y"}\r\n\n  \r{"b": 1}\n'.encode()
    assert jsonl_lines("f", data) == [(0, '{"a": "x\u2028y"}'), (3, '{"b": 1}')]


def test_a_file_that_is_not_utf8_is_an_error_naming_it(folder):
    (folder / "train.jsonl").write_bytes(b'{"a": "\xe9"}\n')
    with pytest.raises(DataError) as exc:
        list(convert(folder, ImageStore(folder / "records")))
    assert str(exc.value) == (
        "train.jsonl: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position 7: "
        "invalid continuation byte"
    )


def test_a_line_that_is_not_an_object_is_an_error_with_the_id_it_shows():
    lines = [(0, '{"id": "q\\"1", "a": '), (1, '{"x": 1, "id": -12,'), (2, "[1]"), (5, "{,")]
    found = list(rows("f.jsonl", lines))
    assert [(str(e), e.row_id) for e in found] == [
        ('f.jsonl row 0: is not valid JSON: Expecting value: line 1 column 21 (char 20)', 'q\\"1'),
        ("f.jsonl row 1: is not valid JSON: Expecting property name enclosed in double quotes: "
         "line 1 column 20 (char 19)", "-12"),
        ("f.jsonl row 2: is a JSON list, not an object", None),
        ("f.jsonl row 5: is not valid JSON: Expecting property name enclosed in double quotes: "
         "line 1 column 2 (char 1)", None),
    ]  # fmt: skip


def test_each_jsonl_file_is_a_split_in_order(folder):
    (folder / "val.jsonl").write_text(json.dumps(conv("Q1?", "1")) + "\n")
    (folder / "train.jsonl").write_text("\n" + json.dumps(conv("Q2?", "2")) + "\n[2]\n")
    (folder / "records").mkdir()
    (folder / "records" / "train.jsonl").write_text("{}\n")
    out = list(convert(folder, ImageStore(folder / "records")))
    assert [(split, getattr(r, "id", str(r))) for split, r in out] == [
        ("train", "train-1"),
        ("train", "train.jsonl row 2: is a JSON list, not an object"),
        ("val", "val-0"),
    ]


def test_nested_jsonl_files_are_an_error_naming_five(folder):
    for name in "abcdef":
        (folder / "images" / f"{name}.jsonl").write_text("")
    (folder / "train.jsonl").write_text("")
    with pytest.raises(DataError) as exc:
        list(convert(folder, ImageStore(folder / "records")))
    names = [f"images/{n}.jsonl" for n in "abcde"]
    assert str(exc.value) == (
        f"{folder}: only the folder's own *.jsonl files are read, not {names}: move them up "
        "(each file is a split)"
    )


def test_a_folder_without_jsonl_files_is_an_error(folder):
    with pytest.raises(DataError) as exc:
        list(convert(folder, ImageStore(folder / "records")))
    assert str(exc.value) == (
        f"{folder}: no *.jsonl file; put VLM-R1 jsonl files (one per split) there and their "
        "pictures under images/"
    )


@pytest.mark.parametrize("name", ["report", "rejected", "_x", "a b"])
def test_a_file_name_that_cannot_name_a_split_is_an_error(folder, name):
    (folder / f"{name}.jsonl").write_text("")
    with pytest.raises(DataError) as exc:
        list(convert(folder, ImageStore(folder / "records")))
    assert str(exc.value) == (
        f"{folder / f'{name}.jsonl'}: {name!r} cannot name a split (letters, digits, _ . -; not "
        "['rejected', 'report']): rename the file"
    )
