"""Validation of a data split, every row at once.

A split is checked whole, and every bad row is named with its ``file:line``, its id and what is
wrong, so that one run shows every fix a dataset needs. A row is bad when it is:

- not UTF-8 or not JSON (rows read from a file), or not a JSON object;
- not a :class:`~vlrl.items.records.Record` (a missing or mistyped field, an unknown key), or its id
  is empty or used by an earlier row;
- without an answer (empty after stripping);
- pointing to an image that is missing or does not decode, or giving ``image_sizes`` that disagree
  with the files;
- carrying a box that is not ``[x1, y1, x2, y2]`` with ``0 <= x1 < x2 <= width`` and
  ``0 <= y1 < y2 <= height`` of its (first) image;
- a ``multiple_choice`` row without options, or whose answer is not the letter of one of them.

Rows come from a JSONL file (:func:`rows_of_file`: ``file:line`` is that file's line, the source
file's own when a converter reads one) or from records made in memory (:func:`rows_of_records`:
the line the record takes in the split file). :func:`check_rows` returns the valid records (with
``image_sizes`` read from the files) and the problems; :meth:`Checked.summary` lists them.

>>> checked = check_rows([Row("a.jsonl:1", b'{"id": "q1", "answer": " "')], Path("."))
>>> print(checked.summary("a.jsonl"))
a.jsonl: 1 of 1 rows are invalid:
  a.jsonl:1: id q1: not valid JSON at column 27: Expecting ',' delimiter
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import ValidationError

from vlrl.items.answers import parse_letter
from vlrl.items.records import Record

#: Rows listed in :meth:`Checked.summary`; the rest are counted.
MAX_LISTED = 50

_ID = re.compile(r'"id"\s*:\s*"((?:[^"\\]|\\.)*)"')
_REPR_CHARS = 60


@dataclass(frozen=True)
class Row:
    """One row to check: where it is (``file:line``) and its content, a raw JSONL line (bytes)
    or an object already parsed."""

    where: str
    content: bytes | Any


@dataclass(frozen=True)
class Problem:
    """What is wrong with one row (all its problems, joined by ``; ``)."""

    where: str
    id: str | None
    what: str

    def __str__(self) -> str:
        return f"{self.where}: id {self.id if self.id and self.id.strip() else '?'}: {self.what}"


@dataclass
class Checked:
    """The outcome of :func:`check_rows`: valid records, bad rows, and how many rows were read."""

    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    rows: int = 0

    def summary(self, title: str, limit: int = MAX_LISTED) -> str:
        """``<title>: N of M rows are invalid:`` and one indented line per bad row, the first
        ``limit`` of them, then ``and K more``."""
        heading = f"{title}: {len(self.problems)} of {self.rows} rows are invalid:"
        return "\n".join([heading, *listing(self.problems, limit)])


def listing(problems: Sequence[Problem], limit: int = MAX_LISTED) -> list[str]:
    """One indented line per problem, the first ``limit`` of them, then ``and K more``."""
    lines = [f"  {problem}" for problem in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  and {len(problems) - limit} more")
    return lines


def rows_of_file(path: Path | str) -> Iterator[Row]:
    """The non-blank lines of a JSONL file as raw bytes, each named ``path:line`` (lines count
    from 1, blank ones included)."""
    path = Path(path)
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield Row(f"{path}:{lineno}", line)


def rows_of_records(records: Iterable[Record], path: Path | str) -> Iterator[Row]:
    """Records made in memory, each named by the line it takes when written to ``path``."""
    for lineno, record in enumerate(records, 1):
        yield Row(f"{path}:{lineno}", record.model_dump())


def check_rows(rows: Iterable[Row], base_dir: Path, shown_dir: Path | None = None) -> Checked:
    """Check every row; image paths are relative to ``base_dir`` (named ``shown_dir`` in the
    problems, when given: where a temporary directory will be published). Never raises for a bad
    row."""
    checked = Checked()
    images = _ImageSizes(Path(base_dir), Path(shown_dir or base_dir))
    first_seen: dict[str, str] = {}
    for row in rows:
        checked.rows += 1
        record, row_id, problems = _check_row(row, images)
        if row_id is not None:
            if row_id in first_seen:
                problems.append(f"id is also used by {first_seen[row_id]}")
            else:
                first_seen[row_id] = row.where
        if problems:
            checked.problems.append(Problem(row.where, row_id, "; ".join(problems)))
        elif record is not None:
            checked.records.append(record)
    return checked


def _check_row(row: Row, images: _ImageSizes) -> tuple[Record | None, str | None, list[str]]:
    """(the record with its image sizes or None, the row's id if known, its problems)."""
    raw = row.content
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            guess = _guess_id(raw.decode("utf-8", errors="replace"))
            return None, guess, [f"not valid UTF-8 ({raw[exc.start]:#04x} at byte {exc.start + 1})"]
        try:
            raw = json.loads(text.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            why = exc.msg.removesuffix(" at")
            return None, _guess_id(text), [f"not valid JSON at column {exc.colno}: {why}"]
    if not isinstance(raw, dict):
        return None, None, [f"a record must be a JSON object, got {type(raw).__name__}"]
    row_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    try:
        record = Record.model_validate(raw)
    except ValidationError as exc:
        return None, row_id, _schema_problems(exc)
    problems = []
    if not record.id.strip():
        problems.append("id is empty")
    if not record.answer.strip():
        problems.append("answer is empty")
    sizes, image_problems = _image_sizes(record, images)
    problems += image_problems
    problems += _box_problems(record, sizes)
    problems += _option_problems(record)
    if problems:
        return None, row_id, problems
    return record.model_copy(update={"image_sizes": sizes}), row_id, []


def _guess_id(text: str) -> str | None:
    """The ``"id"`` of a line that does not parse, when it can be read off the text."""
    match = _ID.search(text)
    return match.group(1) if match else None


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_CHARS else text[: _REPR_CHARS - 3] + "..."


def _schema_problems(exc: ValidationError) -> list[str]:
    """One ``<field>: <what is wrong> (got <value>)`` per error; a nested field is dotted
    (``boxes.0.2``)."""
    problems = []
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "<row>"
        got = f" (got {_short_repr(err['input'])})" if err["type"] != "missing" else ""
        problems.append(f"{name}: {err['msg']}{got}")
    return problems


class _ImageSizes:
    """``[width, height]`` of each image under ``base_dir``, or why it has none; decoded once."""

    def __init__(self, base_dir: Path, shown_dir: Path) -> None:
        self.base_dir = base_dir
        self.shown_dir = shown_dir
        self._known: dict[str, list[int] | str] = {}

    def __call__(self, rel: str) -> list[int] | str:
        if rel not in self._known:
            self._known[rel] = self._read(rel)
        return self._known[rel]

    def _read(self, rel: str) -> list[int] | str:
        path = self.base_dir / rel
        if not path.is_file():
            return f"image {rel!r} does not exist (looked in {self.shown_dir})"
        try:
            with Image.open(path) as img:
                img.verify()
            with Image.open(path) as img:
                img.load()
                return [img.width, img.height]
        except Exception as exc:  # a decoder fails in many ways; each means "unreadable"
            return f"image {rel!r} is unreadable: {type(exc).__name__}: {exc}"


def _image_sizes(record: Record, images: _ImageSizes) -> tuple[list[list[int]], list[str]]:
    sizes, problems = [], []
    for rel in record.images:
        size = images(rel)
        if isinstance(size, str):
            problems.append(size)
        else:
            sizes.append(size)
    if not problems and record.image_sizes and record.image_sizes != sizes:
        problems.append(f"image_sizes {record.image_sizes} disagree with the files {sizes}")
    return sizes, problems


def _box_problems(record: Record, sizes: list[list[int]]) -> list[str]:
    """Boxes are xyxy pixels of the first image; bounds come from the file (or, when the file
    could not be read, from ``image_sizes``)."""
    if not record.boxes:
        return []
    if not record.images:
        return ["has boxes but no image"]
    bounds = sizes[0] if len(sizes) == len(record.images) else None
    if bounds is None and record.image_sizes and len(record.image_sizes[0]) == 2:
        bounds = record.image_sizes[0]
    problems = []
    for index, box in enumerate(record.boxes):
        if len(box) != 4:
            problems.append(f"box {index} {box} must have 4 numbers (x1, y1, x2, y2)")
            continue
        x1, y1, x2, y2 = box
        if not all(math.isfinite(v) for v in box):
            problems.append(f"box {index} {box} has a number that is not finite")
        elif not (x1 < x2 and y1 < y2):
            problems.append(f"box {index} {box} has x2<=x1 or y2<=y1")
        elif bounds is not None:
            width, height = bounds
            if not (x1 >= 0 and y1 >= 0 and x2 <= width and y2 <= height):
                problems.append(f"box {index} {box} is outside its {width}x{height} image")
    return problems


def _option_problems(record: Record) -> list[str]:
    if record.problem_type != "multiple_choice":
        return []
    n = len(record.options)
    if n == 0:
        return ["multiple_choice record has no options"]
    if not record.answer.strip():
        return []  # reported as empty
    letters = f"A-{chr(ord('A') + n - 1)}" if n <= 26 else "A-Z"
    letter = parse_letter(record.answer)
    if letter is None:
        return [f"answer {record.answer!r} is not an option letter ({letters})"]
    if ord(letter) - ord("A") >= n:
        return [f"answer letter {letter!r} is out of range: {n} options ({letters})"]
    return []
