"""workflow_scripts/vlrl.sh, the command every rule and DVC stage runs: which environment's vlrl."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from vlrl.core import paths

ROOT = Path(__file__).resolve().parents[1]


def _fake_env(where: Path) -> Path:
    """An environment whose bin/vlrl says which it is and what PATH it got."""
    (where / "bin").mkdir(parents=True)
    script = where / "bin" / "vlrl"
    script.write_text(f'#!/bin/sh\necho "{where.name} $* PATH=$PATH"\n')
    script.chmod(0o755)
    return where


def _launch(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / paths.LAUNCHER), "grpo", "exp"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )


def test_vlrl_venv_picks_the_environment_of_the_stages(tmp_path: Path) -> None:
    """`VLRL_VENV=<dir>` (the GPU set, a container's environment): its vlrl runs, first on PATH
    for what the stage starts (torchrun, vllm serve)."""
    gpu = _fake_env(tmp_path / "venv-gpu")
    done = _launch({"VLRL_VENV": str(gpu)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("venv-gpu grpo exp PATH=")
    assert done.stdout.split("PATH=")[1].startswith(f"{gpu}/bin:")


def test_a_vlrl_venv_without_vlrl_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    done = _launch({"VLRL_VENV": str(tmp_path / "missing")})
    assert done.returncode == 127
    assert f"VLRL_VENV={tmp_path / 'missing'} has no bin/vlrl" in done.stderr
    assert "make setup-gpu" in done.stderr


def test_without_vlrl_venv_the_checkouts_venv_runs() -> None:
    env = {k: v for k, v in os.environ.items() if k != "VLRL_VENV"}
    done = subprocess.run(
        [str(ROOT / paths.LAUNCHER), "--version"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("vlrl ") and str(ROOT) in done.stdout
