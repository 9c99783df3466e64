"""vlrl.cluster.launch: a child's whole process group goes when the stage is interrupted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from vlrl.cluster.launch import run_group, stop_group


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


def _started(cmd: list[str], pid_file: Path, **popen) -> tuple[subprocess.Popen, int]:
    """``cmd`` started in a group of its own, and the pid its child wrote to ``pid_file``."""
    proc = subprocess.Popen(cmd, process_group=0, **popen)
    deadline = time.time() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.time() < deadline and proc.poll() is None, "the child never started"
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


def _sleeper(pid_file: Path) -> str:
    """Python code that writes its pid to ``pid_file`` and sleeps."""
    return f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"


def _gone(pid: int) -> bool:
    deadline = time.time() + 5
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_the_child_gets_the_environment_and_output_it_is_given(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    show = "import os; print(os.environ.get('VLRL_GIVEN'), os.environ.get('VLRL_NOT_GIVEN'))"
    os.environ["VLRL_NOT_GIVEN"] = "leaked"
    try:
        with out.open("w") as stdout:
            env = {"PATH": os.environ["PATH"], "VLRL_GIVEN": "1"}
            assert run_group([sys.executable, "-c", show], env, stdout=stdout) == 0
    finally:
        del os.environ["VLRL_NOT_GIVEN"]
    assert out.read_text() == "1 None\n"


def test_a_process_that_ignores_sigterm_in_the_group_is_killed_after_the_grace(
    tmp_path: Path, caplog
) -> None:
    """The launcher exits on SIGTERM, one of its children (same group) ignores it: once the
    grace is over the group gets SIGKILL, and the log says so."""
    pid_file = tmp_path / "child.pid"
    child = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    launcher = (
        f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', {child!r}]); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(300)"
    )
    proc, child_pid = _started([sys.executable, "-c", launcher], pid_file)
    time.sleep(0.5)  # the child ignores SIGTERM by now
    with caplog.at_level("WARNING", logger="vlrl.cluster.launch"):
        stop_group(proc, grace_s=1)
    assert _gone(child_pid), "a process of the group outlived the grace"
    assert caplog.messages == [f"stopped process group {proc.pid}"]


def test_a_launcher_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    pid_file = tmp_path / "launcher.pid"
    launcher = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    proc, _ = _started([sys.executable, "-c", launcher], pid_file)
    started = time.monotonic()
    stop_group(proc, grace_s=1)
    assert proc.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 30


def test_a_group_that_exits_on_sigterm_is_not_killed(tmp_path: Path, caplog) -> None:
    pid_file = tmp_path / "launcher.pid"
    launcher = _sleeper(pid_file)
    proc, _ = _started([sys.executable, "-c", launcher], pid_file)
    with caplog.at_level("WARNING", logger="vlrl.cluster.launch"):
        stop_group(proc, grace_s=10)
    assert proc.returncode == -signal.SIGTERM
    assert caplog.messages == []
    stop_group(proc)  # a group already gone: nothing to do, no error


def test_only_what_runs_under_the_launcher_is_stopped(tmp_path: Path) -> None:
    """The stage's other processes (a managed server it started, in a session of its own) are
    not the launcher's, and outlive its stop."""
    pid_file = tmp_path / "server.pid"
    server = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    try:
        launcher = _sleeper(pid_file)
        proc, _ = _started([sys.executable, "-c", launcher], pid_file)
        stop_group(proc, grace_s=1)
        with pytest.raises(subprocess.TimeoutExpired):  # a SIGKILL takes a moment to land
            server.wait(timeout=1)
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_rank_gone_or_not_ours_by_the_kill_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    """A rank in its own session may exit between the check and the SIGKILL (its pid gone, or
    already reused by another user's process)."""
    pid_file = tmp_path / "rank.pid"
    rank = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    launcher = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {rank!r}], start_new_session=True); "
        "time.sleep(300)"
    )
    proc, rank_pid = _started([sys.executable, "-c", launcher], pid_file)
    kill = os.kill

    def exits_first(pid: int, sig: int) -> None:
        kill(pid, sig)
        raise error(pid)

    monkeypatch.setattr(os, "kill", exits_first)
    stop_group(proc, grace_s=1)
    assert _gone(rank_pid)


def test_a_zombie_and_a_missing_process_are_not_alive(tmp_path: Path) -> None:
    from vlrl.cluster.launch import _alive as alive

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 30
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:  # exited, not reaped
        assert time.time() < deadline
        time.sleep(0.05)
    assert not alive(proc.pid)
    proc.wait()
    assert not alive(proc.pid)
    assert alive(os.getpid())


def test_a_process_whose_name_holds_parentheses_and_spaces_is_read_right(tmp_path: Path) -> None:
    """/proc/<pid>/stat puts the command's name in parentheses unescaped: ``(x) Z y)``."""
    from vlrl.cluster.launch import _alive as alive

    odd = tmp_path / "x) Z y"
    odd.symlink_to(shutil.which("sleep"))
    proc = subprocess.Popen([str(odd), "300"])
    try:
        deadline = time.time() + 30
        while "x) Z y" not in Path(f"/proc/{proc.pid}/stat").read_text():
            assert time.time() < deadline
            time.sleep(0.05)
        assert alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_group_is_alive_while_a_member_is_and_asking_does_not_signal_it() -> None:
    from vlrl.cluster.launch import _alive_group

    # SIGHUP's default back (nohup, which may start the suite, leaves it ignored)
    code = (
        "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
        "print(1, flush=True); time.sleep(300)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], process_group=0, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline() == "1\n"
        assert _alive_group(proc.pid)
        with pytest.raises(subprocess.TimeoutExpired):  # no signal reached it (SIGHUP: ended)
            proc.wait(timeout=1)
    finally:
        proc.kill()
        proc.wait()
    assert not _alive_group(proc.pid)
