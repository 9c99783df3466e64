"""What a killed stage left running (shared by the kill tests of the stages)."""

from __future__ import annotations

import os
import time

import psutil


def session_processes(sid: int, wait_s: float = 10) -> list[str]:
    """Command lines of the live processes of session ``sid`` (a stage started with
    ``start_new_session=True``: the stage and everything it started), after up to ``wait_s``
    seconds for them to exit."""
    deadline = time.time() + wait_s
    while True:
        left = []
        for proc in psutil.process_iter(["pid", "cmdline", "status"]):
            try:
                if os.getsid(proc.info["pid"]) == sid and proc.info["status"] != "zombie":
                    left.append(" ".join(proc.info["cmdline"] or []))
            except (ProcessLookupError, PermissionError):
                continue
        if not left or time.time() > deadline:
            return left
        time.sleep(0.2)
