"""Dataset files as the Hugging Face Hub stores them, for the format tests' fixtures
(``tests/data/formats/test_<format>.py``; ``tests/test_benchmark_adapters.py`` reuses them end
to end).

A hub parquet is what ``datasets`` writes: the dataset card's features (``datasets.Image``
columns as ``{"bytes": ..., "path": ...}`` structs) in their order. Each format test declares its
dataset's features; :func:`write_parquet` writes the rows under them, and :func:`encoded_image` and
:func:`image_bytes` make the small pictures the rows hold.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from PIL import Image as PILImage


def image_bytes(
    colour: tuple[int, int, int], size: tuple[int, int] = (32, 24), format: str = "PNG"
) -> bytes:
    """A plain ``size`` (width, height) RGB picture of one ``colour``, encoded as ``format``
    (``PNG``, ``JPEG``, ``WEBP``)."""
    buffer = io.BytesIO()
    PILImage.new("RGB", size, colour).save(buffer, format=format)
    return buffer.getvalue()


def encoded_image(
    colour: tuple[int, int, int],
    size: tuple[int, int] = (32, 24),
    format: str = "PNG",
    path: str | None = None,
) -> dict[str, Any]:
    """:func:`image_bytes` as a ``datasets.Image`` column stores a picture: its bytes and the
    file name it was read from (``path``, often None on the hub)."""
    return {"bytes": image_bytes(colour, size, format), "path": path}


def write_parquet(path: Path, rows: Iterable[Mapping[str, Any]], features: Any) -> Path:
    """Write ``rows`` to ``path`` (its folders made) as ``datasets`` writes a hub parquet with
    ``features`` (a ``datasets.Features``, or the dict of one): one column per feature, in its
    order; a feature a row has no key for is null there, and a key no feature names is left out.
    Returns ``path``."""
    import datasets

    datasets.disable_progress_bars()
    if not isinstance(features, datasets.Features):
        features = datasets.Features(features)
    rows = list(rows)
    columns = {name: [row.get(name) for row in rows] for name in features}
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=features).to_parquet(str(path))
    return path
