"""The mmbench format: lmms-lab/MMBench config en, split dev (CircularEval copies) → records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_parquet import encoded_image, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.mmbench import SELECT_PROMPT, build_prompt
from vlrl.items.records import read_records

DEV = "en/dev-00000-of-00001.parquet"
TEST = "en/test-00000-of-00001.parquet"
#: The columns of config ``en``, in the order of the dataset card.
COLUMNS = ("index", "question", "hint", "answer", "A", "B", "C", "D", "category", "image",
           "source", "L2-category", "comment", "split")  # fmt: skip
OFFSET = 1_000_000


def _png(shade: int) -> dict[str, Any]:
    return encoded_image((shade, 90, 200), (40, 30))


def _rotations(options: list[str], answer: int) -> list[tuple[list[str], str]]:
    """The question's options rotated once per option (rotation 0 is the original), with the
    letter of the correct option in each."""
    n = len(options)
    return [(options[k:] + options[:k], "ABCD"[(answer - k) % n]) for k in range(n)]


def _question(
    index: int,
    question: str,
    options: list[str],
    answer: int,
    hint: str | None,
    category: str,
    l2: str,
    shade: int,
    empty: str | None = None,
) -> list[dict[str, Any]]:
    """The original row and its circular copies; unused option columns hold ``empty``."""
    image = _png(shade)
    rows = []
    for k, (rotated, letter) in enumerate(_rotations(options, answer)):
        cells = rotated + [empty] * (4 - len(rotated))
        rows.append(
            {
                "index": index + k * OFFSET,
                "question": question,
                "hint": hint,
                "answer": letter,
                **dict(zip("ABCD", cells, strict=True)),
                "category": category,
                "image": image,
                "source": "MMBench",
                "L2-category": l2,
                "comment": None,
                "split": "dev",
            }
        )
    return rows


SCENE = "Which category does this image belong to?"
HEAVY = "Which object is the heaviest?"
TABLE = "According to the table, which year had the most visitors?"
HINT = "The following table shows the number of visitors per year."


def dev_rows() -> list[dict[str, Any]]:
    """Three questions: 4 options and no hint (null), 2 options with a hint, 3 options with a
    hint and the string "nan" in the unused column (``str()`` of the TSV's NaN); 9 rows."""
    scene = _question(0, SCENE, ["beach", "forest", "desert", "city"], 1, None,
                      "image_scene", "coarse_perception", 20)  # fmt: skip
    heavy = _question(5, HEAVY, ["The rock", "The feather"], 0, "Look at the two objects.",
                      "physical_property_reasoning", "attribute_reasoning", 120)  # fmt: skip
    table = _question(12, TABLE, ["2019", "2020", "2021"], 2, HINT,
                      "structuralized_imagetext_understanding", "logic_reasoning", 220,
                      empty="nan")  # fmt: skip
    # the file need not put an original before its copies
    return [heavy[1], *scene, heavy[0], *table]


def write_rows(
    root: Path,
    rows: list[dict[str, Any]],
    file: str = DEV,
    index: str = "int64",
    drop: tuple[str, ...] = (),
) -> None:
    """Write rows as the hub stores them (``datasets`` features; image as ``datasets.Image``).
    ``index`` is int64 as lmms-eval's arithmetic on it needs (the cards of ``cn`` and
    ``MMBench_EN`` say so); ``index="string"`` writes it as the ``en`` card at ac155b9 declares."""
    from datasets import Image, Value

    features = {
        name: Image() if name == "image" else Value(index if name == "index" else "string")
        for name in COLUMNS
        if name not in drop
    }
    if index == "string":
        rows = [{**row, "index": str(row["index"])} for row in rows]
    write_parquet(root / file, rows, features)


def write_mmbench_fixture(root: Path) -> None:
    """A small lmms-lab/MMBench en under ``root``: a dev split of three questions with their
    circular copies, and a test split (no answers) that the format does not read."""
    write_rows(root, dev_rows())
    test = _question(7, SCENE, ["a", "b"], 0, None, "image_scene", "coarse_perception", 60)
    for row in test:
        row["answer"] = None
        row["split"] = "test"
    write_rows(root, test, TEST)


def _records(root: Path) -> dict[str, Any]:
    return {r.id: r for r in read_records(root / "records" / "dev.jsonl")}


def test_rows_become_multiple_choice_records(tmp_path: Path) -> None:
    write_mmbench_fixture(tmp_path)
    assert convert_dataset("mmbench", tmp_path) == {"dev": 9}
    records = _records(tmp_path)
    assert list(records) == ["1000005", "0", "1000000", "2000000", "3000000", "5",
                             "12", "1000012", "2000012"]  # fmt: skip
    scene = records["0"]
    assert scene.problem == (
        f"Question: {SCENE}\nOptions:\nA. beach\nB. forest\nC. desert\nD. city\n{SELECT_PROMPT}"
    )
    assert (scene.options, scene.answer) == (["beach", "forest", "desert", "city"], "B")
    assert scene.problem_type == "multiple_choice" and scene.data_source == "mmbench"
    assert scene.task == "coarse_perception" and scene.image_sizes == [[40, 30]]
    assert scene.groups == {"circular": "0", "category": "image_scene"}
    heavy = records["5"]
    assert heavy.problem == (
        "Hint: Look at the two objects.\n"
        f"Question: {HEAVY}\nOptions:\nA. The rock\nB. The feather\n{SELECT_PROMPT}"
    )
    assert (heavy.options, heavy.answer, heavy.task) == (
        ["The rock", "The feather"],
        "A",
        "attribute_reasoning",
    )
    # the rotated copy: options shifted, the letter follows the correct option
    assert (records["1000005"].options, records["1000005"].answer) == (
        ["The feather", "The rock"],
        "B",
    )
    assert [records[i].answer for i in ("0", "1000000", "2000000", "3000000")] == list("BADC")


def test_nan_strings_are_no_hint_and_no_option(tmp_path: Path) -> None:
    write_mmbench_fixture(tmp_path)
    convert_dataset("mmbench", tmp_path)
    table = _records(tmp_path)["12"]
    assert table.options == ["2019", "2020", "2021"] and table.answer == "C"
    assert table.problem == (
        f"Hint: {HINT}\nQuestion: {TABLE}\nOptions:\nA. 2019\nB. 2020\nC. 2021\n{SELECT_PROMPT}"
    )
    rows = dev_rows()
    rows[6]["hint"] = "nan"  # the original of question 12
    write_rows(tmp_path, rows)
    convert_dataset("mmbench", tmp_path)
    assert _records(tmp_path)["12"].problem.startswith(f"Question: {TABLE}\n")


def test_circular_groups_are_index_mod_1e6(tmp_path: Path) -> None:
    write_mmbench_fixture(tmp_path)
    convert_dataset("mmbench", tmp_path)
    lines = (tmp_path / "records" / "dev.jsonl").read_text().splitlines()
    groups: dict[str, list[str]] = {}
    for raw in map(json.loads, lines):
        assert raw["groups"]["circular"] == str(int(raw["id"]) % OFFSET)
        groups.setdefault(raw["groups"]["circular"], []).append(raw["id"])
    # an N-option question is asked N times
    assert {g: len(ids) for g, ids in groups.items()} == {"0": 4, "5": 2, "12": 3}
    # the copies share the original's picture: one file per question
    assert len(list((tmp_path / "records" / "images").iterdir())) == 3


def test_circular_eval_needs_every_rotation(tmp_path: Path, project: Path) -> None:
    """The benchmark's CircularEval counts a question only when all its rotations are right."""
    from vlrl.benchmarks import load_benchmark
    from vlrl.scoring.metrics import compute

    write_mmbench_fixture(tmp_path)
    convert_dataset("mmbench", tmp_path)
    bench = load_benchmark("mmbench_en_dev")
    assert bench.headline == "CircularEval"
    items = [
        {"id": r.id, "task": r.task, "groups": r.groups, "correct": int(r.id != "2000000")}
        for r in _records(tmp_path).values()
    ]
    values = {name: m["value"] for name, m in compute(items, bench.metrics).items()}
    assert values == pytest.approx({"accuracy": 8 / 9, "CircularEval": 2 / 3})


def test_index_as_a_string_is_read_as_its_number(tmp_path: Path) -> None:
    # the card of config en (ac155b9) declares index a string
    write_rows(tmp_path, dev_rows(), index="string")
    assert convert_dataset("mmbench", tmp_path) == {"dev": 9}
    assert _records(tmp_path)["1000005"].groups["circular"] == "5"


def test_only_the_dev_split_is_read(tmp_path: Path) -> None:
    write_mmbench_fixture(tmp_path)
    convert_dataset("mmbench", tmp_path)
    assert sorted(p.name for p in (tmp_path / "records").glob("*.jsonl")) == ["dev.jsonl"]
    (tmp_path / DEV).unlink()
    with pytest.raises(DataError, match=r"no file matches 'en/dev-\*\.parquet'"):
        convert_dataset("mmbench", tmp_path)


def test_build_prompt_without_hint() -> None:
    assert (
        build_prompt("Q?", None, ["x", "y"])
        == f"Question: Q?\nOptions:\nA. x\nB. y\n{SELECT_PROMPT}"
    )


def _bad(tmp_path: Path, at: int, drop: tuple[str, ...] = (), **change: Any) -> str:
    """Convert the fixture with row ``at`` changed; the error must name that row."""
    rows = dev_rows()
    rows[at].update(change)
    write_rows(tmp_path, rows, drop=drop)
    with pytest.raises(DataError) as info:
        convert_dataset("mmbench", tmp_path)
    message = str(info.value)
    assert f"{DEV} row {at}" in message
    return message


@pytest.mark.parametrize(
    ("at", "change", "needle"),
    [
        (1, {"answer": "E"}, "'answer' is 'E', not one of its option letters ABCD"),
        (0, {"answer": "C"}, "'answer' is 'C', not one of its option letters AB"),
        (1, {"answer": ""}, "field 'answer' is empty"),
        (1, {"answer": "b"}, "'answer' is 'b'"),
        (1, {"C": None}, "option 'D' is given but option 'C' is empty"),
        (6, {"B": "nan"}, "option 'C' is given but option 'B' is empty"),
        (5, {"B": None}, "has 1 options in columns A-D"),
        (2, {"question": None}, "field 'question' is empty"),
        (2, {"L2-category": " "}, "field 'L2-category' is empty"),
        (3, {"image": {"bytes": b"not an image", "path": None}}, "'image' is not a readable"),
        (3, {"image": None}, "field 'image' is empty"),
        # an orphan copy: question 9 has no original row
        (4, {"index": 1_000_009}, "circular copy 1000009 of question 9, which is not in the file"),
        # a copy whose correct option is not its original's
        (3, {"answer": "A"}, "is circular copy 2000000 with correct option 'desert'"),
        (6, {"index": 0}, "repeats index 0 of en/dev-00000-of-00001.parquet row 1"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, at: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, at, **change)


def test_a_bad_string_index_is_named(tmp_path: Path) -> None:
    rows = dev_rows()
    rows[2]["index"] = "12a"
    write_rows(tmp_path, rows, index="string")
    with pytest.raises(DataError, match=rf"{DEV} row 2: field 'index' is '12a'"):
        convert_dataset("mmbench", tmp_path)


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    assert "has no field 'L2-category'" in _bad(tmp_path, 0, drop=("L2-category",))


# Circular copies checked in process (the mutation tests of issue 40).


def test_an_orphan_circular_copy_is_the_whole_row_message() -> None:
    from vlrl.data.formats import Row, RowError
    from vlrl.data.formats.mmbench import check_copy
    from vlrl.items.records import Record

    copy = Record(
        id="1000009", images=[], problem="Which?", answer="A", problem_type="multiple_choice",
        options=["x", "y"], data_source="mmbench",
    )  # fmt: skip
    with pytest.raises(RowError) as info:
        check_copy(Row(DEV, 4, {"index": 1_000_009}), 1_000_009, copy, {})
    assert str(info.value) == (
        f"{DEV} row 4: is circular copy 1000009 of question 9, which is not in the file "
        "(CircularEval groups the rows by index % 1e6)"
    )


def test_the_first_circular_copy_is_checked_against_its_original(tmp_path: Path) -> None:
    # index 1000000 (the first copy of question 0) with a correct option not its original's
    message = _bad(tmp_path, 2, answer="B")
    assert message == (
        f"{DEV} row 2: is circular copy 1000000 with correct option 'desert', but its original "
        f"({DEV} row 1) has 'forest'"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [(float("nan"), True), (1.5, False), ("  ", True), (" nan ", True), ("0", False)],
)
def test_absent_cells(value: Any, expected: bool) -> None:
    from vlrl.data.formats.mmbench import absent

    assert absent(value) is expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hint": 5}, "field 'hint' must be a string: 5"),
        ({"B": 5}, "field 'B' must be a string: 5"),
    ],
)
def test_a_non_string_hint_or_option_is_the_whole_row_message(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmbench import convert_row

    with pytest.raises(RowError) as info:
        convert_row(Row(DEV, 1, {**dev_rows()[1], **change}), ImageStore(tmp_path), 0)
    assert str(info.value) == f"{DEV} row 1: {message}"


def test_the_question_goes_into_the_prompt_as_written(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row
    from vlrl.data.formats.mmbench import SELECT_PROMPT, convert_row

    fields = {**dev_rows()[5], "question": " Which object is the heaviest? "}
    rec = convert_row(Row(DEV, 5, fields), ImageStore(tmp_path), 5)
    assert rec.problem == (
        "Hint: Look at the two objects.\nQuestion:  Which object is the heaviest? \nOptions:\n"
        f"A. The rock\nB. The feather\n{SELECT_PROMPT}"
    )
