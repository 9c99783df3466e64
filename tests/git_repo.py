"""A real git repository built in a test's folder, for the code that reads datasets from git
(vlrl.git_source): two commits of a LogicVista-like layout (a JSON file and PNG images in
folders), a binary file and a link. Git is isolated from the user's and the system's
configuration and commits with a fixed author and date, so it works on any machine."""

from __future__ import annotations

import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ISOLATED = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "vlrl test",
    "GIT_AUTHOR_EMAIL": "test@vlrl.invalid",
    "GIT_COMMITTER_NAME": "vlrl test",
    "GIT_COMMITTER_EMAIL": "test@vlrl.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
}
"""The environment of every git command of a test (theirs and vlrl's)."""


def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set :data:`ISOLATED` and drop what would point git elsewhere, for this test."""
    for name, value in ISOLATED.items():
        monkeypatch.setenv(name, value)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"):
        monkeypatch.delenv(name, raising=False)


def png(rgb: tuple[int, int, int]) -> bytes:
    """A 4x4 PNG of one colour."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), rgb).save(buffer, format="PNG")
    return buffer.getvalue()


OLD_FILES = {
    "README.md": b"A benchmark published as a git repository.\n",
    "data/dataset.json": b'{"1": {"question": "Which?", "answer": "A"}}\n',
    "data/images/1.png": png((255, 0, 0)),
}
"""The first commit's files."""
NEW_FILES = {
    **OLD_FILES,
    "data/dataset.json": b'{"1": {"question": "Which?", "answer": "A"}, "2": {"answer": "BC"}}\n',
    "data/images/2.png": png((0, 0, 255)),
    "data/notes/bytes.bin": bytes(range(256)),
}
"""The second commit's files (it also adds a link, latest.png, which is no file)."""


@dataclass(frozen=True)
class Repo:
    path: Path
    url: str
    old: str
    new: str


def run_git(path: Path, *args: str) -> str:
    """``git -C path args`` with :data:`ISOLATED` set; its stdout, stripped."""
    done = subprocess.run(
        ["git", "-C", str(path), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ISOLATED},
    )
    return done.stdout.strip()


def _write(path: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)


def make_repo(path: Path) -> Repo:
    """Two commits in a new repository at ``path``: :data:`OLD_FILES`, then :data:`NEW_FILES`
    and the link; its file:// URL and both commits."""
    path.mkdir(parents=True)
    run_git(path, "init", "--quiet", "--initial-branch", "main")
    _write(path, OLD_FILES)
    run_git(path, "add", "--all")
    run_git(path, "commit", "--quiet", "--message", "first")
    old = run_git(path, "rev-parse", "HEAD")
    _write(path, NEW_FILES)
    (path / "latest.png").symlink_to("data/images/2.png")
    run_git(path, "add", "--all")
    run_git(path, "commit", "--quiet", "--message", "second")
    return Repo(path, path.resolve().as_uri(), old, run_git(path, "rev-parse", "HEAD"))


def commit_folder(path: Path) -> tuple[str, str]:
    """The files already under ``path`` as the one commit of a new repository there: its
    file:// URL and the commit (a fixture published as a git repository)."""
    run_git(path, "init", "--quiet", "--initial-branch", "main")
    run_git(path, "add", "--all")
    run_git(path, "commit", "--quiet", "--message", "fixture")
    return path.resolve().as_uri(), run_git(path, "rev-parse", "HEAD")
