"""The locks in envs/ agree with what they lock (no network, no install): every direct pin of an
``.in`` file appears with its version in the ``.txt`` generated from it; the GPU environment
(envs/gpu.txt, ``make lock-gpu``) keeps main.in's pins except those gpu.in overrides (torch,
torchvision and numpy, which vllm pins) and holds main.txt's torch nowhere; and the Makefile
targets that make and install them exist and read and write these files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``huggingface_hub`` = ``huggingface-hub``),
    extras dropped."""
    return re.sub(r"[-_.]+", "-", name.split("[")[0]).lower().strip()


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file (markers and comments dropped), by name;
    a name pinned twice is an error."""
    found: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#")[0].split(";")[0].strip()
        if not line:
            continue
        assert "==" in line, f"{path.name}: {raw!r} is not an exact pin"
        name, version = line.split("==")
        assert canonical(name) not in found, f"{path.name}: {name} pinned twice"
        found[canonical(name)] = version.strip()
    return found


def test_pins_parse_the_way_pip_compares_names():
    assert canonical("huggingface_hub") == canonical("Huggingface-Hub") == "huggingface-hub"
    assert canonical("transformers[serving]") == "transformers"
    assert canonical("zc.lockfile") == "zc-lockfile"


@pytest.mark.parametrize(("direct", "lock"), [("main", "main"), ("sft", "sft"), ("gpu", "gpu")])
def test_every_direct_pin_is_locked_at_its_version(direct, lock):
    locked = pins(ENVS / f"{lock}.txt")
    wrong = {
        name: (version, locked.get(name))
        for name, version in pins(ENVS / f"{direct}.in").items()
        if locked.get(name) != version
    }
    assert wrong == {}


def test_the_gpu_lock_keeps_main_in_but_for_gpu_in_overrides():
    overridden = pins(ENVS / "gpu.in")
    gpu = pins(ENVS / "gpu.txt")
    kept = {n: v for n, v in pins(ENVS / "main.in").items() if n not in overridden}
    assert {n: gpu.get(n) for n in kept} == kept
    # The separate environment exists for vllm's torch; the main environment keeps its own.
    assert {"vllm", "deepspeed", "torch"} <= set(overridden)
    assert gpu["torch"] == overridden["torch"] != pins(ENVS / "main.txt")["torch"]
    assert pins(ENVS / "main.txt")["torch"] == pins(ENVS / "main.in")["torch"]


def test_the_gpu_lock_is_complete_where_main_is():
    """Every package of main.txt is in gpu.txt (it is .venv's set plus the GPU packages)."""
    missing = set(pins(ENVS / "main.txt")) - set(pins(ENVS / "gpu.txt"))
    assert missing == set()


def dry_make(target: str) -> str:
    """The commands ``make -n <target>`` would run (nothing is run)."""
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return re.sub(r"\s*\\\n\s*", " ", out.stdout)  # continued lines joined


def test_make_lock_regenerates_the_gpu_lock_from_main_in_and_gpu_in():
    commands = dry_make("lock")
    compile_line = next(line for line in commands.splitlines() if "pip compile" in line)
    assert "--override envs/gpu.in" in compile_line
    assert "envs/main.in envs/gpu.in" in compile_line
    assert "> envs/gpu.txt" in commands and "Do not edit by hand" in commands
    assert (ENVS / "gpu.txt").read_text().startswith("# Complete pins of the gpu environment")
    assert "make lock-gpu" in (ENVS / "gpu.txt").read_text().splitlines()[0]


def test_make_setup_gpu_installs_the_gpu_lock_into_its_own_environment():
    commands = dry_make("setup-gpu")
    assert re.search(r"uv pip install .*--python \.venv-gpu/bin/python -r envs/gpu\.txt", commands)
    assert "ln -sf ../../.venv-gpu/bin/vllm .venv/bin/vllm" in commands
