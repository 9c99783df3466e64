"""vlrl.data.validate row by row: the whole text of every problem a bad row gets (the listing a
user reads to fix a split), the edges of each check (a box on the image's border, a value repr of
exactly the shown length, the 26-letter cap), and where rows are named from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from vlrl.data import validate
from vlrl.data.validate import Checked, Problem, Row, check_rows, rows_of_file, rows_of_records
from vlrl.items.records import Record

GOOD = {
    "id": "ok",
    "images": ["img/ok.png"],
    "problem": "Which?",
    "answer": "B",
    "problem_type": "multiple_choice",
    "options": ["red", "blue"],
    "data_source": "t",
}


def line(**changes) -> str:
    return json.dumps({**GOOD, **changes})


@pytest.fixture()
def base(tmp_path: Path) -> Path:
    """``img/ok.png`` (32x24) and ``img/garbage.png`` (not an image)."""
    (tmp_path / "img").mkdir()
    Image.new("RGB", (32, 24)).save(tmp_path / "img" / "ok.png")
    (tmp_path / "img" / "garbage.png").write_bytes(b"not a png")
    return tmp_path


def test_every_problem_is_listed_in_full(base):
    lines = [
        line(),
        line(id="fits", answer=["x" * 56]),
        line(id="long", answer=["x" * 57]),
        line(id="num", answer=7),
        json.dumps({**{k: v for k, v in GOOD.items() if k != "answer"}, "id": "noans"}),
        line(id=5),
        line(id="edge", boxes=[[0, 0, 32, 24]]),
        line(id="past", boxes=[[0, 0, 32.5, 24]]),
        line(id="low", boxes=[[0, 0, 5, 24.5]]),
        line(id="neg", boxes=[[-1, 0, 5, 5]]),
        line(id="up", boxes=[[0, -1, 5, 5]]),
        line(id="flat", boxes=[[1, 5, 2, 5]]),
        line(id="thin", boxes=[[2, 1, 2, 5]]),
        line(id="inf", boxes=[[0, 0, float("inf"), 5]]),
        line(id="three", boxes=[[0, 0, 5]]),
        line(id="nosize", images=["img/no.png"], image_sizes=[[10, 10]], boxes=[[0, 0, 20, 5]]),
        line(id="odd", images=["img/no.png"], image_sizes=[[10]], boxes=[[0, 0, 20, 5]]),
        line(id="two", images=["img/ok.png", "img/garbage.png"], boxes=[[0, 0, 40, 5]]),
        line(id="sizes", image_sizes=[[24, 32]]),
        line(id="same", image_sizes=[[32, 24]]),
        line(id="many", options=[str(i) for i in range(27)], answer="blue"),
        line(id="c", options=["a", "b", "c"], answer="D"),
        line(id="last", options=["a", "b", "c"], answer="(C)"),
        line(id="blank", answer=" "),
        line(id="noopt", options=[]),
        line(id="free", problem_type="free_form", options=[], answer="blue"),
        line(id=" "),
        line(id="ok"),
        '{"id": "cut", "answer": ',
        '"just a string"',
        '{"id": "open", "problem": "abc',
        '{"id": "extra"}X',
    ]
    path = base / "rows.jsonl"
    raw = ("\n".join(lines) + "\n").encode()
    path.write_bytes(
        raw + line(id="latin", problem="caf\u00e9").encode().replace(b"\\u00e9", b"\xe9")
    )
    checked = check_rows(rows_of_file(path), base, Path("data/x"))
    assert [r.id for r in checked.records] == ["ok", "edge", "same", "last", "free"]
    assert [r.image_sizes for r in checked.records] == [[[32, 24]]] * 4 + [[[32, 24]]]
    expected = f"""\
rows: 28 of 33 rows are invalid:
  {path}:2: id fits: answer: Input should be a valid string (got ['{"x" * 56}'])
  {path}:3: id long: answer: Input should be a valid string (got ['{"x" * 55}...)
  {path}:4: id num: answer: Input should be a valid string (got 7)
  {path}:5: id noans: answer: Field required
  {path}:6: id ?: id: Input should be a valid string (got 5)
  {path}:8: id past: box 0 [0.0, 0.0, 32.5, 24.0] is outside its 32x24 image
  {path}:9: id low: box 0 [0.0, 0.0, 5.0, 24.5] is outside its 32x24 image
  {path}:10: id neg: box 0 [-1.0, 0.0, 5.0, 5.0] is outside its 32x24 image
  {path}:11: id up: box 0 [0.0, -1.0, 5.0, 5.0] is outside its 32x24 image
  {path}:12: id flat: box 0 [1.0, 5.0, 2.0, 5.0] has x2<=x1 or y2<=y1
  {path}:13: id thin: box 0 [2.0, 1.0, 2.0, 5.0] has x2<=x1 or y2<=y1
  {path}:14: id inf: box 0 [0.0, 0.0, inf, 5.0] has a number that is not finite
  {path}:15: id three: box 0 [0.0, 0.0, 5.0] must have 4 numbers (x1, y1, x2, y2)
  {path}:16: id nosize: image 'img/no.png' does not exist (looked in data/x); \
box 0 [0.0, 0.0, 20.0, 5.0] is outside its 10x10 image
  {path}:17: id odd: image 'img/no.png' does not exist (looked in data/x)
  {path}:18: id two: image 'img/garbage.png' is unreadable: UnidentifiedImageError: \
cannot identify image file '{base / "img" / "garbage.png"}'
  {path}:19: id sizes: image_sizes [[24, 32]] disagree with the files [[32, 24]]
  {path}:21: id many: answer 'blue' is not an option letter (A-Z)
  {path}:22: id c: answer letter 'D' is out of range: 3 options (A-C)
  {path}:24: id blank: answer is empty
  {path}:25: id noopt: multiple_choice record has no options
  {path}:27: id ?: id is empty
  {path}:28: id ok: id is also used by {path}:1
  {path}:29: id cut: not valid JSON at column 25: Expecting value
  {path}:30: id ?: a record must be a JSON object, got str
  {path}:31: id open: not valid JSON at column 27: Unterminated string starting
  {path}:32: id extra: not valid JSON at column 16: Extra data
  {path}:33: id latin: not valid UTF-8 (0xe9 at byte 58)"""
    assert checked.summary("rows") == expected


def test_every_bad_box_of_a_row_is_named(base):
    rows = [
        Row("r:1", {**GOOD, "boxes": [[0, 0, 5], [0, 0, 40, 5], [1, 1, 2, 2]]}),
        Row("r:2", {**GOOD, "id": "no", "images": [], "boxes": [[0, 0, 5, 5]]}),
    ]
    assert [str(p) for p in check_rows(rows, base).problems] == [
        "r:1: id ok: box 0 [0.0, 0.0, 5.0] must have 4 numbers (x1, y1, x2, y2); "
        "box 1 [0.0, 0.0, 40.0, 5.0] is outside its 32x24 image",
        "r:2: id no: has boxes but no image",
    ]


def test_a_blank_multiple_choice_answer_is_only_reported_empty(base):
    checked = check_rows([Row("r:1", {**GOOD, "answer": "", "options": ["a"] * 30})], base)
    assert [str(p) for p in checked.problems] == ["r:1: id ok: answer is empty"]


def test_images_are_looked_up_in_the_base_dir_named_by_itself_by_default(base):
    checked = check_rows([Row("r:1", {**GOOD, "images": ["img/no.png"]})], base)
    assert [p.what for p in checked.problems] == [
        f"image 'img/no.png' does not exist (looked in {base})"
    ]


def test_rows_of_file_name_lines_from_one_counting_blank_ones(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\r\n')
    assert list(rows_of_file(path)) == [
        Row(f"{path}:1", b'{"a": 1}\n'),
        Row(f"{path}:4", b'{"b": 2}\r\n'),
    ]
    assert [row.where for row in rows_of_file(str(path))] == [f"{path}:1", f"{path}:4"]


def test_rows_of_records_are_named_by_their_line_in_the_file(base):
    records = [Record.model_validate(GOOD), Record.model_validate({**GOOD, "id": "two"})]
    rows = list(rows_of_records(records, "out/train.jsonl"))
    assert rows == [
        Row("out/train.jsonl:1", records[0].model_dump()),
        Row("out/train.jsonl:2", records[1].model_dump()),
    ]
    assert list(rows_of_records(records, Path("a.jsonl")))[1].where == "a.jsonl:2"


def test_each_image_is_read_once_per_split(base, monkeypatch):
    opened = []
    real_open = validate.Image.open

    def counting_open(path, *args, **kwargs):
        opened.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(validate.Image, "open", counting_open)
    rows = [Row(f"r:{i}", {**GOOD, "id": str(i)}) for i in range(3)]
    checked = check_rows(rows, base)
    assert len(checked.records) == 3
    assert opened == ["ok.png", "ok.png"]  # verified, then decoded: for the first row only


def test_a_problem_without_a_usable_id_shows_a_question_mark():
    assert str(Problem("f:3", None, "bad")) == "f:3: id ?: bad"
    assert str(Problem("f:3", "  ", "bad")) == "f:3: id ?: bad"
    assert str(Problem("f:3", " q1 ", "bad")) == "f:3: id  q1 : bad"


def test_the_summary_lists_up_to_its_limit_and_counts_the_rest():
    checked = Checked(problems=[Problem(f"f:{i}", str(i), "bad") for i in range(1, 4)], rows=5)
    assert checked.summary("f", limit=2) == (
        "f: 3 of 5 rows are invalid:\n  f:1: id 1: bad\n  f:2: id 2: bad\n  and 1 more"
    )
    assert checked.summary("f", limit=3) == (
        "f: 3 of 5 rows are invalid:\n  f:1: id 1: bad\n  f:2: id 2: bad\n  f:3: id 3: bad"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"id": "r7", "answer": ', "r7"), ('{"answer": "2", ', None), ("not json", None)],
)
def test_the_id_of_a_line_that_does_not_parse_is_read_off_it_when_it_shows(text, expected):
    assert validate._guess_id(text) == expected
