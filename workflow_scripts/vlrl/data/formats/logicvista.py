"""LogicVista (Xiao et al., arXiv:2407.04973): the authors' release, github.com/Yijia-Xiao/
LogicVista ``data/dataset.json`` and ``data/images/`` (448 questions, one picture each).

Raw layout (``data/README.md`` there): one JSON object whose keys are the item ids ("v1_0" ..
"v1_447"), each an object with

- ``imagename``: the picture's file name under ``data/images/``;
- ``question``: string; the options are in the picture or inside the question ("Select from
  A-E", "A) 10 B) 12 ...");
- ``answer``: the chosen letters joined by ", " ("C", "A, C"); one item's options are numbered
  ("3");
- ``skill``: a list holding one of inductive, deductive, numerical, spatial, mechanical;
- ``reasoning``, ``broad_capability``, ``specific_capability``, ``imagesource``, ``sourcelink``,
  ``liscenced``: not used.

Mapping to :class:`vlrl.items.records.Record`, as VLMEvalKit scores it (``vlmeval/dataset/
image_vqa.py::LogicVista`` and ``vlmeval/dataset/utils/logicvista.py`` at open-compass/VLMEvalKit
@ e8e78f05, the OpenCompass leaderboard's scorer):

- ``id`` = the key; ``images`` = [the picture]; ``data_source`` = "logicvista";
- ``problem`` = the question as written (VLMEvalKit's VQA prompt is the question alone);
- ``answer`` = the answer as written: the judge's extracted letters are compared with it split on
  ", " (:func:`vlrl.scoring.judge_prompts.logicvista_hit`);
- ``problem_type`` = ``free_form``: the options are not a list a record can hold; the
  benchmark is scored by the judge's letter extraction on every item, not by an option rule;
- ``task`` = the skill (``evaluate_logicvista`` reports Overall and one accuracy per skill).

At e5795f17 one item (v1_382) has an empty question and answer; VLMEvalKit's TSV (not public
outside its server) keeps 448 rows, and an empty answer can never be hit there, so that item
counts as wrong in its Overall. Here the row is reported and left out (the benchmark's dataset
sets ``bad_rows: report``), so Overall is over 447 items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError, record
from vlrl.items.records import Record

DATA_SOURCE = "logicvista"
SPLIT = "test"
DATASET_FILE = "data/dataset.json"
IMAGES = "data/images"
#: The five skills, as ``evaluate_logicvista`` names its rows.
SKILLS = ("inductive", "deductive", "numerical", "spatial", "mechanical")


def rows(source: Path) -> Iterator[Row]:
    """The items of ``data/dataset.json``, in its order, each with its key as ``id``."""
    path = source / DATASET_FILE
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file (LogicVista's data/dataset.json)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(items, dict):
        raise DataError(f"{path}: must be an object of items by id, not {type(items).__name__}")
    for index, (key, fields) in enumerate(items.items()):
        data = {"id": key, **fields} if isinstance(fields, dict) else {"id": key}
        row = Row(DATASET_FILE, index, data)
        if not isinstance(fields, dict):
            raise row.error(f"item {key!r} must be an object, not {type(fields).__name__}")
        yield row


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record | RowError]]:
    """Yield ("test", record) for every item of ``data/dataset.json``; an item that cannot be
    converted (v1_382's empty question) is yielded as its error, for ``bad_rows``."""
    for row in rows(source):
        try:
            yield SPLIT, convert_row(row, source, images)
        except RowError as error:
            yield SPLIT, error


def skill(row: Row) -> str:
    """The item's skill: its ``skill`` list's one entry, among :data:`SKILLS`."""
    value = row.field("skill")
    if not (isinstance(value, list) and len(value) == 1 and value[0] in SKILLS):
        raise row.error(f"field 'skill' must list one of {list(SKILLS)}: {value!r}")
    return value[0]


def convert_row(row: Row, source: Path, images: ImageStore) -> Record:
    """One LogicVista item as a canonical record (see the module docstring)."""
    name = row.text("imagename")
    picture = source / IMAGES / name
    if not picture.is_file():
        raise row.error(f"field 'imagename' {name!r}: no such file under {IMAGES}/")
    return record(
        row,
        id=str(row.data["id"]),
        images=[images.save(picture.read_bytes(), row, "imagename")],
        problem=row.text("question"),
        answer=row.text("answer"),
        problem_type="free_form",
        data_source=DATA_SOURCE,
        task=skill(row),
    )
