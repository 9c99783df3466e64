"""Pinning a stage's CPU threads and kernels: torch in this process, the environment for its
children."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from vlrl.cluster import threads
from vlrl.cluster.threads import (
    KERNEL_VARIABLES,
    MACHINE_KERNEL_VARIABLES,
    PINNED_KERNELS,
    THREAD_VARIABLES,
    cpu_has_avx2,
    pin_cpu_kernels,
    pin_cpu_threads,
)


@pytest.fixture
def restore_threads(monkeypatch: pytest.MonkeyPatch):
    for name in THREAD_VARIABLES:  # monkeypatch puts the variables back afterwards
        monkeypatch.setenv(name, os.environ.get(name, ""))
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 2])
def test_pins_torch_and_children(restore_threads, n: int) -> None:
    pin_cpu_threads(n)
    assert torch.get_num_threads() == n
    child = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == str(n)


def test_none_leaves_everything(restore_threads, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    before = torch.get_num_threads()
    pin_cpu_threads(None)
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert torch.get_num_threads() == before


ALL_KERNEL_VARIABLES = (*KERNEL_VARIABLES, *MACHINE_KERNEL_VARIABLES)
CHILD_REPORT = """
import ctypes, os, torch
lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
branch = lib.mkl_serv_cbwr_get(1) if hasattr(lib, "mkl_serv_cbwr_get") else -1
print(torch.backends.cpu.get_cpu_capability(), branch)
"""
MKL_CBWR_COMPATIBLE = 3  # mkl_cbwr.h


@pytest.fixture
def restore_kernels(monkeypatch: pytest.MonkeyPatch):
    for name in ALL_KERNEL_VARIABLES:  # monkeypatch puts the variables back (or unsets) afterwards
        monkeypatch.setenv(name, "")  # records the variable even when it was unset
        monkeypatch.delenv(name)


def test_portable_pins_aten_and_mkl_in_children(restore_kernels, monkeypatch) -> None:
    """A child started after the pin runs ATen's baseline kernels and MKL's compatible branch,
    whatever the machine asked for."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    pin_cpu_kernels("portable")
    portable = PINNED_KERNELS["portable"]
    assert {k: os.environ[k] for k in portable} == portable
    assert "MKL_ENABLE_INSTRUCTIONS" not in os.environ
    child = subprocess.run(
        [sys.executable, "-c", CHILD_REPORT], capture_output=True, text=True, check=True
    )
    capability, branch = child.stdout.split()
    assert capability == "DEFAULT"
    assert int(branch) in (MKL_CBWR_COMPATIBLE, -1)  # -1: this MKL does not say


@pytest.mark.skipif(not cpu_has_avx2(), reason="this CPU has no AVX2")
def test_avx2_pins_aten_avx2_and_mkl_in_children(restore_kernels, monkeypatch) -> None:
    """``avx2``: ATen's AVX2 kernels (not the AVX-512 ones of an AVX-512 CPU, not the baseline
    ones), MKL's compatible branch, whatever the machine asked for."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX512")
    pin_cpu_kernels("avx2")  # this process computed before: only its children are pinned
    assert {k: os.environ[k] for k in PINNED_KERNELS["avx2"]} == PINNED_KERNELS["avx2"]
    assert "MKL_ENABLE_INSTRUCTIONS" not in os.environ
    child = subprocess.run(
        [sys.executable, "-c", CHILD_REPORT], capture_output=True, text=True, check=True
    )
    capability, branch = child.stdout.split()
    assert capability == "AVX2"
    assert int(branch) in (MKL_CBWR_COMPATIBLE, -1)


def test_avx2_on_a_cpu_without_it_warns(restore_kernels, monkeypatch, caplog) -> None:
    monkeypatch.setattr(threads, "cpu_has_avx2", lambda: False)
    with caplog.at_level("WARNING", logger="vlrl.cluster.threads"):
        assert not pin_cpu_kernels("avx2")
    assert "no AVX2" in caplog.text and "cpu_kernels: portable" in caplog.text


def test_pin_holds_after_import_until_the_first_operation(restore_kernels) -> None:
    """torch reads the variables at its first operation, not at import: a stage module may
    import torch before the pin as long as it computes nothing."""
    code = (
        "import torch\nfrom vlrl.cluster.threads import pin_cpu_kernels as pin\n"
        "print(pin('portable'))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code + CHILD_REPORT], capture_output=True, text=True, check=True
    )
    pinned, capability, branch = child.stdout.split()
    assert (pinned, capability) == ("True", "DEFAULT")
    assert int(branch) in (MKL_CBWR_COMPATIBLE, -1)


def test_pin_after_torch_computed_is_reported(restore_kernels) -> None:
    code = (
        "import torch; torch.ones(4).exp(); before = torch.backends.cpu.get_cpu_capability(); "
        "from vlrl.cluster.threads import pin_cpu_kernels; "
        "print(before, pin_cpu_kernels('portable'))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, pinned = child.stdout.split()
    assert pinned == str(before == "DEFAULT")
    if before != "DEFAULT":
        assert "depend on this CPU" in child.stderr


def test_native_and_none_change_nothing(restore_kernels, monkeypatch) -> None:
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2")
    before = dict(os.environ)
    assert pin_cpu_kernels("native") and pin_cpu_kernels(None)
    assert dict(os.environ) == before


def test_unknown_kernels_are_refused() -> None:
    with pytest.raises(ValueError, match="portable"):
        pin_cpu_kernels("fast")


def test_no_stage_imports_torch_before_the_cli_pins() -> None:
    """The CLI pins right before it imports the stage's module: neither it nor any stage module
    may compute with torch at import time. None even imports it, which is what this checks."""
    stages = ["data", "base_model", "sft", "grpo", "merge", "infer", "score", "report"]
    code = (
        "import sys, importlib, vlrl.cli\n"
        f"for s in {stages!r}: importlib.import_module('vlrl.stages.' + s)\n"
        "torch = sys.modules.get('torch')\n"
        "print('none' if torch is None else 'imported')\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "none", child.stdout
