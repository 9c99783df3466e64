"""sft stage: cold-start supervised fine-tuning with LLaMA-Factory.

Writes LLaMA-Factory's ``dataset_info.json``, the sharegpt data and a train yaml from the
experiment config, then runs ``llamafactory-cli train`` from the sft environment (LLaMA-Factory's
pins conflict with TRL's, so it lives in its own venv; see envs/sft.in). The output directory is a
standalone HF model (LLaMA-Factory saves the processor with it); the files it trained from are kept
under ``vlrl_sft/`` beside it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from vlrl import paths
from vlrl.config import ExperimentConfig, SFTConfig
from vlrl.data.convert import SHAREGPT_DATASET_INFO, to_sharegpt
from vlrl.errors import StageError
from vlrl.files import atomic_dir
from vlrl.prompts import get_prompt
from vlrl.records import read_records

log = logging.getLogger(__name__)

DATASET_NAME = "vlrl_train"
TEMPLATE = "qwen2_vl"  # LLaMA-Factory's template for Qwen2-VL and Qwen2.5-VL (libraries.md §2)


def llamafactory_cli() -> str:
    """``$VLRL_LLAMAFACTORY_CLI``, else ``.venv-sft/bin/llamafactory-cli``, else the one on PATH."""
    candidates = [
        os.environ.get("VLRL_LLAMAFACTORY_CLI"),
        str(paths.root() / ".venv-sft" / "bin" / "llamafactory-cli"),
        shutil.which("llamafactory-cli"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise StageError(
        "llamafactory-cli not found: run `make setup` (creates .venv-sft) "
        "or set VLRL_LLAMAFACTORY_CLI"
    )


def has_accelerator() -> bool:
    """Whether torch sees a CUDA device (decides bf16 and CPU flags)."""
    import torch

    return torch.cuda.is_available()


def train_args(
    cfg: SFTConfig, model_dir: Path, data_dir: Path, output_dir: Path, seed: int
) -> dict[str, Any]:
    """The LLaMA-Factory train yaml as a dict (keys of LLaMA-Factory 0.9.5, libraries.md §2)."""
    gpu = has_accelerator()
    args: dict[str, Any] = {
        "model_name_or_path": str(model_dir.resolve()),
        "trust_remote_code": False,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": cfg.finetuning_type,
        "freeze_vision_tower": cfg.freeze_vision_tower,
        "freeze_multi_modal_projector": cfg.freeze_vision_tower,
        "image_max_pixels": cfg.image_max_pixels,
        "image_min_pixels": cfg.image_min_pixels,
        "dataset": DATASET_NAME,
        "dataset_dir": str(data_dir.resolve()),
        "template": TEMPLATE,
        "cutoff_len": cfg.cutoff_len,
        "overwrite_cache": True,
        "preprocessing_num_workers": 1,
        "dataloader_num_workers": 0,
        "output_dir": str(output_dir.resolve()),
        "overwrite_output_dir": True,
        "save_strategy": "no",
        "save_only_model": True,
        "logging_steps": 5,
        "plot_loss": False,
        "report_to": "none",
        "per_device_train_batch_size": cfg.per_device_train_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "learning_rate": cfg.learning_rate,
        "num_train_epochs": cfg.num_train_epochs,
        "lr_scheduler_type": cfg.lr_scheduler_type,
        "warmup_ratio": cfg.warmup_ratio,
        "seed": seed,
        "data_seed": seed,
        "bf16": gpu,
        "use_cpu": not gpu,
        "flash_attn": "auto" if gpu else "sdpa",
    }
    if cfg.max_samples is not None:
        args["max_samples"] = cfg.max_samples
    if cfg.finetuning_type == "lora":
        args.update(lora_rank=cfg.lora_rank, lora_target="all")
    args.update(cfg.extra)
    return args


def run(exp: str, cfg: ExperimentConfig) -> None:
    """Train ``results/<exp>/sft`` from the base model on the experiment's train split."""
    if not cfg.sft.enabled:
        raise StageError(f"experiment {exp}: sft.enabled is false; the workflow should not run sft")
    fmt = get_prompt(cfg.prompt)
    data_dir = paths.data_dir(exp)
    model_dir = paths.model_resource(cfg.base_model)
    for needed in (data_dir / "train.jsonl", model_dir / "config.json"):
        if not needed.is_file():
            raise StageError(
                f"sft: input {needed} is missing; run the data / base_model stages first"
            )
    records = read_records(data_dir / "train.jsonl", cfg.sft.max_samples)
    cli = llamafactory_cli()

    with atomic_dir(paths.sft_dir(exp)) as out:
        work = out / "vlrl_sft"
        work.mkdir()
        rows = [to_sharegpt(r, fmt, data_dir) for r in records if r.reasoning is not None]
        if not rows:
            raise StageError(f"sft: no record in {data_dir / 'train.jsonl'} has a reasoning target")
        (work / f"{DATASET_NAME}.json").write_text(json.dumps(rows, ensure_ascii=False))
        info = {DATASET_NAME: {"file_name": f"{DATASET_NAME}.json", **SHAREGPT_DATASET_INFO}}
        (work / "dataset_info.json").write_text(json.dumps(info, indent=2))
        args = train_args(cfg.sft, model_dir, work, out, cfg.seed)
        (work / "train.yaml").write_text(yaml.safe_dump(args, sort_keys=False))
        log.info(
            "sft: %d samples, %s epochs → llamafactory-cli train",
            len(rows),
            cfg.sft.num_train_epochs,
        )
        env = {
            **os.environ,
            "DISABLE_VERSION_CHECK": "1",
            "WANDB_DISABLED": "true",
            "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
            "PYTHONUNBUFFERED": "1",
        }
        proc = subprocess.run([cli, "train", str(work / "train.yaml")], env=env, stdout=sys.stderr)
        if proc.returncode != 0:
            raise StageError(
                f"sft: llamafactory-cli train exited with {proc.returncode} (see the log above)"
            )
        for needed in ("config.json", "model.safetensors"):
            if not any(out.glob(needed.replace(".safetensors", "*.safetensors"))):
                raise StageError(f"sft: LLaMA-Factory finished but wrote no {needed} in {out}")
        # LLaMA-Factory saves the data/train yaml paths absolute; keep them for the record only.
        log.info("sft: wrote %s", paths.sft_dir(exp))
