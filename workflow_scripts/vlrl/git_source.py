"""Datasets from a public git repository, pinned to a commit.

Some benchmarks are published only as a git repository (LogicVista:
https://github.com/Yijia-Xiao/LogicVista). :func:`download_git_dataset` writes the files of one
commit into a resource directory, with the checksum manifest a hub download writes
(``vlrl_dataset.json``, :func:`vlrl.hub.download_dataset`) recording the URL and the commit.

It runs the ``git`` command. Each URL has a bare cache repository under :func:`cache_root`
(``$VLRL_GIT_CACHE``, else ``$XDG_CACHE_HOME/vlrl/git``, else ``~/.cache/vlrl/git``), in a folder
named from the URL (:func:`cache_name`). A commit already there is used without the network.
Offline (:func:`vlrl.core.network.offline`: ``HF_HUB_OFFLINE`` as huggingface_hub reads it, or
``VLRL_OFFLINE=1``) a missing one fails at once, naming the commands that seed the cache; online
it is fetched alone (``git fetch --depth 1 <url> <sha>``), or with every branch and tag where the
server refuses a fetch by sha. A ref, ``refs/vlrl/<sha>``, keeps each commit from git's garbage
collection.

The files are those of ``git archive`` (read through :mod:`tarfile`, no shell): regular files
only, not links, as the commit's tree holds them, except where the repository's own
``.gitattributes`` marks a file ``export-ignore`` or ``export-subst`` (git archive honours both).
``allow_patterns`` selects them as huggingface_hub's do (``filter_repo_objects``, fnmatch).

May import: :mod:`vlrl.core`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import write_dataset_manifest
from vlrl.core.network import offline

log = logging.getLogger(__name__)

_SHA = re.compile(r"[0-9a-f]{40}")
# An unknown https repository fails instead of asking for a password nobody will type.
_ENV = {"GIT_TERMINAL_PROMPT": "0"}


def cache_root() -> Path:
    """Where the bare cache repositories are: ``$VLRL_GIT_CACHE``, else
    ``$XDG_CACHE_HOME/vlrl/git``, else ``~/.cache/vlrl/git``."""
    if os.environ.get("VLRL_GIT_CACHE"):
        return Path(os.environ["VLRL_GIT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "vlrl" / "git"


def cache_name(url: str) -> str:
    """The name of ``url``'s cache folder: its host and path, ``+`` for ``/``.

    Two URLs of one name share a folder, which is harmless: git stores objects by their hash,
    and every commit is fetched from its own URL, by its sha.

    >>> cache_name("https://github.com/Yijia-Xiao/LogicVista")
    'github.com+Yijia-Xiao+LogicVista.git'
    >>> cache_name("git@github.com:Yijia-Xiao/LogicVista.git")
    'github.com+Yijia-Xiao+LogicVista.git'
    >>> cache_name("file:///tmp/src/my repo/")
    'tmp+src+my_repo.git'
    """
    rest = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", url)  # the scheme
    rest = re.sub(r"^[^/@]*@", "", rest).replace(":", "/")  # user@, host:path
    parts = [p for p in rest.strip("/").removesuffix(".git").split("/") if p not in ("", ".", "..")]
    return "+".join(re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in parts) + ".git"


def resolve(url: str, base: Path) -> str:
    """``url`` as git reads it, a relative folder path taken from ``base`` (the project root);
    URLs (``scheme://…``, ``user@host:path``) and absolute paths as they are.

    >>> resolve("https://github.com/o/r", Path("/p")), resolve("data/repo", Path("/p"))
    ('https://github.com/o/r', '/p/data/repo')
    """
    if "://" in url or re.match(r"[^/]*:", url) or Path(url).is_absolute():
        return url
    return str(Path(base) / url)


def seed_commands(url: str, revision: str, cache: Path) -> str:
    """The commands that put commit ``revision`` of ``url`` into the cache folder ``cache``
    (run where the network is, then bring the folder here).

    >>> print(seed_commands("https://h/o/r", "a" * 40, Path("/c/h+o+r.git")))
    `git clone --bare https://h/o/r /c/h+o+r.git` (a new cache) or `git -C /c/h+o+r.git fetch https://h/o/r aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` (one that exists)
    """  # noqa: E501
    clone = shlex.join(["git", "clone", "--bare", url, str(cache)])
    fetch = shlex.join(["git", "-C", str(cache), "fetch", url, revision])
    return f"`{clone}` (a new cache) or `{fetch}` (one that exists)"


def _git(args: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, env={**os.environ, **_ENV}, check=False
        )
    except FileNotFoundError:
        raise StageError(f"{what}: git is not installed (no `git` command on PATH)") from None


def _said(stderr: bytes, returncode: int) -> str:
    """git's reason: the first ``fatal:`` or ``error:`` line of its stderr, else its first."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    reasons = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (reasons or lines or [f"exit status {returncode}"])[0]


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One fetch into ``cache`` at a time (two download stages may share a repository)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_name(cache.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _ensure_commit(url: str, revision: str, cache: Path) -> None:
    """Put commit ``revision`` of ``url`` into the bare repository ``cache`` (see the module)."""
    what = f"cannot get {url} at commit {revision}"
    git = ["--git-dir", str(cache)]  # never a repository found above the folder

    def present() -> bool:
        check = _git([*git, "cat-file", "-e", f"{revision}^{{commit}}"], what)
        return check.returncode == 0

    if not present():
        if offline():
            raise StageError(
                f"{what}: it is not in the git cache {cache} and the network is off "
                "(HF_HUB_OFFLINE or VLRL_OFFLINE). Seed the cache where the network is: "
                f"{seed_commands(url, revision, cache)} (or point VLRL_GIT_CACHE at a cache "
                "that holds it)"
            )
        with _locked(cache):
            if not present():
                _fetch(url, revision, cache, what)
    # Best effort: a shared cache may be read-only, and holds the commit anyway.
    _git([*git, "update-ref", f"refs/vlrl/{revision}", revision], what)


def _fetch(url: str, revision: str, cache: Path, what: str) -> None:
    git = ["--git-dir", str(cache)]
    if not (cache / "HEAD").is_file():
        made = _git(["init", "--quiet", "--bare", str(cache)], what)
        if made.returncode != 0:
            raise StageError(f"{what}: git init {cache}: {_said(made.stderr, made.returncode)}")
    log.info("fetching %s@%s into %s", url, revision, cache)
    keep = f"+{revision}:refs/vlrl/{revision}"
    one = _git([*git, "fetch", "--quiet", "--no-tags", "--depth", "1", "--", url, keep], what)
    if one.returncode == 0:
        return
    refused = _said(one.stderr, one.returncode)
    log.info("%s: fetch by sha refused (%s): fetching its branches and tags", url, refused)
    refs = ["+refs/heads/*:refs/vlrl/heads/*", "+refs/tags/*:refs/vlrl/tags/*"]
    every = _git([*git, "fetch", "--quiet", "--no-tags", "--", url, *refs], what)
    if every.returncode != 0:
        raise StageError(
            f"{what} (git cache {cache}): git fetch: {_said(every.stderr, every.returncode)}"
        )
    if _git([*git, "cat-file", "-e", f"{revision}^{{commit}}"], what).returncode != 0:
        raise StageError(
            f"{what}: the repository has no such commit (git fetch of the sha: {refused}; no "
            "branch or tag holds it)"
        )


def _extract(
    cache: Path, revision: str, out_dir: Path, allow_patterns: list[str] | None, what: str
) -> list[str]:
    """Write the files of ``revision`` that ``allow_patterns`` selects into ``out_dir``."""
    from huggingface_hub.utils import filter_repo_objects

    written, broken = [], None
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(
                ["git", "--git-dir", str(cache), "archive", "--format=tar", revision],
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, **_ENV},
            )
        except FileNotFoundError:
            raise StageError(f"{what}: git is not installed (no `git` command on PATH)") from None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                for member in tar:
                    name = member.name
                    if not member.isfile() or not list(
                        filter_repo_objects([name], allow_patterns=allow_patterns)
                    ):
                        continue
                    if name.startswith("/") or ".." in PurePosixPath(name).parts:
                        raise StageError(f"{what}: the archive names a file outside it: {name}")
                    target = out_dir / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as source, open(target, "wb") as sink:
                        shutil.copyfileobj(source, sink, 1 << 20)
                    written.append(name)
            proc.stdout.read()  # the archive's padding, so that git can finish
        except tarfile.TarError as exc:
            broken = exc
        finally:
            proc.stdout.close()  # left early (an error): git stops on the closed pipe
            returncode = proc.wait()
        if returncode != 0:
            stderr.seek(0)
            raise StageError(f"{what}: git archive: {_said(stderr.read(), returncode)}")
    if broken is not None:
        raise StageError(f"{what}: git archive gave no readable tar: {broken}")
    if not written:
        raise StageError(f"{what}: no file of the commit matches allow_patterns {allow_patterns}")
    return sorted(written)


def download_git_dataset(
    url: str,
    revision: str,
    out_dir: Path,
    *,
    allow_patterns: list[str] | None = None,
    cache_dir: Path | None = None,
) -> dict:
    """Write the files of commit ``revision`` of the git repository ``url`` (those
    ``allow_patterns`` selects, every file when None) into ``out_dir`` with a checksum manifest,
    ``vlrl_dataset.json``: the URL, revision, commit, patterns and every file's size and
    SHA-256. ``cache_dir`` holds the bare cache repositories (default: :func:`cache_root`).

    Returns:
        The manifest.

    Raises:
        ConfigError: ``revision`` is not a full 40-character commit sha.
        StageError: git is missing, the URL or the commit is unknown, (offline) the commit is
            not in the cache, or no file matches ``allow_patterns``; the message names the URL,
            the commit and what failed (git's own reason, or the commands that seed the cache).
    """
    if not _SHA.fullmatch(revision):
        raise ConfigError(
            f"revision {revision!r} of {url} is not a full 40-character lower-case commit sha"
        )
    cache = (Path(cache_dir) if cache_dir is not None else cache_root()).absolute()
    cache = cache / cache_name(url)
    what = f"cannot get {url} at commit {revision}"
    _ensure_commit(url, revision, cache)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = _extract(cache, revision, out_dir, allow_patterns, what)
    manifest = write_dataset_manifest(
        out_dir,
        files,
        {"git": url, "revision": revision, "commit": revision, "allow_patterns": allow_patterns},
    )
    log.info("%s@%s: %d files in %s", url, revision, len(files), out_dir)
    return manifest


def remote_head(url: str) -> str:
    """The commit the HEAD of the repository at ``url`` (its default branch) points at now:
    ``git ls-remote <url> HEAD``, through the network.

    Raises:
        StageError: git is missing, or the repository cannot be read or names no HEAD commit.
    """
    what = f"cannot read the HEAD commit of {url}"
    result = _git(["ls-remote", "--", url, "HEAD"], what)
    if result.returncode != 0:
        raise StageError(f"{what}: git ls-remote: {_said(result.stderr, result.returncode)}")
    for line in result.stdout.decode(errors="replace").splitlines():
        sha, _, ref = line.partition("\t")
        if ref.strip() == "HEAD" and _SHA.fullmatch(sha):
            return sha
    raise StageError(f"{what}: git ls-remote named no HEAD commit")
