"""The mmstar format: Lin-Chen/MMStar mmstar.parquet (val) → records; options parsed from text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hub_parquet import image_bytes, write_parquet

from vlrl.core.errors import DataError
from vlrl.data.formats import convert_dataset
from vlrl.data.formats.mmstar import parse_options
from vlrl.items.records import read_records

FILE = "mmstar.parquet"
MATHVISTA_HINT = (
    "Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, "
    "at the end.\n"
)


def _jpeg(shade: int) -> bytes:
    return image_bytes((shade, 160, 40), (36, 28), "JPEG")


def _row(index: int, question: str, answer: str, category: str, l2: str, source: str) -> dict:
    return {
        "index": index,
        "question": question,
        "image": _jpeg(30 * index),
        "answer": answer,
        "category": category,
        "l2_category": l2,
        "meta_info": {"source": source, "split": "val", "image_path": f"images/{index}.jpg"},
    }


#: (question, answer, category, l2_category, source): the layouts MMStar's questions come in.
QUESTIONS = [
    # "Options: A: ..., B: ..." after the question (taken from MMBench, SEED, AI2D ...)
    ("Which option describes the scene in the image?\nOptions: A: A beach at sunset., "
     "B: A snowy forest., C: A busy street., D: An empty classroom.", "A",
     "coarse perception", "image scene and topic", "MMBench"),
    # MathVista's query: hint, "Question:", "Choices:" and "(A) ..." lines
    (f"{MATHVISTA_HINT}Question: What is the value of x?\nChoices:\n(A) 3\n(B) 4\n(C) 5\n(D) 6",
     "C", "math", "geometry", "MathVista"),
    # "(A) ..." lines without a "Choices:" line
    ("How many birds are there?\n(A) 2\n(B) 3\n(C) 4\n(D) 5", "B",
     "fine-grained perception", "object counting", "MathVista"),
    # a yes/no question: lmms-eval cuts " Please answer yes or no."
    ("Is the arrow pointing left? Please answer yes or no.\nOptions: A: Yes, B: No", "B",
     "logical reasoning", "diagram reasoning", "SEEDBench_IMG"),
    # an option written "nan" (two such rows on the hub) stays an option
    ("Which substance is a liquid?\nOptions: A: nan, B: ice, C: steam, D: sand", "A",
     "science & technology", "biology & chemistry & physics", "ScienceQA"),
    # commas and colons inside an option's text
    ("What is the ratio of red to blue?\nOptions: A: 3:2, roughly, B: 2:3, C: 1:1, D: 4:1", "A",
     "instance reasoning", "cross-instance relation reasoning", "MMBench"),
    # MMMU's image placeholder stays in the text
    ("<image 1> What is the total cost?\nOptions: A: $10, B: $12, C: $15, D: $20", "D",
     "math", "numeric commonsense and calculation", "MMMU"),
]  # fmt: skip


def mmstar_rows() -> list[dict[str, Any]]:
    """Seven val rows in the layouts of :data:`QUESTIONS`."""
    return [_row(i, *question) for i, question in enumerate(QUESTIONS)]


def write_rows(
    root: Path, rows: list[dict[str, Any]], image: str = "binary", drop: tuple[str, ...] = ()
) -> None:
    """Write rows as the hub file holds them: the card's columns (``meta_info`` a struct), the
    image as raw bytes (``image="binary"``, as public loaders read mmstar.parquet) or as a
    ``datasets.Image`` struct (``image="struct"``)."""
    from datasets import Image, Value

    string = Value("string")
    features = {
        name: feature
        for name, feature in {
            "index": Value("int64"),
            "question": string,
            "image": Value("binary") if image == "binary" else Image(),
            "answer": string,
            "category": string,
            "l2_category": string,
            "meta_info": {"source": string, "split": string, "image_path": string},
        }.items()
        if name not in drop
    }
    if image == "struct":
        rows = [dict(row) for row in rows]
        for row in rows:
            if row.get("image") is not None:
                row["image"] = {"bytes": row["image"], "path": None}
    write_parquet(root / FILE, rows, features)


def write_mmstar_fixture(root: Path) -> None:
    """A small Lin-Chen/MMStar under ``root``: mmstar.parquet at the repository root."""
    write_rows(root, mmstar_rows())


def _records(root: Path) -> dict[str, Any]:
    return {r.id: r for r in read_records(root / "records" / "val.jsonl")}


def test_rows_become_multiple_choice_records(tmp_path: Path) -> None:
    write_mmstar_fixture(tmp_path)
    assert convert_dataset("mmstar", tmp_path) == {"val": 7}
    records = _records(tmp_path)
    assert list(records) == [str(i) for i in range(7)]
    first = records["0"]
    assert first.problem == QUESTIONS[0][0]  # the question as lmms-eval sends it, options in it
    assert first.options == [
        "A beach at sunset.",
        "A snowy forest.",
        "A busy street.",
        "An empty classroom.",
    ]
    assert (first.answer, first.problem_type, first.data_source) == (
        "A",
        "multiple_choice",
        "mmstar",
    )
    assert first.task == "coarse perception" and first.image_sizes == [[36, 28]]
    assert first.groups == {"l2_category": "image scene and topic"}
    mathvista = records["1"]
    assert mathvista.problem.startswith(MATHVISTA_HINT + "Question: What is the value of x?")
    assert (mathvista.options, mathvista.answer) == (["3", "4", "5", "6"], "C")
    assert records["2"].options == ["2", "3", "4", "5"]
    assert [r.task for r in records.values()] == [q[2] for q in QUESTIONS]
    assert [r.answer for r in records.values()] == [q[1] for q in QUESTIONS]


def test_yes_no_sentence_is_cut_as_lmms_eval_does(tmp_path: Path) -> None:
    write_mmstar_fixture(tmp_path)
    convert_dataset("mmstar", tmp_path)
    yes_no = _records(tmp_path)["3"]
    assert yes_no.problem == "Is the arrow pointing left?\nOptions: A: Yes, B: No"
    assert yes_no.options == ["Yes", "No"]


def test_nan_option_commas_colons_and_placeholders(tmp_path: Path) -> None:
    write_mmstar_fixture(tmp_path)
    convert_dataset("mmstar", tmp_path)
    records = _records(tmp_path)
    assert records["4"].options == ["nan", "ice", "steam", "sand"]
    assert records["4"].answer == "A"
    assert records["5"].options == ["3:2, roughly", "2:3", "1:1", "4:1"]
    assert records["6"].problem.startswith("<image 1> What is the total cost?")
    assert records["6"].options == ["$10", "$12", "$15", "$20"]


@pytest.mark.parametrize(
    ("question", "options"),
    [
        ("Q?\nOptions: A: x, B: y", ["x", "y"]),
        ("Q?\nOptions: A:x,B:y,C:z", ["x", "y", "z"]),
        # the list after the last "Options:"
        ("Options: in the text.\nOptions: A: x, B: y", ["x", "y"]),
        # letters out of order end the list: "D" is not looked for before "C"
        ("Q?\nOptions: A: x, D: y", None),
        ("Q?\nOptions: B: x, C: y", None),
        ("Q?\nChoices:\n(A) x\n(B) y\n", ["x", "y"]),
        ("Q?\n(A) x", None),
        ("Q?\n(B) x\n(C) y", None),
        ("What is shown?", None),
    ],
)
def test_parse_options(question: str, options: list[str] | None) -> None:
    assert parse_options(question) == options


def test_an_image_struct_is_read_too(tmp_path: Path) -> None:
    write_rows(tmp_path, mmstar_rows()[:2], image="struct")
    assert convert_dataset("mmstar", tmp_path) == {"val": 2}
    assert _records(tmp_path)["1"].image_sizes == [[36, 28]]


def test_l2_macro_mean_differs_from_accuracy(tmp_path: Path, project: Path) -> None:
    """accuracy (headline) is VLMEvalKit's micro mean; l2_macro is lmms-eval's mean of the
    l2-category means."""
    from vlrl.benchmarks import load_benchmark
    from vlrl.scoring.metrics import compute

    write_mmstar_fixture(tmp_path)
    convert_dataset("mmstar", tmp_path)
    bench = load_benchmark("mmstar")
    assert bench.headline == "accuracy"
    records = list(_records(tmp_path).values())
    # both math rows in one l2-category: one right, one wrong; every other row right
    for rec in records[:2]:
        rec.groups["l2_category"] = "geometry"
    items = [
        {"id": r.id, "task": r.task, "groups": r.groups, "correct": int(r.id != "1")}
        for r in records
    ]
    values = {name: m["value"] for name, m in compute(items, bench.metrics).items()}
    # 6/7 of the rows; the 6 l2-categories: geometry 1/2, the 5 others 1
    assert values == pytest.approx({"accuracy": 6 / 7, "l2_macro": (0.5 + 5) / 6})


def _bad(tmp_path: Path, at: int, drop: tuple[str, ...] = (), **change: Any) -> str:
    """Convert the fixture with row ``at`` changed; the error must name that row."""
    rows = mmstar_rows()
    rows[at].update(change)
    write_rows(tmp_path, rows, drop=drop)
    with pytest.raises(DataError) as info:
        convert_dataset("mmstar", tmp_path)
    message = str(info.value)
    assert f"{FILE} row {at}" in message
    return message


@pytest.mark.parametrize(
    ("at", "change", "needle"),
    [
        (0, {"question": "Which option describes the scene?"}, "has no options in it"),
        (0, {"answer": "E"}, "'answer' is 'E', not one of the letters ABCD of the 4 options"),
        (3, {"answer": "C"}, "'answer' is 'C', not one of the letters AB"),
        (1, {"answer": " "}, "field 'answer' is empty"),
        (2, {"answer": "b"}, "'answer' is 'b'"),
        (2, {"category": "perception"}, "'category' is 'perception', not one of"),
        (4, {"l2_category": None}, "field 'l2_category' is empty"),
        (5, {"question": None}, "field 'question' is empty"),
        (6, {"image": b"not an image"}, "'image' is not a readable image"),
        (6, {"image": None}, "field 'image' is empty"),
        (6, {"index": 0}, "repeats index 0 of mmstar.parquet row 0"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, at: int, change: dict[str, Any], needle: str
) -> None:
    assert needle in _bad(tmp_path, at, **change)


def test_a_missing_column_and_a_missing_file(tmp_path: Path) -> None:
    assert "has no field 'l2_category'" in _bad(tmp_path, 0, drop=("l2_category",))
    (tmp_path / FILE).unlink()
    with pytest.raises(DataError, match=r"no file matches 'mmstar\.parquet'"):
        convert_dataset("mmstar", tmp_path)


# Single rows checked in process (the mutation tests of issue 40).


def test_a_question_without_options_quotes_its_last_120_characters(tmp_path: Path) -> None:
    from vlrl.data.formats import ImageStore, Row, RowError
    from vlrl.data.formats.mmstar import convert_row

    question = "".join(f"{i:03d}" for i in range(50)) + " Which one?"  # 161 characters, cut
    row = Row(FILE, 4, _row(4, question, "A", "math", "geometry", "MMBench"))
    with pytest.raises(RowError) as info:
        convert_row(row, ImageStore(tmp_path), 4)
    assert str(info.value) == (
        "mmstar.parquet row 4: field 'question' has no options in it (neither "
        f"'Options: A: ..., B: ...' nor '(A) ...' lines at its end): {question[-120:]!r}"
    )


def test_each_inline_option_letter_is_looked_for_after_the_previous_one() -> None:
    question = "Which pair?\nOptions: A: x, C: y, B: z, C: w"
    assert parse_options(question) == ["x, C: y", "z", "w"]
