"""vlrl.cluster.launch: a child's whole process group goes when the stage is interrupted."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from vlrl.cluster.launch import run_group


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_exit_status_is_returned() -> None:
    assert run_group([sys.executable, "-c", "raise SystemExit(3)"], os.environ) == 3


def test_interrupt_stops_the_grandchildren(tmp_path: Path) -> None:
    """A launcher's own children (torchrun's ranks) are stopped too, not orphaned."""
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {pid_file}; wait"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            run_group(["sh", "-c", script], os.environ)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    grandchild = int(pid_file.read_text())
    deadline = time.time() + 5
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the launcher's child outlived the interrupted stage"
