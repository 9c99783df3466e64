"""The ``hf`` backend: batched ``model.generate`` with transformers, on CPU or GPU."""

from __future__ import annotations

import logging
from typing import Any

import torch
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from vlrl.cluster.threads import cpu_kernel_report
from vlrl.config import InferConfig

log = logging.getLogger(__name__)


class HFGenerator:
    """Greedy (temperature 0) or sampled generation with left padding.

    The processor saved with the model fixes the pixel budget, as in training.
    """

    def __init__(self, model_dir: str, cfg: InferConfig, seed: int) -> None:
        self.cfg = cfg
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.processor = AutoProcessor.from_pretrained(model_dir, padding_side="left")
        self.model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=dtype).to(
            self.device
        )
        self.model.eval()
        self.seed = seed
        if self.device == "cpu":
            log.info("hf generator: CPU kernels %s", cpu_kernel_report())

    @torch.inference_mode()
    def generate(
        self, conversations: list[list[dict[str, Any]]], images: list[list[Image.Image]]
    ) -> list[str]:
        texts = [
            self.processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in conversations
        ]
        flat_images = [img for imgs in images for img in imgs]
        inputs = self.processor(
            text=texts, images=flat_images or None, padding=True, return_tensors="pt"
        ).to(self.device)
        sample = self.cfg.temperature > 0
        torch.manual_seed(self.seed)
        output = self.model.generate(
            **inputs,
            max_new_tokens=self.cfg.max_new_tokens,
            do_sample=sample,
            temperature=self.cfg.temperature if sample else None,
            top_p=self.cfg.top_p if sample else None,
            top_k=None,
            pad_token_id=self.processor.tokenizer.pad_token_id,
        )
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        return self.processor.batch_decode(new_tokens, skip_special_tokens=True)
