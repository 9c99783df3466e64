"""Each check of a canonical record, by its whole message: what a user reads names the row."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from vlrl.core.errors import DataError
from vlrl.items.records import Record, check_record, parse_record

WHERE = "data.jsonl:3"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    Image.new("RGB", (40, 20)).save(tmp_path / "a.png")
    (tmp_path / "bad.png").write_bytes(b"not a picture")
    return tmp_path


def record(**fields) -> Record:
    base = dict(id="r1", images=["a.png"], problem="q", answer="a", problem_type="grounding",
                data_source="test")  # fmt: skip
    return Record(**(base | fields))


def message(folder: Path, rec: Record) -> str:
    with pytest.raises(DataError) as err:
        check_record(rec, folder, WHERE)
    return str(err.value)


def test_a_good_record_gets_its_image_sizes(folder: Path) -> None:
    checked = check_record(record(boxes=[[0, 0, 40, 20], [1, 1, 2, 2]]), folder, WHERE)
    assert checked.image_sizes == [[40, 20]]


def test_each_check_of_a_record_says_the_row_and_what_is_wrong(folder: Path) -> None:
    assert message(folder, record(images=["gone.png"])) == (
        f"{WHERE}: image 'gone.png' does not exist (looked in {folder})"
    )
    assert message(folder, record(images=["bad.png"])).startswith(
        f"{WHERE}: image 'bad.png' is unreadable: "
    )
    assert message(folder, record(image_sizes=[[41, 20]])) == (
        f"{WHERE}: image_sizes [[41, 20]] disagree with the files [[40, 20]]"
    )
    assert message(folder, record(boxes=[[1, 2, 3]])) == (
        f"{WHERE}: box [1.0, 2.0, 3.0] must have 4 numbers (x1, y1, x2, y2)"
    )
    assert message(folder, record(images=[], boxes=[[1, 2, 3, 4]])) == (
        f"{WHERE}: has boxes but no image"
    )
    assert message(folder, record(problem_type="multiple_choice")) == (
        f"{WHERE}: multiple_choice record has no options"
    )


@pytest.mark.parametrize(
    "box",
    [
        [5, 2, 5, 8],  # no width
        [2, 5, 8, 5],  # no height
        [2, 2, 8, 21],  # inside in x, below the picture in y
        [2, 2, 41, 8],  # inside in y, past the right edge
        [-1, 2, 8, 8],
    ],
)
def test_a_box_must_have_area_inside_its_picture(folder: Path, box: list[float]) -> None:
    assert message(folder, record(boxes=[box])) == (
        f"{WHERE}: box {[float(v) for v in box]} is outside its 40x20 image or has x2<=x1 / y2<=y1"
    )


def test_a_row_that_is_no_record_names_every_problem(folder: Path) -> None:
    with pytest.raises(DataError) as err:
        parse_record({"id": "r1", "images": [], "problem": "q"}, folder, WHERE)
    assert str(err.value) == (
        f"{WHERE}: answer: Field required; problem_type: Field required; "
        "data_source: Field required"
    )
    with pytest.raises(DataError) as err:
        parse_record({"id": "r1", "images": [], "problem": "q", "answer": "a",
                      "problem_type": "grounding", "data_source": "t",
                      "boxes": [[1, "x", 2, 3]]}, folder, WHERE)  # fmt: skip
    assert str(err.value).startswith(f"{WHERE}: boxes.0.1: Input should be a valid number")


def test_a_records_file_names_the_line_of_its_bad_row(folder: Path) -> None:
    import json

    from vlrl.items.records import read_records

    good = dict(id="r1", images=["a.png"], problem="q", answer="a", problem_type="grounding",
                data_source="test")  # fmt: skip
    path = folder / "records.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"images": ["gone.png"]}) + "\n")
    with pytest.raises(DataError) as err:
        read_records(path)
    assert str(err.value) == f"{path}:2: image 'gone.png' does not exist (looked in {folder})"
    assert [r.id for r in read_records(path, limit=1)] == ["r1"]
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(DataError) as err:
        read_records(path)
    assert str(err.value).startswith(f"{path}:2: ")
