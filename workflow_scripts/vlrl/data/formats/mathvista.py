"""MathVista testmini: ``AI4Math/MathVista`` (config ``default``, split ``testmini``, 1,000 rows in
``data/testmini-*.parquet``; the ``test`` split has no public answers and is not read).

Raw schema (the dataset card's ``dataset_info``):

- ``pid``: string, the problem id ("1".."1000");
- ``question``: string;
- ``image``: string, the image's path inside the original zip (unused);
- ``decoded_image``: image (parquet struct ``{bytes, path}``);
- ``choices``: list of strings, or null for free-form questions;
- ``unit``: string or null (e.g. "years");
- ``precision``: float64 or null: the decimals of a float answer (1.0 or 2.0 in testmini);
- ``answer``: string; for ``multi_choice`` the TEXT of the gold choice, not its letter;
- ``question_type``: "multi_choice" | "free_form";
- ``answer_type``: "text" (all multi_choice rows) | "integer" | "float" | "list";
- ``metadata``: struct {category, context, grade, img_height, img_width, language,
  skills: list of strings, source, split, task};
- ``query``: string, the official prompt (hint first, then question and choices).

Mapping to :class:`vlrl.items.records.Record`:

- ``id`` = pid; ``images`` = [decoded_image]; ``data_source`` = "mathvista";
- ``problem`` = the zero-shot query lmms-eval builds for ``mathvista_testmini_cot``
  (``lmms_eval/tasks/mathvista/utils.py::mathvista_doc_to_text`` →
  ``mathvista_evals.py::MathVistaEvaluator.create_one_query`` with ``shot_type="step-by-step"``,
  ``shot=0``, no caption, no OCR; lmms-eval commit 75571cfe). lmms-eval does NOT send the
  dataset's ``query`` field; it builds::

      Question: {question}[ (Unit: {unit})]
      Choices:            (only when there are choices)
      (A) {choice 1}
      (B) {choice 2}
      Hint: {hint by question_type / answer_type / precision}

  The hint is kept: it is the benchmark's own text (the ``query`` field carries the same
  sentence) and it states the answer format the exact-match scoring relies on (an integer, a
  float with one or two decimals, a Python list);
- multi_choice → ``multiple_choice``: ``options`` = choices, ``answer`` = the letter of the
  first choice equal to the gold text, ``accepted`` = the letters of the other choices equal to
  it (three testmini rows repeat a choice text; 781's gold "18" is both C and D: the reference
  compares texts, so both letters are right there);
- integer / float → ``numerical`` (answer as on the hub, e.g. "1.2", "51.04"); a float keeps
  ``precision`` (int), the decimals the reference rounds a prediction to;
- list → ``free_form`` (answer such as "[2014, 2016]");
- ``task`` = metadata.task (FQA/GPS/MWP/TQA/VQA, the single-valued breakdown of the paper and
  of lmms-eval's ``mathvista_aggregate_results``; skills are multi-valued and not kept).

Rows the reference cannot prompt are errors: multi_choice without text answer_type, free_form
text answers, a float precision other than 1 or 2 (``create_one_query`` asserts / has no hint).

Scoring (lupantech/MathVista ``evaluation/calculate_score.py::normalize_extracted_answer``,
same in lmms-eval ``mathvista_evals.py``): integer → ``str(int(float(x)))``; float →
``str(round(float(x), int(precision)))``; both then compared as strings with the answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mathvista"
SPLIT = "testmini"
PATTERN = "data/testmini-*.parquet"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: ``create_one_query``'s step-by-step hints (lmms-eval ``mathvista_evals.py``), keyed by
#: (answer_type, precision) — precision only for floats.
HINTS: dict[tuple[str, int | None], str] = {
    ("text", None): "Hint: Please answer the question and provide the correct option letter, "
    "e.g., A, B, C, D, at the end.",
    ("integer", None): "Hint: Please answer the question requiring an integer answer and provide "
    "the final value, e.g., 1, 2, 3, at the end.",
    ("float", 1): "Hint: Please answer the question requiring a floating-point number with one "
    "decimal place and provide the final value, e.g., 1.2, 1.3, 1.4, at the end.",
    ("float", 2): "Hint: Please answer the question requiring a floating-point number with two "
    "decimal places and provide the final value, e.g., 1.23, 1.34, 1.45, at the end.",
    ("list", None): "Hint: Please answer the question requiring a Python list as an answer and "
    "provide the final list, e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end.",
}

_PROBLEM_TYPES = {"text": "multiple_choice", "integer": "numerical", "float": "numerical"}


def build_query(question: str, unit: str | None, choices: list[str] | None, hint: str) -> str:
    """The zero-shot step-by-step query of lmms-eval's ``create_one_query``.

    >>> print(build_query("How old is he?", "years", None, "Hint: h"))
    Question: How old is he? (Unit: years)
    Hint: h
    >>> print(build_query("Which?", None, ["1", "2"], "Hint: h"))
    Question: Which?
    Choices:
    (A) 1
    (B) 2
    Hint: h
    """
    question_text = f"Question: {question}"
    if unit:
        question_text += f" (Unit: {unit})"
    choices_text = ""
    if choices:
        choices_text = "\n".join(
            ["Choices:", *(f"({LETTERS[i]}) {choice}" for i, choice in enumerate(choices))]
        )
    # elements = [question, choices, caption, ocr, hint, prompt]; caption, ocr and the
    # step-by-step prompt are empty; then ``(demo_prompt + "\n\n" + test_query).strip()``.
    elements = [question_text, choices_text, hint]
    return ("\n\n" + "\n".join(e for e in elements if e != "")).strip()


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("testmini", record) for every row of ``data/testmini-*.parquet``."""
    for row in parquet_rows(source, PATTERN):
        yield SPLIT, convert_row(row, images)


def _precision(row: Row) -> int:
    value = row.field("precision")
    if not isinstance(value, int | float) or math.isnan(value) or value != int(value):
        raise row.error(f"field 'precision' must be a whole number for a float answer: {value!r}")
    return int(value)


def _hint(row: Row, question_type: str, answer_type: str) -> str:
    if question_type == "multi_choice":
        if answer_type != "text":
            raise row.error(
                f"field 'answer_type' is {answer_type!r}; multi_choice rows must be 'text' "
                "(lmms-eval create_one_query asserts it)"
            )
        return HINTS[("text", None)]
    if question_type != "free_form":
        raise row.error(
            f"field 'question_type' is {question_type!r}, not 'multi_choice' or 'free_form'"
        )
    if answer_type == "float":
        precision = _precision(row)
        if ("float", precision) not in HINTS:
            raise row.error(
                f"field 'precision' is {precision}; lmms-eval's prompt has a hint only for "
                "float answers with 1 or 2 decimals"
            )
        return HINTS[("float", precision)]
    if answer_type in {"integer", "list"}:
        return HINTS[(answer_type, None)]
    raise row.error(
        f"field 'answer_type' is {answer_type!r}; a free_form row must be integer, float or "
        "list (lmms-eval create_one_query asserts it)"
    )


def _choices(row: Row) -> list[str]:
    choices = row.field("choices", allow_empty=True)
    if choices is None:
        return []
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise row.error(f"field 'choices' must be a list of strings: {choices!r}")
    if len(choices) > len(LETTERS):
        raise row.error(f"field 'choices' has {len(choices)} entries, more than letters A-Z")
    return choices


def convert_row(row: Row, images: ImageStore) -> Record:
    """One MathVista row as a canonical record (see the module docstring)."""
    pid = row.field("pid")
    question = row.field("question")
    question_type = row.field("question_type")
    answer_type = row.field("answer_type")
    answer = row.field("answer")
    if not isinstance(answer, str):
        raise row.error(f"field 'answer' must be a string: {answer!r}")
    unit = row.field("unit", allow_empty=True)
    choices = _choices(row)
    metadata: Any = row.field("metadata")
    if not isinstance(metadata, dict) or not metadata.get("task"):
        raise row.error(f"field 'metadata' has no task: {metadata!r}")
    hint = _hint(row, question_type, answer_type)

    options: list[str] = []
    accepted: list[str] = []
    precision = _precision(row) if question_type == "free_form" and answer_type == "float" else None
    if question_type == "multi_choice":
        if not choices:
            raise row.error("field 'choices' is empty for a multi_choice question")
        if answer not in choices:
            raise row.error(f"field 'answer' {answer!r} is not one of the choices {choices}")
        options = choices
        letters = [LETTERS[i] for i, choice in enumerate(choices) if choice == answer]
        answer, accepted = letters[0], letters[1:]
    elif answer_type in {"integer", "float"}:
        try:
            float(answer)
        except ValueError:
            raise row.error(f"field 'answer' {answer!r} is not a number ({answer_type})") from None

    return record(
        row,
        id=str(pid),
        images=[images.save(row.field("decoded_image"), row, "decoded_image")],
        problem=build_query(question, unit, choices, hint),
        answer=answer.strip(),
        accepted=accepted,
        precision=precision,
        problem_type=_PROBLEM_TYPES.get(answer_type, "free_form"),
        options=options,
        data_source=DATA_SOURCE,
        task=metadata["task"],
    )
