"""merge stage: a LoRA adapter is merged into the model it was trained from; a full
fine-tune is copied. Either way the result loads standalone and generates like the original."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from vlrl.algorithms import trl_setup
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import merge


def _logits(model_dir: Path, model=None) -> torch.Tensor:
    from transformers import AutoModelForImageTextToText

    model = model or AutoModelForImageTextToText.from_pretrained(model_dir)
    ids = torch.tensor([[10, 11, 12, 13]])
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.fixture()
def started(project: Path, tiny_model_dir: Path):
    """An experiment without SFT whose GRPO starts from the tiny base model."""
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    return load_experiment("tiny_shapes", ["sft.enabled=false"])


def test_lora_adapter_is_merged(started, tiny_model_dir: Path) -> None:
    from peft import get_peft_model
    from transformers import AutoProcessor

    cfg = started
    model, processor = trl_setup.load_policy(tiny_model_dir, cfg.grpo)
    peft_model = get_peft_model(
        model, trl_setup.peft_config(cfg.grpo.model_copy(update={"lora": True}))
    )
    with torch.no_grad():  # a non-zero adapter, so merging changes the weights
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.fill_(0.01)
    expected = _logits(Path(), peft_model)
    final = paths.grpo_final_dir("tiny_shapes")
    peft_model.save_pretrained(final)
    processor.save_pretrained(final)

    merge.run("tiny_shapes", cfg)
    out = paths.merged_model_dir("tiny_shapes")
    assert not (out / "adapter_config.json").exists()
    assert torch.allclose(_logits(out), expected, atol=1e-5)
    assert not torch.allclose(_logits(out), _logits(tiny_model_dir), atol=1e-5)
    AutoProcessor.from_pretrained(out)  # the processor travels with the weights


def test_full_model_is_copied(started, tiny_model_dir: Path) -> None:
    final = paths.grpo_final_dir("tiny_shapes")
    shutil.copytree(tiny_model_dir, final)
    merge.run("tiny_shapes", started)
    assert torch.allclose(_logits(paths.merged_model_dir("tiny_shapes")), _logits(tiny_model_dir))


def test_missing_checkpoint_named(started) -> None:
    with pytest.raises(StageError, match="final"):
        merge.run("tiny_shapes", started)
