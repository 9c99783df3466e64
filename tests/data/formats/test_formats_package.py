"""vlrl.data.formats itself: a raw row's fields and the whole messages naming it, the image store,
the parquet reader, and convert_dataset's handling of rejected rows, repeated ids and the files
it writes (with a stand-in format module)."""

from __future__ import annotations

import base64
import json
import sys
import types

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hub_parquet import image_bytes
from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data import formats
from vlrl.data.formats import ImageStore, Row, RowError, convert_dataset, parquet_rows, record
from vlrl.items.records import Record

PNG = image_bytes((10, 20, 30), (8, 6))
JPEG = image_bytes((10, 20, 30), (8, 6), "JPEG")


def test_a_row_is_named_by_file_and_position_and_its_own_id():
    err = Row("d/x.parquet", 4, {"problem_id": 12, "id": None}).error("field 'a' is empty")
    assert (str(err), err.row_id) == ("d/x.parquet row 4: field 'a' is empty", "12")
    assert isinstance(err, DataError)
    assert Row("f", 0, {"id": [1], "question_id": "q", "index": 3}).id == "q"
    assert Row("f", 0, {"id": {"a": 1}, "index": 0}).id == "0"
    assert Row("f", 0, {"x": 1}).id is None
    assert Row("f", 0, ["id"]).id is None
    assert RowError("m").row_id is None


def test_a_field_must_be_there_and_not_empty_unless_allowed():
    row = Row("f", 1, {"b": 1, "a": " ", "n": None})
    with pytest.raises(RowError) as exc:
        row.field("c")
    assert str(exc.value) == "f row 1: has no field 'c' (fields: ['a', 'b', 'n'])"
    for name in ("a", "n"):
        with pytest.raises(RowError) as exc:
            row.field(name)
        assert str(exc.value) == f"f row 1: field {name!r} is empty"
        assert row.field(name, allow_empty=True) == row.data[name]
    assert row.field("b") == 1


def test_a_text_field_is_a_string_stripped_unless_asked():
    row = Row("f", 2, {"a": " x ", "n": None, "i": 5, "e": ""})
    assert (row.text("a"), row.text("a", strip=False)) == ("x", " x ")
    assert (row.text("n", allow_empty=True), row.text("e", allow_empty=True)) == ("", "")
    with pytest.raises(RowError) as exc:
        row.text("i")
    assert str(exc.value) == "f row 2: field 'i' must be a string: 5"
    for name in ("n", "e"):
        with pytest.raises(RowError) as exc:
            row.text(name)
        assert str(exc.value) == f"f row 2: field {name!r} is empty"


@pytest.mark.parametrize(("value", "number"), [(" 7 ", 7), ("0", 0), (3, 3), (0, 0)])
def test_a_natural_field_is_a_non_negative_integer(value, number):
    assert Row("f", 0, {"n": value}).natural("n") == number


@pytest.mark.parametrize("value", [-1, True, 2.0, "-3", "٣", "1.5", "x"])
def test_anything_else_is_not_a_natural(value):
    with pytest.raises(RowError) as exc:
        Row("f", 0, {"n": value}).natural("n")
    assert str(exc.value) == f"f row 0: field 'n' is {value!r}, not a non-negative integer"


def test_the_store_writes_each_picture_once_by_its_hash(tmp_path):
    store = ImageStore(tmp_path / "rec")
    row = Row("f", 0, {})
    rel = store.save({"bytes": PNG, "path": "x"}, row)
    assert rel == f"images/{__import__('hashlib').sha256(PNG).hexdigest()[:32]}.png"
    assert (tmp_path / "rec" / rel).read_bytes() == PNG
    assert store.save(bytearray(PNG), row) == rel
    assert store.save(base64.b64encode(PNG).decode(), row) == rel
    assert store.save(JPEG, row).endswith(".jpg")
    pil = store.save(Image.open(__import__("io").BytesIO(JPEG)), row)
    assert pil.endswith(".png") and Image.open(tmp_path / "rec" / pil).size == (8, 6)
    (tmp_path / "rec" / rel).write_bytes(b"kept")
    assert store.save(PNG, row) == rel and (tmp_path / "rec" / rel).read_bytes() == b"kept"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (b"", "field 'pic' holds no image bytes (bytes)"),
        ("", "field 'pic' holds no image bytes (str)"),
        (None, "field 'pic' holds no image bytes (NoneType)"),
        ({"bytes": None}, "field 'pic' holds no image bytes (NoneType)"),
        ("not base64!", "field 'pic' is a string but not base64 image data"),
        (
            base64.b64encode(PNG).decode().replace("A", "A\n", 1),
            "field 'pic' is a string but not base64 image data",
        ),
        (b"junk", "field 'pic' is not a readable image: cannot identify image file"),
    ],
)
def test_a_value_that_is_no_picture_is_an_error_naming_the_field(tmp_path, value, says):
    with pytest.raises(RowError) as exc:
        ImageStore(tmp_path).save(value, Row("f", 5, {"id": "q"}), "pic")
    assert str(exc.value).startswith(f"f row 5: {says}")
    assert exc.value.row_id == "q"


def test_a_picture_is_named_image_by_default(tmp_path):
    with pytest.raises(RowError) as exc:
        ImageStore(tmp_path).save(b"", Row("f", 5, {}))
    assert str(exc.value) == "f row 5: field 'image' holds no image bytes (bytes)"


def test_record_names_the_row_and_every_schema_problem():
    with pytest.raises(RowError) as exc:
        record(Row("f", 1, {"id": 3}), id="a", images=[], problem=5, answer="x", data_source="t")
    assert (str(exc.value), exc.value.row_id) == (
        "f row 1: problem: Input should be a valid string; problem_type: Field required",
        "3",
    )
    with pytest.raises(RowError) as exc:
        record(Row("f", 1, {}), id="a", images=[1], problem="p", answer="x",
               problem_type="ocr", data_source="t")  # fmt: skip
    assert str(exc.value) == "f row 1: images.0: Input should be a valid string"


def test_parquet_rows_read_the_matching_files_in_order(tmp_path):
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "data" / "b.parquet")
    pq.write_table(pa.table({"a": [3]}), tmp_path / "data" / "a.parquet")
    assert list(parquet_rows(tmp_path, "data/*.parquet")) == [
        Row("data/a.parquet", 0, {"a": 3}),
        Row("data/b.parquet", 0, {"a": 1}),
        Row("data/b.parquet", 1, {"a": 2}),
    ]
    with pytest.raises(DataError) as exc:
        list(parquet_rows(tmp_path, "*.parquet"))
    assert str(exc.value) == f"{tmp_path}: no file matches '*.parquet'"
    (tmp_path / "data" / "c.parquet").write_bytes(b"junk")
    with pytest.raises(DataError) as exc:
        list(parquet_rows(tmp_path, "data/c.parquet"))
    assert str(exc.value).startswith(
        f"{tmp_path / 'data' / 'c.parquet'}: not a readable parquet file: "
    )


# ------------------------------------------------------------------------- convert_dataset
def rec(rid: str, **extra) -> Record:
    return Record(id=rid, images=[], problem="Q \u00e9", answer="1", problem_type="numerical",
                  data_source="t", **extra)  # fmt: skip


@pytest.fixture()
def fake_format(monkeypatch):
    """A format module ``fakefmt`` yielding what the test puts in ``out`` (a list of pairs)."""
    module = types.ModuleType("vlrl.data.formats.fakefmt")
    module.out, module.calls = [], []

    def convert(source, images):
        module.calls.append((source, images))
        yield from module.out

    module.convert = convert
    monkeypatch.setitem(sys.modules, "vlrl.data.formats.fakefmt", module)
    monkeypatch.setattr(formats, "formats", lambda: ["fakefmt", "mmstar"])
    return module


def test_records_are_written_per_split_with_a_report(tmp_path, fake_format):
    fake_format.out = [("val", rec("b")), ("train", rec("a", task="x")), ("val", rec("a"))]
    assert convert_dataset("fakefmt", tmp_path) == {"train": 1, "val": 2}
    ((source, images),) = fake_format.calls
    assert source == tmp_path and images.records_dir == tmp_path / "records"
    out = tmp_path / "records"
    assert (out / "train.jsonl").read_text(encoding="utf-8") == (
        '{"id": "a", "images": [], "problem": "Q \u00e9", "answer": "1", '
        '"problem_type": "numerical", "data_source": "t", "task": "x"}\n'
    )
    assert [json.loads(x)["id"] for x in (out / "val.jsonl").read_text().splitlines()] == ["b", "a"]
    assert (out / "report.json").read_text() == (
        '{\n  "train": {\n    "records": 1,\n    "rejected": 0\n  },\n'
        '  "val": {\n    "records": 2,\n    "rejected": 0\n  }\n}\n'
    )
    assert not (out / "rejected.jsonl").exists()


def test_rejected_rows_stop_the_conversion_every_one_named(tmp_path, fake_format):
    bad = [("train", RowError(f"f row {i}: bad \u00e9", row_id=str(i) if i % 2 else None))
           for i in range(formats.SHOWN_REJECTED + 2)]  # fmt: skip
    fake_format.out = [("train", rec("a")), *bad]
    with pytest.raises(DataError) as exc:
        convert_dataset("fakefmt", tmp_path)
    lines = str(exc.value).splitlines()
    assert lines[0] == (
        f"{tmp_path}: format fakefmt: 22 rows cannot be converted (set bad_rows: report in the "
        "dataset config to leave them out, listed in records/rejected.jsonl):"
    )
    assert lines[1:3] == ["  train: f row 0: bad \u00e9", "  train id 1: f row 1: bad \u00e9"]
    assert len(lines) == 1 + formats.SHOWN_REJECTED + 1 and lines[-1] == "  … and 2 more"
    assert not (tmp_path / "records" / "train.jsonl").exists()
    fake_format.out = [("train", rec("a")), bad[1]]
    with pytest.raises(DataError) as exc:
        convert_dataset("fakefmt", tmp_path)
    assert str(exc.value).splitlines() == [
        f"{tmp_path}: format fakefmt: 1 row cannot be converted (set bad_rows: report in the "
        "dataset config to leave them out, listed in records/rejected.jsonl):",
        "  train id 1: f row 1: bad \u00e9",
    ]


def test_rejected_rows_are_reported_by_split(tmp_path, fake_format):
    fake_format.out = [("train", rec("a")), ("test", RowError("f row 0: bad \u00e9", "q")),
                       ("train", RowError("f row 1: worse", None)),
                       ("test", RowError("f row 2: bad", "r"))]  # fmt: skip
    assert convert_dataset("fakefmt", tmp_path, bad_rows="report") == {"train": 1}
    out = tmp_path / "records"
    assert (out / "rejected.jsonl").read_text(encoding="utf-8") == (
        '{"split": "test", "id": "q", "why": "f row 0: bad \u00e9"}\n'
        '{"split": "train", "id": null, "why": "f row 1: worse"}\n'
        '{"split": "test", "id": "r", "why": "f row 2: bad"}\n'
    )
    assert json.loads((out / "report.json").read_text()) == {
        "test": {"records": 0, "rejected": 2},
        "train": {"records": 1, "rejected": 1},
    }


def test_an_id_twice_in_a_split_is_an_error(tmp_path, fake_format):
    fake_format.out = [("train", rec("a")), ("test", rec("a")), ("train", rec("a"))]
    with pytest.raises(DataError) as exc:
        convert_dataset("fakefmt", tmp_path)
    assert str(exc.value) == f"{tmp_path}: format fakefmt: id 'a' appears twice in train"


def test_a_format_with_no_rows_is_an_error(tmp_path, fake_format):
    with pytest.raises(DataError) as exc:
        convert_dataset("fakefmt", tmp_path, bad_rows="report")
    assert str(exc.value) == f"{tmp_path}: format fakefmt found no rows"


def test_unknown_formats_and_settings_are_refused(tmp_path, fake_format):
    with pytest.raises(DataError) as exc:
        convert_dataset("nofmt", tmp_path)
    assert str(exc.value) == "no dataset format 'nofmt'; known: ['fakefmt', 'mmstar']"
    with pytest.raises(ValueError) as exc:
        convert_dataset("fakefmt", tmp_path, bad_rows="skip")
    assert str(exc.value) == "bad_rows must be 'stop' or 'report', not 'skip'"
    with pytest.raises(DataError) as exc:
        convert_dataset("fakefmt", tmp_path, expected_rows={"train": 1})
    assert (
        str(exc.value) == "format fakefmt checks no row counts: expected_rows does not apply to it"
    )


def test_expected_rows_go_to_a_format_that_checks_them(tmp_path, fake_format):
    seen = []

    def convert(source, images, expected_rows=None):
        seen.append(expected_rows)
        yield "train", rec("a")

    fake_format.convert = convert
    convert_dataset("fakefmt", tmp_path, expected_rows={"train": 1})
    convert_dataset("fakefmt", tmp_path)
    convert_dataset("fakefmt", tmp_path, expected_rows={})
    assert seen == [{"train": 1}, None, None]


def test_the_formats_are_the_package_modules_sorted():
    names = formats.formats()
    assert names == sorted(names) and "mmstar" in names and "easyr1" in names
    assert not [n for n in names if n.startswith("_")]


@pytest.mark.usefixtures("ascii_locale")
def test_records_and_rejected_rows_are_utf8_whatever_the_locale(tmp_path, fake_format):
    fake_format.out = [("train", rec("a")), ("train", RowError("f row 1: bad \u00e9", "q"))]
    assert convert_dataset("fakefmt", tmp_path, bad_rows="report") == {"train": 1}
    out = tmp_path / "records"
    assert '"problem": "Q \u00e9"' in (out / "train.jsonl").read_text(encoding="utf-8")
    assert (out / "rejected.jsonl").read_text(encoding="utf-8") == (
        '{"split": "train", "id": "q", "why": "f row 1: bad \u00e9"}\n'
    )
