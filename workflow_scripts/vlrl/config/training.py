"""The training stages: cold-start SFT (LLaMA-Factory) and GRPO (TRL) with its algorithms."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    FiniteFloat,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from vlrl.config.base import KeyProblems, Probability, Section, TopP, order_problems
from vlrl.config.endpoints import EndpointConfig


class SFTConfig(Section):
    enabled: bool = True
    finetuning_type: Literal["full", "lora"] = "full"
    freeze_vision_tower: bool = False
    max_samples: int | None = Field(
        None, ge=1, description="Use at most this many training records."
    )
    num_train_epochs: PositiveFloat = Field(
        2.0, description="Epochs the learning-rate schedule (and its warm-up) is planned for."
    )
    max_steps: PositiveInt | None = Field(
        None,
        description="Optimizer step the run stops after (None: the end of the schedule). A "
        "released run planned for E epochs whose step-N checkpoint a paper reports: "
        "num_train_epochs E, max_steps N; the learning rate of each step is the long schedule's.",
    )
    learning_rate: PositiveFloat = 1e-5
    per_device_train_batch_size: PositiveInt = 8
    gradient_accumulation_steps: PositiveInt = 1
    processes: PositiveInt = Field(
        1,
        description="Data-parallel training processes (LLaMA-Factory under torchrun; gloo on "
        "CPU), each with cpu_threads threads and per_device_train_batch_size records per step.",
    )
    lr_scheduler_type: str = "cosine"
    warmup_ratio: Probability = 0.0
    weight_decay: NonNegativeFloat = 0.0
    max_grad_norm: NonNegativeFloat = Field(1.0, description="Gradient clipping (0: none).")
    deepspeed: Literal["zero2", "zero3"] | None = Field(
        None,
        description="A DeepSpeed config of config/deepspeed/ (needs deepspeed; without a CUDA "
        "device it runs on DeepSpeed's CPU accelerator with gloo).",
    )
    cutoff_len: PositiveInt = 1024
    missing_reasoning: Literal["stop", "drop"] = Field(
        "stop",
        description="Train records without a reasoning target: stop (name them) or drop them "
        "(their count goes to the output's vlrl_sft/dropped.json).",
    )
    box_frame: Literal["original", "model_input"] = Field(
        "original",
        description="The pixel frame of the boxes SFT teaches (grounding targets). original: the "
        "image as stored; model_input: the image as the model sees it in training "
        "(LLaMA-Factory's resize into image_min/max_pixels, then the processor's), the frame "
        "Qwen2.5-VL answers in and a benchmark of box_frame model_input reads.",
    )
    gradient_checkpointing: bool = Field(
        True,
        description="Recompute activations in the backward pass (LLaMA-Factory's default): less "
        "memory for more compute. Same weights either way; off is faster when memory is ample.",
    )
    lora_rank: PositiveInt = 8
    image_max_pixels: PositiveInt | None = Field(
        None, description="Pixel budget per image; None: the experiment's image_pixels.max."
    )
    image_min_pixels: PositiveInt | None = Field(
        None, description="None: the experiment's image_pixels.min."
    )
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="LLaMA-Factory train keys the schema does not model, passed through as they "
        "are; a key vlrl sets itself is an error (vlrl check).",
    )


SELF_REWARD_READERS = frozenset({"vision_sr1.visual", "vision_sr1.total"})
"""Rewards that read the ``self_reward_responses`` column the self_reward algorithm fills."""


class ThinkingRewardConfig(EndpointConfig):
    """Where SophiaVL's thinking reward model is served and how it is queried (released client:
    kxfan2002/SophiaVL-R1 @ a818494, ``verl/workers/reward/custom.py``)."""

    model: str | None = Field(
        None,
        description="Served model name (released: thinking-reward-model); with serve, None: the "
        "served model.",
    )
    cache_dir: str | None = Field(None, description="Where replies are cached (None: nowhere).")
    on_failure: Literal["missing", "score_zero"] = Field(
        "missing",
        description="A failed call or unparseable reply: missing (None, TRL ignores the sample; "
        "trust_grpo drops the whole group) or score_zero (0.0, the released behaviour). Both are "
        "counted and logged.",
    )


class TrustGRPOSettings(Section):
    """SophiaVL-R1 Trust-GRPO (paper: arXiv:2505.17018 §3.4, Eq. 1-6; released code:
    kxfan2002/SophiaVL-R1 @ a818494, ``verl/workers/reward/custom.py``).

    ``released`` (default): groups whose outcome scores are all ≥ ``skip_high`` or all ≤
    ``skip_low`` get no thinking reward and no queries; only responses with outcome ≥
    ``query_threshold`` are scored; the trust factor applies only when some response is correct.
    ``paper``: every response is scored and the trust factor always applies (Eq. 1-6).
    """

    variant: Literal["released", "paper"] = "released"
    alpha: float = Field(0.3, ge=0, description="Weight of the thinking reward (hard-coded 0.3).")
    T: float | None = Field(
        None,
        gt=0,
        description="Annealing temperature in exp(-step/T). None: 500 (released config default; "
        "the released fullsets.yaml sets 12000) for released, max_steps for paper.",
    )
    query_threshold: Probability = 0.2
    skip_high: Probability = 0.9
    skip_low: Probability = 0.1
    correct_threshold: Probability = 0.5
    reward_model: ThinkingRewardConfig

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> TrustGRPOSettings:
        # Above skip_high, the two skip rules would overlap: a group would be both solved and
        # failed.
        problems = order_problems(self, "skip_low", "skip_high")
        if problems:
            raise KeyProblems(*problems)
        return self


class SelfRewardSettings(Section):
    """Vision-SR1 self-reward (zli12321/Vision-SR1 @ 4480e08, ``verl/trainer/ray_trainer.py``
    ``fit()``): a second, image-free pass of
    the policy answers from its own description; no gradient flows through it."""

    missing_description: Literal["whole_response", "empty"] = Field(
        "whole_response",
        description="A response without <description>: released code sends the whole response "
        "(which can leak the boxed answer); 'empty' sends an empty description.",
    )


class GRPOConfig(Section):
    enabled: bool = True
    algorithm: Literal["grpo", "trust_grpo", "self_reward"] = Field(
        "grpo",
        description="grpo (TRL as is), trust_grpo (SophiaVL-R1), self_reward (Vision-SR1).",
    )
    trust: TrustGRPOSettings | None = Field(None, description="Settings of trust_grpo.")
    self_reward: SelfRewardSettings = Field(default_factory=SelfRewardSettings)
    reward_model: ThinkingRewardConfig | None = Field(
        None,
        description="Endpoint for the sophiavl.thinking reward when it is listed in rewards "
        "(plain weighted reward, no trust logic).",
    )
    rewards: dict[str, FiniteFloat] = Field(
        default_factory=lambda: {"common.format": 0.5, "common.accuracy": 1.0},
        min_length=1,
        description="Reward name (see vlrl.rewards.REGISTRY) → weight.",
    )
    max_samples: int | None = Field(
        None, ge=1, description="Train on at most this many records (after the tasks filter)."
    )
    tasks: list[str] | None = Field(
        None,
        min_length=1,
        description="Train only on records whose task is one of these (None: every record). "
        "Tasks whose reward gives the policy no usable signal can be left out. With shapes data, "
        "each must be one of data.shapes.tasks.",
    )
    shuffle: bool = Field(
        True,
        description="Draw the training prompts in a seeded random order (TRL's "
        "shuffle_dataset); false: in the records' order, as a released config with shuffle: "
        "false trains.",
    )
    max_steps: PositiveInt = Field(
        100, description="Optimizer steps trained: the run stops after this one."
    )
    schedule_steps: PositiveInt | None = Field(
        None,
        description="Optimizer steps the learning-rate schedule and its warm-up are planned for "
        "(None: max_steps). A released run planned for M steps whose step-N checkpoint a paper "
        "reports: max_steps N, schedule_steps M.",
    )
    schedule_epochs: PositiveFloat | None = Field(
        None,
        description="The schedule planned for this many epochs of the training data, counted "
        "as the trainer counts them (a released script's --num_train_epochs); the run still "
        "stops after max_steps, which must not be beyond the planned steps.",
    )
    learning_rate: PositiveFloat = 1e-6
    lr_scheduler_type: str = Field(
        "constant", description="transformers scheduler name (constant, linear, cosine, ...)."
    )
    warmup_ratio: float = Field(
        0.0, ge=0, lt=1, description="Warm-up, as a fraction of the schedule's steps."
    )
    weight_decay: NonNegativeFloat = 0.0
    max_grad_norm: NonNegativeFloat = Field(1.0, description="Gradient clipping (0: none).")
    steps_per_generation: int | None = Field(
        None,
        ge=1,
        description="TRL's steps_per_generation: forward/backward micro-steps per generation "
        "batch (generation batch = per_device_train_batch_size x processes x this). k optimizer "
        "steps per rollout: k x gradient_accumulation_steps. None: gradient_accumulation_steps "
        "(one optimizer step per rollout, TRL's default).",
    )
    entropy_coef: NonNegativeFloat = Field(
        0.0, description="Entropy bonus in the loss (TRL entropy_coef; SophiaVL's entropy_coeff)."
    )
    per_device_train_batch_size: PositiveInt = Field(
        8, description="Completions per process per step (generation batch: x processes)."
    )
    gradient_accumulation_steps: PositiveInt = 1
    processes: PositiveInt = Field(
        1,
        description="Data-parallel training processes (torchrun; gloo on CPU), each with "
        "cpu_threads threads; each generates and trains on its share of the completions.",
    )
    num_generations: int = Field(4, ge=2)
    max_completion_length: PositiveInt = 64
    temperature: PositiveFloat = 1.0
    top_p: TopP = 1.0
    top_k: NonNegativeInt = Field(0, description="Top-k sampling of rollouts; 0: off.")
    beta: NonNegativeFloat = 0.0
    epsilon: PositiveFloat = 0.2
    epsilon_high: PositiveFloat | None = None
    num_iterations: PositiveInt = 1
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    freeze_vision: bool = False
    lora: bool = False
    lora_rank: PositiveInt = 8
    lora_alpha: PositiveInt = 16
    gradient_checkpointing: bool = False
    logging_steps: PositiveInt = 5
    save_steps: int | None = Field(
        None, ge=1, description="Checkpoint every N steps (under results/<exp>/grpo_checkpoints)."
    )
    save_total_limit: int = Field(
        2,
        ge=1,
        description="Keep only the newest N checkpoints of a run (all are removed when it ends).",
    )
    resume: bool = Field(
        True,
        description="Resume from the last checkpoint of an interrupted run of the same config.",
    )
    stop_margin_s: NonNegativeInt = Field(
        300,
        description="How long before its Slurm job's time limit (resources.grpo.runtime) a run "
        "stops and saves a checkpoint, besides two of its longest steps: enough to write one. "
        "The job is then requeued and resumes. Slurm's stop signal comes this long before the "
        "limit too (vlrl.cluster.preemption.signal_option): make it cover one step and one save.",
    )
    max_requeues: NonNegativeInt = Field(
        10,
        description="How many times a run stopped by its time limit or a stop signal requeues its "
        "Slurm job (each time only if it saved a checkpoint past the step it started from); "
        "then the stage fails and says why.",
    )
    image_max_pixels: PositiveInt | None = Field(
        None, description="Pixel budget per image; None: the experiment's image_pixels.max."
    )
    image_min_pixels: PositiveInt | None = Field(
        None, description="None: the experiment's image_pixels.min."
    )
    use_vllm: bool = Field(False, description="Generate rollouts with vLLM (needs vllm, a GPU).")
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    vllm_tensor_parallel_size: int = Field(1, ge=1)
    vllm_server_gpus: int = Field(
        1,
        ge=0,
        description="vllm_mode server: GPUs of the node the TRL vLLM server (trl vllm-serve) "
        "takes (the last visible ones; the training ranks keep the rest); its tensor-parallel "
        "size. 0: on a stage without GPUs only, the server runs on the CPU (vLLM's CPU build).",
    )
    deepspeed: Literal["zero2", "zero3"] | None = Field(
        None,
        description="A DeepSpeed config of config/deepspeed/ (needs deepspeed; without a CUDA "
        "device it runs on DeepSpeed's CPU accelerator with gloo).",
    )
    extra: dict[str, Any] = Field(
        default_factory=dict,
        description="TRL GRPOConfig options the schema does not model, passed through as they "
        "are; a key that is not a TRL option, or one vlrl sets itself, is an error (vlrl check).",
    )

    @property
    def server_gpus(self) -> int:
        """GPUs of the training node the run's managed servers take for themselves: the TRL
        vLLM server (``vllm_mode: server``) and any reward model whose ``serve.gpus`` is set
        (:mod:`vlrl.serving.gpus` gives them the last ones). The ranks per node are the rest."""
        reward_models = [self.reward_model]
        if self.algorithm == "trust_grpo" and self.trust is not None:
            reward_models.append(self.trust.reward_model)
        taken = sum(rm.serve.gpus for rm in reward_models if rm is not None and rm.serve)
        return taken + (
            self.vllm_server_gpus if self.use_vllm and self.vllm_mode == "server" else 0
        )

    def group_problems(self, world: int, where: str) -> list[tuple[str, str]]:
        """``[(key, why)]`` when a generation batch does not hold whole groups: TRL 1.16's
        generation_batch_size = per_device_train_batch_size x ``world`` (the training processes:
        GPUs x nodes, or CPU processes) x steps_per_generation (default
        gradient_accumulation_steps) must be a multiple of num_generations.

        >>> GRPOConfig(per_device_train_batch_size=4, gradient_accumulation_steps=2,
        ...            num_generations=16).group_problems(4, "4 GPUs")
        []
        >>> cfg = GRPOConfig(per_device_train_batch_size=4, num_generations=16)
        >>> cfg.group_problems(1, "1 process")[0][1][:46]
        'per_device_train_batch_size 4 x 1 process x st'
        """
        steps = self.steps_per_generation or self.gradient_accumulation_steps
        batch = self.per_device_train_batch_size * world * steps
        if batch % self.num_generations == 0:
            return []
        return [
            (
                "per_device_train_batch_size",
                f"per_device_train_batch_size {self.per_device_train_batch_size} x {where} x "
                f"steps_per_generation (default gradient_accumulation_steps) {steps} = {batch} "
                f"completions per generation batch is not a multiple of num_generations "
                f"({self.num_generations}); TRL generates whole groups of num_generations",
            )
        ]

    @model_validator(mode="after")
    def _algorithm_settings(self) -> GRPOConfig:
        visual = sorted(set(self.rewards) & SELF_REWARD_READERS)
        problems = []
        if self.algorithm == "trust_grpo" and self.trust is None:
            problems.append(
                (
                    "trust",
                    "grpo.algorithm is trust_grpo but grpo.trust (with reward_model: base_url, "
                    "model) is missing",
                )
            )
        if self.algorithm == "self_reward" and not visual:
            problems.append(
                (
                    "rewards",
                    "grpo.algorithm is self_reward but grpo.rewards has none of "
                    f"{sorted(SELF_REWARD_READERS)}, which read the second pass",
                )
            )
        if self.algorithm != "self_reward" and visual:
            problems.append(
                (
                    "rewards",
                    f"grpo.rewards lists {visual}, which need the second pass of "
                    "grpo.algorithm: self_reward",
                )
            )
        # (Whole groups per generation batch: checked by ExperimentConfig, which knows how many
        # training processes the stage's resources launch.)
        # (The pixel bounds are ordered by ExperimentConfig, once the shared budget fills them.)
        # Clip-higher (DAPO): the upper clip range widens the lower one, never narrows it.
        problems += order_problems(self, "epsilon", "epsilon_high")
        # a run stops within its schedule, planned one way
        problems += order_problems(self, "max_steps", "schedule_steps")
        if self.schedule_steps is not None and self.schedule_epochs is not None:
            problems.append(
                (
                    "schedule_epochs",
                    "grpo.schedule_steps and grpo.schedule_epochs both plan the schedule: set one",
                )
            )
        if problems:
            raise KeyProblems(*problems)
        return self
