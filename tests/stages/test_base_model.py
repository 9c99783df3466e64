"""Stage base_model: config/models/<name>.yaml → resources/models/<name>/, atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlrl.core.errors import ConfigError, StageError
from vlrl.stages import base_model

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_tiny_builder_writes_a_loadable_model(project: Path) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    base_model.run("tiny-qwen2.5-vl")

    out = project / "resources" / "models" / "tiny-qwen2.5-vl"
    manifest = json.loads((out / "vlrl_model.json").read_text())
    assert manifest["builder"] == "tiny" and manifest["seed"] == base_model.TINY_SEED
    assert manifest["image_tokens_112px"] == 16
    assert [p.name for p in out.parent.iterdir()] == ["tiny-qwen2.5-vl"], "no temporaries left"
    processor = AutoProcessor.from_pretrained(out)
    AutoModelForImageTextToText.from_pretrained(out)
    instruction = base_model.instruction_texts()[0]
    assert len(processor.tokenizer.encode(instruction)) < len(instruction) / 3


def test_hf_builder_missing_from_offline_cache_leaves_no_output(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(project / "empty-hf-cache"))

    with pytest.raises(StageError) as info:
        base_model.run("qwen2.5-vl-3b-instruct")

    assert "Qwen/Qwen2.5-VL-3B-Instruct" in str(info.value)
    assert "66285546d2b821cf421d4f5eb2576359d3770cd3" in str(info.value)
    models = project / "resources" / "models"
    assert not models.exists() or not any(models.iterdir())


def test_unknown_model_names_the_known_ones(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"tiny-qwen2\.5-vl"):
        base_model.run("no-such-model")
