"""Datasets from a git repository at a pinned commit, through the real git command, against a
repository built in tmp_path and read by its file:// URL (tests/git_repo.py)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from git_repo import NEW_FILES, OLD_FILES, Repo, isolate_git, make_repo, run_git

from vlrl import git_source
from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import DATASET_MANIFEST
from vlrl.git_source import cache_name, cache_root, download_git_dataset, resolve

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """No offline switch set, whatever the caller's environment; git isolated."""
    from huggingface_hub import constants

    isolate_git(monkeypatch)
    for name in ("HF_HUB_OFFLINE", "VLRL_OFFLINE", "VLRL_GIT_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.fixture
def repo(tmp_path: Path, online: None) -> Repo:
    """The repository, online."""
    return make_repo(tmp_path / "upstream")


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "git-cache"


def _manifest(url: str, commit: str, files: dict[str, bytes], patterns: list | None) -> dict:
    """The manifest expected, from the bytes committed."""
    entries = {
        name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in sorted(files.items())
    }
    return {
        "git": url,
        "revision": commit,
        "commit": commit,
        "allow_patterns": patterns,
        "files": entries,
    }


def _written(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name != DATASET_MANIFEST
    }


def test_the_first_download_fetches_the_commit_into_an_empty_cache(
    repo: Repo, cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"

    manifest = download_git_dataset(repo.url, repo.new, out, cache_dir=cache)

    assert manifest == _manifest(repo.url, repo.new, NEW_FILES, None)
    assert json.loads((out / DATASET_MANIFEST).read_text()) == manifest
    assert _written(out) == NEW_FILES, "files only: the link latest.png is left out"
    assert not (out / "latest.png").exists()
    folder = cache / cache_name(repo.url)
    assert [p.name for p in cache.iterdir() if p.is_dir()] == [folder.name]
    assert (folder / "refs" / "vlrl" / repo.new).read_text().strip() == repo.new


@pytest.mark.parametrize("switch", ["HF_HUB_OFFLINE", "VLRL_OFFLINE"])
def test_a_second_download_of_the_commit_needs_no_network(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    first = download_git_dataset(repo.url, repo.new, tmp_path / "first", cache_dir=cache)
    shutil.rmtree(repo.path)
    monkeypatch.setenv(switch, "1")

    again = download_git_dataset(repo.url, repo.new, tmp_path / "again", cache_dir=cache)

    assert again == first
    assert _written(tmp_path / "again") == NEW_FILES


def test_the_cache_folder_comes_from_the_environment(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_GIT_CACHE", str(tmp_path / "chosen"))
    download_git_dataset(repo.url, repo.old, tmp_path / "out")
    assert (tmp_path / "chosen" / cache_name(repo.url) / "refs" / "vlrl" / repo.old).is_file()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"VLRL_GIT_CACHE": "/a", "XDG_CACHE_HOME": "/b", "HOME": "/h"}, "/a"),
        ({"XDG_CACHE_HOME": "/b", "HOME": "/h"}, "/b/vlrl/git"),
        ({"HOME": "/h"}, "/h/.cache/vlrl/git"),
    ],
)
def test_cache_root(monkeypatch: pytest.MonkeyPatch, env: dict, expected: str) -> None:
    for name in ("VLRL_GIT_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cache_root() == Path(expected)


def test_offline_with_an_empty_cache_names_the_commands_that_seed_it(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = (cache / cache_name(repo.url)).absolute()

    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)

    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.new}: it is not in the git cache {folder} and "
        "the network is off (HF_HUB_OFFLINE or VLRL_OFFLINE). Seed the cache where the network "
        f"is: `git clone --bare {repo.url} {folder}` (a new cache) or "
        f"`git -C {folder} fetch {repo.url} {repo.new}` (one that exists) (or point "
        "VLRL_GIT_CACHE at a cache that holds it)"
    )
    assert not folder.exists()


def test_the_commands_it_names_do_seed_the_cache(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = cache / cache_name(repo.url)
    subprocess.run(["git", "clone", "--quiet", "--bare", repo.url, str(folder)], check=True)
    shutil.rmtree(repo.path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest = download_git_dataset(repo.url, repo.old, tmp_path / "out", cache_dir=cache)
    assert manifest == _manifest(repo.url, repo.old, OLD_FILES, None)
    assert (folder / "refs" / "vlrl" / repo.old).read_text().strip() == repo.old


def test_an_unknown_commit_fails_naming_it(repo: Repo, cache: Path, tmp_path: Path) -> None:
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, UNKNOWN, tmp_path / "out", cache_dir=cache)

    said = str(info.value)
    start = f"cannot get {repo.url} at commit {UNKNOWN}: the repository has no such commit (git "
    assert re.fullmatch(
        re.escape(start) + r"fetch of the sha: (fatal|error): [^\n]*"
        r"; no branch or tag holds it\)",
        said,
    ), said
    assert not (tmp_path / "out").exists()


def test_an_unknown_repository_fails_naming_it(repo: Repo, cache: Path, tmp_path: Path) -> None:
    gone = (tmp_path / "gone").as_uri()
    with pytest.raises(StageError) as info:
        download_git_dataset(gone, repo.new, tmp_path / "out", cache_dir=cache)
    folder = (cache / cache_name(gone)).absolute()
    start = f"cannot get {gone} at commit {repo.new} (git cache {folder}): git fetch: fatal: "
    assert str(info.value).startswith(start), str(info.value)
    assert "does not appear to be a git repository" in str(info.value)


def test_a_server_that_refuses_a_fetch_by_sha_gets_a_full_fetch(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Protocol v0 serves only advertised commits (the branch tips): the older commit is
    fetched with its branch."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")

    manifest = download_git_dataset(repo.url, repo.old, tmp_path / "out", cache_dir=cache)

    assert manifest == _manifest(repo.url, repo.old, OLD_FILES, None)
    refs = cache / cache_name(repo.url) / "refs" / "vlrl"
    assert (refs / "heads" / "main").read_text().strip() == repo.new
    assert (refs / repo.old).read_text().strip() == repo.old, "kept from garbage collection"


@pytest.mark.parametrize(
    ("patterns", "names"),
    [
        (["data/images/*"], ["data/images/1.png", "data/images/2.png"]),
        (["*.json", "data/notes/"], ["data/dataset.json", "data/notes/bytes.bin"]),
        (["README.md"], ["README.md"]),
    ],
)
def test_patterns_select_the_files(
    repo: Repo, cache: Path, tmp_path: Path, patterns: list[str], names: list[str]
) -> None:
    out = tmp_path / "out"
    manifest = download_git_dataset(
        repo.url, repo.new, out, allow_patterns=patterns, cache_dir=cache
    )
    selected = {name: NEW_FILES[name] for name in names}
    assert manifest == _manifest(repo.url, repo.new, selected, patterns)
    assert _written(out) == selected


def test_no_file_matching_the_patterns_fails(repo: Repo, cache: Path, tmp_path: Path) -> None:
    with pytest.raises(StageError) as info:
        download_git_dataset(
            repo.url, repo.new, tmp_path / "out", allow_patterns=["nothing/*"], cache_dir=cache
        )
    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.new}: no file of the commit matches "
        "allow_patterns ['nothing/*']"
    )


def test_an_older_revision_gives_the_older_files(repo: Repo, cache: Path, tmp_path: Path) -> None:
    download_git_dataset(repo.url, repo.new, tmp_path / "new", cache_dir=cache)
    manifest = download_git_dataset(repo.url, repo.old, tmp_path / "old", cache_dir=cache)
    assert manifest == _manifest(repo.url, repo.old, OLD_FILES, None)
    assert _written(tmp_path / "old") == OLD_FILES


@pytest.mark.parametrize("revision", ["main", "0123456", UNKNOWN.upper()])
def test_a_revision_that_is_no_full_sha_is_refused(
    repo: Repo, cache: Path, tmp_path: Path, revision: str
) -> None:
    with pytest.raises(ConfigError) as info:
        download_git_dataset(repo.url, revision, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"revision {revision!r} of {repo.url} is not a full 40-character lower-case commit sha"
    )
    assert not cache.exists()


def test_without_git_it_says_so(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.new}: git is not installed (no `git` command "
        "on PATH)"
    )


def test_remote_head_is_the_default_branchs_commit(repo: Repo, tmp_path: Path) -> None:
    assert git_source.remote_head(repo.url) == repo.new
    gone = (tmp_path / "gone").as_uri()
    with pytest.raises(StageError) as info:
        git_source.remote_head(gone)
    said = str(info.value)
    assert said.startswith(f"cannot read the HEAD commit of {gone}: git ls-remote: fatal: "), said


# The pieces: names, paths, switches and git's messages.


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://github.com/Yijia-Xiao/LogicVista", "github.com+Yijia-Xiao+LogicVista.git"),
        ("git@github.com:Yijia-Xiao/LogicVista.git", "github.com+Yijia-Xiao+LogicVista.git"),
        ("ssh://git@github.com/o/r.git", "github.com+o+r.git"),
        ("HTTPS://Example.org/o/r", "Example.org+o+r.git"),
        ("git+ssh://host:22/o/r", "host+22+o+r.git"),
        ("file:///tmp/src/my repo/", "tmp+src+my_repo.git"),
        ("https://h/o/r.git/", "h+o+r.git"),
        ("https://github.com/o/TeX", "github.com+o+TeX.git"),
        ("https://h//o/./r/../s", "h+o+r+s.git"),
        ("/srv/git/ä b#c", "srv+git+__b_c.git"),
    ],
)
def test_cache_name(url: str, name: str) -> None:
    assert cache_name(url) == name


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/o/r", "https://github.com/o/r"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("data/odd://name", "data/odd://name"),
        ("/srv/git/repo", "/srv/git/repo"),
        ("data/repo", "/p/data/repo"),
    ],
)
def test_resolve_takes_only_relative_paths_from_the_project(url: str, expected: str) -> None:
    assert resolve(url, Path("/p")) == expected


@pytest.mark.parametrize(
    ("stderr", "returncode", "reason"),
    [
        (b"warning: w\nfatal: f\nerror: e\n", 128, "fatal: f"),
        (b"hint: h\n  error: e  \nfatal: f\n", 1, "error: e"),
        (b"\n  remote: first  \nsecond\n", 1, "remote: first"),
        (b"fatal: caf\xe9\n", 128, "fatal: caf\ufffd"),
        (b"", 7, "exit status 7"),
        (b" \n\t\n", 2, "exit status 2"),
    ],
)
def test_gits_reason_is_its_first_fatal_or_error_line(
    stderr: bytes, returncode: int, reason: str
) -> None:
    assert git_source._said(stderr, returncode) == reason


# The git commands run, and what each failure says.


def _answer_git(
    monkeypatch: pytest.MonkeyPatch,
    answer: Callable[[list[str]], subprocess.CompletedProcess | None] = lambda args: None,
) -> list[list[str]]:
    """Record the arguments of every git command vlrl.git_source runs; ``answer`` may stand for
    git in some (a result), the real git runs the others (None)."""
    calls: list[list[str]] = []
    real = git_source._git

    def fake(args: list[str], what: str) -> subprocess.CompletedProcess:
        calls.append(list(args))
        done = answer(list(args))
        return real(args, what) if done is None else done

    monkeypatch.setattr(git_source, "_git", fake)
    return calls


def _failed(args: list[str], returncode: int, stderr: bytes) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(["git", *args], returncode, b"", stderr)


def _commands(url: str, revision: str, folder: Path, *, init: bool) -> list[list[str]]:
    """The git commands that fetch ``revision`` by its sha alone."""
    git = ["--git-dir", str(folder)]
    present = [*git, "cat-file", "-e", f"{revision}^{{commit}}"]
    keep = f"+{revision}:refs/vlrl/{revision}"
    return [
        present,
        present,
        *([["init", "--quiet", "--bare", str(folder)]] if init else []),
        [*git, "fetch", "--quiet", "--no-tags", "--depth", "1", "--", url, keep],
        [*git, "update-ref", f"refs/vlrl/{revision}", revision],
    ]


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == git_source.__name__]


def test_a_commit_is_fetched_alone_and_a_cache_made_once(
    repo: Repo,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first download makes the bare cache (git init); the next one into it does not."""
    caplog.set_level(logging.INFO, logger=git_source.__name__)
    folder = (cache / cache_name(repo.url)).absolute()
    calls = _answer_git(monkeypatch)
    out = tmp_path / "several" / "levels" / "out"

    download_git_dataset(repo.url, repo.new, out, cache_dir=cache)
    assert calls == _commands(repo.url, repo.new, folder, init=True)
    assert _logged(caplog) == [
        f"fetching {repo.url}@{repo.new} into {folder}",
        f"{repo.url}@{repo.new}: {len(NEW_FILES)} files in {out}",
    ]

    calls.clear()
    download_git_dataset(repo.url, repo.old, tmp_path / "old", cache_dir=cache)
    assert calls == _commands(repo.url, repo.old, folder, init=False)
    assert _written(tmp_path / "old") == OLD_FILES


def test_every_git_command_runs_without_a_terminal_prompt(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_TERMINAL_PROMPT=0 for git's every run, the archive's too (a `git` on PATH that logs
    what it sees, then runs the real one)."""
    real = shutil.which("git")
    seen = tmp_path / "seen.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(
        f'#!/bin/sh\nprintf "%s %s\\n" "${{GIT_TERMINAL_PROMPT-unset}}" "$1" >> {seen}\n'
        f'exec {real} "$@"\n'
    )
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")

    download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)

    lines = seen.read_text().splitlines()
    assert len(lines) == 6, lines  # cat-file twice, init, fetch, update-ref, archive
    assert lines[2] == "0 init"
    assert all(line.startswith("0 ") for line in lines), lines


@pytest.mark.parametrize("missing_at", range(1, 8))
def test_git_missing_at_any_step_says_so(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing_at: int
) -> None:
    """Each git command names the download when git cannot be run: the seven of a fetch by
    branches and tags (cat-file twice, init, the refused fetch by sha, the fetch of every ref,
    cat-file, update-ref)."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # protocol v0: the older commit is refused
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")
    run = subprocess.run
    ran: list[list[str]] = []

    def gone_at_last(args: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        ran.append(args)
        if len(ran) == missing_at:
            raise FileNotFoundError(2, "No such file or directory", "git")
        return run(args, **kwargs)

    monkeypatch.setattr(subprocess, "run", gone_at_last)

    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.old, tmp_path / "out", cache_dir=cache)

    assert len(ran) == missing_at
    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.old}: git is not installed (no `git` command "
        "on PATH)"
    )


@pytest.mark.parametrize(
    ("stderr", "returncode", "reason"),
    [(b"hint: h\nfatal: no room\n", 128, "fatal: no room"), (b"", 5, "exit status 5")],
)
def test_a_cache_git_cannot_make_fails_with_gits_reason(
    repo: Repo,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stderr: bytes,
    returncode: int,
    reason: str,
) -> None:
    folder = (cache / cache_name(repo.url)).absolute()
    _answer_git(monkeypatch, lambda a: _failed(a, returncode, stderr) if a[0] == "init" else None)
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.new}: git init {folder}: {reason}"
    )


def test_a_cache_folder_that_is_a_file_fails_with_gits_reason(
    repo: Repo, cache: Path, tmp_path: Path
) -> None:
    folder = (cache / cache_name(repo.url)).absolute()
    folder.parent.mkdir(parents=True)
    folder.write_text("not a repository")
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)
    start = f"cannot get {repo.url} at commit {repo.new}: git init {folder}: fatal: "
    assert str(info.value).startswith(start), str(info.value)


@pytest.mark.parametrize(
    ("stderr", "returncode", "reason"),
    [(b"warning: w\nfatal: no route\n", 128, "fatal: no route"), (b"", 2, "exit status 2")],
)
def test_a_failed_fetch_of_every_ref_gives_gits_reason(
    repo: Repo,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    stderr: bytes,
    returncode: int,
    reason: str,
) -> None:
    """The fetch by sha is refused, then the fetch of the branches and tags fails."""
    caplog.set_level(logging.INFO, logger=git_source.__name__)
    folder = (cache / cache_name(repo.url)).absolute()

    def fetches_fail(args: list[str]) -> subprocess.CompletedProcess | None:
        if "fetch" not in args:
            return None
        if "--depth" in args:
            return _failed(args, 128, b"fatal: refused sha\n")
        return _failed(args, returncode, stderr)

    calls = _answer_git(monkeypatch, fetches_fail)
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, repo.new, tmp_path / "out", cache_dir=cache)

    assert str(info.value) == (
        f"cannot get {repo.url} at commit {repo.new} (git cache {folder}): git fetch: {reason}"
    )
    assert calls[-1] == [
        *("--git-dir", str(folder), "fetch", "--quiet", "--no-tags", "--", repo.url),
        *("+refs/heads/*:refs/vlrl/heads/*", "+refs/tags/*:refs/vlrl/tags/*"),
    ]
    assert _logged(caplog) == [
        f"fetching {repo.url}@{repo.new} into {folder}",
        f"{repo.url}: fetch by sha refused (fatal: refused sha): fetching its branches and tags",
    ]


def test_a_commit_no_ref_holds_names_the_refused_fetch(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal without a message is named by git's exit status."""
    _answer_git(monkeypatch, lambda a: _failed(a, 1, b"") if "--depth" in a else None)
    with pytest.raises(StageError) as info:
        download_git_dataset(repo.url, UNKNOWN, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"cannot get {repo.url} at commit {UNKNOWN}: the repository has no such commit (git "
        "fetch of the sha: exit status 1; no branch or tag holds it)"
    )


def test_a_commit_only_a_tag_holds_comes_with_the_tags(
    repo: Repo, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Protocol v0 refuses the sha of a commit below a tag on no branch; the tags bring it."""

    def git(*args: str) -> str:
        return run_git(repo.path, *args)

    git("checkout", "--quiet", "-b", "side")
    (repo.path / "tagged.txt").write_bytes(b"only below the tag\n")
    git("add", "tagged.txt")
    git("commit", "--quiet", "--message", "tagged")
    tagged = git("rev-parse", "HEAD")
    git("commit", "--quiet", "--allow-empty", "--message", "above")
    git("tag", "v1")
    git("checkout", "--quiet", "main")
    git("branch", "--quiet", "-D", "side")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "protocol.version")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "0")

    download_git_dataset(repo.url, tagged, tmp_path / "out", cache_dir=cache)

    assert _written(tmp_path / "out") == {**NEW_FILES, "tagged.txt": b"only below the tag\n"}
    refs = cache / cache_name(repo.url) / "refs" / "vlrl"
    assert (refs / "tags" / "v1").is_file()


# Reading the archive.


def _archive_from(monkeypatch: pytest.MonkeyPatch, script: str) -> list[list[str]]:
    """``git archive`` replaced by the shell ``script`` (its stdout the archive, its stderr
    git's); the commands it stood for, recorded."""
    popen = subprocess.Popen
    asked: list[list[str]] = []

    def fake(args: list[str], **kwargs: object) -> subprocess.Popen:
        asked.append(list(args))
        return popen(["sh", "-c", script], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", fake)
    return asked


WHAT = "cannot get it"


def _tar(folder: Path, name: str, data: bytes) -> Path:
    """``folder/a.tar``: one file, ``name``, holding ``data``."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (folder / "a.tar").write_bytes(archive.getvalue())
    return folder / "a.tar"


def test_extract_runs_git_archive_of_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _archive_from(monkeypatch, f"cat {_tar(tmp_path, 'a/b.txt', b'abc')}")

    written = git_source._extract(tmp_path / "c.git", UNKNOWN, tmp_path / "out", None, WHAT)

    assert written == ["a/b.txt"]
    assert (tmp_path / "out" / "a" / "b.txt").read_bytes() == b"abc"
    assert asked == [
        ["git", "--git-dir", str(tmp_path / "c.git"), "archive", "--format=tar", UNKNOWN]
    ]


@pytest.mark.parametrize("outside", ["../evil.txt", "ABSOLUTE"])
def test_an_archive_naming_a_file_outside_it_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside: str
) -> None:
    if outside == "ABSOLUTE":
        outside = str(tmp_path / "evil.txt")  # where a bug would write, in this test's folder
    _archive_from(monkeypatch, f"cat {_tar(tmp_path, outside, b'evil')}")
    (tmp_path / "out").mkdir()

    with pytest.raises(StageError) as info:
        git_source._extract(tmp_path / "c.git", UNKNOWN, tmp_path / "out", None, WHAT)

    assert str(info.value) == f"{WHAT}: the archive names a file outside it: {outside}"
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (
            "echo 'warning: w' >&2; echo 'fatal: no such commit' >&2; exit 128",
            "fatal: no such commit",
        ),
        ("exit 3", "exit status 3"),
    ],
)
def test_a_failed_git_archive_gives_gits_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, reason: str
) -> None:
    _archive_from(monkeypatch, script)
    with pytest.raises(StageError) as info:
        git_source._extract(tmp_path / "c.git", UNKNOWN, tmp_path / "out", None, WHAT)
    assert str(info.value) == f"{WHAT}: git archive: {reason}"


def test_git_archive_of_a_commit_not_in_the_cache_fails(repo: Repo, tmp_path: Path) -> None:
    folder = tmp_path / "c.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", repo.url, str(folder)], check=True)
    with pytest.raises(StageError) as info:
        git_source._extract(folder, UNKNOWN, tmp_path / "out", None, WHAT)
    assert str(info.value).startswith(f"{WHAT}: git archive: fatal: "), str(info.value)


def test_an_archive_that_is_no_tar_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"not a tar archive"
    with (
        pytest.raises(tarfile.ReadError) as expected,
        tarfile.open(fileobj=io.BytesIO(data), mode="r|"),
    ):
        pass
    _archive_from(monkeypatch, f"printf '{data.decode()}'")
    with pytest.raises(StageError) as info:
        git_source._extract(tmp_path / "c.git", UNKNOWN, tmp_path / "out", None, WHAT)
    assert str(info.value) == f"{WHAT}: git archive gave no readable tar: {expected.value}"


def test_extract_without_git_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(StageError) as info:
        git_source._extract(tmp_path / "c.git", UNKNOWN, tmp_path / "out", None, WHAT)
    assert str(info.value) == f"{WHAT}: git is not installed (no `git` command on PATH)"


# remote_head


def test_remote_head_of_an_empty_repository_fails(online: None, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "--quiet", str(tmp_path / "empty")], check=True)
    url = (tmp_path / "empty").as_uri()
    with pytest.raises(StageError) as info:
        git_source.remote_head(url)
    assert (
        str(info.value)
        == f"cannot read the HEAD commit of {url}: git ls-remote named no HEAD commit"
    )


def test_remote_head_reads_only_the_head_line_with_a_sha(
    online: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other refs, a HEAD line without a sha and undecodable bytes are passed over; the ref may
    be followed by blanks."""
    head = "a" * 40
    listing = (
        f"{UNKNOWN}\trefs/heads/main\n".encode() + b"\xff\tHEAD\n" + f"{head}\tHEAD \t\n".encode()
    )
    calls = _answer_git(
        monkeypatch, lambda a: subprocess.CompletedProcess(["git", *a], 0, listing, b"")
    )
    assert git_source.remote_head("https://h/o/r") == head
    assert calls == [["ls-remote", "--", "https://h/o/r", "HEAD"]]


def test_remote_head_failing_without_a_message_gives_the_exit_status(
    online: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _answer_git(monkeypatch, lambda a: _failed(a, 2, b""))
    with pytest.raises(StageError) as info:
        git_source.remote_head("https://h/o/r")
    assert (
        str(info.value)
        == "cannot read the HEAD commit of https://h/o/r: git ls-remote: exit status 2"
    )


def test_remote_head_without_git_says_so(
    online: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(StageError) as info:
        git_source.remote_head("https://h/o/r")
    assert str(info.value) == (
        "cannot read the HEAD commit of https://h/o/r: git is not installed (no `git` command on "
        "PATH)"
    )
