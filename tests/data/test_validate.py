"""Validation of a data split: every bad row named at once, by file:line, id and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import DataError, StageError
from vlrl.data import shapes
from vlrl.data.validate import MAX_LISTED, check_rows, rows_of_file
from vlrl.items.records import Record
from vlrl.stages import data as stage

EXP = "tiny_shapes"
SMALL = ["data.shapes.n_train=40", "data.shapes.n_val=10", "data.shapes.n_test=20"]

GOOD = Record(
    id="ok",
    images=["img/ok.png"],
    problem="What color is the circle? A. red B. blue",
    answer="B",
    problem_type="multiple_choice",
    options=["red", "blue"],
    boxes=[[0.0, 0.0, 32.0, 32.0]],
    data_source="t",
).model_dump()


def _row(**changes) -> dict:
    return {**GOOD, "id": "bad", **changes}


def _without(key: str) -> dict:
    return {k: v for k, v in _row().items() if k != key}


@pytest.fixture()
def images(tmp_path: Path) -> Path:
    """``img/ok.png`` (32x32), ``img/garbage.png`` (not an image), ``img/truncated.png``."""
    (tmp_path / "img").mkdir()
    Image.new("RGB", (32, 32), (255, 255, 255)).save(tmp_path / "img" / "ok.png")
    (tmp_path / "img" / "garbage.png").write_bytes(b"this is not a png")
    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(noise).save(tmp_path / "img" / "full.png")
    data = (tmp_path / "img" / "full.png").read_bytes()
    (tmp_path / "img" / "truncated.png").write_bytes(data[: len(data) // 2])
    return tmp_path


def _line(row: dict | str | bytes) -> bytes:
    if isinstance(row, bytes):
        return row
    return (row if isinstance(row, str) else json.dumps(row)).encode()


# (how the row is broken, the row, the id the problem names ("?": none), what it must say)
BAD_ROWS = [
    (
        "a Latin-1 byte in the problem",
        json.dumps(_row(id="latin1", problem="caf\u00e9?")).encode().replace(b"\\u00e9", b"\xe9"),
        "latin1",
        "not valid UTF-8 (0xe9 at byte 59)",
    ),
    ("a line cut short", '{"id": "cut", "images": ["img/ok.png"], "answ', "cut", "not valid JSON"),
    ("a list instead of an object", "[1, 2]", "?", "must be a JSON object, got list"),
    ("no answer field", _without("answer"), "bad", "answer: Field required"),
    ("answer null", _row(answer=None), "bad", "answer: Input should be a valid string"),
    ("answer only blanks", _row(answer="  \t"), "bad", "answer is empty"),
    ("unknown problem type", _row(problem_type="essay"), "bad", "problem_type: Input should be"),
    ("a box with a word", _row(boxes=[[0, 0, "x", 9]]), "bad", "boxes.0.2: Input should be"),
    ("an unknown key", _row(colour="red"), "bad", "colour: Extra inputs are not permitted"),
    ("id missing", _without("id"), "?", "id: Field required"),
    ("id blank", _row(id=" "), " ", "id is empty"),
    ("id of line 1 again", _row(id="ok"), "ok", "id is also used by {path}:1"),
    ("image missing", _row(images=["img/no.png"]), "bad", "image 'img/no.png' does not exist"),
    ("image is garbage", _row(images=["img/garbage.png"]), "bad", "garbage.png' is unreadable"),
    ("image cut short", _row(images=["img/truncated.png"]), "bad", "truncated.png' is unreadable"),
    ("image_sizes wrong", _row(image_sizes=[[64, 64]]), "bad", "disagree with the files [[32, 32"),
    ("box past the right edge", _row(boxes=[[0, 0, 40, 10]]), "bad", "outside its 32x32 image"),
    ("box above the top edge", _row(boxes=[[0, -1, 10, 10]]), "bad", "outside its 32x32 image"),
    ("box of zero width", _row(boxes=[[5, 5, 5, 10]]), "bad", "0 [5.0, 5.0, 5.0, 10.0] has x2<=x1"),
    ("second box bad", _row(boxes=[[0, 0, 9, 9], [9, 9, 0, 0]]), "bad", "box 1 "),
    ("box of 3 numbers", _row(boxes=[[1, 2, 3]]), "bad", "must have 4 numbers"),
    ("box without image", _row(images=[]), "bad", "has boxes but no image"),
    ("letter past 2 options", _row(answer="C"), "bad", "'C' is out of range: 2 options (A-B)"),
    ("answer not a letter", _row(answer="blue"), "bad", "'blue' is not an option letter (A-B)"),
    ("choice without options", _row(options=[]), "bad", "multiple_choice record has no options"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("row", "row_id", "says"), [case[1:] for case in BAD_ROWS], ids=[case[0] for case in BAD_ROWS]
)
def test_a_bad_row_is_named_by_file_line_and_id(images, row, row_id, says):
    path = images / "rows.jsonl"
    path.write_bytes(_line(GOOD) + b"\n\n" + _line(row) + b"\n")
    checked = check_rows(rows_of_file(path), images)
    assert checked.rows == 2
    assert [r.id for r in checked.records] == ["ok"]
    (problem,) = checked.problems
    assert problem.where == f"{path}:3"
    assert (problem.id or "?") == row_id
    assert says.format(path=path) in problem.what
    assert str(problem).startswith(f"{path}:3: id {row_id if row_id.strip() else '?'}: ")


def test_valid_rows_pass_with_their_image_sizes(images):
    path = images / "rows.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "two"}) + "\n")
    checked = check_rows(rows_of_file(path), images)
    assert not checked.problems
    assert [r.image_sizes for r in checked.records] == [[[32, 32]], [[32, 32]]]


def test_every_bad_row_of_a_file_is_in_the_one_error(images):
    rows = [
        _line(GOOD),
        json.dumps(_row(id="latin1")).encode().replace(b"What", b"Wh\xe4t"),
        _line({**GOOD, "id": "fine"}),
        b'{"id": "cut", "answer": ',
        _line(_row(id="empty", answer="")),
        b"",
        _line(_row(id="wide", boxes=[[0, 0, 33, 5]])),
        _line(_row(id="two-wrongs", answer=" ", images=["img/no.png"])),
        _line(_row(id="typed", problem_type="essay", options="A")),
    ]
    path = images / "rows.jsonl"
    path.write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(DataError) as info:
        stage.load_records(path)
    message = str(info.value)
    assert message.startswith(f"{path}: 6 of 8 rows are invalid:")
    expected = {
        2: ("latin1", "not valid UTF-8 (0xe4 at byte"),
        4: ("cut", "not valid JSON at column 25"),
        5: ("empty", "answer is empty"),
        7: ("wide", "outside its 32x32 image"),
        8: ("two-wrongs", "answer is empty; image 'img/no.png' does not exist"),
        9: ("typed", "problem_type: Input should be"),
    }
    listed = message.splitlines()[1:]
    assert len(listed) == len(expected)
    for line, (lineno, (row_id, says)) in zip(listed, expected.items(), strict=True):
        assert line.startswith(f"  {path}:{lineno}: id {row_id}: "), line
        assert says in line
    assert "options: Input should be a valid list" in listed[-1], "every field of a row is named"


# ------------------------------------------------------------------------- through the stage
def _cfg(extra: list[str] | None = None):
    return load_experiment(EXP, SMALL + (extra or []))


def _with_bad_rows(monkeypatch, bad_rows_of_split) -> None:
    real = shapes.generate_split

    def generate(cfg, split, n, seed, out_dir, **kwargs):
        records = real(cfg, split, n, seed, out_dir, **kwargs)
        return records + bad_rows_of_split(split, records[0])

    monkeypatch.setattr(shapes, "generate_split", generate)


def _bad_rows(split: str, first: Record) -> list[Record]:
    if split == "val":
        return []
    return [
        first.model_copy(update={"id": f"{split}-box", "boxes": [[100.0, 5.0, 150.0, 20.0]]}),
        first.model_copy(update={"id": f"{split}-empty", "answer": " "}),
        first.model_copy(update={"id": f"{split}-lost", "images": ["images/lost.png"]}),
    ]


def test_a_bad_split_stops_the_stage_with_one_error_and_no_output(project, monkeypatch):
    _with_bad_rows(monkeypatch, _bad_rows)
    with pytest.raises(StageError) as info:
        stage.run(EXP, _cfg())
    message = str(info.value)
    out = paths.data_dir(EXP)
    assert message.splitlines()[0] == (
        f"data {EXP}: 6 invalid rows (test 3 of 23, train 3 of 43); nothing was written to {out}:"
    )
    for split, first_line in (("test", 21), ("train", 41)):
        for offset, (suffix, says) in enumerate(
            [("box", "outside its 112x112 image"), ("empty", "answer is empty"), ("lost", "lost")]
        ):
            where = f"{out / f'{split}.jsonl'}:{first_line + offset}"
            assert f"{where}: id {split}-{suffix}: " in message
            assert says in message.split(f"id {split}-{suffix}: ")[1].splitlines()[0]
    assert not (project / out).exists(), "nothing half-written is published"
    assert not list((project / out).parent.glob("data.tmp-*")), "the temporary is removed"


def test_a_bad_rerun_keeps_the_previous_output(project, monkeypatch):
    stage.run(EXP, _cfg())
    out = project / paths.data_dir(EXP)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _with_bad_rows(monkeypatch, _bad_rows)
    with pytest.raises(StageError):
        stage.run(EXP, _cfg(["seed=3"]))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_the_listing_is_capped_but_every_bad_row_counted(project, monkeypatch):
    def many(split: str, first: Record) -> list[Record]:
        n = MAX_LISTED + 7 if split == "train" else 0
        return [first.model_copy(update={"id": f"empty-{i}", "answer": ""}) for i in range(n)]

    _with_bad_rows(monkeypatch, many)
    with pytest.raises(StageError) as info:
        stage.run(EXP, _cfg())
    lines = str(info.value).splitlines()
    assert (
        f"{MAX_LISTED + 7} invalid rows (train {MAX_LISTED + 7} of {40 + MAX_LISTED + 7})"
        in (lines[0])
    )
    assert len(lines) == 1 + MAX_LISTED + 1
    assert lines[-1] == "  and 7 more"
