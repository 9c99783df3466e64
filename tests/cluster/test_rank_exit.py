"""How a torchrun rank ends: leaving its process group, its logs flushed, and no interpreter
finalization to abort in; and how a rank that aborts says where."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch.distributed as dist

from vlrl.cluster import rank_exit
from vlrl.cluster.rank_exit import exit_finished_rank, report_aborts

ROOT = Path(__file__).resolve().parents[2]


class Exited(Exception):
    """Raised by the stand-in for ``os._exit``."""


def run_script(body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "rank.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow_scripts")}
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_finished_rank_exits_0_past_an_abort_in_the_interpreters_finalization(
    tmp_path: Path,
) -> None:
    # an atexit handler stands in for the C++ teardown that aborted a finished rank in CI
    done = run_script(
        f"""
        import atexit, logging, os, sys
        import torch.distributed as dist
        from vlrl.cluster.rank_exit import exit_finished_rank

        dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0,
                                world_size=1)
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
        atexit.register(os.abort)
        sys.stdout.write("the rank's last words, unflushed")
        logging.getLogger("rank").info("a last log line")
        exit_finished_rank()
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the rank's last words, unflushed"
    assert "a last log line" in done.stderr


def test_a_rank_that_returns_instead_aborts_in_that_finalization(tmp_path: Path) -> None:
    # the control: what the rank above would have done without exit_finished_rank
    done = run_script("import atexit, os\natexit.register(os.abort)\n", tmp_path)
    assert done.returncode == -6


def test_the_rank_leaves_its_process_group_flushes_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    monkeypatch.setattr(logging, "shutdown", lambda: calls.append("logging"))

    class Stream:
        def __init__(self, name: str) -> None:
            self.name = name

        def flush(self) -> None:
            calls.append(self.name)

    monkeypatch.setattr(sys, "stdout", Stream("stdout"))
    monkeypatch.setattr(sys, "stderr", Stream("stderr"))
    barrier = dist.barrier
    monkeypatch.setattr(dist, "barrier", lambda: calls.append("barrier") or barrier())

    def exit_(code: int) -> None:
        calls.append(("exit", code, dist.is_initialized()))
        raise Exited

    monkeypatch.setattr(os, "_exit", exit_)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        with pytest.raises(Exited):
            exit_finished_rank()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    assert calls == ["barrier", "logging", "stdout", "stderr", ("exit", 0, False)]


def test_a_rank_outside_a_process_group_only_flushes_and_exits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []
    monkeypatch.setattr(dist, "barrier", lambda: calls.append("barrier"))
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroy"))

    def exit_(code: int) -> None:
        calls.append(code)
        raise Exited

    monkeypatch.setattr(os, "_exit", exit_)
    assert not dist.is_initialized()
    with pytest.raises(Exited):
        exit_finished_rank()
    assert calls == [0]


@pytest.mark.parametrize("error", [OSError, ValueError])
def test_a_closed_stream_does_not_keep_the_rank_from_exiting(
    monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    class Closed:
        def flush(self) -> None:
            raise error("closed")

    flushed: list[str] = []

    class Open:
        def flush(self) -> None:
            flushed.append("stderr")

    monkeypatch.setattr(logging, "shutdown", lambda: None)
    monkeypatch.setattr(sys, "stdout", Closed())
    monkeypatch.setattr(sys, "stderr", Open())
    codes: list[int] = []

    def exit_(code: int) -> None:
        codes.append(code)
        raise Exited

    monkeypatch.setattr(os, "_exit", exit_)
    with pytest.raises(Exited):
        exit_finished_rank()
    assert (flushed, codes) == (["stderr"], [0])


def test_an_aborting_rank_prints_every_threads_stack(tmp_path: Path) -> None:
    died = run_script(
        """
        import os, threading, time
        from vlrl.cluster.rank_exit import report_aborts

        def the_other_threads_work():
            time.sleep(60)

        report_aborts()
        threading.Thread(target=the_other_threads_work, daemon=True).start()
        time.sleep(0.5)
        os.abort()
        """,
        tmp_path,
    )
    assert died.returncode == -6
    assert "Fatal Python error: Aborted" in died.stderr
    assert "the_other_threads_work" in died.stderr  # not only the aborting thread's stack


def test_report_aborts_asks_for_every_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict] = []
    monkeypatch.setattr(rank_exit.faulthandler, "enable", lambda **kw: asked.append(kw))
    report_aborts()
    assert asked == [{"all_threads": True}]
