"""``vlrl pin``: an unpinned dataset or model gets the hub's current commit written into its
config, through the real huggingface_hub client, against a local server that answers the hub's
``/api/<type>s/<repo>`` route (no machine here reaches the hub); a run never downloads an
unpinned revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from vlrl.config import load_dataset, load_model
from vlrl.core.errors import StageError

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
