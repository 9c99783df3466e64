"""Atomic writes: a stage's output appears complete or not at all.

Outputs are written to a temporary sibling and renamed into place, so a stage killed midway
leaves no output that looks finished; a rerun removes the leftover temporary and starts again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

TMP_MARK = ".tmp-"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish_mode(path: Path, is_dir: bool) -> None:
    """mkdtemp/mkstemp create private (0700/0600) entries; give outputs ordinary permissions."""
    path.chmod((0o777 if is_dir else 0o666) & ~_umask())


def _clear_stale(final: Path) -> None:
    for stale in final.parent.glob(f"{final.name}{TMP_MARK}*"):
        shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(
            missing_ok=True
        )


@contextlib.contextmanager
def atomic_dir(final: Path | str) -> Iterator[Path]:
    """Yield a fresh temporary directory that replaces ``final`` when the block succeeds.

    >>> import tempfile, pathlib
    >>> base = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_dir(base / "out") as tmp:
    ...     _ = (tmp / "a.txt").write_text("done")
    >>> (base / "out" / "a.txt").read_text()
    'done'
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    _clear_stale(final)
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}{TMP_MARK}", dir=final.parent))
    _publish_mode(tmp, is_dir=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # Published now: newer than every input (a copied tree can carry an older directory time,
    # and Snakemake compares the directory's own time with its inputs').
    os.utime(tmp)
    if final.exists():
        trash = final.with_name(f"{final.name}{TMP_MARK}old")
        os.replace(final, trash)
        os.replace(tmp, final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, final)


@contextlib.contextmanager
def atomic_file(final: Path | str, mode: str = "w") -> Iterator[Any]:
    """Open a temporary sibling of ``final`` for writing; rename it over ``final`` on success."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    _clear_stale(final)
    fd, tmp_name = tempfile.mkstemp(prefix=f"{final.name}{TMP_MARK}", dir=final.parent)
    tmp = Path(tmp_name)
    _publish_mode(tmp, is_dir=False)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_file(path: Path | str) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks (the datasets' checksum manifests).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> _ = f.write_bytes(b"abc")
    >>> sha256_file(f)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


DATASET_MANIFEST = "vlrl_dataset.json"
"""The checksum manifest a dataset download writes beside its files."""


def write_dataset_manifest(out_dir: Path | str, names: list[str], source: dict) -> dict:
    """Write ``out_dir``'s checksum manifest, :data:`DATASET_MANIFEST`: ``source`` (where the
    files came from: repo and revision, git URL and commit, or local folder, then the patterns)
    and every file of ``names``' size and SHA-256, in that order.

    Returns:
        The manifest.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.txt").write_bytes(b"abc")
    >>> m = write_dataset_manifest(d, ["a.txt"], {"local": "/src", "allow_patterns": None})
    >>> list(m), m["files"]["a.txt"]["size"]
    (['local', 'allow_patterns', 'files'], 3)
    >>> json.loads((d / DATASET_MANIFEST).read_text()) == m
    True
    """
    out_dir = Path(out_dir)
    manifest = {
        **source,
        "files": {
            name: {"size": (out_dir / name).stat().st_size, "sha256": sha256_file(out_dir / name)}
            for name in names
        },
    }
    write_json(out_dir / DATASET_MANIFEST, manifest)
    return manifest


def write_json(path: Path | str, obj: Any) -> None:
    with atomic_file(path) as fh:
        json.dump(obj, fh, indent=2, sort_keys=False)
        fh.write("\n")


def write_jsonl(path: Path | str, rows: Iterable[dict[str, Any]]) -> None:
    with atomic_file(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """Read a UTF-8 JSONL file; a bad line (not UTF-8, not JSON) raises ValueError naming the
    file and line number."""
    path = Path(path)
    rows = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path}:{lineno}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column "
                    f"{exc.start + 1})"
                ) from None
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
    return rows
