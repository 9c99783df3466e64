"""The compute and memory estimate behind ``vlrl plan``: tokens, FLOPs, GPU-hours and memory per
device of each stage (sft, grpo, infer per checkpoint x benchmark), from the recipe alone. Every
number is a :class:`~vlrl.workflow.cost_model.Figure` carrying the arithmetic and assumption that
produced it; what it assumes is :mod:`vlrl.workflow.cost_model`.

* FLOPs: 2N per token forward, 6N forward + backward (Kaplan et al. 2020, arXiv:2001.08361
  §2.1; Hoffmann et al. 2022, arXiv:2203.15556 App. F), 8N with gradient checkpointing;
  attention FLOPs left out; N (vision tower included) charged per language-model token.
* GRPO, huggingface/trl @ v1.16.0: ``trl/trainer/grpo_config.py``: a step trains on
  ``generation_batch_size = per_device_train_batch_size x processes x steps_per_generation``
  (= gradient_accumulation_steps) completions; ``trl/trainer/grpo_trainer.py``: generation every
  ``steps_per_generation x num_iterations`` micro-steps, a no-grad forward for old log-probs when
  ``num_iterations > 1`` or with vLLM (importance sampling), one of the reference model when
  beta > 0; ``num_tokens`` logged = prompt + completion tokens generated.
* Memory: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per trained parameter; ZeRO-2 divides
  grads and optimizer states over the GPUs, ZeRO-3 the weights too (Rajbhandari et al. 2020,
  arXiv:1910.02054 §3.1, §5). Activations (Korthikanti et al. 2022, arXiv:2205.05198 §4.1): 34·h
  bytes per token and layer (flash attention drops 5·a·s/h), 2·h with full recomputation.
* Image tokens: Qwen2.5-VL resizes a picture into [min_pixels, max_pixels] in multiples of 28
  px (huggingface/transformers v5.19.0 ``models/qwen2_vl/image_processing_qwen2_vl.py``
  ``smart_resize``): one token per 28x28 block, plus <|vision_start|> and <|vision_end|>.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from vlrl.config import ExperimentConfig, ModelConfig, StageResources
from vlrl.workflow.cost_model import (
    COMPLETIONS,
    FLOPS,
    GENERATED,
    GENERATED_COMPLETIONS,
    GENERATED_MAX,
    GPU_HOURS,
    GPUS,
    IMAGE_TOKENS,
    MARKERS,
    MEMORY,
    PATCH,
    PROMPT_TOKENS,
    PROMPT_TOKENS_MAX,
    PROMPTS,
    QWEN_3B_TEXT,
    QWEN_PIXELS,
    QWEN_VISION,
    STEPS,
    TOKENS,
    TOKENS_MAX,
    UNKNOWN_N,
    WALL_HOURS,
    Assumptions,
    Benchmark,
    CostEstimate,
    Figure,
    Size,
    StageEstimate,
    TextShape,
    tiny_parameter_count,
    training_state_bytes,
    vision_parameter_count,
)


def _placement(res: StageResources, processes: int) -> tuple[bool, int, str]:
    who = f"{res.gpus} GPUs x {res.nodes} node(s)" if res.gpus else f"{processes} process(es)"
    return res.gpus > 0, res.gpus * res.nodes or processes, who


@dataclass
class _Sheet:
    """What stages share (experiment, model, N, assumptions); one stage's figures and notes."""

    cfg: ExperimentConfig
    model: ModelConfig
    n: int | None
    a: Assumptions
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, value: float | None, basis: str, unit: str = "") -> float:
        self.figures.append(Figure(name, value, basis, unit))
        return value or 0.0

    def done(self, stage: str, label: str, devices: int, on_gpu: bool) -> StageEstimate:
        notes = [*self.notes, *[UNKNOWN_N] * (self.n is None)]
        return StageEstimate(stage, label, devices, on_gpu, tuple(self.figures), tuple(notes))

    def shape(self) -> tuple[TextShape, str]:
        t = self.model.tiny
        if self.model.builder == "tiny":
            kv = t.num_key_value_heads * t.hidden_size // t.num_attention_heads
            shape = (t.hidden_size, t.num_hidden_layers, t.vocab_size, kv, t.intermediate_size)
            return shape, "the tiny model's shape"
        if self.a.text_shape is not None:
            return self.a.text_shape, "Assumptions.text_shape"
        own, heads = self.model.text_shape, self.model.heads()
        if own is not None and heads is not None:
            kv = heads.text_kv * own.hidden_size // heads.text
            shape = (own.hidden_size, own.num_hidden_layers, own.vocab_size, kv,
                     own.intermediate_size)  # fmt: skip
            return shape, "the model's config.json shape (config/models text_shape)"
        return QWEN_3B_TEXT, "Qwen2.5-VL-3B-Instruct's shape (assumed: no text_shape stated)"

    def trainable(self, lora_rank: int | None, freeze_vision: bool) -> int:
        """A LoRA adapter on the language model's q,k,v,o,gate,up,down (rank x (in + out)
        each); else N less the vision tower when frozen (the tiny one's, else Qwen2.5-VL's)."""
        (h, layers, _, kv, i), t = self.shape()[0], self.model.tiny
        if lora_rank is not None:
            return lora_rank * layers * (2 * h + 2 * (h + kv) + 2 * h + 3 * (h + i))
        tiny = (t.vision_hidden_size, 2 * t.vision_hidden_size, t.vision_depth)
        vision = vision_parameter_count(*(tiny if self.model.builder == "tiny" else QWEN_VISION), h)
        return (self.n or 0) - (vision if freeze_vision else 0)

    def prompt(self, size: Size, lo: int, hi: int, exact: bool = False) -> tuple[float, float]:
        """Adds the image and prompt token figures; returns (assumed, max) prompt tokens. The
        image size is ``exact`` (shapes data) or typical (the max is then max_pixels')."""
        img = top = hi // PATCH**2
        why = f"max_pixels {hi} / 28² (image size unknown: the bound)"
        if size is not None:  # smart_resize's rounding of each side to 28 px left out
            img = max(lo, min(size[0] * size[1], hi)) // PATCH**2
            why = f"{size[0]}x{size[1]} px within [{lo}, {hi}] pixels / 28²"
            top = img if exact else top
        k, t = self.a.images_per_record, self.a.prompt_text_tokens
        basis = f"{k} image(s) x ({{}} + {MARKERS} markers) + {t} text tokens (assumed)"
        self.add(IMAGE_TOKENS, img, why)
        p = self.add(PROMPT_TOKENS, k * (img + MARKERS) + t, basis.format(img))
        return p, self.add(PROMPT_TOKENS_MAX, k * (top + MARKERS) + t, basis.format(top))

    def hours(self, train: float, gen: float, mfu_gen: float, devices: int) -> None:
        """Adds GPU-hours (training and generation FLOPs at their MFU) and wall-clock hours."""
        tflops = GPUS[self.a.gpu][1]
        gpu_h = (train / self.a.mfu_train + gen / mfu_gen) / (tflops * 1e12 * 3600)
        why = f"training at MFU {self.a.mfu_train}, generation at {mfu_gen} of {tflops:g} TFLOPS"
        self.add(GPU_HOURS, gpu_h, why, "h")
        self.add(WALL_HOURS, gpu_h / devices, f"GPU-hours / {devices} GPU(s)", "h")

    def activations(self, tokens: int, logit_tokens: int, ckpt: bool) -> tuple[float, str]:
        """Activation bytes of one micro-batch (Korthikanti et al.) plus its fp32 logits."""
        (h, layers, vocab, _, _), src = self.shape()
        per = 2 if ckpt else 34
        return float(tokens * h * layers * per + logit_tokens * vocab * 4), (
            f"activations of {tokens:,} tokens/micro-batch x {per}·h·L B (h {h}, L {layers}: "
            f"{src}; {'recomputed' if ckpt else 'no recomputation'}) + fp32 logits of "
            f"{logit_tokens:,} tokens x vocab {vocab}"
        )

    def memory(self, parts: list[tuple[float, str]]) -> None:
        self.add(MEMORY, sum(p for p, _ in parts), " + ".join(b for _, b in parts), "B")


def grpo_estimate(out: _Sheet, records: int | None = None) -> StageEstimate:
    """The GRPO stage: ``max_steps`` optimizer steps, each on one TRL generation batch."""
    g, a = out.cfg.grpo, out.a
    on_gpu, world, who = _placement(out.cfg.resources.grpo, g.processes)
    pd, ga, mu = g.per_device_train_batch_size, g.gradient_accumulation_steps, g.num_iterations
    steps = out.add(STEPS, g.max_steps, "grpo.max_steps")
    why = f"per_device_train_batch_size {pd} x {who} x gradient_accumulation_steps {ga}"
    batch = out.add(COMPLETIONS, pd * world * ga, why)
    prompts = out.add(PROMPTS, batch / g.num_generations, f"/ num_generations {g.num_generations}")
    why = f"completions/step / num_iterations {mu} (generated once, trained {mu} time(s))"
    gen_c = out.add(GENERATED_COMPLETIONS, batch / mu, why)
    size = (out.cfg.data.shapes.image_size,) * 2 if out.cfg.data.source == "shapes" else None
    p, p_max = out.prompt(size or a.image_size, g.image_min_pixels, g.image_max_pixels, bool(size))
    c, c_max = a.completion_fill * g.max_completion_length, g.max_completion_length
    out.add(GENERATED_MAX, gen_c * c_max, f"generations/step x max_completion_length {c_max}")
    out.add(GENERATED, gen_c * c, f"generations/step x {c:g} (fill {a.completion_fill}, assumed)")
    why = "generations/step x (max prompt + max_completion_length): bounds TRL's num_tokens/step"
    out.add(TOKENS_MAX, gen_c * (p_max + c_max), why)
    out.add(TOKENS, gen_c * (p + c), "generations/step x (prompt + mean completion)")
    if records:
        why = f"new prompts over the run (steps x prompts/step / {mu}) / {records:,} records"
        out.add("epochs", steps * prompts / mu / records, why)
    if out.n is None:
        return out.done("grpo", "grpo", world, on_gpu)
    n, seq, passes = out.n, p + c, 8 if g.gradient_checkpointing else 6
    extra = ["reference model"] * (g.beta > 0) + ["old policy"] * (mu > 1 or g.use_vllm)
    gen = steps * 2 * n * gen_c * seq
    if g.algorithm == "self_reward":
        gen += steps * 2 * n * gen_c * (a.prompt_text_tokens + 2 * c)
        out.notes.append("self_reward: a second pass, no image, prompt ≈ text + completion")
    if g.algorithm == "trust_grpo" or "sophiavl.thinking" in g.rewards:
        out.notes.append("the thinking reward model's compute (its own server) is not counted")
    train = steps * (passes * n * batch * seq + len(extra) * 2 * n * gen_c * seq)
    forwards = "".join(f" + 2N x generations/step x tokens ({e})" for e in extra)
    why = f"steps x ({passes}N x completions x (prompt + mean completion){forwards} + 2N x "
    out.add(FLOPS, train + gen, why + f"prefilled and generated tokens), N = {n:,}", "FLOP")
    if on_gpu:
        out.hours(train, gen, a.mfu_generate_vllm if g.use_vllm else a.mfu_generate_hf, world)
    zero = g.deepspeed if on_gpu else None
    if not on_gpu:
        per, why = (4, 4, 4, 8), "fp32 on CPU"
    elif zero:
        per, why = (2, 2, 2, 12), "DeepSpeed bf16: fp32 master weights in the optimizer state"
    elif g.lora:
        per, why = (2, 4, 4, 8), "bf16 base; PEFT keeps the adapter in fp32"
    else:
        per, why = (2, 2, 2, 4), "TRL loads bf16 weights; AdamW states in bf16, no master copy"
    trained = out.trainable(g.lora_rank if g.lora else None, g.freeze_vision)
    state, basis = training_state_bytes(n, trained, world, zero, per)
    parts = [(state, f"{basis} ({why})")]
    if g.beta > 0 and not g.lora:  # with LoRA, TRL disables the adapter instead
        shard = world if zero == "zero3" else 1
        parts.append((n * per[0] / shard, f"reference model {per[0]} B/param / {shard} device(s)"))
    parts.append(out.activations(int(pd * (p + c_max)), pd * c_max, g.gradient_checkpointing))
    if g.use_vllm and g.vllm_mode == "colocate" and on_gpu:
        frac, gb = g.vllm_gpu_memory_utilization, GPUS[a.gpu][2]
        parts.append((frac * gb * 1e9, f"vLLM colocate: {frac} of {gb:g} GB"))
    out.memory(parts)
    return out.done("grpo", "grpo", world, on_gpu)


def sft_estimate(out: _Sheet, records: int | None = None) -> StageEstimate:
    """The SFT stage (LLaMA-Factory): records x epochs x cutoff-bounded sequences."""
    s, a = out.cfg.sft, out.a
    on_gpu, world, who = _placement(out.cfg.resources.sft, s.processes)
    shapes = out.cfg.data.source == "shapes"
    records = out.cfg.data.shapes.n_train if records is None and shapes else records
    if records is not None and s.max_samples is not None:
        records = min(records, s.max_samples)
    size = (out.cfg.data.shapes.image_size,) * 2 if shapes else a.image_size
    p, _ = out.prompt(size, s.image_min_pixels, s.image_max_pixels, shapes)
    why = f"min(cutoff_len {s.cutoff_len}, prompt + {a.sft_response_tokens} target tokens, assumed)"
    seq = out.add("tokens/record", min(s.cutoff_len, p + a.sft_response_tokens), why)
    if records is None:
        out.add("records", None, "training records: not known before the data stage")
        return out.done("sft", "sft", world, on_gpu)
    out.add("records", records, "training records (sft.max_samples applied)")
    pd, ga = s.per_device_train_batch_size, s.gradient_accumulation_steps
    epochs = s.num_train_epochs
    planned = math.ceil(epochs * max(1, math.ceil(records / (pd * world)) // ga))
    why = f"epochs {epochs:g} x records / ({pd} x {who} x {ga}), HF Trainer's"
    if s.max_steps is not None and s.max_steps < planned:
        # The run stops early: it reads that share of the planned epochs.
        epochs = epochs * s.max_steps / planned
        planned, why = s.max_steps, f"sft.max_steps (of {planned} the schedule plans: {why})"
    out.add(STEPS, planned, why)
    tokens = out.add("tokens", records * epochs * seq, "records x epochs x tokens/record (the run)")
    out.add("tokens (max)", records * epochs * s.cutoff_len, "records x epochs x cutoff_len")
    if out.n is None:
        return out.done("sft", "sft", world, on_gpu)
    passes = 8 if s.gradient_checkpointing else 6
    train = out.add(FLOPS, passes * out.n * tokens, f"{passes}N x tokens, N = {out.n:,}", "FLOP")
    if on_gpu:
        out.hours(train, 0.0, a.mfu_generate_hf, world)
    lora = s.lora_rank if s.finetuning_type == "lora" else None
    trained = out.trainable(lora, s.freeze_vision_tower)
    # LLaMA-Factory 0.9.5 llamafactory/model/adapter.py: trained params are upcast to fp32 (no
    # pure_bf16, no ZeRO-3); frozen ones stay in the bf16 compute dtype.
    state, basis = training_state_bytes(out.n, trained, world, None, (2 if on_gpu else 4, 4, 4, 8))
    act = out.activations(pd * s.cutoff_len, pd * s.cutoff_len, s.gradient_checkpointing)
    out.memory([(state, basis + " (LLaMA-Factory trains fp32 copies)"), act])
    out.notes.append("no ZeRO sharding (a DeepSpeed config in sft.extra is not read here)")
    return out.done("sft", "sft", world, on_gpu)


def infer_estimate(out: _Sheet, checkpoint: str, bench: Benchmark) -> StageEstimate:
    """One infer job: every item of ``bench`` answered by ``checkpoint``."""
    inf, res, a = out.cfg.infer, out.cfg.resources.infer, out.a
    on_gpu, devices, label = res.gpus > 0, res.gpus or inf.workers, f"infer {checkpoint}"
    label += f" x {bench.name}"
    t = out.model.tiny
    lo, hi = (t.min_pixels, t.max_pixels) if out.model.builder == "tiny" else QWEN_PIXELS
    p, _ = out.prompt(bench.image_size or a.image_size, lo, hi)
    if inf.backend == "openai":
        out.notes.append("the openai backend's server generates: on its GPUs, not this job's")
    if bench.items is None:
        out.add("items", None, "item count: not known before the download")
        return out.done("infer", label, devices, on_gpu)
    items = out.add("items", bench.items, "benchmark items (after its subsample)")
    budget = bench.max_new_tokens or inf.max_new_tokens
    src = "the benchmark's max_new_tokens" if bench.max_new_tokens else "infer.max_new_tokens"
    out.add("generated tokens (max)", items * budget, f"items x {budget} ({src})")
    why = f"items x {budget} x fill {a.completion_fill} (assumed)"
    gen = out.add("generated tokens", items * budget * a.completion_fill, why)
    if out.n is None:
        return out.done("infer", label, devices, on_gpu)
    why = f"2N x (items x prompt + generated tokens), N = {out.n:,}"
    flops = out.add(FLOPS, 2 * out.n * (items * p + gen), why, "FLOP")
    if on_gpu:
        mfu = a.mfu_generate_hf if inf.backend == "hf" else a.mfu_generate_vllm
        out.hours(0.0, flops, mfu, devices)
    why = f"{'bf16' if on_gpu else 'fp32'} weights; KV cache not counted (vLLM reserves its "
    out.add(MEMORY, out.n * (2 if on_gpu else 4), why + "gpu_memory_utilization)", "B")
    return out.done("infer", label, devices, on_gpu)


def estimate(
    cfg: ExperimentConfig,
    model: ModelConfig,
    *,
    sft_records: int | None = None,
    grpo_records: int | None = None,
    benchmarks: Sequence[Benchmark] = (),
    assumptions: Assumptions | None = None,
) -> CostEstimate:
    """Every enabled stage of ``cfg`` on its base model ``model`` (``load_model(cfg.base_model)``);
    ``*_records``: training records when known (GRPO's after grpo.tasks; SFT on shapes: n_train);
    one infer estimate per checkpoint and benchmark. ValueError for an unknown assumptions.gpu."""
    a = assumptions or Assumptions()
    if a.gpu not in GPUS:
        raise ValueError(f"Assumptions.gpu {a.gpu!r} is not one of {sorted(GPUS)}")
    tiny = model.builder == "tiny"
    n = tiny_parameter_count(model.tiny) if tiny else model.parameters
    n_basis = "counted from the tiny model's shape" if tiny else "the model card's, config/models"
    sheet = functools.partial(_Sheet, cfg, model, n, a)
    stages = [sft_estimate(sheet(), sft_records)] if cfg.sft.enabled else []
    stages += [grpo_estimate(sheet(), grpo_records)] if cfg.grpo.enabled else []
    stages += [infer_estimate(sheet(), c, b) for c in cfg.checkpoints for b in benchmarks]
    name, tflops, gb = GPUS[a.gpu]
    shared = (
        f"N = {n:,} parameters ({n_basis})" if n is not None else UNKNOWN_N,
        "FLOPs: 2N per token forward, 6N forward+backward (Kaplan et al. 2020 §2.1; Hoffmann "
        "et al. 2022 App. F), 8N with gradient checkpointing; attention FLOPs left out",
        f"GPU: {name}, {tflops:g} TFLOPS dense bf16, {gb:g} GB; MFU {a.mfu_train} training, "
        f"{a.mfu_generate_hf} transformers generate, {a.mfu_generate_vllm} vLLM (assumed)",
    )
    return CostEstimate(n, tuple(stages), shared)
