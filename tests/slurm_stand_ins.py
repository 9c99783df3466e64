"""Stand-ins for Slurm's commands (squeue, scontrol, …) on PATH, for the unit tests of the code
that asks them; the real cluster's tests are under tests/pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def slurm_stand_in(tmp_path: Path, name: str, script: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Slurm command ``name`` on PATH running ``script``; returns the file its argv goes to
    (one line per call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    argv = tmp_path / f"{name}.argv"
    (bin_dir / name).write_text(f'#!/bin/sh\necho "$*" >> {argv}\n{script}\n')
    (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return argv
