"""The locally built tiny Qwen2.5-VL: shape, tokenizer, chat template, processor, generation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from PIL import Image

from vlrl.config import TinyModelConfig
from vlrl.core.errors import StageError
from vlrl.models.tiny import (
    MANIFEST,
    REASONING_TAGS,
    SPECIAL_TOKENS,
    build_tiny_model,
    build_tokenizer,
    check_forward,
)

SAMPLE_RESPONSE = "<think>i see a red circle</think><answer>B</answer>"
IMAGE_QUESTION = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]


def _image(size: int = 112) -> Image.Image:
    return Image.new("RGB", (size, size), (30, 160, 40))


def test_same_seed_gives_identical_files_other_seed_other_weights(
    tiny_model_dir: Path, tiny_corpus_texts: list[str], tmp_path: Path
) -> None:
    build_tiny_model(TinyModelConfig(), tiny_corpus_texts, tmp_path / "again", seed=0)
    build_tiny_model(TinyModelConfig(), tiny_corpus_texts, tmp_path / "other", seed=1)
    for name in ["model.safetensors", "tokenizer.json", "config.json", "processor_config.json"]:
        assert (tmp_path / "again" / name).read_bytes() == (tiny_model_dir / name).read_bytes(), (
            name
        )
    weights = (tmp_path / "other" / "model.safetensors").read_bytes()
    assert weights != (tiny_model_dir / "model.safetensors").read_bytes()


def test_manifest_records_builder_config_seed_and_a_small_parameter_count(
    tiny_model_dir: Path, tiny_model
) -> None:
    manifest = json.loads((tiny_model_dir / MANIFEST).read_text())
    n_params = sum(p.numel() for p in tiny_model.parameters())
    assert manifest["builder"] == "tiny"
    assert manifest["seed"] == 0
    assert manifest["config"] == TinyModelConfig().model_dump()
    assert manifest["num_parameters"] == n_params
    assert n_params < 1_000_000


def test_config_ids_match_tokenizer(tiny_model, tiny_processor) -> None:
    tok, cfg = tiny_processor.tokenizer, tiny_model.config
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    assert cfg.image_token_id == ids["<|image_pad|>"]
    assert cfg.video_token_id == ids["<|video_pad|>"]
    assert cfg.vision_start_token_id == ids["<|vision_start|>"]
    assert cfg.vision_end_token_id == ids["<|vision_end|>"]
    assert cfg.text_config.vocab_size == len(tok)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert cfg.text_config.eos_token_id == tok.eos_token_id
    assert cfg.text_config.pad_token_id == tok.pad_token_id
    assert tiny_model.generation_config.pad_token_id == tok.pad_token_id
    assert tok.eos_token_id in tiny_model.generation_config.eos_token_id
    head_dim = cfg.text_config.hidden_size // cfg.text_config.num_attention_heads
    assert sum(cfg.text_config.rope_parameters["mrope_section"]) == head_dim // 2


@pytest.mark.parametrize("tag", REASONING_TAGS)
def test_every_reasoning_tag_is_one_token(tiny_processor, tag: str) -> None:
    assert tiny_processor.tokenizer.tokenize(f"x{tag}y")[1] == tag


@pytest.mark.parametrize("skip_special", [False, True])
def test_response_round_trips_exactly(tiny_processor, skip_special: bool) -> None:
    tok = tiny_processor.tokenizer
    ids = tok.encode(SAMPLE_RESPONSE + "<|im_end|>", add_special_tokens=False)
    expected = SAMPLE_RESPONSE if skip_special else SAMPLE_RESPONSE + "<|im_end|>"
    assert tok.decode(ids, skip_special_tokens=skip_special) == expected


def test_instruction_tokenizes_compactly(tiny_processor) -> None:
    from vlrl.items.prompts import PROMPTS

    text = PROMPTS["think_answer"].render_prompt("How many shapes are in the image?")
    assert len(tiny_processor.tokenizer.encode(text)) < len(text) / 3


def test_vocab_below_fixed_symbols_is_rejected() -> None:
    with pytest.raises(ValueError, match="vocab_size 200"):
        build_tokenizer(["abc"], vocab_size=200)


def test_chat_template_renders_image_placeholder_system_prompt_and_generation_prompt(
    tiny_processor,
) -> None:
    text = tiny_processor.apply_chat_template(
        IMAGE_QUESTION, add_generation_prompt=True, tokenize=False
    )
    assert text == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_chat_template_takes_string_content_and_an_explicit_system_turn(tiny_processor) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": SAMPLE_RESPONSE},
    ]
    text = tiny_processor.tokenizer.apply_chat_template(messages, tokenize=False)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        f"<|im_start|>assistant\n{SAMPLE_RESPONSE}<|im_end|>\n"
    )


def test_112px_image_becomes_16_image_tokens(tiny_processor, tiny_model) -> None:
    text = tiny_processor.apply_chat_template(
        IMAGE_QUESTION, add_generation_prompt=True, tokenize=False
    )
    inputs = tiny_processor(text=[text], images=[_image(112)], return_tensors="pt")
    assert int((inputs["input_ids"] == tiny_model.config.image_token_id).sum()) == 16
    assert inputs["image_grid_thw"].tolist() == [[1, 8, 8]]


def test_generate_runs_on_cpu(tiny_processor, tiny_model) -> None:
    text = tiny_processor.apply_chat_template(
        IMAGE_QUESTION, add_generation_prompt=True, tokenize=False
    )
    inputs = tiny_processor(text=[text], images=[_image()], return_tensors="pt")
    out = tiny_model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert out.shape[1] <= inputs["input_ids"].shape[1] + 5
    assert out.shape[1] > inputs["input_ids"].shape[1]


def test_forward_is_finite_and_nan_weights_are_caught(tiny_model_dir: Path, tiny_processor) -> None:
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(tiny_model_dir).eval()
    assert check_forward(model, tiny_processor) == 16
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(StageError, match="NaN"):
        check_forward(model, tiny_processor)


SFT_PYTHON = Path(__file__).resolve().parents[2] / ".venv-sft" / "bin" / "python"
LOAD_IN_SFT_ENV = """
import sys
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor
proc = AutoProcessor.from_pretrained(sys.argv[1])
model = AutoModelForImageTextToText.from_pretrained(sys.argv[1])
msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]
text = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
inputs = proc(text=[text], images=[Image.new("RGB", (112, 112))], return_tensors="pt")
model.generate(**inputs, max_new_tokens=3)
print("image tokens", int((inputs["input_ids"] == model.config.image_token_id).sum()))
"""


@pytest.mark.slow
@pytest.mark.skipif(not SFT_PYTHON.exists(), reason="no .venv-sft (LLaMA-Factory environment)")
def test_sft_environment_loads_the_model(tiny_model_dir: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    result = subprocess.run(
        [str(SFT_PYTHON), "-c", LOAD_IN_SFT_ENV, str(tiny_model_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "image tokens 16" in result.stdout
    assert "Missing validation function" not in result.stderr
