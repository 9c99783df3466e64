"""ChartQA: ``lmms-lab/ChartQA`` (the hub now redirects it to ``lmms-lab-encoder/ChartQA``, the
id lmms-eval's ``chartqa`` task uses at HEAD), config ``default``, split ``test``: 2,500
questions on chart images, 1,250 human-written then 1,250 machine-generated ("augmented"), in
``data/test-00000-of-00001.parquet``.

Raw schema (lmms-eval ``lmms_eval/tasks/chartqa/upload_chartqa.py``, which built the split from
the official ``test_human.json`` and ``test_augmented.json``, in that order):

- ``type``: ``"human_test"`` | ``"augmented_test"``;
- ``question``: string (the official ``query``);
- ``answer``: string (the official ``label``), a number (``"14"``, ``"0.57"``) or a word or
  phrase (``"Yes"``, ``"Democrats"``);
- ``image``: ``datasets.Image`` (parquet struct ``{bytes, path}``), the chart.

There is no id field: rows are numbered in file order.

Mapping to :class:`vlrl.items.records.Record`, from lmms-eval ``lmms_eval/tasks/chartqa/utils.py``
and ``chartqa.yaml``:

- ``problem`` = ``question.strip()``: ``chartqa_doc_to_text`` with its empty ``pre_prompt``,
  without its model-specific ``post_prompt`` (``"\\nAnswer the question with a single word."``;
  ``" Answer:"`` for qwen_vl), which vlrl's prompt format replaces;
- ``answer`` = ``answer.strip()``;
- ``problem_type`` = ``numerical`` when :func:`vlrl.scoring.rules.relaxed_float` (the scorer's
  reading) reads the answer as a finite number (the answers ``relaxed_correctness`` compares
  within 5 %), else ``free_form``;
- ``task`` = ``human`` | ``augmented`` from ``type`` (lmms-eval's ``relaxed_human_split`` and
  ``relaxed_augmented_split``); ``id`` = the row's 0-based place in the split.

Metric (lmms-eval ``relaxed_overall``, from pix2struct / Qwen-VL ``evaluate_vqa.py``): the mean
over all 2,500 of ``relaxed_correctness(prediction, answer, max_relative_change=0.05)``, and the
same mean per task.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record
from vlrl.scoring.rules import relaxed_float

DATA_SOURCE = "chartqa"
SPLIT = "test"
PATTERN = "data/test-*.parquet"
TASKS = {"human_test": "human", "augmented_test": "augmented"}


def is_number(answer: str) -> bool:
    """Whether ``answer`` is a finite number to ``relaxed_correctness`` (``"nan"`` is not).

    >>> is_number("14"), is_number("-2.5"), is_number("nan"), is_number("Democrats")
    (True, True, False, False)
    """
    value = relaxed_float(answer)
    return value is not None and math.isfinite(value)


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row, numbered in file order across the files."""
    for index, row in enumerate(parquet_rows(source, PATTERN)):
        yield SPLIT, convert_row(row, index, images)


def convert_row(row: Row, index: int, images: ImageStore) -> Record:
    """One ChartQA row as a canonical record with id ``index``."""
    kind = row.text("type")
    if kind not in TASKS:
        raise row.error(f"field 'type' is {kind!r}, not one of {list(TASKS)}")
    answer = row.text("answer")
    return record(
        row,
        id=str(index),
        images=[images.save(row.field("image"), row, "image")],
        problem=row.text("question"),
        answer=answer,
        problem_type="numerical" if is_number(answer) else "free_form",
        data_source=DATA_SOURCE,
        task=TASKS[kind],
    )
