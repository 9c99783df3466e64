"""Starting a stage's child processes so that none outlives the stage.

A launcher such as ``torchrun`` (under ``llamafactory-cli``) starts grandchildren: killing only
the direct child would orphan them, still training. :func:`run_group` runs the command in its own
process group and, when the stage is interrupted (SIGTERM turned into SystemExit by the CLI,
Ctrl-C) or fails, stops the whole group.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

log = logging.getLogger(__name__)

GRACE_S = 10.0
"""How long the group gets to exit after SIGTERM before SIGKILL."""


def run_group(cmd: Sequence[str], env: Mapping[str, str], stdout: IO | None = None) -> int:
    """Run ``cmd`` in a new process group and return its exit status.

    On any exception while waiting (KeyboardInterrupt, SystemExit from SIGTERM), every process
    of the group gets SIGTERM, then SIGKILL after :data:`GRACE_S` seconds, and the exception
    propagates.
    """
    proc = subprocess.Popen(list(cmd), env=dict(env), stdout=stdout, process_group=0)
    try:
        return proc.wait()
    except BaseException:
        stop_group(proc)
        raise


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to ``proc``'s process group, SIGKILL to what is left after :data:`GRACE_S`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; its children may not be: the group lives while any member does.
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
    log.warning("stopped process group %d", proc.pid)
