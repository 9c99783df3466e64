"""Starting a stage's child processes so that none outlives the stage.

A launcher such as ``torchrun`` (under ``llamafactory-cli``) starts grandchildren: killing only
the direct child would orphan them, still training. :func:`run_group` runs the command in its own
process group and, when the stage is interrupted (SIGTERM turned into SystemExit by the CLI,
Ctrl-C) or fails, stops the whole group and every process started under it, also those in
sessions of their own (torchrun starts each rank in one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

from vlrl.cluster.relay import descendants, stat_fields

log = logging.getLogger(__name__)

GRACE_S = 40.0
"""How long the group gets to exit after SIGTERM before SIGKILL: longer than torchrun's own
shutdown, which gives its ranks 30 s after its SIGTERM before killing them
(``torch.distributed.elastic`` ``PContext.close``), so torchrun is never killed first, leaving
ranks without their launcher."""


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


def stop_group(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    """SIGTERM to ``proc``'s process group; after ``grace_s``, SIGKILL to what is left of it and
    of ``proc``'s descendants in other sessions (listed before the SIGTERM: once their launcher
    exits they are no longer its descendants)."""
    strays = [pid for pid in descendants(proc.pid) if _group(pid) != proc.pid]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    # the leader may be gone and its group (or the strays) not: a group lives while any member does
    left = [pid for pid in strays if _alive(pid)]
    if proc.poll() is None or _alive_group(proc.pid) or left:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        log.warning("stopped process group %d", proc.pid)


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _alive_group(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
