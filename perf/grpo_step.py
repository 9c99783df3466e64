"""One GRPO step, measured: time per step, generated tokens/s, peak memory and model FLOPs
utilisation (MFU), for the tiny model or a randomly initialised Qwen2.5-VL-3B-shaped one.

    .venv/bin/python perf/grpo_step.py --model tiny [--steps 6]
    .venv/bin/python perf/grpo_step.py --model 3b --steps 6 --peak-tflops 989   # a GPU

It runs the grpo stage itself (TRL's GRPOTrainer, one process, bf16 on a GPU, fp32 on CPU) on
generated shapes data and reads what TRL logged: ``step_time`` per step, the completions' mean
length. Steps 2..N are reported (the first warms up). The 3B-shaped model has Qwen2.5-VL-3B's
shapes (text: hidden 2048, 36 layers, 16 heads, 2 KV heads, MLP 11008, vocabulary 151,936;
vision: 32 blocks, hidden 1280) and random weights: speed and memory are the real model's, the
answers are noise (so every completion runs to ``--completion-tokens``).

MFU counts the model's matmul FLOPs per step: 2·N per generated token (the rollout), 2·N per
token for each of the policy's log-probability passes (one, or two with a reference model when
beta > 0), and 6·N per token for the update, N the parameters, over ``--peak-tflops`` (the
device's dense bf16 peak, e.g. 989 for an H100 SXM). Attention FLOPs are left out, so it is a
lower bound.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_project import tiny_project

QWEN25_VL_3B_TEXT = {
    "hidden_size": 2048,
    "intermediate_size": 11008,
    "num_hidden_layers": 36,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 128000,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
QWEN25_VL_3B_VISION = {
    "depth": 32,
    "hidden_size": 1280,
    "intermediate_size": 3420,
    "num_heads": 16,
    "out_hidden_size": 2048,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31],
}


def config_3b_shaped(tiny_dir: Path):
    """The tiny model's config (its tokens' ids) with Qwen2.5-VL-3B's shapes."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_dir)
    text = {**config.text_config.to_dict(), **QWEN25_VL_3B_TEXT}
    # multimodal RoPE sections of Qwen2.5-VL-3B: they sum to half the head size, 128 / 2
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_section": [16, 24, 24]}
    text.pop("layer_types", None)  # derived again from the layer count
    config.text_config = type(config.text_config)(**text)
    config.vision_config = type(config.vision_config)(
        **{**config.vision_config.to_dict(), **QWEN25_VL_3B_VISION}
    )
    config.tie_word_embeddings = True  # as the 3B model: 3.75 B parameters, not 4.07
    return config


def build_3b_shaped(tiny_dir: Path, out: Path) -> None:
    """The tiny model's tokenizer and processor with a random Qwen2.5-VL-3B-shaped model."""
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    torch.manual_seed(0)
    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = Qwen2_5_VLForConditionalGeneration(config_3b_shaped(tiny_dir)).to(dtype)
    model.generation_config.eos_token_id = None  # noise never ends: fixed-length rollouts
    model.save_pretrained(out)
    for name in tiny_dir.iterdir():
        if not (out / name.name).exists():
            shutil.copy(name, out / name.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "3b"], default="tiny")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt")
    parser.add_argument("--completion-tokens", type=int, default=128)
    parser.add_argument("--beta", type=float, default=0.04)
    parser.add_argument("--peak-tflops", type=float, default=None, help="device dense peak")
    args = parser.parse_args()

    import torch

    from vlrl.config import load_experiment
    from vlrl.core import paths
    from vlrl.stages import grpo

    work = tiny_project("vlrl-grpo-step-")
    model_dir = paths.model_resource("tiny-qwen2.5-vl")
    if args.model == "3b":
        tiny = work / "tiny"
        model_dir.rename(tiny)
        build_3b_shaped(tiny, model_dir)

    completions = args.prompts * args.generations
    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.processes=1",
            f"grpo.max_steps={args.steps}",
            "grpo.logging_steps=1",
            f"grpo.per_device_train_batch_size={completions}",
            f"grpo.num_generations={args.generations}",
            f"grpo.max_completion_length={args.completion_tokens}",
            f"grpo.beta={args.beta}",
            f"grpo.gradient_checkpointing={str(args.model == '3b').lower()}",
        ],
    )
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    times = grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    lengths = [row["completions/mean_length"] for row in summary["log_history"] if "reward" in row]
    steps = times["step_time"][1:]
    step_s = statistics.median(steps)
    generated = completions * statistics.median(lengths[1:])

    from transformers import AutoModelForImageTextToText

    n_params = sum(
        p.numel() for p in AutoModelForImageTextToText.from_pretrained(model_dir).parameters()
    )
    prompt_tokens = 150 if args.model == "tiny" else 400  # an image and a question, roughly
    tokens = completions * (prompt_tokens + statistics.median(lengths[1:]))
    passes = 2 if args.beta > 0 else 1
    flops = 2 * n_params * generated + (2 * passes + 6) * n_params * tokens
    if torch.cuda.is_available():
        peak = f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB (GPU, allocated)"
        device = torch.cuda.get_device_name()
    else:
        peak = f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GiB (CPU, RSS)"
        device = "CPU"
    print(f"model: {args.model} ({n_params / 1e6:.1f} M parameters) on {device}")
    print(f"step: {step_s:.3f} s (median of steps 2-{args.steps}: {[round(s, 3) for s in steps]})")
    print(f"generated: {generated:.0f} tokens per step, {generated / step_s:.1f} tokens/s")
    print(f"peak memory: {peak}")
    achieved = flops / step_s / 1e12
    print(f"model FLOPs: {flops / 1e12:.3f} TFLOP per step, {achieved:.3f} TFLOP/s", end="")
    print(f", MFU {100 * achieved / args.peak_tflops:.1f}%" if args.peak_tflops else "")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
