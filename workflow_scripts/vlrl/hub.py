"""Models and datasets from the Hugging Face hub, pinned to an immutable revision.

:func:`download_snapshot` goes through ``huggingface_hub.snapshot_download`` and its cache, so the
usual environment applies: ``HF_HOME`` / ``HF_HUB_CACHE`` choose the cache, ``HF_HUB_OFFLINE=1``
serves the snapshot from that cache without touching the network (a cluster node without
internet, or a test). The snapshot's files are then copied into a resource directory, which DVC
tracks, with a manifest recording the repo, the revision and the commit: ``vlrl_model.json`` for
a base model (:func:`download_model`), ``vlrl_dataset.json`` with every file's SHA-256 for a
dataset (:func:`download_dataset`).

Why not ``snapshot_download(local_dir=...)``: offline, huggingface_hub only reuses a ``local_dir``
that already holds the files and never fills one from its cache, so an offline run from a
pre-seeded cache would fail. And offline it returns the whole cached snapshot, whatever
``allow_patterns`` says, so the patterns are applied again when copying: the output is the same
online and offline.

May import: :mod:`vlrl.core`.
"""

from __future__ import annotations

import logging
import re
import shlex
import shutil
from pathlib import Path
from typing import Literal

from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import write_dataset_manifest, write_json
from vlrl.core.network import hf_hub_offline

log = logging.getLogger(__name__)

MANIFEST = "vlrl_model.json"
RepoType = Literal["model", "dataset"]
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
    vlrl.core.errors.ConfigError: revision 'main' looks like a branch name, ...
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


def fetch_command(
    repo_id: str,
    revision: str,
    repo_type: RepoType = "model",
    allow_patterns: list[str] | None = None,
) -> str:
    """The ``hf`` command that puts this snapshot into the cache (run where the network is).

    ``--include`` is repeated, once per pattern (the ``hf`` CLI takes a list option).

    >>> fetch_command("lmms-lab/RefCOCO", "a" * 40, "dataset", ["data/val-*", "README.md"])
    "hf download lmms-lab/RefCOCO --repo-type dataset --revision aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa --include 'data/val-*' --include README.md"
    """  # noqa: E501
    words = ["hf", "download", repo_id, "--repo-type", repo_type, "--revision", revision]
    for pattern in allow_patterns or ():
        words += ["--include", pattern]
    return shlex.join(words)


def download_snapshot(
    repo_id: str,
    revision: str,
    out_dir: Path,
    *,
    repo_type: RepoType = "model",
    allow_patterns: list[str] | None = None,
    cache_dir: Path | None = None,
) -> tuple[str, list[str]]:
    """Fetch the files of ``repo_id`` at ``revision`` that match ``allow_patterns`` (all files
    when None) into ``out_dir``, as real files (copies, not links into the cache).

    Returns:
        The snapshot's commit and the copied files (paths relative to ``out_dir``, sorted).

    Raises:
        ConfigError: ``revision`` is a branch name or an abbreviated sha.
        StageError: the repo or revision is unknown, or (offline) not in the cache, or no file
            matches ``allow_patterns``; the message names the repo id, the revision, the cache
            searched and, offline, the ``hf download`` command that would fetch it.
    """
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    check_revision(revision)
    offline = hf_hub_offline()
    cache = Path(cache_dir) if cache_dir is not None else Path(constants.HF_HUB_CACHE)
    what = f"cannot get {repo_type} {repo_id!r} at revision {revision!r}"
    log.info(
        "fetching %s %s@%s (cache %s, offline=%s)", repo_type, repo_id, revision, cache, offline
    )
    try:
        snapshot = Path(
            snapshot_download(
                repo_id=repo_id,
                revision=revision,
                repo_type=repo_type,
                allow_patterns=allow_patterns,
                cache_dir=cache,
                local_files_only=offline,
            )
        )
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as exc:
        if offline and isinstance(exc, LocalEntryNotFoundError):
            raise StageError(
                f"{what}: it is not in the huggingface_hub cache {cache.resolve()} and "
                "HF_HUB_OFFLINE is set. Fetch it once where the network is: "
                f"`{fetch_command(repo_id, revision, repo_type, allow_patterns)}` "
                "(or point HF_HUB_CACHE / HF_HOME at a cache that holds it)"
            ) from exc
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        source = "the offline cache" if offline else "the hub, cache"
        raise StageError(
            f"{what} ({source} {cache.resolve()}): {type(exc).__name__}: {detail}"
        ) from exc
    present = sorted(
        p.relative_to(snapshot).as_posix()
        for p in snapshot.rglob("*")
        if p.is_file() and ".cache" not in p.relative_to(snapshot).parts
    )
    files = list(filter_repo_objects(present, allow_patterns=allow_patterns))
    if not files:
        raise StageError(
            f"{what}: no file of snapshot {snapshot} matches allow_patterns {allow_patterns}"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in files:
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # copy follows the cache's symlinks to its blobs, and gives fresh mtimes (the cache's
        # are old), which Snakemake compares.
        shutil.copy(snapshot / name, target)
    return snapshot.name, files


def download_model(
    repo_id: str, revision: str, out_dir: Path, *, cache_dir: Path | None = None
) -> Path:
    """Fetch model ``repo_id`` at ``revision`` into ``out_dir`` with a ``vlrl_model.json``
    recording what was fetched (see :func:`download_snapshot` for the errors).

    Returns:
        ``out_dir``.
    """
    commit, files = download_snapshot(repo_id, revision, out_dir, cache_dir=cache_dir)
    manifest = {
        "builder": "hf",
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "files": files,
    }
    write_json(Path(out_dir) / MANIFEST, manifest)
    log.info("%s@%s (commit %s): %d files in %s", repo_id, revision, commit, len(files), out_dir)
    return Path(out_dir)


def download_dataset(
    repo_id: str,
    revision: str,
    out_dir: Path,
    *,
    repo_type: RepoType = "dataset",
    allow_patterns: list[str] | None = None,
    cache_dir: Path | None = None,
) -> dict:
    """Fetch dataset ``repo_id`` at ``revision`` (the files ``allow_patterns`` selects) into
    ``out_dir`` with a checksum manifest, ``vlrl_dataset.json``: the repo, revision, commit,
    patterns and every file's size and SHA-256 (see :func:`download_snapshot` for the errors).

    Returns:
        The manifest.
    """
    commit, files = download_snapshot(
        repo_id,
        revision,
        out_dir,
        repo_type=repo_type,
        allow_patterns=allow_patterns,
        cache_dir=cache_dir,
    )
    manifest = write_dataset_manifest(
        out_dir,
        files,
        {
            "repo_id": repo_id,
            "repo_type": repo_type,
            "revision": revision,
            "commit": commit,
            "allow_patterns": allow_patterns,
        },
    )
    log.info("%s@%s (commit %s): %d files in %s", repo_id, revision, commit, len(files), out_dir)
    return manifest


def copy_local_dataset(source: Path, out_dir: Path, allow_patterns: list[str] | None) -> dict:
    """Copy the user-provided files under ``source`` (those ``allow_patterns`` selects, every
    file when None) into ``out_dir`` with the same checksum manifest as a hub download.

    Raises:
        StageError: naming ``source`` when it is not a folder or holds no selected file.
    """
    import fnmatch

    source = Path(source)
    if not source.is_dir():
        raise StageError(
            f"{source}: no such folder; this dataset is user-provided (config key local): put "
            "its files there in the format its config describes"
        )
    names = sorted(
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file()
        and (
            allow_patterns is None
            or any(fnmatch.fnmatch(p.relative_to(source).as_posix(), pat) for pat in allow_patterns)
        )
    )
    if not names:
        raise StageError(f"{source}: no file matches {allow_patterns}")
    out_dir = Path(out_dir)
    for name in names:
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out_dir / name)
    return write_dataset_manifest(
        out_dir, names, {"local": str(source), "allow_patterns": allow_patterns}
    )
