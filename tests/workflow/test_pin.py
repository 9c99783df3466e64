"""``vlrl pin``: an unpinned dataset or model gets the hub's current commit written into its
config, through the real huggingface_hub client, against a local server that answers the hub's
``/api/<type>s/<repo>`` route (no machine here reaches the hub); a run never downloads an
unpinned revision."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from git_repo import Repo, isolate_git, make_repo

from vlrl.config import load_dataset, load_model
from vlrl.core.errors import ConfigError, StageError

SHA = "0123456789abcdef0123456789abcdef01234567"

DATASET = """\
# A release whose hub history could not be read.
description: Training records.
repo_id: someone/released-data
unpinned: >-
  no public commit page of this repository could be read; the README links the main branch
allow_patterns: [data.zip]  # what the recipe reads
format: vlm_r1_jsonl
"""

MODEL = """\
builder: hf
hf:
  repo_id: someone/cold-start-7b
  unpinned: the model card names no commit
parameters: 8000000000
"""


class _Hub(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        kind, _, repo = self.path.removeprefix("/api/").partition("/")
        known = {"datasets": "someone/released-data", "models": "someone/cold-start-7b"}
        if known.get(kind) != repo.split("/revision/")[0]:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({"id": repo, "sha": SHA, "private": False}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config" / "datasets").mkdir(parents=True)
    (tmp_path / "config" / "models").mkdir(parents=True)
    (tmp_path / "config" / "datasets" / "released.yaml").write_text(DATASET)
    (tmp_path / "config" / "models" / "cold-start.yaml").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _pin(
    project: Path, name: str, endpoint: str, offline: str = "0"
) -> subprocess.CompletedProcess:
    env = os.environ | {"HF_ENDPOINT": endpoint, "HF_HUB_OFFLINE": offline, "VLRL_ROOT": "."}
    return subprocess.run(
        [sys.executable, "-m", "vlrl.cli", "pin", name],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_unpinned_dataset_is_never_downloaded(project: Path) -> None:
    from vlrl.stages import download

    with pytest.raises(StageError, match=r"no pinned revision.*vlrl pin released"):
        download.run("released")
    assert not (project / "resources").exists()


def test_pin_writes_the_hubs_commit_and_keeps_the_rest(project: Path, hub: str) -> None:
    result = _pin(project, "released", hub)
    assert result.returncode == 0, result.stderr
    assert "/api/datasets/someone/released-data" in _Hub.seen[-1]
    cfg = load_dataset("released")
    assert cfg.revision == SHA and cfg.unpinned is None
    text = (project / "config/datasets/released.yaml").read_text()
    assert "# A release whose hub history could not be read." in text
    assert "allow_patterns: [data.zip]  # what the recipe reads" in text
    assert "Pinned by `vlrl pin released`" in text
    assert yaml.safe_load(text)["format"] == "vlm_r1_jsonl"
    again = _pin(project, "released", hub)
    # Joined: the console wraps long temporary paths anywhere.
    assert again.returncode == 2 and f"alreadypinnedat{SHA}" in "".join(again.stderr.split())


def test_pin_resolves_a_model_too(project: Path, hub: str) -> None:
    assert _pin(project, "cold-start", hub).returncode == 0
    assert load_model("cold-start").hf.revision == SHA


def test_pin_offline_says_it_needs_the_network(project: Path, hub: str) -> None:
    result = _pin(project, "released", hub, offline="1")
    assert result.returncode == 2
    assert "needs the network" in " ".join(result.stderr.split())
    assert "unpinned:" in (project / "config/datasets/released.yaml").read_text()


def test_pin_of_an_unknown_repository_changes_nothing(project: Path, hub: str) -> None:
    path = project / "config/datasets/released.yaml"
    path.write_text(DATASET.replace("someone/released-data", "someone/gone"))
    result = _pin(project, "released", hub)
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "did not answer with its commit" in said
    assert "unpinned:" in path.read_text()


def test_a_sha_of_digits_alone_is_written_as_text() -> None:
    """Unquoted, YAML would read it as an integer and the config would refuse it."""
    from vlrl.workflow.pin import rewrite

    text = rewrite("repo_id: a/b\nunpinned: no page\nformat: x\n", "1" * 40, "pinned")
    assert yaml.safe_load(text)["revision"] == "1" * 40


@pytest.fixture
def from_git(project: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A git repository (file://) and an unpinned dataset config naming it, from_git.yaml."""
    from huggingface_hub import constants

    isolate_git(monkeypatch)
    monkeypatch.delenv("VLRL_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    repo = make_repo(project / "upstream")
    (project / "config/datasets/from_git.yaml").write_text(
        f"# On GitHub only.\ngit: {repo.url}\nunpinned: no release names a commit\n"
        "allow_patterns: [data/*]\n"
    )
    return repo


def test_pin_writes_the_commit_of_a_git_repositorys_head(project: Path, from_git: Repo) -> None:
    result = _pin(project, "from_git", "http://127.0.0.1:9")  # no hub is asked

    assert result.returncode == 0, result.stderr
    assert f"{from_git.url}pinnedat{from_git.new}" in "".join(result.stdout.split())
    today = datetime.date.today().isoformat()
    assert (project / "config/datasets/from_git.yaml").read_text() == (
        f"# On GitHub only.\ngit: {from_git.url}\n# Pinned by `vlrl pin from_git` on {today}: "
        f"the commit of the git repository's HEAD then.\nrevision: '{from_git.new}'\n"
        "allow_patterns: [data/*]\n"
    )
    assert load_dataset("from_git").revision == from_git.new


def test_pin_of_a_git_dataset_offline_says_it_needs_the_network(
    project: Path, from_git: Repo
) -> None:
    result = _pin(project, "from_git", "http://127.0.0.1:9", offline="1")
    assert result.returncode == 2
    assert "asks the git repository for its HEAD commit: it needs the network" in " ".join(
        result.stderr.split()
    )
    assert "unpinned:" in (project / "config/datasets/from_git.yaml").read_text()


def test_pin_of_an_unreadable_git_repository_changes_nothing(project: Path, from_git: Repo) -> None:
    from vlrl.workflow.pin import pin

    shutil.rmtree(from_git.path)
    with pytest.raises(ConfigError) as info:
        pin("from_git")
    said = str(info.value)
    assert said.startswith(f"cannot read the HEAD commit of {from_git.url}: git ls-remote: "), said
    assert "unpinned:" in (project / "config/datasets/from_git.yaml").read_text()
