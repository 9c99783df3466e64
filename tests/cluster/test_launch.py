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


def test_ranks_in_sessions_of_their_own_are_stopped_too(tmp_path: Path) -> None:
    """torchrun starts each rank with start_new_session: a kill of the launcher's process group
    misses them; the ranks that ignore SIGTERM get SIGKILL at the end of the grace."""
    from vlrl.cluster.launch import stop_group

    pid_file = tmp_path / "rank.pid"
    rank = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(__import__('os').getpid())); time.sleep(300)"
    )
    launcher = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {rank!r}], start_new_session=True); "
        "time.sleep(300)"
    )
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", launcher], process_group=0)
    deadline = time.time() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.time() < deadline
        time.sleep(0.05)
    rank_pid = int(pid_file.read_text())
    assert os.getpgid(rank_pid) != proc.pid  # out of the launcher's group
    stop_group(proc, grace_s=1)
    deadline = time.time() + 5
    while _alive(rank_pid) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(rank_pid), "a rank in its own session outlived the stopped stage"


def test_the_grace_outlasts_torchruns_own_shutdown() -> None:
    """torchrun gives its ranks 30 s after its SIGTERM (torch.distributed.elastic PContext.close):
    killing torchrun before that would leave them without their launcher."""
    from vlrl.cluster.launch import GRACE_S

    assert GRACE_S > 30
