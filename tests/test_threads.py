"""Pinning a stage's CPU threads: torch in this process, the environment for its children."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from vlrl.threads import THREAD_VARIABLES, pin_cpu_threads


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
