"""SophiaVL-R1's RL data, ``bunny127/SophiaVL-R1-130k``: json files of records per subset (OCR,
Chart, Knowledge, Math, General) over a folder of pictures → one record per item, split
``train``, in file order.

Read as ``kxfan2002/SophiaVL-R1`` @ a818494 reads it. ``verl/data/dataset_info.json`` registers
each subset as a json file plus an ``image_base_path`` (``"OCR": {"file_path":
"dataset/json/ocr.json", "image_base_path": "dataset", "columns": {"problem": "prompt",
"solution": "answer", "path": "images"}}``, likewise Chart, Knowledge, Math; an earlier revision,
e6408a0, also registers ``General/merged_output_general.json``, and the README's "Custom
Dataset" section describes the same registration). ``verl/utils/dataset.py`` ``RLHFDataset``
loads the json, joins ``path`` to the image base folder, and per item: appends
``"; ".join(options)`` to a ``multiple choice`` problem with no separator, prepends ``<image>``
when the problem has none, adds ``QUESTION_TEMPLATE`` and ``TYPE_TEMPLATE[problem_type]``; an item
whose ``data_type`` is present and not ``image`` is text-only and gets a black 512×512 dummy
picture whose tokens are masked out of the attention. ``verl/data/demo.json`` shows an item::

    {"problem_id": 37216, "problem": "Who did he shoot in November 1963?", "data_type": "image",
     "problem_type": "text", "options": [], "solution": "<answer>Lee Harvey Oswald</answer>",
     "path": "./Knowledge/viquae/images/512px-CE5301C.jpg", "data_source": "viquae"}

Files: every ``*.json`` under the dataset folder (``records/`` aside); a file's subset is its
top folder (``Knowledge/…json``) or else the one subset its name holds as a word (``ocr.json``,
``merged_output_math_non_multimath_300k.json``), without case; any other json is an error.
Paths are relative to the dataset folder (the image base folder: the one holding ``OCR/``,
``Knowledge/``, …). The hub repository's own file list could not be read here; this is the
layout the release's code implies.

Mapping to :class:`vlrl.items.records.Record` (split ``train``, in file order):

- ``id`` = ``<subset>-<problem_id>`` (``<subset>-i<position>`` for an item without one; an id
  that repeats in its subset is a rejected item); ``task`` = the subset;
  ``data_source`` = ``data_source`` (``sophiavl_r1_130k`` when absent).
- ``problem_type`` by :data:`PROBLEM_TYPES`: ``multiple choice`` → ``multiple_choice``,
  ``numerical``, ``OCR`` → ``ocr``, ``free-form`` → ``free_form``, and ``text`` (a short text
  answer, picture or not) → ``free_form``: vlrl has no ``text`` type; the outcome reward is the
  same (``vlrl.rewards.sophiavl`` scores both with ROUGE, as ``verl/trainer/main.py``'s
  ``reward_fn_dict`` does). ``source_type`` keeps SophiaVL's name, so ``sophiavl_think`` appends
  the suffix SophiaVL appends ("… the short text answer …" for ``text``).
  ``vlrl.rewards.sophiavl`` reads ``answer`` and ``problem_type`` under the vlrl names.
- ``problem`` = ``problem`` with ``"; ".join(options)`` appended for a multiple-choice item (the
  text SophiaVL's model reads: ``sophiavl_think`` does not append options again), ``<image>``
  removed (vlrl puts the picture first, as SophiaVL's prepended ``<image>`` does).
- ``options`` (multiple choice only) = the option texts without their ``A)`` / ``A.`` / ``(A)``
  labels; the labels must run A, B, C, … (or all be absent) and the answer's letters must be
  among them.
- ``answer`` = the first ``<answer>…</answer>`` of ``solution``, stripped (the whole solution
  when it has no tags, as ``vlrl.rewards.sophiavl.unwrap_answer`` reads it).
- ``reasoning`` = ``process`` (its ``<think>`` wrapper removed) when the item has one.
- ``images`` = the picture at ``path``. A text-only item (``data_type`` other than ``image``)
  gets ``images = []``: SophiaVL's dummy picture is masked out of the attention, so the model
  sees nothing of it, and a visible black picture would be a different input.

Rejected items (named by ``id``): a missing picture file, an empty answer, an unknown
``problem_type``, a multiple-choice item with a bad option list or an answer outside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl.core.errors import DataError
from vlrl.core.files import DATASET_MANIFEST
from vlrl.data.formats import RECORDS_DIR, ImageStore, Row, RowError, record
from vlrl.data.formats.easyr1 import IMAGE_TOKEN, read_image_file
from vlrl.items.records import Record

DATA_SOURCE = "sophiavl_r1_130k"
SPLIT = "train"
SUBSETS = ("OCR", "Chart", "Knowledge", "Math", "General")
#: SophiaVL's problem types (``TYPE_TEMPLATE`` keys) → vlrl's.
PROBLEM_TYPES = {
    "multiple choice": "multiple_choice",
    "numerical": "numerical",
    "OCR": "ocr",
    "free-form": "free_form",
    "text": "free_form",
}
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_THINK = re.compile(r"\s*<think>(.*)</think>\s*", re.DOTALL)
_LABEL = re.compile(r"\s*(?:\(([A-Z])\)|([A-Z])[.):])\s*")
_LETTERS = re.compile(r"[A-Z](?:\s*,\s*[A-Z])*|[A-Z]+")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("train", record) for every item of every subset file, in file order; an item
    that cannot be converted is yielded as a :class:`RowError` carrying its id."""
    seen: dict[str, str] = {}  # id → the item that has it (ids are unique within a subset)
    for path, subset in subset_files(source):
        rel = path.relative_to(source).as_posix()
        for index, item in enumerate(read_items(path, rel)):
            row = Row(rel, index, item)
            rid = item_id(row, subset)
            try:
                if rid in seen:
                    raise row.error(f"id {rid!r} repeats {seen[rid]}")
                seen[rid] = row.where
                yield SPLIT, convert_item(row, rid, subset, source, images)
            except RowError as exc:
                yield SPLIT, RowError(str(exc), row_id=rid)


def subset_of(rel: str) -> str | None:
    """The subset a json file belongs to: its top folder, else the one subset its name holds as
    a word (no case); None if neither tells.

    >>> subset_of("Knowledge/merged.json"), subset_of("dataset/json/ocr.json")
    ('Knowledge', 'OCR')
    >>> subset_of("merged_output_math_non_multimath_300k.json")
    'Math'
    >>> subset_of("notes.json") is None, subset_of("chart_and_math.json") is None
    (True, True)
    """
    parts = rel.split("/")
    by_name = {s.lower(): s for s in SUBSETS}
    if len(parts) > 1 and parts[0].lower() in by_name:
        return by_name[parts[0].lower()]
    words = set(re.findall(r"[a-z]+", parts[-1].removesuffix(".json").lower()))
    named = [by_name[w] for w in by_name if w in words]
    return named[0] if len(named) == 1 else None


def subset_files(source: Path) -> list[tuple[Path, str]]:
    """The json files under ``source`` (``records/`` aside) with their subsets, sorted."""
    found = []
    for path in sorted(source.rglob("*.json")):
        rel = path.relative_to(source).as_posix()
        if rel.split("/")[0] == RECORDS_DIR or rel == DATASET_MANIFEST:
            continue  # what vlrl writes: the records, the download's checksum manifest
        subset = subset_of(rel)
        if subset is None:
            raise DataError(
                f"{path}: not a SophiaVL subset file (neither its top folder nor its name is "
                f"one of {list(SUBSETS)})"
            )
        found.append((path, subset))
    if not found:
        raise DataError(f"{source}: no json file of SophiaVL's subsets {list(SUBSETS)}")
    return found


def read_items(path: Path, rel: str) -> list[Any]:
    """The json list of items in ``path``."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{rel}: not valid json: {exc}") from None
    if not isinstance(items, list):
        raise DataError(f"{rel}: holds a {type(items).__name__}, not a list of items")
    return items


def item_id(row: Row, subset: str) -> str:
    """``<subset>-<problem_id>``, or ``<subset>-i<position>`` for an item without one."""
    problem_id = row.data.get("problem_id") if isinstance(row.data, dict) else None
    if isinstance(problem_id, int | str) and str(problem_id).strip():
        return f"{subset}-{str(problem_id).strip()}"
    return f"{subset}-i{row.index}"


def unwrap_answer(solution: str) -> str:
    """The first ``<answer>…</answer>`` content of a solution, stripped; else the solution.

    >>> unwrap_answer("<answer> B </answer>"), unwrap_answer("12")
    ('B', '12')
    """
    match = _ANSWER.search(solution)
    return (match.group(1) if match else solution).strip()


def option_texts(row: Row, options: Any) -> list[str]:
    """The texts of a multiple-choice item's options, their ``A)`` / ``A.`` / ``(A)`` labels
    removed; the labels must run A, B, C, … or all be absent."""
    if (
        not isinstance(options, list)
        or len(options) < 2
        or not all(isinstance(o, str) and o.strip() for o in options)
    ):
        raise row.error(
            f"field 'options' must list two or more non-empty strings for a multiple-choice "
            f"item: {options!r}"
        )
    labels = [_LABEL.match(o) for o in options]
    if not any(labels):
        return [o.strip() for o in options]
    letters = [m and (m.group(1) or m.group(2)) for m in labels]
    expected = [chr(ord("A") + i) for i in range(len(options))]
    if letters != expected:
        raise row.error(f"field 'options' is labelled {letters}, not {expected}: {options!r}")
    return [o[m.end() :].strip() for o, m in zip(options, labels, strict=True)]


def _check_letters(row: Row, answer: str, options: list[str]) -> None:
    last = chr(ord("A") + len(options) - 1)
    letters = re.findall(r"[A-Z]", answer) if _LETTERS.fullmatch(answer) else []
    if not letters or any(letter > last for letter in letters):
        raise row.error(
            f"answer {answer!r} is not option letters A-{last} of its {len(options)} options"
        )


def _reasoning(row: Row) -> str | None:
    process = row.data.get("process")
    if not isinstance(process, str) or not process.strip():
        return None
    match = _THINK.fullmatch(process)
    return (match.group(1) if match else process).strip() or None


def convert_item(row: Row, rid: str, subset: str, source: Path, images: ImageStore) -> Record:
    """One SophiaVL item as a canonical record with id ``rid`` (see the module docstring)."""
    if not isinstance(row.data, dict):
        raise row.error(f"is a {type(row.data).__name__}, not an object")
    kind = row.text("problem_type")
    if kind not in PROBLEM_TYPES:
        raise row.error(f"field 'problem_type' is {kind!r}, not one of {list(PROBLEM_TYPES)}")
    problem = row.text("problem", strip=False)
    answer = unwrap_answer(row.text("solution"))
    if not answer:
        raise row.error("field 'solution' holds an empty answer")
    options: list[str] = []
    if kind == "multiple choice":
        raw = row.data.get("options")
        options = option_texts(row, raw)
        _check_letters(row, answer, options)
        problem += "; ".join(raw)  # released: no separator before the first option
    problem = problem.replace(IMAGE_TOKEN, "")
    if not problem.strip():
        raise row.error(f"field 'problem' holds nothing but {IMAGE_TOKEN} tokens")
    pictures = []
    if row.data.get("data_type", "image") == "image":
        path = row.text("path")
        pictures = [images.save(read_image_file(source, path, row, "path"), row, "path")]
    source_name = row.data.get("data_source")
    return record(
        row,
        id=rid,
        images=pictures,
        problem=problem,
        answer=answer,
        problem_type=PROBLEM_TYPES[kind],
        source_type=kind,
        options=options,
        reasoning=_reasoning(row),
        data_source=source_name if isinstance(source_name, str) and source_name else DATA_SOURCE,
        task=subset,
    )
