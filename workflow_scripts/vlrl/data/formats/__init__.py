"""Hub formats: converters from a downloaded dataset's own schema into canonical records.

A dataset config may name a ``format`` (``config/datasets/<name>.yaml``); after fetching the
files, the download stage converts them with that format's module, ``vlrl.data.formats.<name>``,
into ``records/<split>.jsonl`` beside the raw files, with the images the rows carry (parquet
bytes, base64 strings) written once to ``records/images/``. Benchmarks then read a records file
(``loader: records``, ``file: records/<split>.jsonl``) like any canonical data.

A format module defines one function::

    def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
        '''Yield (split, record) for every row of the raw files under ``source``.'''

It reads the raw files with :func:`parquet_rows` (or its own reader for json / tsv), saves each
image with :meth:`ImageStore.save` (which returns the path to put in ``Record.images``) and names
the row in every error (:class:`RowError`, made with :meth:`Row.error`). A converter of training
data, where one malformed row among thousands is ordinary, *yields* ``(split, row.error(...))``
for a row it cannot convert instead of raising: :func:`convert_dataset` collects every such row
and, by the dataset's ``bad_rows`` setting, stops naming all of them (``stop``, the default) or
writes them to ``records/rejected.jsonl`` and counts them in ``records/report.json`` (``report``):
never dropped silently. A raised :class:`RowError` always stops. The docstring of a
format module cites the reference implementation its logic is ported from (lmms-eval task,
VLMEvalKit dataset class, the paper's own evaluation script).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib
import inspect
import io
import json
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError
from pydantic import ValidationError

from vlrl.core.errors import DataError
from vlrl.items.records import Record

#: Where a converted dataset's records and images go, relative to the dataset directory.
RECORDS_DIR = "records"
IMAGES_DIR = "images"


class RowError(DataError):
    """A raw row that cannot be converted: the message names the file, the row and the field."""

    def __init__(self, message: str, row_id: str | None = None):
        super().__init__(message)
        self.row_id = row_id


@dataclass(frozen=True)
class Row:
    """One raw row: its file (relative to the dataset directory), 0-based index and fields."""

    file: str
    index: int
    data: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file} row {self.index}"

    @property
    def id(self) -> str | None:
        """The row's own id (its ``id`` or ``problem_id`` field), when it has one."""
        if not isinstance(self.data, dict):
            return None
        for key in ("id", "problem_id", "question_id", "index"):
            value = self.data.get(key)
            if value is not None and not isinstance(value, dict | list):
                return str(value)
        return None

    def error(self, message: str) -> RowError:
        """An error naming this row (and its id): ``raise row.error("field 'answer' is empty")``
        or, in a training-data converter, ``yield split, row.error(...)``."""
        return RowError(f"{self.where}: {message}", row_id=self.id)

    def field(self, name: str, *, allow_empty: bool = False) -> Any:
        """The value of field ``name``; a missing field (or, unless allowed, an empty one) is an
        error naming the row."""
        if name not in self.data:
            raise self.error(f"has no field {name!r} (fields: {sorted(self.data)})")
        value = self.data[name]
        if not allow_empty and (value is None or (isinstance(value, str) and not value.strip())):
            raise self.error(f"field {name!r} is empty")
        return value

    def text(self, name: str, *, strip: bool = True, allow_empty: bool = False) -> str:
        """A string field (stripped unless ``strip`` is false); a missing, empty (unless
        allowed: then None is "") or non-string value is an error naming the row."""
        value = self.field(name, allow_empty=allow_empty)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.error(f"field {name!r} must be a string: {value!r}")
        return value.strip() if strip else value

    def natural(self, name: str) -> int:
        """A non-negative integer field (a string of decimal digits is accepted)."""
        value = self.field(name)
        if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
            return int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise self.error(f"field {name!r} is {value!r}, not a non-negative integer")


def parquet_rows(source: Path, pattern: str) -> Iterator[Row]:
    """The rows of every parquet file under ``source`` matching ``pattern`` (sorted by path), as
    plain Python values (an image column stays a ``{"bytes", "path"}`` dict, as the hub stores
    ``datasets.Image``)."""
    import pyarrow.parquet as pq

    files = sorted(source.glob(pattern))
    if not files:
        raise DataError(f"{source}: no file matches {pattern!r}")
    for path in files:
        rel = path.relative_to(source).as_posix()
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise DataError(f"{path}: not a readable parquet file: {exc}") from None
        for index, data in enumerate(table.to_pylist()):
            yield Row(rel, index, data)


class ImageStore:
    """Writes the images of converted rows under ``<records>/images/`` once each, named by the
    SHA-256 of their bytes (the same picture used by many rows is stored once)."""

    def __init__(self, records_dir: Path):
        self.records_dir = records_dir
        (records_dir / IMAGES_DIR).mkdir(parents=True, exist_ok=True)

    def save(self, value: Any, row: Row, field: str = "image") -> str:
        """Store an image value and return its path relative to the records directory.

        ``value`` is what the raw row holds: a ``{"bytes", "path"}`` dict (``datasets.Image`` in
        parquet), raw bytes, a base64 string (VLMEvalKit TSVs) or a PIL image. An empty or
        undecodable image is a :class:`RowError` naming the row and ``field``.
        """
        data = self._bytes(value, row, field)
        try:
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                fmt = (img.format or "PNG").lower()
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise row.error(f"field {field!r} is not a readable image: {exc}") from None
        suffix = {"jpeg": ".jpg"}.get(fmt, f".{fmt}")
        rel = f"{IMAGES_DIR}/{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
        path = self.records_dir / rel
        if not path.exists():
            path.write_bytes(data)
        return rel

    @staticmethod
    def _bytes(value: Any, row: Row, field: str) -> bytes:
        if isinstance(value, Image.Image):
            buffer = io.BytesIO()
            value.save(buffer, format="PNG")
            return buffer.getvalue()
        if isinstance(value, dict):
            value = value.get("bytes")
        if isinstance(value, bytes | bytearray) and value:
            return bytes(value)
        if isinstance(value, str) and value:
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise row.error(f"field {field!r} is a string but not base64 image data") from None
        raise row.error(f"field {field!r} holds no image bytes ({type(value).__name__})")


def record(row: Row, **fields: Any) -> Record:
    """A canonical :class:`Record` from converted fields; a schema error names the row."""
    try:
        return Record.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise row.error(problems) from None


def formats() -> list[str]:
    """The format names: the modules of this package.

    >>> "mmstar" in formats() or formats() == sorted(formats())
    True
    """
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


#: How many rejected rows an error message lists before "and N more".
SHOWN_REJECTED = 20


def convert_dataset(
    fmt: str,
    source: Path,
    bad_rows: str = "stop",
    expected_rows: dict[str, int] | None = None,
) -> dict[str, int]:
    """Convert the raw files under ``source`` (a dataset directory) with format ``fmt`` into
    ``source/records/<split>.jsonl`` and ``source/records/images/``.

    Rows the converter rejects (yields a :class:`RowError` for) stop the conversion, every one
    named (``bad_rows="stop"``), or go to ``records/rejected.jsonl`` (``bad_rows="report"``);
    ``records/report.json`` counts records and rejected rows per split either way.
    ``expected_rows`` goes to a format that checks its files' row counts (its ``convert`` takes
    it): the counts of a fixture, or of a release other than the one the format knows.

    Returns:
        The number of records per split.

    Raises:
        DataError: a bad row (named by file, row and id), a repeated id within a split, or no
            rows.
    """
    if fmt not in formats():
        raise DataError(f"no dataset format {fmt!r}; known: {formats()}")
    if bad_rows not in ("stop", "report"):
        raise ValueError(f"bad_rows must be 'stop' or 'report', not {bad_rows!r}")
    module = importlib.import_module(f"{__name__}.{fmt}")
    out = source / RECORDS_DIR
    images = ImageStore(out)
    by_split: dict[str, list[Record]] = {}
    rejected: list[tuple[str, RowError]] = []
    seen: dict[str, set[str]] = {}
    if expected_rows and "expected_rows" not in inspect.signature(module.convert).parameters:
        raise DataError(f"format {fmt} checks no row counts: expected_rows does not apply to it")
    extra = {"expected_rows": expected_rows} if expected_rows else {}
    for split, rec in module.convert(source, images, **extra):
        if isinstance(rec, RowError):
            rejected.append((split, rec))
            continue
        ids = seen.setdefault(split, set())
        if rec.id in ids:
            raise DataError(f"{source}: format {fmt}: id {rec.id!r} appears twice in {split}")
        ids.add(rec.id)
        by_split.setdefault(split, []).append(rec)
    if rejected and bad_rows == "stop":
        shown = [
            f"  {split}{'' if err.row_id is None else f' id {err.row_id}'}: {err}"
            for split, err in rejected[:SHOWN_REJECTED]
        ]
        more = len(rejected) - len(shown)
        raise DataError(
            "\n".join(
                [
                    f"{source}: format {fmt}: {len(rejected)} "
                    f"{'row' if len(rejected) == 1 else 'rows'} cannot be converted "
                    "(set bad_rows: report in the dataset config to leave them out, listed in "
                    "records/rejected.jsonl):",
                    *shown,
                    *([f"  … and {more} more"] if more else []),
                ]
            )
        )
    if not by_split:
        raise DataError(f"{source}: format {fmt} found no rows")
    for split, records in sorted(by_split.items()):
        lines = (
            json.dumps(r.model_dump(exclude_defaults=True), ensure_ascii=False) for r in records
        )
        (out / f"{split}.jsonl").write_text(
            "".join(line + "\n" for line in lines), encoding="utf-8"
        )
    if rejected:
        lines = (
            json.dumps({"split": split, "id": err.row_id, "why": str(err)}, ensure_ascii=False)
            for split, err in rejected
        )
        (out / "rejected.jsonl").write_text(
            "".join(line + "\n" for line in lines), encoding="utf-8"
        )
    splits = sorted(set(by_split) | {split for split, _ in rejected})
    report = {
        split: {
            "records": len(by_split.get(split, [])),
            "rejected": sum(1 for s, _ in rejected if s == split),
        }
        for split in splits
    }
    (out / "report.json").write_text(
        json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return {split: len(records) for split, records in sorted(by_split.items())}
