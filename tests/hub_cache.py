"""A real huggingface_hub cache, seeded offline, for tests of the code that downloads.

The layout is what ``snapshot_download`` reads when it may not use the network::

    <cache>/<models|datasets>--<org>--<name>/
        blobs/<sha256 of the file>          the bytes
        snapshots/<commit>/<path>           relative symlinks to ../../blobs/<sha256>
        refs/<tag>                          the commit a tag points to
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path


def seed_cache(
    cache: Path,
    repo_id: str,
    commit: str,
    files: Path,
    tags: Iterable[str] = (),
    repo_type: str = "model",
) -> None:
    """Put every file under ``files`` into ``cache`` as huggingface_hub would have downloaded
    it, as the snapshot ``commit`` of ``repo_id`` (a ``model`` or ``dataset`` repository)."""
    repo = cache / (f"{repo_type}s--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot = repo / "snapshots" / commit
    for src in sorted(p for p in files.rglob("*") if p.is_file()):
        data = src.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / src.relative_to(files)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    for tag in tags:
        (repo / "refs" / tag).write_text(commit)
