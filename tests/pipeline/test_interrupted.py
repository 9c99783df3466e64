"""A stage killed midway leaves no output that looks finished, and a rerun completes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from vlrl.files import TMP_MARK

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
