"""Hub downloads, offline against a real huggingface_hub cache layout built in tmp_path.

The layout is what ``snapshot_download`` reads when it may not use the network::

    <cache>/models--<org>--<name>/
        blobs/<sha256 of the file>          the bytes
        snapshots/<commit>/<path>           relative symlinks to ../../blobs/<sha256>
        refs/<tag>                          the commit a tag points to
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vlrl.errors import ConfigError, StageError
from vlrl.models.hub import MANIFEST, check_revision, download_model

REPO = "vlrl-test/tiny-qwen2.5-vl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TAG = "v1.0"


def seed_cache(cache: Path, repo_id: str, commit: str, files: Path, tags: list[str]) -> None:
    """Put every file of ``files`` into ``cache`` as huggingface_hub would have downloaded it."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / commit
    for src in sorted(p for p in files.rglob("*") if p.is_file()):
        data = src.read_bytes()
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / src.relative_to(files)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    for tag in tags:
        (repo / "refs" / tag).write_text(commit)


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
        "import sys; from pathlib import Path; from vlrl.models.hub import download_model; "
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
