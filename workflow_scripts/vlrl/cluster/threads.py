"""CPU thread count and CPU kernels of a stage process.

On CPU, torch splits reductions (matmuls, sums) across intra-op threads, so the thread count
changes the floating-point result in the last bits, and a training run drifts apart from the
same run with another count. An experiment that sets ``cpu_threads`` therefore gets the same
numbers from ``make run`` (one stage at a time, all cores) and from the test suite (one thread
per xdist worker); it also keeps jobs that Snakemake runs side by side from oversubscribing the
cores.

The kernels are the other half. Each of torch's three CPU code paths picks its implementation by
the CPU it runs on, and each choice changes the tiny model's logits bitwise (docs/performance.md,
"Bit-for-bit on every x86-64 CPU"): ATen's vector kernels (AVX-512, AVX2 or baseline), MKL's
BLAS branch (and on AMD a different one than on Intel) and oneDNN's JIT ISA (convolutions, GELU).
``cpu_kernels`` pins all three to code that every CPU of a class runs identically:

- ``portable``: ATen's baseline kernels: every x86-64 CPU;
- ``avx2``: ATen's AVX2 kernels: every x86-64 CPU with AVX2 and FMA (x86-64-v3: Intel since
  Haswell, 2013; AMD since Excavator, 2015), AVX-512 ones included; SFT and GRPO about 1.15x
  faster than ``portable``. A CPU without AVX2 runs the baseline kernels instead, and a warning
  says so;
- ``native`` leaves the choice to the CPU (fastest; results differ between machines).

Both pinned levels run MKL's processor-independent branch and oneDNN capped at SSE4.1 (AVX2 JIT
code gained nothing measurable here, docs/performance.md).

Both work through environment variables the libraries read when they first compute, not at
import: ``pin_cpu_kernels`` must run before the stage's first torch operation (the CLI pins
before it imports the stage's module), and the variables reach the processes a stage starts
(LLaMA-Factory).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import get_args

from vlrl.config.experiment import CpuKernels

log = logging.getLogger(__name__)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Read by torch at import and by the processes a stage starts (LLaMA-Factory)."""

CPU_KERNELS: tuple[str, ...] = get_args(CpuKernels)

_COMMON_KERNELS = {
    # MKL's processor-independent branch: the one MKL documents as giving the same results on
    # Intel and non-Intel CPUs (MKL_CBWR=AVX2 falls back to the CPU's own branch on AMD).
    "MKL_CBWR": "COMPATIBLE",
    # MKL's reproducibility conditions ask for a thread count that does not change at run time.
    "MKL_DYNAMIC": "FALSE",
    # oneDNN (torch's convolutions and GELU on CPU): SSE4.1 code, which every x86-64 CPU made
    # since 2008 runs. Uncapped it JITs AVX2 / AVX-512 / AMX code by CPU.
    "ONEDNN_MAX_CPU_ISA": "SSE41",
}
PINNED_KERNELS: dict[str, dict[str, str]] = {
    # ATen's baseline kernels (compiled for plain x86-64), not its AVX2 / AVX-512 ones.
    "portable": {"ATEN_CPU_CAPABILITY": "default", **_COMMON_KERNELS},
    # ATen's AVX2 kernels, also on an AVX-512 CPU (where torch would pick its AVX-512 ones).
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", **_COMMON_KERNELS},
}
"""The environment of each pinned ``cpu_kernels`` level."""

KERNEL_VARIABLES = tuple(PINNED_KERNELS["portable"])
"""The variables a pinned level sets."""

ATEN_CAPABILITY = {
    level: env["ATEN_CPU_CAPABILITY"].upper() for level, env in PINNED_KERNELS.items()
}
"""ATen's name of each level's kernels (``torch.backends.cpu.get_cpu_capability()``:
``DEFAULT``, ``AVX2``)."""

MACHINE_KERNEL_VARIABLES = ("MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "DNNL_MAX_CPU_ISA")
"""Machine-level kernel choices that ``portable`` removes (MKL_CBWR and ONEDNN_MAX_CPU_ISA
override them already; removing them keeps the child processes' environment unambiguous)."""


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


def pin_cpu_kernels(kernels: str | None) -> bool:
    """Pin this process's and its children's CPU kernels to ``kernels``.

    ``"portable"`` and ``"avx2"`` set their :data:`PINNED_KERNELS` and remove
    :data:`MACHINE_KERNEL_VARIABLES`; ``"native"`` and None change nothing (the CPU chooses).

    Returns:
        Whether this process will run the requested kernels: False when torch had already picked
        other ATen kernels before the call (then only child processes get the pinned ones), or
        when the CPU lacks what the level needs (``avx2`` on a CPU without AVX2); a warning is
        logged either way.

    >>> pin_cpu_kernels(None), pin_cpu_kernels("native")
    (True, True)
    """
    if kernels is None or kernels == "native":
        return True
    if kernels not in PINNED_KERNELS:
        raise ValueError(f"cpu_kernels must be one of {CPU_KERNELS}, not {kernels!r}")
    for name in MACHINE_KERNEL_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(PINNED_KERNELS[kernels])
    if kernels == "avx2" and not cpu_has_avx2():
        log.warning(
            "cpu_kernels=avx2: this CPU has no AVX2/FMA, so torch runs its baseline kernels: "
            "results differ from those of AVX2 CPUs (a committed dvc.lock, the README's numbers). "
            "cpu_kernels: portable gives the same bits on every x86-64 CPU"
        )
        return False
    if "torch" not in sys.modules:
        return True
    # torch is imported, but ATen and MKL read their variables at their first operation: if
    # none ran yet, the pin still holds. ATen's choice can be asked; MKL's follows the same
    # first operation.
    capability = sys.modules["torch"].backends.cpu.get_cpu_capability()
    if capability == ATEN_CAPABILITY[kernels]:
        return True
    log.warning(
        "cpu_kernels=%s: torch already runs its %s kernels in this process (it computed "
        "before the pin); its results here depend on this CPU",
        kernels,
        capability,
    )
    return False


def cpu_has_avx2(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has AVX2 and FMA, what ATen's AVX2 kernels need (``/proc/cpuinfo``'s
    flags; True where there is no such file: torch then reports its own choice in the logs).

    >>> cpu_has_avx2("flags : fpu sse2 avx avx2 fma"), cpu_has_avx2("flags : fpu sse2 avx")
    (True, False)
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return True
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            return {"avx2", "fma"} <= flags
    return True


def cpu_kernel_report() -> dict[str, str]:
    """What this process runs: ATen's kernels and the kernel variables in force (for logs).

    Imports torch.
    """
    import torch

    report = {"aten": torch.backends.cpu.get_cpu_capability()}
    for name in (*KERNEL_VARIABLES, *MACHINE_KERNEL_VARIABLES):
        if name in os.environ:
            report[name] = os.environ[name]
    return report
