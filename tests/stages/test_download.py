"""Stage download: config/datasets/<name>.yaml → resources/datasets/<name>/, atomically, offline
from a real huggingface_hub cache (tests/hub_cache.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from git_repo import NEW_FILES, isolate_git, make_repo
from hub_cache import seed_cache

from vlrl.config import load_dataset
from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import DATASET_MANIFEST
from vlrl.stages import download

REPO_ID = "vlrl-test/shapes-records"
COMMIT = "00112233445566778899aabbccddeeff00112233"


def write_dataset_config(project: Path, name: str, **values: object) -> None:
    folder = project / "config" / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    tree = {"repo_id": REPO_ID, "revision": COMMIT, **values}
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(tree))


@pytest.fixture()
def offline_cache(
    tmp_path_factory: pytest.TempPathFactory, shapes_data: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    from huggingface_hub import constants

    cache = tmp_path_factory.mktemp("hf-cache")
    seed_cache(cache, REPO_ID, COMMIT, shapes_data, repo_type="dataset")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def test_fetches_the_pinned_files_with_a_checksum_manifest(
    project: Path, offline_cache: Path, shapes_data: Path
) -> None:
    write_dataset_config(project, "shapes_hub", allow_patterns=["test.jsonl", "images/test/*"])

    download.run("shapes_hub")

    out = project / "resources" / "datasets" / "shapes_hub"
    manifest = json.loads((out / DATASET_MANIFEST).read_text())
    assert manifest["repo_id"] == REPO_ID and manifest["commit"] == COMMIT
    assert "test.jsonl" in manifest["files"] and "train.jsonl" not in manifest["files"]
    assert (out / "test.jsonl").read_bytes() == (shapes_data / "test.jsonl").read_bytes()
    assert [p.name for p in out.parent.iterdir()] == ["shapes_hub"], "no temporaries left"


def test_missing_offline_leaves_no_output_and_says_how_to_fetch(
    project: Path, offline_cache: Path
) -> None:
    write_dataset_config(project, "elsewhere", revision="e" * 40)

    with pytest.raises(StageError) as info:
        download.run("elsewhere")

    assert f"hf download {REPO_ID} --repo-type dataset --revision {'e' * 40}" in str(info.value)
    datasets = project / "resources" / "datasets"
    assert not datasets.exists() or not any(datasets.iterdir())


@pytest.mark.parametrize(
    ("values", "key", "why"),
    [
        ({"revision": "main"}, "revision", "pattern"),
        ({"revision": "a" * 39}, "revision", "pattern"),
        ({"repo_id": "no-owner"}, "repo_id", "pattern"),
        ({"repo_type": "space"}, "repo_type", "'dataset' or 'model'"),
        ({"allow_patterns": []}, "allow_patterns", "at least 1 item"),
        ({"allow_patterns": [""]}, "allow_patterns.0", "at least 1 character"),
        ({"split": "test"}, "split", "Extra inputs are not permitted"),
    ],
)
def test_bad_dataset_config_names_its_key(project: Path, values: dict, key: str, why: str) -> None:
    write_dataset_config(project, "bad", **values)
    with pytest.raises(ConfigError) as info:
        load_dataset("bad")
    assert f"datasets/bad.yaml: {key}: " in str(info.value) and why in str(info.value)


def test_unknown_dataset_suggests_or_counts_the_known_ones(project: Path) -> None:
    write_dataset_config(project, "known")
    with pytest.raises(ConfigError, match=r"no such dataset 'nope'; \d+ known, in .*datasets/$"):
        load_dataset("nope")
    with pytest.raises(ConfigError, match=r"no such dataset 'knwon'; did you mean 'known'\?"):
        load_dataset("knwon")


def test_command_reports_a_missing_snapshot_in_one_line(project: Path, tmp_path: Path) -> None:
    write_dataset_config(project, "absent")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "empty")}
    cli = [sys.executable, "-m", "vlrl.cli", "download", "absent"]
    out = subprocess.run(cli, cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and f"hf download {REPO_ID}" in " ".join(
        out.stderr.split()
    )


@pytest.fixture
def git_online(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Git isolated, its cache in tmp_path, the network allowed; the cache folder."""
    from huggingface_hub import constants

    isolate_git(monkeypatch)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("VLRL_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("VLRL_GIT_CACHE", str(tmp_path / "git-cache"))
    return tmp_path / "git-cache"


@pytest.mark.parametrize("where", ["url", "relative path"])
def test_a_git_dataset_gets_the_files_of_its_commit(
    project: Path, git_online: Path, where: str
) -> None:
    repo = make_repo(project / "upstream")
    git = repo.url if where == "url" else "upstream"
    folder = project / "config" / "datasets"
    tree = {"git": git, "revision": repo.new, "allow_patterns": ["data/*"]}
    (folder / "from_git.yaml").write_text(yaml.safe_dump(tree))

    download.run("from_git")

    out = project / "resources" / "datasets" / "from_git"
    manifest = json.loads((out / DATASET_MANIFEST).read_text())
    assert manifest["git"] == (repo.url if where == "url" else str(project / "upstream"))
    assert (manifest["revision"], manifest["commit"]) == (repo.new, repo.new)
    names = sorted(name for name in NEW_FILES if name.startswith("data/"))
    assert sorted(manifest["files"]) == names
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        [*names, DATASET_MANIFEST]
    ), "no format: nothing converted"
    assert (out / "data/images/2.png").read_bytes() == NEW_FILES["data/images/2.png"]
    assert [p.name for p in out.parent.iterdir()] == ["from_git"], "no temporaries left"


def test_an_unpinned_git_dataset_is_never_fetched(project: Path, git_online: Path) -> None:
    repo = make_repo(project / "upstream")
    tree = {"git": repo.url, "unpinned": "the release names no commit"}
    (project / "config" / "datasets" / "from_git.yaml").write_text(yaml.safe_dump(tree))

    with pytest.raises(StageError) as info:
        download.run("from_git")

    assert str(info.value) == (
        f"dataset from_git: {repo.url} has no pinned revision "
        f"({project / 'config' / 'datasets' / 'from_git.yaml'}: unpinned: the release names no "
        "commit); a run never downloads an unpinned revision. Run `vlrl pin from_git` once, "
        "online: it writes the current commit (the hub's, or the git repository's HEAD) into "
        "the file."
    )
    assert not (project / "resources").exists() and not git_online.exists()
