"""CPU thread count of a stage process.

On CPU, torch splits reductions (matmuls, sums) across intra-op threads, so the thread count
changes the floating-point result in the last bits, and a training run drifts apart from the
same run with another count. An experiment that sets ``cpu_threads`` therefore gets the same
numbers from ``make run`` (one stage at a time, all cores) and from the test suite (one thread
per xdist worker); it also keeps jobs that Snakemake runs side by side from oversubscribing the
cores.
"""

from __future__ import annotations

import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Read by torch at import and by the processes a stage starts (LLaMA-Factory)."""


def pin_cpu_threads(n: int | None) -> None:
    """Use ``n`` CPU threads in this process and the processes it starts; None changes nothing.

    >>> pin_cpu_threads(None)  # no-op
    """
    if n is None:
        return
    for name in THREAD_VARIABLES:
        os.environ[name] = str(n)
    torch = sys.modules.get("torch")  # imported already: the variables came too late for it
    if torch is not None:
        torch.set_num_threads(n)
