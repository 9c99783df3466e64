"""easyr1 row by row, in process: the pictures of a row (structs, paths, bytes) and the whole
message of each rejected one, the problem type its answer gives, and the errors about the files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hub_parquet import image_bytes

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError
from vlrl.data.formats.easyr1 import answer_kind, convert_row, train_files

PNG = image_bytes((5, 6, 7), (30, 20))


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.png").write_bytes(PNG)
    (tmp_path / "pics" / "bad.png").write_bytes(b"not a picture")
    return tmp_path


def convert(source: Path, **data) -> dict:
    store = ImageStore(source / "records")
    rec = convert_row(Row("data/train.parquet", 3, data), "7", source, store)
    return rec.model_dump(exclude_defaults=True)


def error(source: Path, **data) -> str:
    with pytest.raises(RowError) as exc:
        convert(source, **data)
    return str(exc.value)


def test_pictures_are_structs_paths_or_bytes(source):
    rec = convert(
        source,
        problem="<image><image><image> How many? ",
        answer="3",
        images=[
            {"bytes": PNG, "path": "pics/none.png"},
            {"bytes": None, "path": "pics/a.png"},
            PNG,
        ],
    )
    assert len(rec.pop("images")) == 3
    assert rec == {
        "id": "7",
        "problem": "How many?",
        "answer": "3",
        "problem_type": "numerical",
        "data_source": "vision_sr1_47k",
    }


@pytest.mark.parametrize(
    ("images", "says"),
    [
        (None, "field 'images' is null: the row has no image"),
        ([PNG, None], "field 'images[1]' is null: the picture is missing"),
        ([PNG, "pics/b.png"], "images[1] 'pics/b.png' does not exist (looked in {source})"),
        ([PNG, {"bytes": None, "path": "pics/b.png"}],
         "images[1] 'pics/b.png' does not exist (looked in {source})"),
        ([PNG, b"junk"], "field 'images[1]' is not a readable image: cannot identify image file"),
        ([PNG, "pics/bad.png"],
         "field 'images[1]' is not a readable image: cannot identify image file"),
        ([PNG, 5], "field 'images[1]' holds no image bytes (int)"),
    ],
)  # fmt: skip
def test_a_bad_picture_is_rejected_naming_it(source, images, says):
    message = error(source, problem="<image><image>Q", answer="1", images=images)
    expected = f"data/train.parquet row 3: {says.format(source=source)}"
    assert re.fullmatch(re.escape(expected) + r"( <_io\.BytesIO object at 0x[0-9a-f]+>)?", message)


@pytest.mark.parametrize(
    ("problem", "says"),
    [
        ("<image> <image>", "field 'problem' has 2 <image> tokens but the row has 1 images"),
        (" <image> ", "field 'problem' holds nothing but <image> tokens"),
    ],
)
def test_a_bad_problem_is_rejected_saying_why(source, problem, says):
    assert error(source, problem=problem, answer="1", images=[PNG]) == (
        f"data/train.parquet row 3: {says}"
    )


@pytest.mark.parametrize(
    ("problem", "answer", "kind"),
    [
        ("Which?\nA. red\nB. blue", "B", ("multiple_choice", ["red", "blue"])),
        ("Which?\n(A) red\n(B) blue", "B", ("multiple_choice", ["red", "blue"])),
        ("Which?\n(A) red\n(B) blue", "C", ("free_form", [])),
        ("Which?\nB. red\nA. blue", "A", ("free_form", [])),
        ("Which?", "b", ("free_form", [])),
        ("Ratio?", "1/0", ("free_form", [])),
        ("Ratio?", "-3/4", ("numerical", [])),
        ("Ratio?", "3 apples", ("free_form", [])),
    ],
)
def test_the_answer_tells_the_problem_type(problem, answer, kind):
    assert answer_kind(problem, answer) == kind


def test_a_folder_without_parquet_is_an_error(tmp_path):
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "x.parquet").write_bytes(b"")
    with pytest.raises(DataError) as exc:
        train_files(tmp_path)
    assert str(exc.value) == f"{tmp_path}: no parquet file"


def test_a_release_without_a_train_file_is_an_error_naming_its_files(tmp_path):
    for name in ("test.parquet", "data/val-0.parquet"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(DataError) as exc:
        train_files(tmp_path)
    assert str(exc.value) == (
        f"{tmp_path}: no train parquet among ['data/val-0.parquet', 'test.parquet']"
    )
