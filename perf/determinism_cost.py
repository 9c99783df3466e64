"""What bit-for-bit reproducibility costs: SFT, GRPO and inference of the tiny model with native,
avx2 and portable CPU kernels (``cpu_kernels``, vlrl/cluster/threads.py), one thread, in one run as
ratios.

    .venv/bin/python perf/determinism_cost.py [--repeats 2]

Each measurement runs in a process of its own, because torch fixes its kernels at a process's
first operation: the stage's ``run`` with ``cpu_kernels`` set to each level, in an order rotated
from round to round (the machine is shared; drift hits every level alike). Measured:
SFT's and GRPO's ``train_runtime`` (the training loop, without start-up; the stages report it),
GRPO's median step, and the wall time of the infer stage on the test split (model load and
generation). Prints the median of the rounds and each pinned level / native.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXP = "cost"
SETTINGS = [
    "cpu_threads=1",
    "data.shapes.n_train=512",
    "data.shapes.n_val=8",
    "data.shapes.n_test=256",
    "sft.num_train_epochs=2",
    "grpo.max_steps=8",
    "grpo.per_device_train_batch_size=32",
    "grpo.num_generations=8",
    "grpo.max_completion_length=32",
    "grpo.logging_steps=1",
    "infer.batch_size=32",
    "infer.max_new_tokens=48",
]
KERNELS = ("native", "avx2", "portable")


def child(stage: str, kernels: str) -> None:
    """One measurement, in this process: pin, then run the stage and print its times as JSON."""
    from vlrl.cluster.threads import pin_cpu_kernels, pin_cpu_threads
    from vlrl.config import load_experiment

    cfg = load_experiment(EXP, [*SETTINGS, f"cpu_kernels={kernels}"])
    pin_cpu_kernels(cfg.cpu_kernels)
    pin_cpu_threads(cfg.cpu_threads)
    if stage == "prepare":
        from vlrl.stages import base_model, data

        data.run(EXP, cfg)
        base_model.run(cfg.base_model)
        return
    import importlib

    module = importlib.import_module(f"vlrl.stages.{stage}")
    args = ("sft", "shapes_test") if stage == "infer" else ()
    start = time.perf_counter()
    times = module.run(EXP, cfg, *args) or {}
    wall = time.perf_counter() - start
    import torch

    result = {"wall": wall, "aten": torch.backends.cpu.get_cpu_capability()}
    if "train_runtime" in times:
        result["train_runtime"] = times["train_runtime"]
    if times.get("step_time"):
        result["median_step"] = statistics.median(times["step_time"][1:] or times["step_time"])
    print("RESULT " + json.dumps(result))


def measure(work: Path, stage: str, kernels: str) -> dict[str, float]:
    env = {
        **os.environ,
        "VLRL_ROOT": str(work),
        "PYTHONPATH": str(REPO / "workflow_scripts"),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "VLRL_LLAMAFACTORY_CLI": os.environ.get(
            "VLRL_LLAMAFACTORY_CLI", str(REPO / ".venv-sft" / "bin" / "llamafactory-cli")
        ),
    }
    out = subprocess.run(
        [sys.executable, __file__, "--child", stage, "--kernels", kernels],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{stage} ({kernels}) failed:\n{out.stderr[-3000:]}")
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1].removeprefix("RESULT ")) if lines else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--kernels", choices=KERNELS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.kernels)
        return

    work = Path(tempfile.mkdtemp(prefix="vlrl-determinism-cost-"))
    shutil.copytree(REPO / "config", work / "config")
    source = work / "config" / "experiments" / "tiny_shapes.yaml"
    (work / "config" / "experiments" / f"{EXP}.yaml").write_text(source.read_text())
    measure(work, "prepare", "portable")
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    for round_ in range(args.repeats):
        shift = round_ % len(KERNELS)
        order = KERNELS[shift:] + KERNELS[:shift]
        for kernels in order:
            for stage in ("sft", "grpo", "infer"):  # grpo starts from this round's sft
                result = measure(work, stage, kernels)
                rows.setdefault((stage, kernels), []).append(result)
                print(f"round {round_ + 1} {kernels:<8} {stage:<5} {json.dumps(result)}")

    def median(stage: str, kernels: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[(stage, kernels)])

    ratio_names = "".join(f"{k[:4] + '/nat':>10}" for k in KERNELS[1:])
    print(f"\n{'measure':<24}" + "".join(f"{k:>10}" for k in KERNELS) + ratio_names)
    for stage, key in (
        ("sft", "train_runtime"),
        ("sft", "wall"),
        ("grpo", "train_runtime"),
        ("grpo", "median_step"),
        ("grpo", "wall"),
        ("infer", "wall"),
    ):
        values = {k: median(stage, k, key) for k in KERNELS}
        cells = "".join(f"{values[k]:>9.2f}s" for k in KERNELS)
        ratios = "".join(f"{values[k] / values['native']:>9.2f}x" for k in KERNELS[1:])
        print(f"{stage + ' ' + key:<24}{cells}{ratios}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
