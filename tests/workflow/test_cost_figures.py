"""Every figure of the SFT, GRPO and infer estimates, name, value, basis and unit, on stages
described by hand (not recipes, whose values change): each value derived here from the settings
with the formula the module docstring of :mod:`vlrl.workflow.cost` cites, so a wrong term, a
wrong branch or a wrong word in what ``vlrl plan`` prints fails one of them."""

from __future__ import annotations

import math
from types import SimpleNamespace as NS

import pytest

from vlrl.config import load_model
from vlrl.workflow import cost
from vlrl.workflow import cost_model as cm

N = 3_000_000_000
HUB = load_model("qwen2.5-vl-3b-instruct")  # text_shape and heads stated
H, LAYERS, VOCAB, KV, INTER = 2048, 36, 151936, 2 * 2048 // 16, 11008
SHAPE_SRC = "the model's config.json shape (config/models text_shape)"
VISION = cm.vision_parameter_count(1280, 3420, 32, H)  # checked against the real tower elsewhere
H100 = 989e12 * 3600  # FLOP per GPU-hour at peak


def figures(stage: cm.StageEstimate) -> list[tuple]:
    return [(f.name, f.value, f.basis, f.unit) for f in stage.figures]


def sheet(cfg: NS, model=HUB, n: int | None = N, **assumed) -> cost._Sheet:
    return cost._Sheet(cfg, model, n, cm.Assumptions(**assumed))


def sft_cfg(gpus: int = 4, nodes: int = 2, source: str = "hub", **sft) -> NS:
    settings = dict(
        processes=2, per_device_train_batch_size=2, gradient_accumulation_steps=4,
        num_train_epochs=3.0, max_samples=None, image_min_pixels=3136,
        image_max_pixels=12845056, cutoff_len=2048, max_steps=None,
        gradient_checkpointing=True, finetuning_type="full", lora_rank=8,
        freeze_vision_tower=True,
    )  # fmt: skip
    return NS(
        sft=NS(**(settings | sft)),
        resources=NS(sft=NS(gpus=gpus, nodes=nodes)),
        data=NS(source=source, shapes=NS(n_train=40, image_size=112)),
    )


def test_sft_on_gpus_every_figure() -> None:
    est = cost.sft_estimate(sheet(sft_cfg(), image_size=(448, 448)), records=1000)
    img = 448 * 448 // 784  # 256 tokens; the max is max_pixels' bound
    prompt, prompt_max = img + 2 + 128, 12845056 // 784 + 2 + 128
    seq = min(2048, prompt + 256)
    steps = math.ceil(3.0 * (math.ceil(1000 / (2 * 8)) // 4))
    tokens = 1000 * 3.0 * seq
    flops = 8 * N * tokens  # gradient checkpointing
    gpu_h = flops / 0.35 / H100
    trained = N - VISION  # full fine-tuning, vision tower frozen
    state = (N - trained) * 2 + trained * 4 + trained * (4 + 8)
    act = 2 * 2048 * H * LAYERS * 2 + 2 * 2048 * VOCAB * 4
    basis = "1 image(s) x ({} + 2 markers) + 128 text tokens (assumed)"
    assert figures(est) == [
        (cm.IMAGE_TOKENS, img, "448x448 px within [3136, 12845056] pixels / 28²", ""),
        (cm.PROMPT_TOKENS, prompt, basis.format(img), ""),
        (cm.PROMPT_TOKENS_MAX, prompt_max, basis.format(16384), ""),
        ("tokens/record", seq, "min(cutoff_len 2048, prompt + 256 target tokens, assumed)", ""),
        ("records", 1000, "training records (sft.max_samples applied)", ""),
        (cm.STEPS, steps, "epochs 3 x records / (2 x 4 GPUs x 2 node(s) x 4), HF Trainer's", ""),
        ("tokens", tokens, "records x epochs x tokens/record (the run)", ""),
        ("tokens (max)", 1000 * 3.0 * 2048, "records x epochs x cutoff_len", ""),
        (cm.FLOPS, flops, f"8N x tokens, N = {N:,}", "FLOP"),
        (cm.GPU_HOURS, pytest.approx(gpu_h), "training at MFU 0.35, generation at 0.03 of 989 "
         "TFLOPS", "h"),
        (cm.WALL_HOURS, pytest.approx(gpu_h / 8), "GPU-hours / 8 GPU(s)", "h"),
        (cm.MEMORY, state + act,
         f"{N:,} params ({trained:,} trained) x weights 2 B frozen / 4 B trained, grads 4 B, "
         "AdamW states 8 B; a full copy on every device (LLaMA-Factory trains fp32 copies) + "
         f"activations of 4,096 tokens/micro-batch x 2·h·L B (h {H}, L {LAYERS}: {SHAPE_SRC}; "
         f"recomputed) + fp32 logits of 4,096 tokens x vocab {VOCAB}", "B"),
    ]  # fmt: skip
    assert (est.stage, est.label, est.devices, est.on_gpu) == ("sft", "sft", 8, True)
    assert est.assumptions == ("no ZeRO sharding (a DeepSpeed config in sft.extra is not read "
                               "here)",)  # fmt: skip


def test_sft_stopped_early_with_lora_and_capped_records() -> None:
    cfg = sft_cfg(max_steps=10, max_samples=500, finetuning_type="lora", lora_rank=16,
                  gradient_checkpointing=False)  # fmt: skip
    est = cost.sft_estimate(sheet(cfg, image_size=(448, 448)), records=1000)
    planned = math.ceil(3.0 * (math.ceil(500 / 16) // 4))  # 500 records: max_samples
    assert est.get("records") == 500
    assert est.get(cm.STEPS) == 10
    basis = {f.name: f.basis for f in est.figures}
    assert basis[cm.STEPS] == (
        f"sft.max_steps (of {planned} the schedule plans: epochs 3 x records / (2 x 4 GPUs x 2 "
        "node(s) x 4), HF Trainer's)"
    )
    epochs = 3.0 * 10 / planned  # the share of the planned epochs the run reads
    seq = 256 + 2 + 128 + 256
    assert est.get("tokens") == pytest.approx(500 * epochs * seq)
    assert est.get("tokens (max)") == pytest.approx(500 * epochs * 2048)
    assert est.get(cm.FLOPS) == pytest.approx(6 * N * 500 * epochs * seq)  # no recomputation
    lora = 16 * LAYERS * (2 * H + 2 * (H + KV) + 2 * H + 3 * (H + INTER))
    act = 2 * 2048 * H * LAYERS * 34 + 2 * 2048 * VOCAB * 4
    assert est.get(cm.MEMORY) == (N - lora) * 2 + lora * 16 + act
    # max_steps not below the schedule: the schedule's steps
    same = cost.sft_estimate(sheet(sft_cfg(max_steps=planned, max_samples=500)), records=1000)
    assert same.get(cm.STEPS) == planned
    assert {f.name: f.basis for f in same.figures}[cm.STEPS].startswith("epochs 3 x records")


def test_sft_on_cpu_of_the_shapes_world_and_without_records() -> None:
    tiny = load_model("tiny-qwen2.5-vl")
    t = tiny.tiny
    n = cm.tiny_parameter_count(t)
    cfg = sft_cfg(gpus=0, source="shapes", image_min_pixels=3136, image_max_pixels=12544)
    est = cost.sft_estimate(sheet(cfg, model=tiny, n=n), records=None)
    assert (est.devices, est.on_gpu) == (2, False)  # sft.processes
    assert est.get("records") == 40  # the shapes world's n_train
    assert est.get(cm.IMAGE_TOKENS) == 112 * 112 // 784
    assert est.get(cm.PROMPT_TOKENS_MAX) == est.get(cm.PROMPT_TOKENS)  # exact size: no bound
    names = [f.name for f in est.figures]
    assert cm.GPU_HOURS not in names and cm.FLOPS in names
    trained = n - cm.vision_parameter_count(t.vision_hidden_size, 2 * t.vision_hidden_size,
                                            t.vision_depth, t.hidden_size)  # fmt: skip
    kv_dim = t.num_key_value_heads * t.hidden_size // t.num_attention_heads
    assert kv_dim > 0
    state = (n - trained) * 4 + trained * (4 + 4 + 8)  # fp32 weights on CPU
    act = 2 * 2048 * t.hidden_size * t.num_hidden_layers * 2 + 2 * 2048 * t.vocab_size * 4
    assert est.get(cm.MEMORY) == state + act
    assert "the tiny model's shape" in {f.name: f.basis for f in est.figures}[cm.MEMORY]
    # hub data before the data stage: no records, nothing after the sequence length
    unknown = cost.sft_estimate(sheet(sft_cfg()), records=None)
    assert figures(unknown)[-1] == ("records", None, "training records: not known before the "
                                    "data stage", "")  # fmt: skip
    assert [f.name for f in unknown.figures][-2] == "tokens/record"
    # N unknown: records and tokens, no FLOPs
    no_n = cost.sft_estimate(sheet(sft_cfg(), n=None), records=100)
    assert [f.name for f in no_n.figures][-1] == "tokens (max)"
    assert no_n.assumptions == (cm.UNKNOWN_N,)


def infer_cfg(backend: str = "hf", gpus: int = 1, workers: int = 3) -> NS:
    return NS(infer=NS(backend=backend, max_new_tokens=512, workers=workers),
              resources=NS(infer=NS(gpus=gpus)))  # fmt: skip


def test_infer_on_a_gpu_every_figure() -> None:
    bench = cm.Benchmark("mmmu_val", 900, image_size=(560, 840))
    est = cost.infer_estimate(sheet(infer_cfg()), "grpo", bench)
    img = 560 * 840 // 784
    prompt = img + 2 + 128
    gen = 900 * 512 * 0.5
    flops = 2 * N * (900 * prompt + gen)
    gpu_h = flops / 0.03 / H100  # transformers' generate
    basis = "1 image(s) x ({} + 2 markers) + 128 text tokens (assumed)"
    assert figures(est) == [
        (cm.IMAGE_TOKENS, img, "560x840 px within [3136, 12845056] pixels / 28²", ""),
        (cm.PROMPT_TOKENS, prompt, basis.format(img), ""),
        (cm.PROMPT_TOKENS_MAX, 16384 + 2 + 128, basis.format(16384), ""),
        ("items", 900, "benchmark items (after its subsample)", ""),
        ("generated tokens (max)", 900 * 512, "items x 512 (infer.max_new_tokens)", ""),
        ("generated tokens", gen, "items x 512 x fill 0.5 (assumed)", ""),
        (cm.FLOPS, flops, f"2N x (items x prompt + generated tokens), N = {N:,}", "FLOP"),
        (cm.GPU_HOURS, pytest.approx(gpu_h), "training at MFU 0.35, generation at 0.03 of 989 "
         "TFLOPS", "h"),
        (cm.WALL_HOURS, pytest.approx(gpu_h), "GPU-hours / 1 GPU(s)", "h"),
        (cm.MEMORY, N * 2, "bf16 weights; KV cache not counted (vLLM reserves its "
         "gpu_memory_utilization)", "B"),
    ]  # fmt: skip
    assert (est.stage, est.label, est.devices, est.on_gpu) == ("infer", "infer grpo x mmmu_val",
                                                               1, True)  # fmt: skip
    assert est.assumptions == ()


def test_infer_with_vllm_openai_a_budget_of_its_own_and_on_cpu() -> None:
    bench = cm.Benchmark("b", 10, max_new_tokens=64)
    vllm = cost.infer_estimate(sheet(infer_cfg("vllm"), gpu="a100"), "base", bench)
    basis = {f.name: f.basis for f in vllm.figures}
    assert basis["generated tokens (max)"] == "items x 64 (the benchmark's max_new_tokens)"
    assert vllm.get("generated tokens (max)") == 640
    flops = 2 * N * (10 * (16384 + 130) + 320)  # no picture size: the max_pixels bound
    assert vllm.get(cm.GPU_HOURS) == pytest.approx(flops / 0.15 / (312e12 * 3600))
    assert basis[cm.GPU_HOURS] == "training at MFU 0.35, generation at 0.15 of 312 TFLOPS"
    openai = cost.infer_estimate(sheet(infer_cfg("openai")), "base", bench)
    assert openai.assumptions == ("the openai backend's server generates: on its GPUs, not this "
                                  "job's",)  # fmt: skip
    assert openai.get(cm.GPU_HOURS) == pytest.approx(flops / 0.15 / H100)
    tiny = load_model("tiny-qwen2.5-vl")
    n = cm.tiny_parameter_count(tiny.tiny)
    cpu = cost.infer_estimate(sheet(infer_cfg(gpus=0), model=tiny, n=n), "sft", bench)
    assert (cpu.devices, cpu.on_gpu) == (3, False)  # infer.workers
    assert cpu.get(cm.IMAGE_TOKENS) == tiny.tiny.max_pixels // 784  # the tiny processor's bound
    assert cpu.get(cm.MEMORY) == n * 4
    assert {f.name: f.basis for f in cpu.figures}[cm.MEMORY].startswith("fp32 weights")
    assert cm.GPU_HOURS not in [f.name for f in cpu.figures]
    unknown = cost.infer_estimate(sheet(infer_cfg()), "base", cm.Benchmark("b", None))
    assert figures(unknown)[-1] == ("items", None, "item count: not known before the download",
                                    "")  # fmt: skip
    no_n = cost.infer_estimate(sheet(infer_cfg(), n=None), "base", bench)
    assert [f.name for f in no_n.figures][-1] == "generated tokens"
    assert no_n.assumptions == (cm.UNKNOWN_N,)


@pytest.mark.parametrize(
    ("model", "assumed", "shape", "source"),
    [
        (HUB, {}, (H, LAYERS, VOCAB, KV, INTER), SHAPE_SRC),
        (HUB, {"text_shape": (1, 2, 3, 4, 5)}, (1, 2, 3, 4, 5), "Assumptions.text_shape"),
        (HUB.model_copy(update={"text_shape": None}), {}, cm.QWEN_3B_TEXT,
         "Qwen2.5-VL-3B-Instruct's shape (assumed: no text_shape stated)"),
        (HUB.model_copy(update={"attention_heads": None}), {}, cm.QWEN_3B_TEXT,
         "Qwen2.5-VL-3B-Instruct's shape (assumed: no text_shape stated)"),
    ],
)  # fmt: skip
def test_the_text_shape_and_where_it_comes_from(model, assumed, shape, source) -> None:
    assert sheet(NS(), model=model, **assumed).shape() == (shape, source)


def test_the_tiny_models_shape_is_its_own() -> None:
    tiny = load_model("tiny-qwen2.5-vl").tiny.model_copy(
        update={"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    )
    model = load_model("tiny-qwen2.5-vl").model_copy(update={"tiny": tiny})
    shape = (64, tiny.num_hidden_layers, tiny.vocab_size, 2 * 64 // 4, tiny.intermediate_size)
    assert sheet(NS(), model=model, text_shape=(1, 2, 3, 4, 5)).shape() == (
        shape,
        "the tiny model's shape",
    )


def test_placement() -> None:
    assert cost._placement(NS(gpus=8, nodes=2), 3) == (True, 16, "8 GPUs x 2 node(s)")
    assert cost._placement(NS(gpus=1, nodes=1), 3) == (True, 1, "1 GPUs x 1 node(s)")
    assert cost._placement(NS(gpus=0, nodes=1), 3) == (False, 3, "3 process(es)")


def grpo_cfg(gpus: int = 8, source: str = "hub", **grpo) -> NS:
    settings = dict(
        processes=2, per_device_train_batch_size=4, gradient_accumulation_steps=2,
        num_iterations=2, max_steps=100, num_generations=8, image_min_pixels=3136,
        image_max_pixels=12845056, max_completion_length=1024, gradient_checkpointing=True,
        beta=0.04, use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.3,
        algorithm="grpo", rewards={"common.accuracy": 1.0}, deepspeed="zero3", lora=False,
        lora_rank=64, freeze_vision=False,
    )  # fmt: skip
    return NS(
        grpo=NS(**(settings | grpo)),
        resources=NS(grpo=NS(gpus=gpus, nodes=1)),
        data=NS(source=source, shapes=NS(image_size=112)),
    )


def test_grpo_on_gpus_every_figure() -> None:
    est = cost.grpo_estimate(sheet(grpo_cfg(), image_size=(448, 448)), records=5000)
    img, prompt, prompt_max = 256, 256 + 2 + 128, 16384 + 2 + 128
    completions, gens, fill = 4 * 8 * 2, 4 * 8 * 2 / 2, 0.5 * 1024
    seq = prompt + fill
    gen = 100 * 2 * N * gens * seq
    train = 100 * (8 * N * completions * seq + 2 * 2 * N * gens * seq)  # reference + old policy
    gpu_h = (train / 0.35 + gen / 0.15) / H100  # vLLM generates
    state = (2 * N + 14 * N) / 8  # ZeRO-3: everything over the 8 GPUs
    act = int(4 * (prompt + 1024)) * H * LAYERS * 2 + 4 * 1024 * VOCAB * 4
    basis = "1 image(s) x ({} + 2 markers) + 128 text tokens (assumed)"
    assert figures(est) == [
        (cm.STEPS, 100, "grpo.max_steps", ""),
        (cm.COMPLETIONS, completions, "per_device_train_batch_size 4 x 8 GPUs x 1 node(s) x "
         "gradient_accumulation_steps 2", ""),
        (cm.PROMPTS, 8, "/ num_generations 8", ""),
        (cm.GENERATED_COMPLETIONS, gens, "completions/step / num_iterations 2 (generated once, "
         "trained 2 time(s))", ""),
        (cm.IMAGE_TOKENS, img, "448x448 px within [3136, 12845056] pixels / 28²", ""),
        (cm.PROMPT_TOKENS, prompt, basis.format(img), ""),
        (cm.PROMPT_TOKENS_MAX, prompt_max, basis.format(16384), ""),
        (cm.GENERATED_MAX, gens * 1024, "generations/step x max_completion_length 1024", ""),
        (cm.GENERATED, gens * fill, "generations/step x 512 (fill 0.5, assumed)", ""),
        (cm.TOKENS_MAX, gens * (prompt_max + 1024), "generations/step x (max prompt + "
         "max_completion_length): bounds TRL's num_tokens/step", ""),
        (cm.TOKENS, gens * seq, "generations/step x (prompt + mean completion)", ""),
        ("epochs", 100 * 8 / 2 / 5000, "new prompts over the run (steps x prompts/step / 2) / "
         "5,000 records", ""),
        (cm.FLOPS, train + gen, "steps x (8N x completions x (prompt + mean completion) + 2N x "
         "generations/step x tokens (reference model) + 2N x generations/step x tokens (old "
         f"policy) + 2N x prefilled and generated tokens), N = {N:,}", "FLOP"),
        (cm.GPU_HOURS, pytest.approx(gpu_h), "training at MFU 0.35, generation at 0.15 of 989 "
         "TFLOPS", "h"),
        (cm.WALL_HOURS, pytest.approx(gpu_h / 8), "GPU-hours / 8 GPU(s)", "h"),
        (cm.MEMORY, state + 2 * N / 8 + act + 0.3 * 80e9,
         f"{N:,} params ({N:,} trained) x weights 2 B frozen / 2 B trained, grads 2 B, AdamW "
         "states 12 B; zero3: divided over 8 GPUs (DeepSpeed bf16: fp32 master weights in the "
         "optimizer state) + reference model 2 B/param / 8 device(s) + activations of "
         f"{int(4 * (prompt + 1024)):,} tokens/micro-batch x 2·h·L B (h {H}, L {LAYERS}: "
         f"{SHAPE_SRC}; recomputed) + fp32 logits of 4,096 tokens x vocab {VOCAB} + vLLM "
         "colocate: 0.3 of 80 GB", "B"),
    ]  # fmt: skip
    assert (est.stage, est.label, est.devices, est.on_gpu, est.assumptions) == (
        "grpo",
        "grpo",
        8,
        True,
        (),
    )


def memory_parts(est: cm.StageEstimate) -> list[str]:
    return {f.name: f.basis for f in est.figures}[cm.MEMORY].split(" + ")


def test_grpo_memory_without_deepspeed_with_lora_and_under_zero2() -> None:
    plain = cost.grpo_estimate(sheet(grpo_cfg(deepspeed=None, use_vllm=False)))
    seq = 16384 + 130 + 512
    act = 4 * (16384 + 130 + 1024) * H * LAYERS * 2 + 4 * 1024 * VOCAB * 4
    assert plain.get(cm.MEMORY) == 2 * N + N * 6 + 2 * N + act  # full copy; reference not sharded
    parts = memory_parts(plain)
    assert parts[0].endswith("(TRL loads bf16 weights; AdamW states in bf16, no master copy)")
    assert parts[1] == "reference model 2 B/param / 1 device(s)"
    assert len(parts) == 4  # the activations' basis holds one " + " itself; no vLLM
    # transformers generates (no vLLM); num_iterations 2 still needs the old policy's forward
    gen = 100 * 2 * N * 32 * seq
    train = 100 * (8 * N * 64 * seq + 2 * 2 * N * 32 * seq)
    assert plain.get(cm.GPU_HOURS) == pytest.approx((train / 0.35 + gen / 0.03) / H100)
    lora = cost.grpo_estimate(sheet(grpo_cfg(deepspeed=None, lora=True, lora_rank=8)))
    adapter = 8 * LAYERS * (2 * H + 2 * (H + KV) + 2 * H + 3 * (H + INTER))
    parts = memory_parts(lora)
    assert parts[0] == (
        f"{N:,} params ({adapter:,} trained) x weights 2 B frozen / 4 B trained, grads 4 B, "
        "AdamW states 8 B; a full copy on every device (bf16 base; PEFT keeps the adapter in fp32)"
    )
    assert not any(p.startswith("reference model") for p in parts)  # the adapter is disabled
    zero2 = cost.grpo_estimate(sheet(grpo_cfg(deepspeed="zero2", vllm_mode="server")))
    parts = memory_parts(zero2)
    assert parts[1] == "reference model 2 B/param / 1 device(s)"  # ZeRO-2 keeps whole weights
    assert not any(p.startswith("vLLM") for p in parts)  # its server has GPUs of its own
    assert zero2.get(cm.MEMORY) == pytest.approx(2 * N + 14 * N / 8 + 2 * N + act)


def test_grpo_frozen_vision_one_iteration_no_reference() -> None:
    cfg = grpo_cfg(num_iterations=1, beta=0.0, use_vllm=False, freeze_vision=True,
                   gradient_checkpointing=False)  # fmt: skip
    est = cost.grpo_estimate(sheet(cfg))
    seq = 16384 + 130 + 512
    basis = {f.name: f.basis for f in est.figures}
    assert basis[cm.FLOPS].startswith("steps x (6N x completions x (prompt + mean completion) + 2N")
    assert "reference model" not in basis[cm.FLOPS] and "old policy" not in basis[cm.FLOPS]
    assert est.get(cm.FLOPS) == 100 * (6 * N * 64 * seq) + 100 * 2 * N * 64 * seq
    trained = N - VISION
    assert memory_parts(est)[0].startswith(f"{N:,} params ({trained:,} trained)")
    assert "epochs" not in [f.name for f in est.figures]  # records unknown


def test_grpo_self_reward_and_a_thinking_reward_model() -> None:
    est = cost.grpo_estimate(sheet(grpo_cfg(algorithm="self_reward", beta=0.0,
                                            num_iterations=1, use_vllm=False)))  # fmt: skip
    seq = 16384 + 130 + 512
    second = 100 * 2 * N * 64 * (128 + 2 * 512)  # no image: text + completion
    assert est.get(cm.FLOPS) == 100 * 8 * N * 64 * seq + 100 * 2 * N * 64 * seq + second
    assert est.assumptions == ("self_reward: a second pass, no image, prompt ≈ text + completion",)
    thinking = "the thinking reward model's compute (its own server) is not counted"
    trust = cost.grpo_estimate(sheet(grpo_cfg(algorithm="trust_grpo")))
    assert trust.assumptions == (thinking,)
    rewarded = cost.grpo_estimate(sheet(grpo_cfg(rewards={"sophiavl.thinking": 1.0})))
    assert rewarded.assumptions == (thinking,)


def test_grpo_on_cpu_of_the_shapes_world() -> None:
    tiny = load_model("tiny-qwen2.5-vl")
    n = cm.tiny_parameter_count(tiny.tiny)
    cfg = grpo_cfg(gpus=0, source="shapes", image_max_pixels=12544, use_vllm=False, beta=0.0)
    est = cost.grpo_estimate(sheet(cfg, model=tiny, n=n), records=40)
    assert (est.devices, est.on_gpu) == (2, False)  # grpo.processes
    assert est.get(cm.COMPLETIONS) == 4 * 2 * 2
    assert est.get(cm.IMAGE_TOKENS) == 16  # 112 x 112, exact
    assert est.get(cm.PROMPT_TOKENS_MAX) == est.get(cm.PROMPT_TOKENS) == 16 + 2 + 128
    assert cm.GPU_HOURS not in [f.name for f in est.figures]
    assert memory_parts(est)[0].endswith("a full copy on every device (fp32 on CPU)")
    assert est.get("epochs") == 100 * (16 / 8) / 2 / 40
    no_n = cost.grpo_estimate(sheet(cfg, model=tiny, n=None))
    assert [f.name for f in no_n.figures][-1] == cm.TOKENS
    assert no_n.assumptions == (cm.UNKNOWN_N,)


def test_sft_on_the_shapes_world_reads_its_exact_picture_size() -> None:
    tiny = load_model("tiny-qwen2.5-vl")
    cfg = sft_cfg(gpus=0, source="shapes", image_max_pixels=50176)  # room for 64 tokens
    est = cost.sft_estimate(sheet(cfg, model=tiny, n=1000), records=None)
    assert est.get(cm.IMAGE_TOKENS) == 16  # 112 x 112, not the 50,176-pixel bound
    assert est.get(cm.PROMPT_TOKENS_MAX) == 16 + 2 + 128


def test_a_run_smaller_than_one_batch_still_takes_a_step_per_epoch() -> None:
    est = cost.sft_estimate(sheet(sft_cfg()), records=10)  # 10 records, 2 x 8 ranks x 4 accum
    assert est.get(cm.STEPS) == 3  # one per epoch


def test_every_early_return_is_the_sft_stage() -> None:
    for est in (
        cost.sft_estimate(sheet(sft_cfg()), records=None),
        cost.sft_estimate(sheet(sft_cfg(), n=None), records=100),
    ):
        assert (est.stage, est.label, est.devices, est.on_gpu) == ("sft", "sft", 8, True)
    grpo = cost.grpo_estimate(sheet(grpo_cfg(), n=None))
    assert (grpo.stage, grpo.label, grpo.devices, grpo.on_gpu) == ("grpo", "grpo", 8, True)
    for items, n in ((1, None), (None, N)):
        bench = cm.Benchmark("b", items)
        infer = cost.infer_estimate(sheet(infer_cfg(gpus=2), n=n), "base", bench)
        assert (infer.stage, infer.label, infer.devices, infer.on_gpu) == (
            "infer", "infer base x b", 2, True
        )  # fmt: skip


def test_inference_spends_no_training_flops() -> None:
    """A one-parameter model, so that a training FLOP counted in would show in the hours."""
    bench = cm.Benchmark("b", 1, max_new_tokens=2)
    est = cost.infer_estimate(sheet(infer_cfg(), n=1), "base", bench)
    flops = 2 * 1 * (1 * (16384 + 130) + 2 * 0.5)
    assert est.get(cm.FLOPS) == flops
    assert est.get(cm.GPU_HOURS) == pytest.approx(flops / 0.03 / H100, rel=1e-12, abs=0)


def test_activations_say_whether_they_are_recomputed() -> None:
    est = sheet(NS())
    for ckpt, per, word in ((True, 2, "recomputed"), (False, 34, "no recomputation")):
        value, basis = est.activations(10, 5, ckpt)
        assert value == 10 * H * LAYERS * per + 5 * VOCAB * 4
        assert basis == (
            f"activations of 10 tokens/micro-batch x {per}·h·L B (h {H}, L {LAYERS}: "
            f"{SHAPE_SRC}; {word}) + fp32 logits of 5 tokens x vocab {VOCAB}"
        )


def test_a_figure_not_known_adds_nothing() -> None:
    est = sheet(NS())
    assert est.add("records", None, "not known") == 0.0
    assert est.add("records", 7, "known") == 7
    assert figures(est.done("sft", "sft", 1, False)) == [
        ("records", None, "not known", ""), ("records", 7, "known", "")
    ]  # fmt: skip


def test_the_tiny_models_counts_are_whole_numbers() -> None:
    """The plan prints them with thousands separators: a float would print as "1,234.0"."""
    tiny = load_model("tiny-qwen2.5-vl")
    n = cm.tiny_parameter_count(tiny.tiny)
    shape, _ = sheet(NS(), model=tiny, n=n).shape()
    assert all(type(value) is int for value in (n, *shape))
    assert type(sheet(NS(), model=tiny, n=n).trainable(8, False)) is int


def estimate_cfg(sft: bool, grpo: bool) -> NS:
    cfg = sft_cfg()
    cfg.sft.enabled = sft
    cfg.grpo = grpo_cfg().grpo
    cfg.grpo.enabled = grpo
    cfg.resources.grpo = NS(gpus=8, nodes=1)
    cfg.checkpoints = ["base"]
    cfg.infer = infer_cfg().infer
    cfg.resources.infer = NS(gpus=1)
    return cfg


@pytest.mark.parametrize(("sft", "grpo"), [(True, False), (False, True), (True, True)])
def test_the_estimate_has_the_enabled_stages_with_their_records(sft: bool, grpo: bool) -> None:
    bench = cm.Benchmark("b", 3)
    est = cost.estimate(estimate_cfg(sft, grpo), HUB, sft_records=1000, grpo_records=40,
                        benchmarks=[bench])  # fmt: skip
    stages = {s.label: s for s in est.stages}
    assert list(stages) == ["sft"] * sft + ["grpo"] * grpo + ["infer base x b"]
    if sft:
        assert stages["sft"].get("records") == 1000
    if grpo:
        assert stages["grpo"].get("epochs") == 100 * (64 / 8) / 2 / 40
