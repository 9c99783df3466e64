"""Base models from the Hugging Face hub, pinned to an immutable revision.

:func:`download_model` goes through ``huggingface_hub.snapshot_download`` and its cache, so the
usual environment applies: ``HF_HOME`` / ``HF_HUB_CACHE`` choose the cache, ``HF_HUB_OFFLINE=1``
serves the snapshot from that cache without touching the network (a cluster node without
internet, or a test). The snapshot's files are then copied into the model's resource directory,
which DVC tracks, with a ``vlrl_model.json`` recording the repo, the revision and the commit.

Why not ``snapshot_download(local_dir=...)``: offline, huggingface_hub only reuses a ``local_dir``
that already holds the files and never fills one from its cache, so an offline run from a
pre-seeded cache would fail.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

from vlrl.errors import ConfigError, StageError

log = logging.getLogger(__name__)

MANIFEST = "vlrl_model.json"
_SHA = re.compile(r"[0-9a-f]{40}")
#: A version tag: ``v1``, ``v1.0``, ``2.5.1-rc1``, or any ``refs/tags/<name>``.
_TAG = re.compile(r"(refs/tags/.+|v?\d+(\.\d+)*([-+._][0-9A-Za-z.+-]+)?)")


def check_revision(revision: str) -> str:
    """Return ``revision`` if it is immutable enough to pin: a full commit sha or a version tag.

    Branch names (``main``, ``dev``, ``refs/pr/1``) move, so a rerun would get other weights.

    >>> check_revision("66285546d2b821cf421d4f5eb2576359d3770cd3")
    '66285546d2b821cf421d4f5eb2576359d3770cd3'
    >>> check_revision("v1.0")
    'v1.0'
    >>> check_revision("main")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vlrl.errors.ConfigError: revision 'main' looks like a branch name, which moves over time; ...
    """
    if _SHA.fullmatch(revision):
        return revision
    if re.fullmatch(r"[0-9a-fA-F]{7,}", revision):
        reason = "is not a full lower-case 40-character commit sha"
    elif _TAG.fullmatch(revision):
        return revision
    else:
        reason = "looks like a branch name, which moves over time"
    raise ConfigError(
        f"revision {revision!r} {reason}; pin a full 40-character commit sha "
        "(or a version tag such as v1.0)"
    )


def _offline() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub read it at import, or as the environment says now."""
    from huggingface_hub import constants

    return constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in {
        "1",
        "ON",
        "YES",
        "TRUE",
    }


def download_model(
    repo_id: str, revision: str, out_dir: Path, *, cache_dir: Path | None = None
) -> Path:
    """Fetch ``repo_id`` at ``revision`` into ``out_dir`` and record what was fetched.

    Args:
        repo_id: hub model id, ``org/name``.
        revision: a full commit sha or a version tag (see :func:`check_revision`).
        out_dir: receives the snapshot's files (copies, not links into the cache) and
            ``vlrl_model.json``; created if missing.
        cache_dir: the huggingface_hub cache; default ``$HF_HUB_CACHE`` / ``$HF_HOME/hub``.

    Returns:
        ``out_dir``.

    Raises:
        ConfigError: ``revision`` is a branch name or an abbreviated sha.
        StageError: the repo or revision is unknown, or (offline) not in the cache; the message
            names the repo id, the revision and the cache searched.
    """
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    check_revision(revision)
    offline = _offline()
    cache = Path(cache_dir) if cache_dir is not None else Path(constants.HF_HUB_CACHE)
    log.info("fetching %s@%s (cache %s, offline=%s)", repo_id, revision, cache, offline)
    try:
        snapshot = Path(
            snapshot_download(
                repo_id=repo_id,
                revision=revision,
                cache_dir=cache,
                local_files_only=offline,
            )
        )
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as exc:
        what = f"cannot get model {repo_id!r} at revision {revision!r}"
        if offline and isinstance(exc, LocalEntryNotFoundError):
            raise StageError(
                f"{what}: it is not in the huggingface_hub cache {cache.resolve()} and "
                "HF_HUB_OFFLINE is set (download it once with network access, or point "
                "HF_HUB_CACHE / HF_HOME at a cache that holds it)"
            ) from exc
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        source = "the offline cache" if offline else "the hub, cache"
        raise StageError(
            f"{what} ({source} {cache.resolve()}): {type(exc).__name__}: {detail}"
        ) from exc
    commit = snapshot.name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # copytree follows the cache's symlinks to its blobs, so out_dir holds real files.
    shutil.copytree(
        snapshot,
        out_dir,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".cache"),
        copy_function=shutil.copy,  # fresh mtimes (the cache's are old): Snakemake compares them
    )
    files = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    manifest = {
        "builder": "hf",
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "files": files,
    }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    log.info("%s@%s (commit %s): %d files in %s", repo_id, revision, commit, len(files), out_dir)
    return out_dir
