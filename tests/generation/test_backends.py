"""The generation backends' own decisions, in this process and without a model: how many
processes generate, which backend a config gets, what the ``hf`` backend loads (device, dtype,
left padding) and logs, vLLM's tensor-parallel check and its calls, and what the ``openai``
backend builds (its client, cache and error lines). Stand-ins replace transformers' loaders, vLLM
and the endpoint client; the code under them is the backends' own."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from PIL import Image
from test_vllm_backend import fake_vllm

from vlrl import generation
from vlrl.config import InferConfig
from vlrl.config.data import AttentionHeads
from vlrl.core.errors import StageError
from vlrl.endpoints import Answer, Failure
from vlrl.generation import hf, make_generator
from vlrl.generation import openai as openai_backend
from vlrl.generation import vllm as vllm_backend


# ------------------------------------------------------------------------------ processes
@pytest.mark.parametrize(
    ("backend", "processes"), [("hf", 3), ("vllm", 1), ("openai", 1)], ids=["hf", "vllm", "openai"]
)
def test_only_the_hf_backend_splits_the_items_over_workers(backend, processes) -> None:
    settings = InferConfig.model_construct(backend=backend, workers=3)
    assert generation.generating_processes(settings) == processes


def test_an_unknown_backend_is_named() -> None:
    settings = InferConfig.model_construct(backend="tgi")  # past the validator, as a bug would
    with pytest.raises(StageError) as raised:
        make_generator(settings, "models/m", seed=0)
    assert str(raised.value) == "unknown generation backend 'tgi'"


# ------------------------------------------------------------------------------------- hf
class _Loaded:
    """What a stand-in ``from_pretrained`` returned, with what it was asked."""

    def __init__(self, path: str, **kwargs) -> None:
        self.path, self.kwargs = path, kwargs
        self.device: str | None = None
        self.evaluating = False

    def to(self, device: str) -> _Loaded:
        self.device = device
        return self

    def eval(self) -> None:
        self.evaluating = True


@pytest.fixture
def loaders(monkeypatch):
    monkeypatch.setattr(hf.AutoProcessor, "from_pretrained", _Loaded)
    monkeypatch.setattr(hf.AutoModelForImageTextToText, "from_pretrained", _Loaded)
    monkeypatch.setattr(hf, "cpu_kernel_report", lambda: {"aten": "AVX2"})


@pytest.mark.parametrize(
    ("cuda", "device", "dtype"), [(False, "cpu", "float32"), (True, "cuda", "bfloat16")]
)
def test_hf_loads_bf16_on_a_gpu_and_fp32_on_the_cpu(loaders, monkeypatch, cuda, device, dtype):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    generator = hf.HFGenerator("models/m", InferConfig(), seed=4)
    assert generator.device == device and generator.seed == 4
    assert generator.model.path == "models/m" and generator.model.device == device
    assert generator.model.kwargs == {"dtype": getattr(torch, dtype)}
    assert generator.model.evaluating
    # left padding: a batch's prompts end where generation starts
    assert generator.processor.path == "models/m"
    assert generator.processor.kwargs == {"padding_side": "left"}


@pytest.mark.parametrize(("cuda", "logged"), [(False, True), (True, False)])
def test_hf_logs_the_cpu_kernels_only_on_the_cpu(loaders, monkeypatch, caplog, cuda, logged):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    with caplog.at_level(logging.INFO, logger="vlrl.generation.hf"):
        hf.HFGenerator("models/m", InferConfig(), seed=0)
    lines = [r.getMessage() for r in caplog.records if r.name == "vlrl.generation.hf"]
    assert lines == (["hf generator: CPU kernels {'aten': 'AVX2'}"] if logged else [])


# ----------------------------------------------------------------------------------- vllm
QWEN_7B = AttentionHeads(text=28, text_kv=4, vision=16)  # Qwen2.5-VL-7B


@pytest.mark.parametrize("size", [1, 2, 4])
def test_tensor_parallel_sizes_that_split_every_head_count(size) -> None:
    assert vllm_backend.tensor_parallel_problem(size, QWEN_7B) is None


@pytest.mark.parametrize(
    ("size", "heads", "message"),
    [
        (
            8,
            QWEN_7B,
            "tensor parallelism over 8 GPUs cannot split 28 attention heads (4 key/value, 16 in "
            "the vision encoder) evenly; vLLM refuses it at start. Sizes that can: 1, 2, 4",
        ),
        (
            # the text heads divide by 4 and the vision encoder's do not
            4,
            AttentionHeads(text=8, text_kv=8, vision=6),
            "tensor parallelism over 4 GPUs cannot split 8 attention heads (8 key/value, 6 in "
            "the vision encoder) evenly; vLLM refuses it at start. Sizes that can: 1, 2",
        ),
        (
            # text only: the key/value heads neither divide by 3 nor 3 by them
            3,
            AttentionHeads(text=12, text_kv=2),
            "tensor parallelism over 3 GPUs cannot split 12 attention heads (2 key/value) evenly; "
            "vLLM refuses it at start. Sizes that can: 1, 2, 4, 6, 12",
        ),
        (
            # fewer key/value heads than GPUs is fine when the size divides by them: 8 % 2 == 0
            6,
            AttentionHeads(text=16, text_kv=2),
            "tensor parallelism over 6 GPUs cannot split 16 attention heads (2 key/value) evenly; "
            "vLLM refuses it at start. Sizes that can: 1, 2, 4, 8, 16",
        ),
    ],
    ids=["qwen-7b-over-8", "vision-heads", "kv-heads", "kv-replicated"],
)
def test_tensor_parallel_problems_name_the_sizes_that_can(size, heads, message) -> None:
    assert vllm_backend.tensor_parallel_problem(size, heads) == message


@pytest.mark.parametrize("available", [False, True])
def test_cuda_available_is_torchs_answer(monkeypatch, available) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    assert vllm_backend.cuda_available() is available


@pytest.fixture
def vllm(monkeypatch):
    module = fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_vllm_built_directly_takes_one_gpu(vllm) -> None:
    vllm_backend.VLLMGenerator("models/m", InferConfig(backend="vllm"), seed=0)
    assert vllm.llms[0].kwargs["tensor_parallel_size"] == 1


def test_a_missing_vllm_says_how_to_get_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(StageError) as raised:
        vllm_backend.VLLMGenerator("models/m", InferConfig(backend="vllm"), seed=0)
    assert str(raised.value) == (
        "infer.backend is 'vllm' but vllm is not installed in this environment (the GPU set has "
        "it: `make setup-gpu` creates .venv-gpu)"
    )


def test_vllm_chat_runs_without_its_progress_bar(vllm) -> None:
    """The infer stage draws its own bar over the batches; vLLM's would print one per batch."""
    seen = {}
    generator = vllm_backend.VLLMGenerator("models/m", InferConfig(backend="vllm"), seed=0)

    def chat(messages, params, **kwargs):
        seen.update(kwargs)
        return []

    generator.llm.chat = chat
    generator.generate([], [])
    assert seen == {"use_tqdm": False}


@pytest.mark.parametrize("backend", ["vllm", "openai"])
def test_conversations_and_image_lists_of_different_lengths_are_refused(vllm, backend) -> None:
    if backend == "vllm":
        generator = vllm_backend.VLLMGenerator("models/m", InferConfig(backend="vllm"), seed=0)
    else:
        generator = openai_backend.OpenAIGenerator("models/m", _openai_cfg(), seed=0)
        generator.client.complete = lambda bodies: [Answer(b["model"], "", 1) for b in bodies]
    conversation = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    with pytest.raises(ValueError, match="zip"):
        generator.generate([conversation, conversation], [[]])


# --------------------------------------------------------------------------------- openai
def _openai_cfg(**openai) -> InferConfig:
    return InferConfig(backend="openai", openai={"base_url": "http://127.0.0.1:9/v1", **openai})


def test_openai_without_its_server_is_named() -> None:
    with pytest.raises(StageError) as raised:
        # the config's validator refuses it first; a config built past it still gets a StageError
        settings = InferConfig.model_construct(backend="openai", openai=None)
        openai_backend.OpenAIGenerator("models/m", settings, seed=0)
    assert str(raised.value) == "infer.backend is 'openai' but infer.openai is not set"


def test_openai_client_is_labelled_and_caches_within_the_bound(tmp_path: Path) -> None:
    settings = _openai_cfg(cache_dir=str(tmp_path / "cache"), cache_max_entries=7)
    generator = openai_backend.OpenAIGenerator("models/m", settings, seed=0)
    assert generator.client.label == "infer openai"
    assert generator.client.prompt_version == openai_backend.PROMPT_VERSION
    assert generator.client.cache.path == tmp_path / "cache"
    assert generator.client.cache.max_entries == 7
    assert openai_backend.OpenAIGenerator("m", _openai_cfg(), seed=0).client.cache is None


def test_openai_failures_are_logged_each_and_counted(caplog) -> None:
    generator = openai_backend.OpenAIGenerator("models/m", _openai_cfg(), seed=0)
    broken = Failure("http_status", "http_status: BadRequestError (HTTP 400) after 1 attempt(s)", 1)
    replies = [Answer("fine", "fine", 1), broken, broken]
    generator.client.complete = lambda bodies: replies[: len(bodies)]
    conversation = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    with caplog.at_level(logging.WARNING, logger="vlrl.generation.openai"):
        out = generator.generate([conversation] * 3, [[], [], []])
    assert out == ["fine", broken, broken]
    assert [r.getMessage() for r in caplog.records] == [
        f"infer openai: item 1 of the batch failed: {broken}",
        f"infer openai: item 2 of the batch failed: {broken}",
        "infer openai: 2 of 3 requests failed; they are recorded as errors",
    ]


def test_openai_logs_at_most_ten_failures_one_by_one(caplog) -> None:
    generator = openai_backend.OpenAIGenerator("models/m", _openai_cfg(), seed=0)
    broken = Failure("timeout", "timeout: APITimeoutError after 2 attempt(s): timed out", 2)
    generator.client.complete = lambda bodies: [broken for _ in bodies]
    conversation = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    with caplog.at_level(logging.WARNING, logger="vlrl.generation.openai"):
        generator.generate([conversation] * 12, [[]] * 12)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == openai_backend.MAX_LOGGED + 1 == 11
    assert lines[-1] == "infer openai: 12 of 12 requests failed; they are recorded as errors"


def test_an_image_part_is_a_png_data_url() -> None:
    import base64

    part = openai_backend.image_part(Image.new("RGB", (3, 2), "red"))
    assert part["type"] == "image_url"
    header, data = part["image_url"]["url"].split(",", 1)
    assert header == "data:image/png;base64"
    assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
