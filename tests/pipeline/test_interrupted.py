"""A stage killed midway leaves no output that looks finished, and a rerun completes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from vlrl.core.files import TMP_MARK

ROOT = Path(__file__).resolve().parents[2]
VLRL = Path(sys.executable).parent / "vlrl"


def test_killed_data_stage_then_rerun(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "config", tmp_path / "config")
    env = {**os.environ, "VLRL_ROOT": str(tmp_path)}
    cmd = [str(VLRL), "data", "tiny_shapes", "--set", "data.shapes.n_train=20000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.DEVNULL)
    data = tmp_path / "results" / "tiny_shapes" / "data"
    deadline = time.time() + 60
    while time.time() < deadline and not list(data.parent.glob(f"data{TMP_MARK}*/images/*/*.png")):
        time.sleep(0.2)  # wait until it is writing images
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not data.exists(), "a killed stage must not leave its output in place"
    assert list(data.parent.glob(f"data{TMP_MARK}*")), "expected the killed run's temporary"

    small = [str(VLRL), "data", "tiny_shapes", "--set", "data.shapes.n_train=20"]
    subprocess.run(small, cwd=tmp_path, env=env, check=True, stderr=subprocess.DEVNULL)
    assert (data / "train.jsonl").is_file()
    assert not list(data.parent.glob(f"data{TMP_MARK}*")), "the rerun clears stale temporaries"


def test_killed_snakemake_run_is_resumed_by_the_documented_commands(tmp_path: Path) -> None:
    """`make resume` (snakemake --unlock, then the local profile) after a killed Snakemake run:
    the half-written output is cleared, the job reruns and completes, and both tools agree."""
    sys.path.insert(0, str(Path(__file__).parent))
    from scratch_project import Project

    project = Project(tmp_path)
    project.set_values("config/experiments/tiny_shapes.yaml", {"data.shapes.n_train": 20000})
    target = "results/tiny_shapes/data"
    proc = subprocess.Popen(
        ["snakemake", "--profile", "profiles/local", target],
        cwd=tmp_path,
        env=project.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while (
        time.time() < deadline
        and proc.poll() is None
        and not list((tmp_path / "results/tiny_shapes").glob("data*/images/*/*.png"))
    ):
        time.sleep(0.2)  # wait until the job is writing images
    assert proc.poll() is None, "snakemake ended before it was killed"
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run: snakemake and its job
    proc.wait()
    assert not (tmp_path / target).exists(), "a killed job must not leave its output in place"
    project.set_values("config/experiments/tiny_shapes.yaml", {"data.shapes.n_train": 40})
    project("snakemake", "--unlock", "--cores", "1")  # what `make resume` runs
    project("snakemake", "--profile", "profiles/local", target)
    assert (tmp_path / target / "train.jsonl").is_file()
    assert not list((tmp_path / "results/tiny_shapes").glob(f"data{TMP_MARK}*"))
    assert "Nothing to be done" in project("snakemake", "-n", target)
    assert "up to date" in project("dvc", "status", "data--tiny_shapes")
