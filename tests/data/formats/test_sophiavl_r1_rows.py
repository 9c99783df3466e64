"""sophiavl_r1 item by item, in process: the whole record of each kind of item, the whole message
of each rejected one (its file, position and id), which json file is which subset, and the
errors about the files themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, RowError
from vlrl.data.formats.sophiavl_r1 import convert, subset_of

KNOWLEDGE = "Knowledge/k.json"
PICTURE = "./Knowledge/images/1.png"


def item(**fields: Any) -> dict[str, Any]:
    """A text item with the keys of SophiaVL's verl/data/demo.json, ``fields`` changed."""
    return {"problem_id": 1, "problem": "Who?", "data_type": "text", "problem_type": "text",
            "options": [], "solution": "<answer>Lee</answer>", "path": "",
            "data_source": "viquae", **fields}  # fmt: skip


def write(root: Path, items: list[Any], rel: str = KNOWLEDGE) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    (root / PICTURE).parent.mkdir(parents=True, exist_ok=True)
    (root / PICTURE).write_bytes(image_bytes((1, 2, 3), (20, 10)))


def run(root: Path) -> list[Any]:
    return [rec for _, rec in convert(root, ImageStore(root / "records"))]


def converted(root: Path, **fields: Any) -> dict[str, Any]:
    write(root, [item(**fields)])
    (rec,) = run(root)
    assert not isinstance(rec, RowError), rec
    return rec.model_dump(exclude_defaults=True)


def rejected(root: Path, **fields: Any) -> tuple[str, str | None]:
    write(root, [item(problem_id=3), item(**fields)])
    good, bad = run(root)
    assert isinstance(bad, RowError) and not isinstance(good, RowError)
    return str(bad), bad.row_id


def test_a_text_item_has_no_picture_and_keeps_its_problem_untrimmed(tmp_path):
    assert converted(tmp_path, problem=" <image>Who shot him? ", solution=" Lee ") == {
        "id": "Knowledge-1",
        "images": [],
        "problem": " Who shot him? ",
        "answer": "Lee",
        "problem_type": "free_form",
        "source_type": "text",
        "data_source": "viquae",
        "task": "Knowledge",
    }


def test_an_image_item_stores_its_picture(tmp_path):
    rec = converted(tmp_path, data_type="image", path=f" {PICTURE} ", problem_type=" OCR ")
    assert rec["images"][0].startswith("images/") and rec["images"][0].endswith(".png")
    assert (rec["problem_type"], rec["source_type"]) == ("ocr", "OCR")
    assert converted(tmp_path, path=PICTURE, data_type=None)["images"] == []
    write(tmp_path, [{k: v for k, v in item(path=PICTURE).items() if k != "data_type"}])
    assert len(run(tmp_path)[0].images) == 1, "an item without data_type is an image item"


def test_a_multiple_choice_item_appends_its_options_without_a_separator(tmp_path):
    rec = converted(
        tmp_path,
        problem="Which?",
        problem_type="multiple choice",
        options=["(A) red ", "B. blue", " C: green", "D) grey"],
        solution="<answer>B, D</answer>",
        process="\n<think> Look at it. </think>\n",
    )
    assert (rec["problem"], rec["options"], rec["answer"], rec["reasoning"]) == (
        "Which?(A) red ; B. blue;  C: green; D) grey",
        ["red", "blue", "green", "grey"],
        "B, D",
        "Look at it.",
    )
    assert rec["problem_type"] == "multiple_choice"


def test_options_without_labels_are_kept_stripped(tmp_path):
    rec = converted(
        tmp_path, problem_type="multiple choice", options=[" red", "blue "], solution="AB"
    )
    assert (rec["options"], rec["answer"], rec["problem"]) == (
        ["red", "blue"],
        "AB",
        "Who? red; blue ",
    )


@pytest.mark.parametrize(
    ("process", "reasoning"),
    [("plain steps ", "plain steps"), ("<think> </think>", None), ("  ", None), (7, None),
     ("<think>a</think> and <think>b</think>", "a</think> and <think>b")],
)  # fmt: skip
def test_the_reasoning_is_the_process_without_its_think_wrapper(tmp_path, process, reasoning):
    assert converted(tmp_path, process=process).get("reasoning") == reasoning


@pytest.mark.parametrize("source", ["", 5, None])
def test_an_item_without_a_data_source_names_the_release(tmp_path, source):
    assert converted(tmp_path, data_source=source)["data_source"] == "sophiavl_r1_130k"


@pytest.mark.parametrize(
    ("problem_id", "rid"),
    [(" 12 ", "Knowledge-12"), ("  ", "Knowledge-i1"), (None, "Knowledge-i1"),
     (1.5, "Knowledge-i1"), (0, "Knowledge-0")],
)  # fmt: skip
def test_the_id_is_the_subset_and_problem_id_else_the_position(tmp_path, problem_id, rid):
    write(tmp_path, [item(problem_id=3), item(problem_id=problem_id)])
    assert run(tmp_path)[1].id == rid


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"problem_type": "essay"},
         "field 'problem_type' is 'essay', not one of "
         "['multiple choice', 'numerical', 'OCR', 'free-form', 'text']"),
        ({"solution": "<answer> </answer>"}, "field 'solution' holds an empty answer"),
        ({"problem": "<image> "}, "field 'problem' holds nothing but <image> tokens"),
        ({"data_type": "image", "path": "./Knowledge/images/2.png"},
         "path './Knowledge/images/2.png' does not exist (looked in {root})"),
        ({"problem_type": "multiple choice", "options": ["A) x"]},
         "field 'options' must list two or more non-empty strings for a multiple-choice item: "
         "['A) x']"),
        ({"problem_type": "multiple choice", "options": "A) x; B) y"},
         "field 'options' must list two or more non-empty strings for a multiple-choice item: "
         "'A) x; B) y'"),
        ({"problem_type": "multiple choice", "options": ["A) x", " "]},
         "field 'options' must list two or more non-empty strings for a multiple-choice item: "
         "['A) x', ' ']"),
        ({"problem_type": "multiple choice", "options": ["A) x", 2]},
         "field 'options' must list two or more non-empty strings for a multiple-choice item: "
         "['A) x', 2]"),
        ({"problem_type": "multiple choice", "options": ["A) x", "y"]},
         "field 'options' is labelled ['A', None], not ['A', 'B']: ['A) x', 'y']"),
        ({"problem_type": "multiple choice", "options": ["B) x", "A) y"]},
         "field 'options' is labelled ['B', 'A'], not ['A', 'B']: ['B) x', 'A) y']"),
        ({"problem_type": "multiple choice", "options": ["x", "y", "z"], "solution": "D"},
         "answer 'D' is not option letters A-C of its 3 options"),
        ({"problem_type": "multiple choice", "options": ["x", "y", "z"], "solution": "A, D"},
         "answer 'A, D' is not option letters A-C of its 3 options"),
        ({"problem_type": "multiple choice", "options": ["x", "y"], "solution": "b"},
         "answer 'b' is not option letters A-B of its 2 options"),
        ({"problem_type": "multiple choice", "options": ["x", "y"], "solution": "A or B"},
         "answer 'A or B' is not option letters A-B of its 2 options"),
    ],
)  # fmt: skip
def test_a_bad_item_is_rejected_saying_why(tmp_path, fields, says):
    assert rejected(tmp_path, **fields) == (
        f"{KNOWLEDGE} row 1: {says.format(root=tmp_path)}",
        "Knowledge-1",
    )


def test_an_unreadable_picture_names_the_path_field(tmp_path):
    write(tmp_path, [item(data_type="image", path="./Knowledge/images/bad.png")])
    (tmp_path / "Knowledge" / "images" / "bad.png").write_bytes(b"not a picture")
    (err,) = run(tmp_path)
    assert str(err).startswith(f"{KNOWLEDGE} row 0: field 'path' is not a readable image: ")


def test_an_item_that_is_no_object_is_rejected_by_its_position(tmp_path):
    write(tmp_path, [["a"], "b"])
    assert [(str(e), e.row_id) for e in run(tmp_path)] == [
        (f"{KNOWLEDGE} row 0: is a list, not an object", "Knowledge-i0"),
        (f"{KNOWLEDGE} row 1: is a str, not an object", "Knowledge-i1"),
    ]


def test_a_repeated_id_names_the_item_that_had_it_first(tmp_path):
    write(tmp_path, [item(problem_id=4), item(problem_id=" 4")])
    first, again = run(tmp_path)
    assert first.id == "Knowledge-4"
    assert (str(again), again.row_id) == (
        f"{KNOWLEDGE} row 1: id 'Knowledge-4' repeats {KNOWLEDGE} row 0",
        "Knowledge-4",
    )


@pytest.mark.parametrize(
    ("rel", "subset"),
    [
        ("Knowledge/math.json", "Knowledge"),
        ("chart/a.json", "Chart"),
        ("misc/chart.json", "Chart"),
        ("OCR_data.json", "OCR"),
        ("dataset/json/ocr.json", "OCR"),
        ("misc/knowledge/a.json", None),
        ("chart_and_math.json", None),
        ("notes.json", None),
    ],
)
def test_a_file_subset_is_its_top_folder_else_the_one_subset_in_its_name(rel, subset):
    assert subset_of(rel) == subset


def test_what_vlrl_wrote_beside_the_files_is_not_read(tmp_path):
    write(tmp_path, [item()])
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "report.json").write_text("{}")
    (tmp_path / "records" / "math.json").write_text("{}")
    (tmp_path / "vlrl_dataset.json").write_text("{}")
    write(tmp_path, [item(problem_id=2)], rel="vqa_chart.json")
    assert [(r.id, r.task) for r in run(tmp_path)] == [
        ("Knowledge-1", "Knowledge"),
        ("Chart-2", "Chart"),
    ]


def test_a_json_file_of_no_subset_is_an_error(tmp_path):
    write(tmp_path, [item()])
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "notes.json").write_text("[]")
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path / 'extra' / 'notes.json'}: not a SophiaVL subset file (neither its top folder "
        "nor its name is one of ['OCR', 'Chart', 'Knowledge', 'Math', 'General'])"
    )


def test_a_folder_without_subset_files_is_an_error(tmp_path):
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path}: no json file of SophiaVL's subsets "
        "['OCR', 'Chart', 'Knowledge', 'Math', 'General']"
    )


def test_a_file_that_is_not_json_is_an_error_naming_it(tmp_path):
    (tmp_path / "Math").mkdir()
    (tmp_path / "Math" / "m.json").write_text("[1,")
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert (
        str(exc.value) == "Math/m.json: not valid json: Expecting value: line 1 column 4 (char 3)"
    )


def test_a_file_that_is_not_a_list_is_an_error_naming_it(tmp_path):
    (tmp_path / "Math").mkdir()
    (tmp_path / "Math" / "m.json").write_text('"items"')
    with pytest.raises(DataError) as exc:
        run(tmp_path)
    assert str(exc.value) == "Math/m.json: holds a str, not a list of items"


def test_the_files_are_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    assert converted(tmp_path, problem="Wer schoss? \u00c4")["problem"] == "Wer schoss? \u00c4"
