"""The ``vllm`` generation backend, through :func:`vlrl.generation.make_generator`, against a
stand-in ``vllm`` module put in ``sys.modules`` (vllm needs a GPU and is not installed here):
the stand-in records what the backend asks of ``vllm.LLM`` and ``vllm.SamplingParams`` and
answers ``LLM.chat`` by echoing what it was given. The backend's own code runs unchanged: the
model is split over the infer job's GPUs (``tensor_parallel_size``), vLLM admits as many images
per prompt as the data's largest item has, and images reach ``chat`` as PIL parts in order."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest
from PIL import Image

from vlrl.config import InferConfig
from vlrl.core.errors import StageError
from vlrl.generation import make_generator
from vlrl.generation.vllm import DEFAULT_MAX_IMAGES


@dataclass
class _Completion:
    text: str


@dataclass
class _Output:
    outputs: list[_Completion]


def fake_vllm() -> types.ModuleType:
    """A ``vllm`` module whose ``LLM`` and ``SamplingParams`` record their keyword arguments and
    whose ``LLM.chat`` answers each conversation with a description of its content parts."""
    module = types.ModuleType("vllm")
    module.llms = []

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class LLM:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.calls = []
            module.llms.append(self)

        def chat(self, messages, params, use_tqdm=True):
            self.calls.append((messages, params))
            return [
                _Output(
                    [
                        _Completion(
                            " ".join(
                                f"pil:{part['image_pil'].size[0]}"
                                if part["type"] == "image_pil"
                                else f"{part['type']}:{part.get('text', '')}"
                                for message in conversation
                                for part in message["content"]
                            )
                        )
                    ]
                )
                for conversation in messages
            ]

    module.LLM, module.SamplingParams = LLM, SamplingParams
    return module


@pytest.fixture
def vllm(monkeypatch):
    module = fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def cfg() -> InferConfig:
    return InferConfig(backend="vllm", max_new_tokens=64, temperature=0.7, top_p=0.9)


def conversation(text: str, n_images: int) -> list[dict]:
    parts = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": text}]
    return [{"role": "user", "content": parts}]


@pytest.mark.parametrize(("gpus", "tensor_parallel"), [(0, 1), (1, 1), (2, 2), (8, 8)])
def test_the_model_is_split_over_the_jobs_gpus(vllm, gpus, tensor_parallel):
    make_generator(cfg(), "models/m", seed=3, gpus=gpus, max_images=1)
    (llm,) = vllm.llms
    assert llm.kwargs["tensor_parallel_size"] == tensor_parallel
    assert llm.kwargs["model"] == "models/m" and llm.kwargs["seed"] == 3


@pytest.mark.parametrize("max_images", [0, 1, 3, 7])
def test_images_per_prompt_follow_the_data(vllm, max_images):
    make_generator(cfg(), "models/m", seed=0, gpus=1, max_images=max_images)
    assert vllm.llms[0].kwargs["limit_mm_per_prompt"] == {"image": max_images}


def test_without_counts_one_gpu_and_the_default_image_limit(vllm):
    make_generator(cfg(), "models/m", seed=0)
    assert vllm.llms[0].kwargs["tensor_parallel_size"] == 1
    assert vllm.llms[0].kwargs["limit_mm_per_prompt"] == {"image": DEFAULT_MAX_IMAGES}


def test_generation_passes_images_in_order_and_the_decoding_settings(vllm):
    generator = make_generator(cfg(), "models/m", seed=5, gpus=2, max_images=2)
    images = [[Image.new("RGB", (w, 2)) for w in (3, 4)], [Image.new("RGB", (5, 2))]]
    texts = generator.generate([conversation("a", 2), conversation("b", 1)], images)
    assert texts == ["pil:3 pil:4 text:a", "pil:5 text:b"]
    (_, params) = vllm.llms[0].calls[0]
    assert params.kwargs == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "seed": 5}


@pytest.mark.parametrize(("cuda", "dtype"), [(False, "float32"), (True, "bfloat16")])
def test_vllm_loads_the_model_in_the_hf_backends_dtype(vllm, monkeypatch, cuda, dtype):
    """vLLM's "auto" would run a float32 checkpoint in bf16 on the CPU; the hf backend runs it
    in float32 there (bf16 on GPUs), and so does this one: the two load the same model."""
    monkeypatch.setattr("vlrl.generation.vllm.cuda_available", lambda: cuda)
    make_generator(cfg(), "models/m", seed=0)
    assert vllm.llms[0].kwargs["dtype"] == dtype


def test_vllm_args_win_over_vlrls_engine_arguments(vllm):
    settings = cfg().model_copy(update={"vllm_args": {"enforce_eager": True, "dtype": "half"}})
    make_generator(settings, "models/m", seed=0, max_images=1)
    kwargs = vllm.llms[0].kwargs
    assert kwargs["enforce_eager"] is True and kwargs["dtype"] == "half"
    assert kwargs["limit_mm_per_prompt"] == {"image": 1}


def test_a_missing_vllm_is_a_stage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(StageError, match="make setup-gpu"):
        make_generator(cfg(), "models/m", seed=0, gpus=1)
