"""Hub downloads of models and datasets, offline, against a real huggingface_hub cache layout
built in tmp_path (tests/hub_cache.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hub_cache import seed_cache

from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import DATASET_MANIFEST
from vlrl.hub import (
    MANIFEST,
    check_revision,
    copy_local_dataset,
    download_dataset,
    download_model,
    fetch_command,
)

REPO = "vlrl-test/tiny-qwen2.5-vl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TAG = "v1.0"


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> Path:
    cache = tmp_path_factory.mktemp("hf-cache")
    seed_cache(cache, REPO, COMMIT, tiny_model_dir, tags=[TAG])
    return cache


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize(
    ("revision", "ok", "reason"),
    [
        (COMMIT, True, "a full commit sha is immutable"),
        ("v1.0", True, "a version tag"),
        ("2.5.1-rc1", True, "a version tag without the v"),
        ("refs/tags/release", True, "an explicit tag ref"),
        ("main", False, "the default branch moves"),
        ("dev", False, "any other branch name moves too"),
        ("refs/pr/3", False, "a pull-request ref moves"),
        ("0123456", False, "an abbreviated sha is ambiguous"),
        (COMMIT.upper(), False, "the hub's shas are lower case"),
    ],
)
def test_check_revision(revision: str, ok: bool, reason: str) -> None:
    if ok:
        assert check_revision(revision) == revision, reason
    else:
        with pytest.raises(ConfigError, match=f"revision '{revision}'"):
            check_revision(revision)


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("revision", [COMMIT, TAG])
def test_offline_download_materialises_a_loadable_model(
    hub_cache: Path, tiny_model_dir: Path, tmp_path: Path, revision: str
) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    out = download_model(REPO, revision, tmp_path / "model", cache_dir=hub_cache)

    assert out == tmp_path / "model"
    for src in tiny_model_dir.iterdir():
        copied = out / src.name
        if src.name == MANIFEST:
            continue
        assert not copied.is_symlink(), f"{src.name} must be a real file, not a link into the cache"
        assert copied.read_bytes() == src.read_bytes()
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["repo_id"] == REPO
    assert manifest["revision"] == revision
    assert manifest["commit"] == COMMIT
    assert "model.safetensors" in manifest["files"]
    AutoProcessor.from_pretrained(out)
    AutoModelForImageTextToText.from_pretrained(out)


def test_environment_alone_selects_the_offline_cache(hub_cache: Path, tmp_path: Path) -> None:
    """HF_HUB_OFFLINE and HF_HUB_CACHE as a fresh process sees them (no cache_dir argument)."""
    code = (
        "import sys; from pathlib import Path; from vlrl.hub import download_model; "
        "download_model(sys.argv[1], sys.argv[2], Path(sys.argv[3]))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)}
    result = subprocess.run(
        [sys.executable, "-c", code, REPO, TAG, str(tmp_path / "m")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "m" / MANIFEST).read_text())["commit"] == COMMIT


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("repo_id", "revision", "reason"),
    [
        ("vlrl-test/not-cached", COMMIT, "repo absent from the cache"),
        (REPO, "f" * 40, "commit absent from the cache"),
        (REPO, "v9.9", "tag absent from the cache"),
    ],
)
def test_missing_from_offline_cache_names_repo_and_revision(
    hub_cache: Path, tmp_path: Path, repo_id: str, revision: str, reason: str
) -> None:
    with pytest.raises(StageError) as info:
        download_model(repo_id, revision, tmp_path / "model", cache_dir=hub_cache)
    message = str(info.value)
    assert repo_id in message and revision in message and "HF_HUB_OFFLINE" in message, reason
    assert not (tmp_path / "model").exists()


def test_branch_revision_is_rejected_before_any_lookup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="branch"):
        download_model(REPO, "main", tmp_path / "model", cache_dir=tmp_path / "no-cache")


# datasets ----------------------------------------------------------------------------------
DATASET = "vlrl-test/shapes-bench"
DATASET_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def dataset_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = tmp_path_factory.mktemp("dataset-files")
    (files / "data").mkdir()
    (files / "data" / "test.jsonl").write_text('{"id": "a"}\n')
    (files / "data" / "val.jsonl").write_text('{"id": "b"}\n')
    (files / "images").mkdir()
    (files / "images" / "0.png").write_bytes(bytes(range(256)) * 5)
    (files / "README.md").write_text("# a dataset card\n")
    cache = tmp_path_factory.mktemp("hf-dataset-cache")
    seed_cache(cache, DATASET, DATASET_COMMIT, files, repo_type="dataset")
    return cache


@pytest.mark.usefixtures("offline")
def test_dataset_download_keeps_the_patterns_files_with_their_checksums(
    dataset_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ds"
    manifest = download_dataset(
        DATASET,
        DATASET_COMMIT,
        out,
        allow_patterns=["data/test.jsonl", "images/*"],
        cache_dir=dataset_cache,
    )

    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == ["data/test.jsonl", "images/0.png", DATASET_MANIFEST], (
        "offline, huggingface_hub returns the whole snapshot; only the patterns' files are kept"
    )
    assert not any(p.is_symlink() for p in out.rglob("*"))
    assert manifest == json.loads((out / DATASET_MANIFEST).read_text())
    assert manifest["repo_id"] == DATASET and manifest["repo_type"] == "dataset"
    assert manifest["revision"] == manifest["commit"] == DATASET_COMMIT
    png = (out / "images" / "0.png").read_bytes()
    assert manifest["files"]["images/0.png"] == {
        "size": len(png),
        "sha256": hashlib.sha256(png).hexdigest(),
    }


@pytest.mark.usefixtures("offline")
def test_dataset_download_without_patterns_takes_every_file(
    dataset_cache: Path, tmp_path: Path
) -> None:
    manifest = download_dataset(DATASET, DATASET_COMMIT, tmp_path / "ds", cache_dir=dataset_cache)
    assert sorted(manifest["files"]) == [
        "README.md",
        "data/test.jsonl",
        "data/val.jsonl",
        "images/0.png",
    ]


@pytest.mark.usefixtures("offline")
def test_dataset_missing_offline_names_the_command_that_fetches_it(
    dataset_cache: Path, tmp_path: Path
) -> None:
    with pytest.raises(StageError) as info:
        download_dataset(
            DATASET, "f" * 40, tmp_path / "ds", allow_patterns=["data/*"], cache_dir=dataset_cache
        )
    message = str(info.value)
    assert f"hf download {DATASET} --repo-type dataset --revision {'f' * 40}" in message
    assert "--include 'data/*'" in message and "HF_HUB_OFFLINE" in message
    assert not (tmp_path / "ds").exists()


@pytest.mark.usefixtures("offline")
def test_dataset_patterns_that_match_nothing_are_an_error(
    dataset_cache: Path, tmp_path: Path
) -> None:
    with pytest.raises(StageError, match=r"no file .* matches allow_patterns \['train/\*'\]"):
        download_dataset(
            DATASET,
            DATASET_COMMIT,
            tmp_path / "ds",
            allow_patterns=["train/*"],
            cache_dir=dataset_cache,
        )


def test_a_model_repo_is_not_found_as_a_dataset(
    dataset_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repo type is part of the cache's folder name: a dataset is not a model."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(StageError, match="cannot get model"):
        download_model(DATASET, DATASET_COMMIT, tmp_path / "m", cache_dir=dataset_cache)


@pytest.mark.usefixtures("offline")
def test_the_model_manifest_and_log_line_record_what_was_fetched(
    hub_cache: Path, tmp_path: Path, caplog
) -> None:
    with caplog.at_level("INFO", logger="vlrl.hub"):
        out = download_model(REPO, TAG, tmp_path / "model", cache_dir=hub_cache)
    manifest = json.loads((out / MANIFEST).read_text())
    assert list(manifest) == ["builder", "repo_id", "revision", "commit", "files"]
    assert (manifest["builder"], manifest["revision"], manifest["commit"]) == ("hf", TAG, COMMIT)
    assert (out / MANIFEST).read_text() == json.dumps(manifest, indent=2) + "\n"
    files = len(manifest["files"])
    assert caplog.messages[-1] == f"{REPO}@{TAG} (commit {COMMIT}): {files} files in {out}"


@pytest.mark.usefixtures("offline")
def test_the_dataset_manifest_and_log_line_record_the_source_then_the_files(
    dataset_cache: Path, tmp_path: Path, caplog
) -> None:
    out = tmp_path / "ds"
    with caplog.at_level("INFO", logger="vlrl.hub"):
        manifest = download_dataset(
            DATASET, DATASET_COMMIT, out, allow_patterns=["data/*"], cache_dir=dataset_cache
        )
    keys = ["repo_id", "repo_type", "revision", "commit", "allow_patterns", "files"]
    assert list(manifest) == keys and manifest["allow_patterns"] == ["data/*"]
    assert (out / DATASET_MANIFEST).read_text() == json.dumps(manifest, indent=2) + "\n"
    assert caplog.messages[-1] == (
        f"{DATASET}@{DATASET_COMMIT} (commit {DATASET_COMMIT}): 2 files in {out}"
    )


def test_the_fetch_command_is_for_a_model_unless_told() -> None:
    assert (
        fetch_command(REPO, COMMIT) == f"hf download {REPO} --repo-type model --revision {COMMIT}"
    )


def test_a_local_dataset_is_copied_with_the_same_manifest(tmp_path: Path) -> None:
    """User-provided files (config key local): the selected ones, nested folders kept, and the
    checksum manifest a hub download writes, naming the folder."""
    source = tmp_path / "mine"
    (source / "images" / "a").mkdir(parents=True)
    (source / "data.jsonl").write_text('{"id": 1}\n')
    (source / "images" / "a" / "0.png").write_bytes(b"png")
    (source / "notes.txt").write_text("not data")
    out = tmp_path / "out"
    out.mkdir()
    manifest = copy_local_dataset(source, out, ["data.jsonl", "images/*"])
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == ["data.jsonl", "images/a/0.png", DATASET_MANIFEST]
    assert (out / "images" / "a" / "0.png").read_bytes() == b"png"
    assert list(manifest) == ["local", "allow_patterns", "files"]
    assert (manifest["local"], manifest["allow_patterns"]) == (
        str(source),
        ["data.jsonl", "images/*"],
    )
    assert manifest["files"]["images/a/0.png"] == {
        "size": 3,
        "sha256": hashlib.sha256(b"png").hexdigest(),
    }
    assert json.loads((out / DATASET_MANIFEST).read_text()) == manifest
    every = copy_local_dataset(source, tmp_path / "all", None)
    assert sorted(every["files"]) == ["data.jsonl", "images/a/0.png", "notes.txt"]


def test_a_local_dataset_that_is_missing_or_matches_nothing_is_named(tmp_path: Path) -> None:
    with pytest.raises(StageError) as missing:
        copy_local_dataset(tmp_path / "absent", tmp_path / "out", None)
    assert str(missing.value) == (
        f"{tmp_path / 'absent'}: no such folder; this dataset is user-provided (config key "
        "local): put its files there in the format its config describes"
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    with pytest.raises(StageError) as nothing:
        copy_local_dataset(tmp_path / "src", tmp_path / "out", ["*.jsonl"])
    assert str(nothing.value) == f"{tmp_path / 'src'}: no file matches ['*.jsonl']"
    assert not (tmp_path / "out").exists()


def test_the_snapshot_is_asked_for_the_patterns_and_logged(
    tmp_path: Path, monkeypatch, caplog
) -> None:
    """Online, huggingface_hub downloads only what allow_patterns selects (offline it returns
    the whole cached snapshot, filtered here after)."""
    import huggingface_hub

    from vlrl.hub import download_snapshot

    snapshot = tmp_path / "snapshots" / COMMIT
    (snapshot / "data").mkdir(parents=True)
    (snapshot / "data" / "a.json").write_text("{}")
    asked = {}

    def snapshot_download(**kwargs):
        asked.update(kwargs)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with caplog.at_level("INFO", logger="vlrl.hub"):
        commit, files = download_snapshot(
            REPO,
            COMMIT,
            tmp_path / "out",
            repo_type="dataset",
            allow_patterns=["data/*"],
            cache_dir=tmp_path / "cache",
        )
    assert (commit, files) == (COMMIT, ["data/a.json"])
    assert asked == {
        "repo_id": REPO,
        "revision": COMMIT,
        "repo_type": "dataset",
        "allow_patterns": ["data/*"],
        "cache_dir": tmp_path / "cache",
        "local_files_only": False,
    }
    assert caplog.messages == [
        f"fetching dataset {REPO}@{COMMIT} (cache {tmp_path / 'cache'}, offline=False)"
    ]


# whole messages and copying, with huggingface_hub's snapshot_download stubbed -----------------
@pytest.mark.parametrize(
    ("revision", "reason"),
    [
        ("abcdef1", "is not a full lower-case 40-character commit sha"),
        ("ABCDEF1", "is not a full lower-case 40-character commit sha"),
        ("main", "looks like a branch name, which moves over time"),
    ],
)
def test_check_revision_says_why_and_what_to_pin_instead(revision: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_revision(revision)
    assert str(info.value) == (
        f"revision '{revision}' {reason}; pin a full 40-character commit sha "
        "(or a version tag such as v1.0)"
    )


@pytest.fixture
def stub_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """snapshot_download replaced: it raises ``stub_hub["raise"]`` if set, else returns a
    snapshot folder in tmp_path; online unless a test sets HF_HUB_OFFLINE."""
    import huggingface_hub

    snapshot = tmp_path / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    state: dict = {"snapshot": snapshot, "raise": None, "asked": {}}

    def snapshot_download(**kwargs):
        state["asked"] = kwargs
        if state["raise"] is not None:
            raise state["raise"]
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return state


def test_without_cache_dir_huggingface_hubs_cache_is_asked(
    stub_hub: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    from vlrl.hub import download_snapshot

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "default"))
    (stub_hub["snapshot"] / "a.txt").write_text("a")
    assert download_snapshot(REPO, COMMIT, tmp_path / "out") == (COMMIT, ["a.txt"])
    assert stub_hub["asked"]["cache_dir"] == tmp_path / "default"


def test_missing_offline_message_is_whole(
    stub_hub: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub.errors import LocalEntryNotFoundError

    from vlrl.hub import download_snapshot

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    stub_hub["raise"] = LocalEntryNotFoundError("not cached")
    cache = tmp_path / "cache"
    with pytest.raises(StageError) as info:
        download_snapshot(REPO, COMMIT, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"cannot get model '{REPO}' at revision '{COMMIT}': it is not in the huggingface_hub "
        f"cache {cache.resolve()} and HF_HUB_OFFLINE is set. Fetch it once where the network "
        f"is: `hf download {REPO} --repo-type model --revision {COMMIT}` "
        "(or point HF_HUB_CACHE / HF_HOME at a cache that holds it)"
    )


@pytest.mark.parametrize(
    ("offline", "error", "source", "shown"),
    [
        (False, "LocalEntryNotFoundError", "the hub, cache", "LocalEntryNotFoundError: gone"),
        (False, "OSError", "the hub, cache", "OSError: first line"),
        (True, "OSError", "the offline cache", "OSError: first line"),
        (False, "ValueError", "the hub, cache", "ValueError: "),
    ],
)
def test_other_errors_name_the_source_the_cache_and_the_first_line(
    stub_hub: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    offline: bool,
    error: str,
    source: str,
    shown: str,
) -> None:
    from huggingface_hub.errors import LocalEntryNotFoundError

    from vlrl.hub import download_snapshot

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    stub_hub["raise"] = {
        "LocalEntryNotFoundError": LocalEntryNotFoundError("gone"),
        "OSError": OSError("  first line\nsecond line\n"),
        "ValueError": ValueError("  \n "),
    }[error]
    cache = tmp_path / "cache"
    with pytest.raises(StageError) as info:
        download_snapshot(REPO, COMMIT, tmp_path / "out", cache_dir=cache)
    assert str(info.value) == (
        f"cannot get model '{REPO}' at revision '{COMMIT}' ({source} {cache.resolve()}): {shown}"
    )
    assert info.value.__cause__ is stub_hub["raise"]


def test_the_snapshot_is_copied_into_new_folders_without_its_cache(
    stub_hub: dict, tmp_path: Path
) -> None:
    from vlrl.hub import download_snapshot

    snapshot = stub_hub["snapshot"]
    (snapshot / "a" / "b").mkdir(parents=True)
    (snapshot / "a" / "b" / "c.txt").write_text("c")
    (snapshot / "top.txt").write_text("top")
    (snapshot / ".cache" / "huggingface").mkdir(parents=True)
    (snapshot / ".cache" / "huggingface" / "x.lock").write_text("")
    out = tmp_path / "not" / "yet" / "out"
    assert download_snapshot(REPO, COMMIT, out) == (COMMIT, ["a/b/c.txt", "top.txt"])
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == ["a/b/c.txt", "top.txt"]
    assert (out / "a" / "b" / "c.txt").read_text() == "c"
    # again, into the folders that now exist
    assert download_snapshot(REPO, COMMIT, out) == (COMMIT, ["a/b/c.txt", "top.txt"])
    assert (out / "top.txt").read_text() == "top"


def test_nested_folders_are_made_in_an_existing_out_dir(stub_hub: dict, tmp_path: Path) -> None:
    from vlrl.hub import download_snapshot

    (stub_hub["snapshot"] / "a" / "b").mkdir(parents=True)
    (stub_hub["snapshot"] / "a" / "b" / "c.txt").write_text("c")
    out = tmp_path / "out"
    out.mkdir()
    assert download_snapshot(REPO, COMMIT, out) == (COMMIT, ["a/b/c.txt"])
    assert (out / "a" / "b" / "c.txt").read_text() == "c"
