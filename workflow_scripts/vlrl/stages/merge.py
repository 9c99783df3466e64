"""merge stage: a standalone HF model directory from the final GRPO checkpoint.

A LoRA adapter is merged into the model it was trained from (peft ``merge_and_unload``); a full
fine-tune is copied as is. Either way the processor and chat template travel with the weights.
"""

from __future__ import annotations

import logging
import shutil

from vlrl import sharing
from vlrl.config import ExperimentConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_dir

log = logging.getLogger(__name__)

# cpu_threads and cpu_kernels: a LoRA merge multiplies matrices, whose bits follow both.


def run(exp: str, cfg: ExperimentConfig) -> None:
    """Write ``results/<exp>/model`` from ``results/<exp>/grpo/final``."""
    final = sharing.grpo_final_dir(exp)
    if not final.is_dir():
        raise StageError(f"merge: {final} is missing; run the grpo stage first")
    with atomic_dir(paths.merged_model_dir(exp)) as out:
        if (final / "adapter_config.json").is_file():
            from peft import PeftModel
            from transformers import AutoModelForImageTextToText, AutoProcessor

            base_dir = sharing.policy_start_dir(exp, cfg.sft.enabled, cfg.base_model)
            log.info("merge: merging the LoRA adapter %s into %s", final, base_dir)
            base = AutoModelForImageTextToText.from_pretrained(str(base_dir))
            merged = PeftModel.from_pretrained(base, str(final)).merge_and_unload()
            merged.save_pretrained(str(out))
            AutoProcessor.from_pretrained(str(final)).save_pretrained(str(out))
        else:
            log.info("merge: full fine-tune; copying %s", final)
            # shutil.copy, not copytree's default copy2: fresh mtimes, so Snakemake sees the
            # merged model as newer than the grpo output it was made from.
            shutil.copytree(final, out, dirs_exist_ok=True, copy_function=shutil.copy)
        if not (out / "config.json").is_file():
            raise StageError(f"merge: no config.json in the merged model {out}")
