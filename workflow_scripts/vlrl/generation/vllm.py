"""The ``vllm`` backend: offline ``vllm.LLM.chat`` (GPU; vllm is in the GPU set, ``make
setup-gpu``)."""

from __future__ import annotations

from typing import Any

from PIL import Image

from vlrl.config import InferConfig
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
