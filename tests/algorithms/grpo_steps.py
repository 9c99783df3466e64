"""Helpers for running a few real GRPO steps of each algorithm on the tiny model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.stages import grpo

EXP = "tiny_shapes"
SMALL_RUN = [
    "sft.enabled=false",
    "grpo.max_steps=2",
    "grpo.processes=1",  # in this process: tests register rewards and patch the trainer
    "grpo.logging_steps=1",
    "grpo.per_device_train_batch_size=4",
    "grpo.num_generations=2",
    "grpo.max_completion_length=12",
    "grpo.learning_rate=0.01",
]


def run_grpo(start_model: Path, data: Path, overrides: list[str], exp: str = EXP) -> dict:
    """Run the grpo stage for a few steps from ``start_model``; return ``train_summary.json``."""
    shutil.copytree(data, paths.data_dir(exp), dirs_exist_ok=True)
    shutil.copytree(start_model, paths.model_resource("tiny-qwen2.5-vl"), dirs_exist_ok=True)
    cfg = load_experiment(exp, SMALL_RUN + overrides)
    grpo.run(exp, cfg)
    return json.loads((paths.grpo_dir(exp) / "train_summary.json").read_text())


def logged(summary: dict, key: str) -> list[float]:
    """Every logged value of ``key`` in the training log."""
    return [h[key] for h in summary["log_history"] if key in h]


def weights_changed(before_dir: Path, exp: str = EXP) -> bool:
    from safetensors.torch import load_file

    before = load_file(before_dir / "model.safetensors")
    after = load_file(paths.grpo_dir(exp) / paths.GRPO_FINAL / "model.safetensors")
    return any(not before[k].equal(after[k]) for k in before)
