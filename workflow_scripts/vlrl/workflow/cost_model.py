"""What ``vlrl plan``'s estimate assumes, and what it reports: the published constants (image
tokens, model shapes, GPUs), the :class:`Assumptions` a recipe does not fix, the parameter and
memory formulas, and the :class:`Figure` / :class:`StageEstimate` / :class:`CostEstimate` it
returns. The arithmetic per stage is :mod:`vlrl.workflow.cost`; the sources are cited there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from vlrl.config import TinyModelConfig

PATCH = 28  # pixels on a side of one Qwen2.5-VL image token (14 px patches merged 2x2)
MARKERS = 2  # <|vision_start|> and <|vision_end|> around each image's tokens
QWEN_PIXELS = (3136, 12845056)  # Qwen/Qwen2.5-VL-3B-Instruct preprocessor_config.json min/max
QWEN_VISION = (1280, 3420, 32)  # every Qwen2.5-VL vision_config: hidden, intermediate, depth
QWEN_3B_TEXT = (2048, 36, 151936, 256, 11008)  # Qwen2.5-VL-3B-Instruct config.json, see TextShape
UNKNOWN_N = "parameter count unknown (set parameters in config/models): no FLOPs, hours, memory"
# SXM parts: name, dense bf16 TFLOPS, memory GB (NVIDIA datasheets; H100/H200: 1979 sparse)
GPUS = {"h100": ("H100", 989, 80), "h200": ("H200", 989, 141), "a100": ("A100", 312, 80)}
TextShape = tuple[int, int, int, int, int]  # hidden, layers, vocab, kv_dim, intermediate
Size = tuple[int, int] | None  # a picture's (height, width) in pixels, None: unknown


@dataclass(frozen=True)
class Assumptions:
    """What the recipe does not fix; each value is named in the figures it produced."""

    gpu: str = "h100"  # a key of GPUS
    mfu_train: float = 0.35  # model FLOPs utilisation of training passes (compute-bound)
    mfu_generate_hf: float = 0.03  # transformers' generate: memory-bound, a model read per token
    mfu_generate_vllm: float = 0.15  # vLLM's batched paged decoding (and the openai backend's)
    completion_fill: float = 0.5  # mean generated length / budget (max_completion_length ...)
    prompt_text_tokens: int = 128  # prompt tokens besides images (template, system, question)
    sft_response_tokens: int = 256  # tokens of an SFT target (reasoning and answer)
    images_per_record: int = 1
    image_size: Size = None  # hub pictures' typical size; None: the pixel budget's bound
    text_shape: TextShape | None = None  # a hub model's; None: Qwen2.5-VL-3B's


@dataclass(frozen=True)
class Benchmark:
    """A benchmark to answer: items once subsampled (None: unknown), budget, pictures' (h, w)."""

    name: str
    items: int | None
    max_new_tokens: int | None = None
    image_size: Size = None


@dataclass(frozen=True)
class Figure:
    """One number and how it was derived; ``value`` None: unknown (``basis`` says why)."""

    name: str
    value: float | None
    basis: str
    unit: str = ""  # "", "FLOP", "h" or "B"

    def text(self) -> str:
        """The value for people: separators, FLOPs in powers of ten, bytes in GiB, hours."""
        v = self.value
        if v is None:
            return "unknown"
        units = {"B": f"{v / 2**30:,.2f} GiB", "FLOP": f"{v:.3g} FLOP", "h": f"{v:,.2f} h"}
        return units.get(self.unit, f"{v:,.0f}" if float(v).is_integer() else f"{v:,.2f}")


@dataclass(frozen=True)
class StageEstimate:
    """One job of the plan (sft, grpo, infer): where it runs, its figures, other assumptions."""

    stage: str
    label: str
    devices: int
    on_gpu: bool
    figures: tuple[Figure, ...]
    assumptions: tuple[str, ...] = ()

    def get(self, name: str) -> float | None:
        """The value of figure ``name`` (KeyError, naming the known ones, when absent)."""
        found = {f.name: f.value for f in self.figures}
        if name not in found:
            raise KeyError(f"{self.label}: no figure {name!r}; known: {list(found)}")
        return found[name]

    @property
    def where(self) -> str:
        return f"{self.devices} GPU(s)" if self.on_gpu else f"{self.devices} CPU process(es)"

    def body(self) -> list[str]:
        """``name: value — basis`` per figure, then the assumptions."""
        out = [f"- {f.name}: {f.text()} — {f.basis}" for f in self.figures]
        return out + [f"- assumes: {a}" for a in self.assumptions]

    def lines(self) -> list[str]:
        """Markdown: a bold heading, then :meth:`body`."""
        return [f"**{self.label}** on {self.where}", *self.body()]

    def unknown(self) -> str | None:
        """Why the stage has no GPU-hours: its first unknown figure (or N), None when it has
        them or runs on CPUs."""
        if not self.on_gpu or self.get_or_none(GPU_HOURS) is not None:
            return None
        missing = next((f for f in self.figures if f.value is None), None)
        if missing is not None:
            return f"{missing.name} unknown: {missing.basis}"
        return next((a for a in self.assumptions if a == UNKNOWN_N), "not estimated")

    def get_or_none(self, name: str) -> float | None:
        return {f.name: f.value for f in self.figures}.get(name)


@dataclass(frozen=True)
class CostEstimate:
    """The plan's estimate: N, every stage, and the assumptions they share."""

    parameters: int | None
    stages: tuple[StageEstimate, ...]
    assumptions: tuple[str, ...]

    @property
    def gpu_hours(self) -> float | None:
        """Sum over the GPU stages; None when one of them has none (N or items unknown)."""
        hours = [{f.name: f.value for f in s.figures}.get(GPU_HOURS) for s in self.stages]
        gpu = [h for h, s in zip(hours, self.stages, strict=True) if s.on_gpu]
        return None if None in gpu else sum(h or 0.0 for h in gpu)

    def known_hours(self) -> tuple[float, float, list[StageEstimate]]:
        """GPU-hours and wall-clock hours summed over the GPU stages that have them, and the
        GPU stages that do not (:meth:`StageEstimate.unknown` says why)."""
        gpu = [s for s in self.stages if s.on_gpu]
        known = [s for s in gpu if s.unknown() is None]
        hours = sum(s.get_or_none(GPU_HOURS) or 0.0 for s in known)
        wall = sum(s.get_or_none(WALL_HOURS) or 0.0 for s in known)
        return hours, wall, [s for s in gpu if s.unknown() is not None]

    def _total(self) -> str:
        """The total GPU-hours as a sentence that adds up: the sum of the stages that have
        them, and which have none and why (grouped)."""
        hours, wall, missing = self.known_hours()
        if not any(s.on_gpu for s in self.stages):
            return "no GPU stage (every stage runs on CPUs)"
        by_stage = ", ".join(f"{s.label} {s.get_or_none(GPU_HOURS):,.2f}" for s in self.stages
                             if s.on_gpu and s.unknown() is None)  # fmt: skip
        text = f"{'at least ' if missing else ''}{hours:,.2f} GPU-hours"
        text += f" ({by_stage})" if by_stage else ""
        text += f", {'at least ' if missing else ''}{wall:,.2f} h wall-clock one after another"
        if missing:
            groups = Counter((s.stage, s.unknown()) for s in missing)
            text += "; not estimated: " + "; ".join(
                f"{stage}{f' x {n}' if n > 1 else ''} ({why})" for (stage, why), n in groups.items()
            )
        return text

    def summary(self) -> list[str]:
        """The plan's summary lines: compute with the hardware assumed, peak memory per
        device."""
        gpu = [s for s in self.stages if s.on_gpu]
        if not gpu:
            flops = sum(s.get_or_none(FLOPS) or 0.0 for s in self.stages)
            procs = max((s.devices for s in self.stages), default=0)
            return [
                f"compute: on CPUs only ({procs} process(es) at most), no GPU-hours; "
                f"{flops:.3g} FLOP in all"
            ]
        lines = [f"compute: {self._total()}", f"hardware assumed: {self.assumptions[2]}"]
        memory = [(s.get_or_none(MEMORY), s.label) for s in gpu]
        known = [(m, label) for m, label in memory if m is not None]
        if known:
            peak, label = max(known)
            lines.append(f"peak memory/device: {peak / 2**30:,.2f} GiB ({label})")
        return lines

    def lines(self) -> list[str]:
        """Markdown (and plain text): shared assumptions, each stage (jobs with the same
        figures under one heading), the total GPU-hours."""
        out = [f"- assumes: {a}" for a in self.assumptions]
        groups: dict[tuple[str, str, tuple[str, ...]], list[StageEstimate]] = {}
        for stage in self.stages:
            groups.setdefault((stage.stage, stage.where, tuple(stage.body())), []).append(stage)
        for (name, where, body), members in groups.items():
            labels = [m.label.removeprefix(f"{name} ") for m in members]
            head = (
                members[0].label
                if len(members) == 1
                else f"{name} x {len(members)}: " + (", ".join(labels))
            )
            out += ["", f"**{head}** on {where}", *body]
        return [*out, "", f"total: {self._total()}"]


# Figure names: stable keys for the plan command and the tests.
PROMPTS, COMPLETIONS, GENERATED_COMPLETIONS = "prompts/step", "completions/step", "generations/step"
IMAGE_TOKENS, PROMPT_TOKENS = "image tokens/image", "prompt tokens/sequence"
PROMPT_TOKENS_MAX = "prompt tokens/sequence (max)"
GENERATED, GENERATED_MAX = "generated tokens/step", "generated tokens/step (max)"
TOKENS, TOKENS_MAX = "tokens/step", "tokens/step (max)"
STEPS, FLOPS, GPU_HOURS, WALL_HOURS = "steps", "FLOPs", "GPU-hours", "wall-clock hours"
MEMORY = "memory/device"


def vision_parameter_count(hidden: int, intermediate: int, depth: int, text_hidden: int) -> int:
    """Parameters of a Qwen2.5-VL vision tower (transformers 5.19): Conv3d patch embedding
    (2x14x14, no bias), blocks (RMSNorms, qkv/proj, gated MLP, biases), 2x2 merger MLP."""
    h, i = hidden, intermediate
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * (i * h + i) + (i * h + h)
    merger = h + (4 * h) ** 2 + 4 * h + 4 * h * text_hidden + text_hidden
    return 3 * 2 * 14 * 14 * h + depth * block + merger


def tiny_parameter_count(tiny: TinyModelConfig) -> int:
    """Parameters of the tiny Qwen2.5-VL :mod:`vlrl.models.tiny` builds from ``tiny`` (its
    tokenizer assumed to reach ``vocab_size``; untied embeddings, q/k/v biases).

    >>> tiny_parameter_count(TinyModelConfig(vision_hidden_size=64))
    392000
    """
    h, i = tiny.hidden_size, tiny.intermediate_size
    kv = tiny.num_key_value_heads * (h // tiny.num_attention_heads)
    layer = (h * h + h) + 2 * (h * kv + kv) + h * h + 3 * h * i + 2 * h
    hv = tiny.vision_hidden_size
    vision = vision_parameter_count(hv, 2 * hv, tiny.vision_depth, h)
    return vision + tiny.num_hidden_layers * layer + h + 2 * tiny.vocab_size * h


def training_state_bytes(
    params: int, trainable: int, devices: int, zero: str | None, per_param: tuple[int, ...]
) -> tuple[float, str]:
    """Bytes per device of weights, grads and AdamW states, and the arithmetic. ``per_param``:
    bytes of a (frozen weight, trained weight, grad, optimizer state); ZeRO-2 divides grads and
    optimizer states by ``devices``, ZeRO-3 the weights too."""
    fw, tw, g, o = per_param
    weights, states = (params - trainable) * fw + trainable * tw, trainable * (g + o)
    total = {"zero3": (weights + states) / devices, "zero2": weights + states / devices}
    share = f"{zero}: divided over {devices} GPUs" if zero else "a full copy on every device"
    return float(total.get(zero or "", weights + states)), (
        f"{params:,} params ({trainable:,} trained) x weights {fw} B frozen / {tw} B trained, "
        f"grads {g} B, AdamW states {o} B; {share}"
    )
