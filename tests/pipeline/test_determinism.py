"""Bit for bit: the tiny model's data, base model, SFT and GRPO outputs hash the same in two
checkouts on two CPUs under the default experiment's pinned CPU kernels (``cpu_kernels: avx2``,
vlrl/cluster/threads.py).

Two copies of the working tree at different paths stand for two clones. The second "machine"
is this one with the kernel choices a different x86-64 CPU would make, set the way each library
reads them: ATen's vector kernels (``ATEN_CPU_CAPABILITY``), MKL's code path
(``MKL_ENABLE_INSTRUCTIONS``), oneDNN's JIT ISA (``ONEDNN_MAX_CPU_ISA``) and, for a CPU without
AVX2/FMA, glibc's libm variants (``GLIBC_TUNABLES``). On an AVX-512 host it is an AVX2 CPU, on
an AVX2 host a CPU whose MKL, oneDNN and libm choose their pre-AVX2 code (ATen's AVX2 kernels,
which ``avx2`` asks for, stay: a CPU that really lacks AVX2 runs the baseline ones and gets other
bits, see vlrl/cluster/threads.py). As a control that the comparison can fail, SFT with
``cpu_kernels: native`` must differ between the two machines.

A small variant of the default experiment (a few dozen records, one SFT epoch, two GRPO steps
with a length reward, so that GRPO changes the weights) keeps this to a few minutes on one core.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from scratch_project import Project

from vlrl.cluster.threads import ATEN_CAPABILITY

pytestmark = pytest.mark.slow

EXP = "bits"
MODEL = "tiny-qwen2.5-vl"
SETTINGS = {
    "cpu_threads": 1,
    "data.shapes.n_train": 48,
    "data.shapes.n_val": 4,
    "data.shapes.n_test": 8,
    "sft.num_train_epochs": 1,
    "grpo.max_steps": 2,
    "grpo.per_device_train_batch_size": 8,
    "grpo.num_generations": 4,
    "grpo.max_completion_length": 12,
    "grpo.logging_steps": 1,
    # completions of different lengths get different rewards: GRPO moves the weights
    "grpo.rewards": {"common.format": 0.5, "vlm_r1.cosine": 1.0},
}
OUTPUTS = {
    "data": f"results/{EXP}/data",
    "base_model": f"resources/models/{MODEL}",
    "sft": f"results/{EXP}/sft",
    "grpo": f"results/{EXP}/grpo",
}
KERNEL_VARIABLES = (
    "ATEN_CPU_CAPABILITY",
    "MKL_CBWR",
    "MKL_DYNAMIC",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "GLIBC_TUNABLES",
)
BELOW = {
    # what a CPU one level below the host chooses
    "AVX512": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    },
    "AVX2": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX",
    },
}


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def dir_hash(files: dict[str, str]) -> str:
    """One hash of a directory: its sorted relative paths and their contents' hashes."""
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def host_capability(env: dict[str, str]) -> str:
    """The ATen kernels torch picks on this CPU by itself."""
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


class Machine:
    """A checkout of the project at its own path, run under one machine's kernel choices."""

    def __init__(self, root: Path, kernels: dict[str, str]) -> None:
        self.project = Project(root)
        env = {k: v for k, v in self.project.env.items() if k not in KERNEL_VARIABLES}
        self.project.env = {**env, **kernels}
        self.kernels = kernels
        source = root / "config" / "experiments" / "tiny_shapes.yaml"
        (root / "config" / "experiments" / f"{EXP}.yaml").write_text(source.read_text())
        self.project.set_values(f"config/experiments/{EXP}.yaml", SETTINGS, commit=False)

    def vlrl(self, *args: str) -> str:
        return self.project("vlrl", *args)

    def outputs(self) -> dict[str, dict[str, str]]:
        return {stage: tree_hashes(self.project.root / out) for stage, out in OUTPUTS.items()}


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory):
    """Both machines after data, base model, SFT and GRPO with portable kernels."""
    first = Machine(tmp_path_factory.mktemp("checkout-one"), {})
    capability = host_capability(first.project.env)
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "checkout-two"
    second = Machine(elsewhere, BELOW.get(capability, {}))
    logs = {}
    for machine in (first, second):
        machine.vlrl("data", EXP)
        machine.vlrl("base-model", MODEL)
        machine.vlrl("sft", EXP)
        logs[machine] = machine.vlrl("grpo", EXP)
    return first, second, capability, logs, {m: m.outputs() for m in (first, second)}


def test_pinned_outputs_are_identical_across_checkouts_and_cpus(machines) -> None:
    first, second, capability, logs, outputs = machines
    assert first.project.root != second.project.root
    if second.kernels:
        print(f"host {capability}; second machine {second.kernels}")
    for stage in OUTPUTS:
        one, two = outputs[first][stage], outputs[second][stage]
        assert one, f"{stage}: no output"
        assert one == two, f"{stage} differs between the two machines"
        print(f"{stage}: {dir_hash(one)[:16]} on both ({len(one)} files)")
    # the pin reached the stage before torch chose its kernels, on the second machine too
    level = yaml.safe_load((first.project.root / f"config/experiments/{EXP}.yaml").read_text())[
        "cpu_kernels"
    ]
    assert level in ATEN_CAPABILITY, f"{EXP} pins no CPU kernels ({level})"
    for machine in (first, second):
        assert f"'aten': '{ATEN_CAPABILITY[level]}'" in logs[machine].replace("\n", " ")
    # GRPO trained: its policy is not the SFT model it started from
    sft, grpo = outputs[first]["sft"], outputs[first]["grpo"]
    assert grpo["final/model.safetensors"] != sft["model.safetensors"]
    if not second.kernels:
        # the two checkouts agree, but both ran this CPU's kernels: the cross-CPU half is untested
        pytest.skip(f"host kernels {capability}: compared across checkouts only, no other CPU")


def test_outputs_hold_no_run_times_or_absolute_paths(machines) -> None:
    for machine in machines[:2]:
        root = machine.project.root
        for stage, out in OUTPUTS.items():
            for path in (root / out).rglob("*"):
                if path.suffix in {".json", ".jsonl", ".yaml", ".md", ".tsv"}:
                    text = path.read_text()
                    for marker in (str(root), ".tmp-", "_runtime", "step_time", "elapsed_time"):
                        assert marker not in text, f"{stage}: {path} holds {marker!r}"


def test_native_kernels_differ_between_the_cpus(machines) -> None:
    """The control: without the pin the two machines train different SFT models (in one
    process: the kernels, not the ranks, are under test, and it skips the launcher)."""
    first, second, capability, *_ = machines
    if not second.kernels:
        pytest.skip(f"host kernels {capability}: no older x86-64 CPU to emulate")
    sft = {}
    for machine in (first, second):
        machine.vlrl("sft", EXP, "--set", "cpu_kernels=native", "--set", "sft.processes=1")
        sft[machine] = tree_hashes(machine.project.root / OUTPUTS["sft"])
    assert sft[first]["model.safetensors"] != sft[second]["model.safetensors"]
