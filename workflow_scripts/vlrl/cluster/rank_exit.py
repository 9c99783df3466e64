"""How a torchrun rank ends: where it was when it aborts, and a clean exit once its work is done
and written (:func:`exit_finished_rank`)."""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import sys
from typing import NoReturn


def report_aborts() -> None:
    """Have this process print every thread's Python stack if it dies of a fatal signal (an
    abort in C++ code, a segmentation fault), so a rank that aborts says where, in its log."""
    faulthandler.enable(all_threads=True)


def exit_finished_rank() -> NoReturn:
    """End a torchrun rank whose work is done and written: leave the process group together
    (a barrier, then ``destroy_process_group``, which joins gloo's threads), flush the logs, and
    exit 0 without the interpreter's finalization.

    Why not return: in that finalization (atexit handlers, then the C++ libraries' static
    destructors) a rank that finished everything can still abort ("terminate called without
    an active exception", exit -6), as the second rank of a resumed ZeRO-3 GRPO run did in CI
    after the final model was saved; torchrun then fails the stage. Nothing a finished rank
    still needs happens there: its files are closed and the trainer's callbacks have ended.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to flush
            stream.flush()
    os._exit(0)
