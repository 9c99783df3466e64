"""grpo stage: GRPO with TRL's GRPOTrainer on the SFT model (or the base model when SFT is off).

Rewards come from :data:`vlrl.rewards.REGISTRY` with the weights of ``grpo.rewards``; training
curves (reward per function, KL, completion length, ...) are logged with dvclive under
``results/<exp>/grpo/dvclive`` so ``dvc plots show`` draws them. The final policy is saved under
``results/<exp>/grpo/final`` (a LoRA adapter when ``grpo.lora``; merge makes it standalone).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from vlrl import paths
from vlrl.config import ExperimentConfig, GRPOConfig
from vlrl.data.convert import to_conversation
from vlrl.errors import StageError
from vlrl.files import atomic_dir, write_json
from vlrl.prompts import get_prompt
from vlrl.records import Record, read_records
from vlrl.rewards import get_reward

log = logging.getLogger(__name__)

FINAL = "final"
DVCLIVE = "dvclive"
# The vision tower in transformers 5.x Qwen2.5-VL (libraries.md §1, "Freezing the vision tower").
VISION_KEY = "visual."
# LoRA on the language model only: Qwen2.5-VL vision blocks reuse the MLP projection names.
LORA_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"


class NamedReward:
    """A registry reward under its registry name, so TRL logs ``rewards/<name>/mean``.

    A module-level class wrapping a module-level function stays picklable (TRL's contract).
    """

    def __init__(self, name: str) -> None:
        self.__name__ = name
        self.fn = get_reward(name)

    def __call__(self, completions: list[Any], **kwargs: Any) -> list[float | None]:
        return self.fn(completions, **kwargs)


def policy_input_dir(exp: str, cfg: ExperimentConfig) -> Path:
    """The model GRPO starts from: the SFT output, or the base model when SFT is disabled."""
    return paths.sft_dir(exp) if cfg.sft.enabled else paths.model_resource(cfg.base_model)


def build_dataset(records: list[Record], data_dir: Path, cfg: ExperimentConfig):
    """A datasets.Dataset with TRL's conversational ``prompt``, an ``images`` column of PIL
    images, and the columns rewards read (answer, problem_type, boxes, options, task)."""
    import datasets

    fmt = get_prompt(cfg.prompt)
    rows = [
        {
            "prompt": to_conversation(r, fmt),
            "images": [str(data_dir / p) for p in r.images],
            "answer": r.answer,
            "problem_type": r.problem_type,
            "boxes": r.boxes,
            "options": r.options,
            "task": r.task or r.problem_type,
            "id": r.id,
        }
        for r in records
    ]
    dataset = datasets.Dataset.from_list(rows)
    return dataset.cast_column("images", datasets.Sequence(datasets.Image()))


def trl_config(cfg: GRPOConfig, output_dir: Path, seed: int):
    """TRL GRPOConfig from the experiment's grpo section (TRL 1.16 option names)."""
    import torch
    from trl import GRPOConfig as TRLGRPOConfig

    gpu = torch.cuda.is_available()
    return TRLGRPOConfig(
        output_dir=str(output_dir),
        seed=seed,
        data_seed=seed,
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant",
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        beta=cfg.beta,
        epsilon=cfg.epsilon,
        epsilon_high=cfg.epsilon_high,
        num_iterations=cfg.num_iterations,
        loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards,
        reward_weights=list(cfg.rewards.values()),
        gradient_checkpointing=cfg.gradient_checkpointing,
        logging_steps=cfg.logging_steps,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        report_to="none",
        bf16=gpu,
        use_cpu=not gpu,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        disable_tqdm=False,
    )


def load_policy(model_dir: Path, cfg: GRPOConfig):
    """Model and processor (left padding, the experiment's pixel budget).

    With ``freeze_vision`` the vision tower (and its merger) get no gradient.
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = AutoModelForImageTextToText.from_pretrained(str(model_dir), dtype=dtype)
    processor = AutoProcessor.from_pretrained(
        str(model_dir),
        padding_side="left",
        min_pixels=cfg.image_min_pixels,
        max_pixels=cfg.image_max_pixels,
    )
    if cfg.freeze_vision:
        for name, param in model.named_parameters():
            if VISION_KEY in name:
                param.requires_grad = False
    return model, processor


def peft_config(cfg: GRPOConfig):
    """LoRA on the language model only (never the vision tower), or None."""
    if not cfg.lora:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        target_modules=LORA_TARGETS,
        task_type="CAUSAL_LM",
    )


def run(exp: str, cfg: ExperimentConfig) -> None:
    """Train ``results/<exp>/grpo`` with TRL GRPO."""
    if not cfg.grpo.enabled:
        raise StageError(
            f"experiment {exp}: grpo.enabled is false; the workflow should not run grpo"
        )
    from dvclive import Live
    from transformers import set_seed
    from transformers.integrations import DVCLiveCallback
    from trl import GRPOTrainer

    start = policy_input_dir(exp, cfg)
    data_dir = paths.data_dir(exp)
    for needed in (data_dir / "train.jsonl", start / "config.json"):
        if not needed.is_file():
            raise StageError(f"grpo: input {needed} is missing; run the earlier stages first")
    set_seed(cfg.seed)
    records = read_records(data_dir / "train.jsonl", cfg.grpo.max_samples)
    dataset = build_dataset(records, data_dir, cfg)
    model, processor = load_policy(start, cfg.grpo)
    rewards = [NamedReward(name) for name in cfg.grpo.rewards]
    log.info(
        "grpo: %d prompts, %d steps, rewards %s, from %s",
        len(dataset),
        cfg.grpo.max_steps,
        dict(cfg.grpo.rewards),
        start,
    )

    with atomic_dir(paths.grpo_dir(exp)) as out:
        # dvcyaml=None: dvclive must not edit the generated dvc.yaml (plots are declared there).
        live = Live(dir=str(out / DVCLIVE), dvcyaml=None, save_dvc_exp=False, report=None)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=rewards,
            args=trl_config(cfg.grpo, out / "checkpoints", cfg.seed),
            train_dataset=dataset,
            processing_class=processor,
            peft_config=peft_config(cfg.grpo),
            callbacks=[DVCLiveCallback(live=live)],
        )
        log.info(
            "grpo: %d trainable parameters",
            sum(p.numel() for p in model.parameters() if p.requires_grad),
        )
        result = trainer.train()
        trainer.save_model(str(out / FINAL))
        processor.save_pretrained(str(out / FINAL))
        write_json(
            out / "train_summary.json",
            {
                "start_model": str(start),
                "steps": result.global_step,
                "train_loss": result.training_loss,
                "rewards": dict(cfg.grpo.rewards),
                "lora": cfg.grpo.lora,
                "log_history": trainer.state.log_history,
            },
        )
        log.info("grpo: wrote %s", paths.grpo_dir(exp))
