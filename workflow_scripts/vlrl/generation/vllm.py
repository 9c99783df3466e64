"""The ``vllm`` backend: offline ``vllm.LLM.chat`` (GPU; vllm is in the GPU set, ``make
setup-gpu``)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from vlrl.config import InferConfig
from vlrl.config.data import AttentionHeads
from vlrl.core.errors import StageError

DEFAULT_MAX_IMAGES = 4
"""Images per prompt vLLM admits when the caller does not say how many the data has."""


def cuda_available() -> bool:
    """Whether torch sees a CUDA device."""
    import torch

    return bool(torch.cuda.is_available())


class VLLMGenerator:
    """Batched chat generation with vLLM; images are passed as PIL parts.

    ``gpus``: the infer job's GPUs (``resources.infer.gpus``); the model is split over all of
    them (tensor parallelism), one at least. ``max_images``: the most images an item of the
    data has; vLLM reserves memory for that many per prompt (its profiling run) and refuses a
    prompt with more, so the exact count keeps the reservation small (0: text only, vLLM skips
    the vision encoder). None: :data:`DEFAULT_MAX_IMAGES`.
    """

    def __init__(
        self,
        model_dir: str,
        cfg: InferConfig,
        seed: int,
        *,
        gpus: int = 1,
        max_images: int | None = None,
    ) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise StageError(
                "infer.backend is 'vllm' but vllm is not installed in this environment (the "
                "GPU set has it: `make setup-gpu` creates .venv-gpu)"
            ) from exc
        images = DEFAULT_MAX_IMAGES if max_images is None else max_images
        engine = {
            "model": model_dir,
            "seed": seed,
            "tensor_parallel_size": max(1, gpus),
            "limit_mm_per_prompt": {"image": images},
            # The hf backend's rule (generation/hf.py): bf16 on a GPU, fp32 on the CPU. vLLM's
            # "auto" would run a float32 checkpoint in bf16 on the CPU, so the two backends
            # would not load the same model.
            "dtype": "bfloat16" if cuda_available() else "float32",
            **cfg.vllm_args,
        }
        self.llm = LLM(**engine)
        self.params = SamplingParams(
            temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_new_tokens, seed=seed
        )

    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str]:
        messages = [_with_pil(c, imgs) for c, imgs in zip(conversations, images, strict=True)]
        outputs = self.llm.chat(messages, self.params, use_tqdm=False)
        return [o.outputs[0].text for o in outputs]


def _with_pil(
    conversation: list[dict[str, Any]], images: list[Image.Image]
) -> list[dict[str, Any]]:
    """Replace ``{"type": "image"}`` placeholders by vLLM's ``image_pil`` parts, in order."""
    pending = iter(images)
    out = []
    for message in conversation:
        content = [
            {"type": "image_pil", "image_pil": next(pending)}
            if part.get("type") == "image"
            else part
            for part in message["content"]
        ]
        out.append({**message, "content": content})
    return out


def tensor_parallel_problem(size: int, heads: AttentionHeads) -> str | None:
    """Why vLLM cannot shard a model with ``heads`` over ``size`` GPUs, or None. vLLM (0.31)
    requires the attention heads to divide evenly (``ModelConfig.verify_with_parallel_config``),
    the key/value heads to divide by the size or the size by them (``QKVParallelLinear``
    replicates them), and the vision encoder's heads to divide evenly (``dist_utils.divide``).

    >>> qwen7b = AttentionHeads(text=28, text_kv=4, vision=16)  # Qwen2.5-VL-7B
    >>> tensor_parallel_problem(8, qwen7b).split("; ")[1]
    'vLLM refuses it at start. Sizes that can: 1, 2, 4'
    >>> tensor_parallel_problem(6, AttentionHeads(text=16, text_kv=2)).split(";")[0]
    'tensor parallelism over 6 GPUs cannot split 16 attention heads (2 key/value) evenly'
    >>> tensor_parallel_problem(4, qwen7b) is None
    True
    """

    def fits(tp: int) -> bool:
        kv_ok = heads.text_kv % tp == 0 or tp % heads.text_kv == 0
        vision_ok = heads.vision is None or heads.vision % tp == 0
        return heads.text % tp == 0 and kv_ok and vision_ok

    if fits(size):
        return None
    sizes = ", ".join(str(tp) for tp in range(1, heads.text + 1) if fits(tp))
    vision = f", {heads.vision} in the vision encoder" if heads.vision else ""
    return (
        f"tensor parallelism over {size} GPUs cannot split {heads.text} attention heads "
        f"({heads.text_kv} key/value{vision}) evenly; vLLM refuses it at start. Sizes that can: "
        f"{sizes}"
    )
