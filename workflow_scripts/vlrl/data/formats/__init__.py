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
the row in every error (:class:`RowError`, raised with :meth:`Row.error`). The docstring of a
format module cites the reference implementation its logic is ported from (lmms-eval task,
VLMEvalKit dataset class, the paper's own evaluation script).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib
import io
import json
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError
from pydantic import ValidationError

from vlrl.errors import DataError
from vlrl.records import Record

#: Where a converted dataset's records and images go, relative to the dataset directory.
RECORDS_DIR = "records"
IMAGES_DIR = "images"


class RowError(DataError):
    """A raw row that cannot be converted: the message names the file, the row and the field."""


@dataclass(frozen=True)
class Row:
    """One raw row: its file (relative to the dataset directory), 0-based index and fields."""

    file: str
    index: int
    data: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.file} row {self.index}"

    def error(self, message: str) -> RowError:
        """An error naming this row: ``raise row.error("field 'answer' is empty")``."""
        return RowError(f"{self.where}: {message}")

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


def convert_dataset(fmt: str, source: Path) -> dict[str, int]:
    """Convert the raw files under ``source`` (a dataset directory) with format ``fmt`` into
    ``source/records/<split>.jsonl`` and ``source/records/images/``.

    Returns:
        The number of records per split.

    Raises:
        DataError: a bad row (named by file and row), a repeated id within a split, or no rows.
    """
    if fmt not in formats():
        raise DataError(f"no dataset format {fmt!r}; known: {formats()}")
    module = importlib.import_module(f"{__name__}.{fmt}")
    out = source / RECORDS_DIR
    images = ImageStore(out)
    by_split: dict[str, list[Record]] = {}
    seen: dict[str, set[str]] = {}
    for split, rec in module.convert(source, images):
        ids = seen.setdefault(split, set())
        if rec.id in ids:
            raise DataError(f"{source}: format {fmt}: id {rec.id!r} appears twice in {split}")
        ids.add(rec.id)
        by_split.setdefault(split, []).append(rec)
    if not by_split:
        raise DataError(f"{source}: format {fmt} found no rows")
    for split, records in sorted(by_split.items()):
        lines = (
            json.dumps(r.model_dump(exclude_defaults=True), ensure_ascii=False) for r in records
        )
        (out / f"{split}.jsonl").write_text("".join(line + "\n" for line in lines))
    return {split: len(records) for split, records in sorted(by_split.items())}
