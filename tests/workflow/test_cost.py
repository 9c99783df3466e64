"""vlrl.workflow.cost: the plan's compute and memory estimate, checked on hand-computed cases
and against a measured tiny GRPO run on CPU (what TRL logged and the real model's numel)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vlrl.config import ModelConfig, TinyModelConfig, load_experiment, load_model
from vlrl.core import paths
from vlrl.workflow import cost
from vlrl.workflow import cost_model as cm

REC = "vlm_r1_rec"
#: The recipe on the shapes world's pictures (112 x 112: a known image size), 1,000 steps and
#: VLM-R1's evaluation budget, which these hand-computed cases assume.
ON_SHAPES = [
    "data.source=shapes",
    "data.train=[]",
    "grpo.max_steps=1000",
    "infer.max_new_tokens=256",
]


def _hub(parameters: int | None) -> ModelConfig:
    return load_model("qwen2.5-vl-3b-instruct").model_copy(update={"parameters": parameters})


def _stage(est: cm.CostEstimate, label: str) -> cm.StageEstimate:
    return next(s for s in est.stages if s.label == label)


def test_tiny_parameter_count_is_the_real_models_numel(tiny_model) -> None:
    assert cm.tiny_parameter_count(TinyModelConfig()) == sum(
        p.numel() for p in tiny_model.parameters()
    )


def test_vision_tower_count_is_the_frozen_part_of_the_real_model(tiny_model) -> None:
    """What grpo.freeze_vision freezes (vlrl.algorithms.trl_setup.VISION_KEY parameters)."""
    t = TinyModelConfig()
    frozen = sum(p.numel() for name, p in tiny_model.named_parameters() if "visual." in name)
    hv = t.vision_hidden_size
    assert cm.vision_parameter_count(hv, 2 * hv, t.vision_depth, t.hidden_size) == frozen


def test_qwen_3b_count_from_its_config_is_the_hubs() -> None:
    """The vision-tower formula with Qwen2.5-VL-3B-Instruct's config.json (tied embeddings):
    3,754,622,976, the parameter total of its safetensors on the hub."""
    h, layers, vocab, kv, i = cost.QWEN_3B_TEXT
    layer = (h * h + h) + 2 * (h * kv + kv) + h * h + 3 * h * i + 2 * h
    text = vocab * h + layers * layer + h
    assert text + cm.vision_parameter_count(*cm.QWEN_VISION, h) == 3_754_622_976


def test_zero_stages_divide_the_16_bytes_per_parameter() -> None:
    n, mixed = 3_000_000_000, (2, 2, 2, 12)  # bf16 weights and grads, fp32 master + 2 moments
    assert cm.training_state_bytes(n, n, 8, None, mixed)[0] == 16 * n
    assert cm.training_state_bytes(n, n, 8, "zero2", mixed)[0] == 2 * n + 14 * n / 8
    assert cm.training_state_bytes(n, n, 8, "zero3", mixed)[0] == 6e9
    frozen = cm.training_state_bytes(n, 1000, 1, None, (2, 4, 4, 8))[0]
    assert frozen == (n - 1000) * 2 + 1000 * 16


def test_vlm_r1_rec_recipe(project: Path) -> None:
    """om-ai-lab/VLM-R1 run_scripts/run_grpo_rec.sh: 8 per device x 8 GPUs x 2 accumulation
    / 8 generations = 16 prompts, 128 completions per step; ZeRO-3, beta 0.04."""
    cfg = load_experiment(REC, ON_SHAPES)
    n = 3_000_000_000
    benches = [cm.Benchmark("refcoco_val", 2000)]
    est = cost.estimate(cfg, _hub(n), grpo_records=20000, benchmarks=benches)
    grpo = _stage(est, "grpo")
    assert grpo.devices == 8 and grpo.on_gpu
    assert grpo.get("epochs") == 1000 * 16 / 20000
    assert grpo.get(cm.PROMPTS) == 16 and grpo.get(cm.COMPLETIONS) == 128
    assert grpo.get(cm.GENERATED_MAX) == 128 * 2048
    # shapes data: 112 x 112 pictures, 16 tokens each, whatever the 12,845,056-pixel budget
    assert grpo.get(cm.IMAGE_TOKENS) == 16
    p = 16 + 2 + cm.Assumptions().prompt_text_tokens
    assert grpo.get(cm.PROMPT_TOKENS) == grpo.get(cm.PROMPT_TOKENS_MAX) == p
    seq = p + 1024  # fill 0.5 of 2048
    # gradient checkpointing: 8N policy; beta > 0: 2N reference forward; 2N generation
    flops = 1000 * (8 * n * 128 * seq + 2 * n * 128 * seq + 2 * n * 128 * seq)
    assert grpo.get(cm.FLOPS) == pytest.approx(flops)
    peak = 989e12
    hours = 1000 * (10 * n * 128 * seq / 0.35 + 2 * n * 128 * seq / 0.03) / peak / 3600
    assert grpo.get(cm.GPU_HOURS) == pytest.approx(hours)
    assert grpo.get(cm.WALL_HOURS) == pytest.approx(hours / 8)
    h, layers, vocab, _, _ = cost.QWEN_3B_TEXT
    activations = 8 * (p + 2048) * 2 * h * layers + 8 * 2048 * vocab * 4
    assert grpo.get(cm.MEMORY) == pytest.approx(16 * n / 8 + 2 * n / 8 + activations)
    infer = _stage(est, "infer base x refcoco_val")
    assert infer.get("generated tokens (max)") == 2000 * 256  # infer.max_new_tokens
    # no picture size: the bound of the processor's max_pixels, 16,384 tokens
    assert infer.get(cm.IMAGE_TOKENS) == 12845056 // 784 == 16384
    assert est.gpu_hours == pytest.approx(sum(s.get(cm.GPU_HOURS) for s in est.stages))


def test_every_number_says_where_it_comes_from(project: Path) -> None:
    cfg = load_experiment(REC)
    est = cost.estimate(cfg, _hub(3_000_000_000), benchmarks=[cm.Benchmark("b", 10)])
    figures = [f for s in est.stages for f in s.figures]
    assert figures and all(f.basis for f in figures)
    text = "\n".join(est.lines())
    assert all(f"{f.name}: {f.text()} — {f.basis}" in text for f in figures)
    assert "Kaplan" in text and "MFU 0.35" in text and "total: " in text


def test_unknown_parameter_count_keeps_the_token_counts(project: Path) -> None:
    est = cost.estimate(load_experiment(REC), _hub(None), benchmarks=[cm.Benchmark("b", 10)])
    grpo = _stage(est, "grpo")
    assert grpo.get(cm.COMPLETIONS) == 128
    assert cm.UNKNOWN_N in grpo.assumptions and est.parameters is None
    with pytest.raises(KeyError, match="no figure 'FLOPs'"):
        grpo.get(cm.FLOPS)
    assert est.gpu_hours is None


def test_iterations_vllm_and_lora(project: Path) -> None:
    """num_iterations 2: a batch is generated every other step and the old policy's log-probs
    take a forward; vLLM colocate reserves its share of the GPU; LoRA trains the adapter."""
    cfg = load_experiment(
        REC,
        [
            *ON_SHAPES,
            "grpo.num_iterations=2",
            "grpo.use_vllm=true",
            "grpo.vllm_gpu_memory_utilization=0.25",
            "grpo.deepspeed=null",
            "grpo.lora=true",
            "grpo.lora_rank=8",
            "grpo.gradient_checkpointing=false",
        ],
    )
    n = 3_000_000_000
    grpo = _stage(cost.estimate(cfg, _hub(n), grpo_records=1000), "grpo")
    assert grpo.get(cm.COMPLETIONS) == 128 and grpo.get(cm.GENERATED_COMPLETIONS) == 64
    assert grpo.get("epochs") == 1000 * 16 / 2 / 1000  # new prompts every other step
    seq = 146 + 1024
    train = 1000 * (6 * n * 128 * seq + 2 * 2 * n * 64 * seq)  # reference + old policy
    assert grpo.get(cm.FLOPS) == pytest.approx(train + 1000 * 2 * n * 64 * seq)
    h, layers, vocab, kv, i = cost.QWEN_3B_TEXT
    lora = 8 * layers * (2 * h + 2 * (h + kv) + 2 * h + 3 * (h + i))
    activations = 8 * (146 + 2048) * 34 * h * layers + 8 * 2048 * vocab * 4
    state = (n - lora) * 2 + lora * 16  # bf16 base, fp32 adapter + grads + AdamW
    expected = state + activations + 0.25 * 80e9  # no reference copy under LoRA
    assert grpo.get(cm.MEMORY) == pytest.approx(expected)


def test_frozen_vision_on_cpu(project: Path) -> None:
    """CPU: fp32 weights (4 B), and grads and AdamW (12 B) only for what is trained."""
    cfg = load_experiment("tiny_shapes", ["grpo.freeze_vision=true", "grpo.beta=0"])
    model = load_model(cfg.base_model)
    grpo = _stage(cost.estimate(cfg, model), "grpo")
    t, n = model.tiny, 392_000
    vision = cm.vision_parameter_count(t.vision_hidden_size, 2 * t.vision_hidden_size, 2, 64)
    pd, tokens = 32, 146 + 48
    activations = pd * tokens * 34 * 64 * 2 + pd * 48 * 600 * 4
    assert grpo.get(cm.MEMORY) == 4 * n + 12 * (n - vision) + activations


def test_sft_counts_records_epochs_and_cutoff(project: Path) -> None:
    cfg = load_experiment(
        "tiny_shapes",
        ["sft.cutoff_len=100", "sft.max_samples=500", "sft.processes=1", "resources.sft.gpus=2"],
    )
    est = cost.estimate(cfg, load_model(cfg.base_model), sft_records=2000)
    sft = _stage(est, "sft")
    assert sft.get("records") == 500
    assert sft.get("tokens/record") == 100  # 146 prompt + 256 target, cut at cutoff_len
    assert sft.get("tokens") == 500 * 6 * 100
    assert sft.get(cm.STEPS) == 6 * 32  # ceil(500 / (8 x 2 GPUs)) per epoch
    assert sft.get(cm.FLOPS) == 6 * 392_000 * (500 * 6 * 100)  # 6 N D
    assert _stage(est, "grpo").devices == 2 and not _stage(est, "grpo").on_gpu
    stopped = load_experiment(
        "tiny_shapes", ["sft.cutoff_len=100", "sft.max_samples=500", "sft.max_steps=48"]
    )
    sft = _stage(cost.estimate(stopped, load_model(cfg.base_model), sft_records=2000), "sft")
    # 6 epochs of ceil(500 / (8 x 2 processes)) = 192 planned steps: a quarter of them run
    assert sft.get(cm.STEPS) == 48 and sft.get("tokens") == 500 * 6 * 100 / 4


def test_infer_budget_and_unknown_items(project: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    benches = [cm.Benchmark("a", 100, max_new_tokens=10), cm.Benchmark("b", None)]
    est = cost.estimate(cfg, load_model(cfg.base_model), benchmarks=benches)
    assert [s.label for s in est.stages if s.stage == "infer"] == [
        f"infer {c} x {b}" for c in ("base", "sft", "grpo") for b in ("a", "b")
    ]
    a = _stage(est, "infer base x a")
    assert a.get("generated tokens (max)") == 1000 and a.get("generated tokens") == 500
    assert a.get(cm.FLOPS) == 2 * 392_000 * (100 * a.get(cm.PROMPT_TOKENS) + 500)
    assert _stage(est, "infer sft x b").get("items") is None
    assert est.gpu_hours == 0  # all on CPU


def test_unknown_gpu_is_named(project: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    with pytest.raises(ValueError, match="'v100' is not one of"):
        cost.estimate(cfg, load_model(cfg.base_model), assumptions=cm.Assumptions(gpu="v100"))


# ---------------------------------------------------------------- a measured tiny GRPO run
SEEN: list[tuple[int, int]] = []
"""(completions, distinct prompts) of each reward call of the measured run."""


def _counting_reward(completions, **kwargs):
    """Records the completions and the distinct prompts (TRL passes the ``id`` column)."""
    SEEN.append((len(completions), len(set(kwargs["id"]))))
    return [float(len(str(c))) / 100 for c in completions]


def _prompt_lengths(cfg, data: Path, model_dir: Path) -> tuple[list[int], int]:
    """Every training prompt's token count as TRL builds it, and the image tokens of one."""
    from transformers import AutoProcessor
    from trl.data_utils import prepare_multimodal_messages

    from vlrl.algorithms.trl_setup import build_dataset, select_tasks
    from vlrl.items.records import read_records

    processor = AutoProcessor.from_pretrained(
        model_dir, min_pixels=cfg.grpo.image_min_pixels, max_pixels=cfg.grpo.image_max_pixels
    )
    rows = build_dataset(select_tasks(read_records(data / "train.jsonl"), cfg.grpo), data, cfg)
    lengths, image_tokens = [], set()
    for row in rows:
        messages = prepare_multimodal_messages(row["prompt"], images=row["images"])
        ids = processor.apply_chat_template(
            conversation=[messages], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"][0]
        lengths.append(len(ids))
        image_tokens.add(
            sum(t == processor.tokenizer.convert_tokens_to_ids("<|image_pad|>") for t in ids)
        )
    assert len(image_tokens) == 1, image_tokens
    return lengths, image_tokens.pop()


@pytest.mark.slow
def test_estimate_matches_a_measured_tiny_grpo_run(
    project: Path, shapes_data: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two real TRL steps on CPU: completions and prompts per step match the estimate exactly,
    image tokens match the processor's, and what TRL logged stays within the estimate's bounds
    (prompt text tokens set to the longest measured)."""
    from vlrl import rewards
    from vlrl.stages import grpo

    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    monkeypatch.setitem(rewards.REGISTERED, "test.count", _counting_reward)
    SEEN.clear()
    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.processes=1",  # in this process, which counts the reward calls
            "grpo.max_steps=2",
            "grpo.logging_steps=1",
            "grpo.per_device_train_batch_size=4",
            "grpo.gradient_accumulation_steps=2",
            "grpo.num_generations=2",
            "grpo.max_completion_length=8",
            "grpo.rewards={test.count: 1.0}",
        ],
    )
    lengths, image_tokens = _prompt_lengths(cfg, paths.data_dir("tiny_shapes"), tiny_model_dir)
    text = max(lengths) - image_tokens - cm.MARKERS
    model = ModelConfig(tiny=TinyModelConfig())  # the fixture's shape
    est = cost.estimate(cfg, model, assumptions=cm.Assumptions(prompt_text_tokens=text))
    est_grpo = _stage(est, "grpo")
    assert est_grpo.get(cm.IMAGE_TOKENS) == image_tokens == 16
    assert est_grpo.get(cm.PROMPT_TOKENS_MAX) == max(lengths)

    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    logged = [h for h in summary["log_history"] if "num_tokens" in h]
    assert summary["steps"] == est_grpo.get(cm.STEPS) == 2 and len(logged) == 2
    completions = est_grpo.get(cm.COMPLETIONS)
    assert SEEN == [(completions, est_grpo.get(cm.PROMPTS))] * 2 == [(8, 4)] * 2
    seen = 0.0
    for h in logged:
        tokens, seen = h["num_tokens"] - seen, h["num_tokens"]
        generated = completions * h["completions/mean_length"]
        assert h["completions/max_length"] <= cfg.grpo.max_completion_length
        assert generated <= est_grpo.get(cm.GENERATED_MAX)
        assert tokens <= est_grpo.get(cm.TOKENS_MAX)
        prompt = (tokens - generated) / completions  # TRL's mean prompt length this step
        assert min(lengths) <= prompt <= est_grpo.get(cm.PROMPT_TOKENS_MAX)
