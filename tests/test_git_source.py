"""Datasets from a git repository at a pinned commit, through the real git command, against a
repository built in tmp_path and read by its file:// URL (tests/git_repo.py)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from git_repo import NEW_FILES, OLD_FILES, Repo, isolate_git, make_repo

from vlrl import git_source
from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import DATASET_MANIFEST
from vlrl.git_source import cache_name, cache_root, download_git_dataset

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """The repository, online (no offline switch set, whatever the caller's environment)."""
    from huggingface_hub import constants

    isolate_git(monkeypatch)
    for name in ("HF_HUB_OFFLINE", "VLRL_OFFLINE", "VLRL_GIT_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
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
