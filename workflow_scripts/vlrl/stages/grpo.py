"""grpo stage: GRPO with TRL's GRPOTrainer on the SFT model (or the base model when SFT is off).

Rewards come from :data:`vlrl.rewards.REGISTRY` with the weights of ``grpo.rewards``; training
curves (reward per function, KL, completion length, ...) are logged with dvclive under
``results/<exp>/grpo/dvclive`` so ``dvc plots show`` draws them. The final policy is saved under
``results/<exp>/grpo/final`` (a LoRA adapter when ``grpo.lora``; merge makes it standalone).

The output holds only what the inputs determine: TRL's run times (``step_time``,
``train_runtime``, ``train_*_per_second``) are kept out of the curves and of
``train_summary.json`` and written to the stage's log instead (:mod:`vlrl.volatile`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl import paths
from vlrl.algorithms import build_trainer
from vlrl.config import THINKING_REWARD, ExperimentConfig, GRPOConfig
from vlrl.data.convert import to_conversation
from vlrl.distributed import (
    STOP_AT_ENV,
    Topology,
    rendezvous_for,
    requeue_job,
    stop_time,
    topology,
    torchrun_command,
)
from vlrl.errors import StageError
from vlrl.files import atomic_dir, write_json
from vlrl.launch import run_group
from vlrl.prompts import get_prompt
from vlrl.records import Record, read_records
from vlrl.rewards import get_reward
from vlrl.servers import serving
from vlrl.threads import cpu_kernel_report
from vlrl.volatile import split_run_times

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = (
    "seed",
    "cpu_threads",
    "cpu_kernels",
    "prompt",
    "base_model",
    "sft.enabled",
    "grpo",
    # They set the process count, which splits every batch (the rest of resources.grpo does not
    # change the result).
    "resources.grpo.gpus",
    "resources.grpo.nodes",
)

FINGERPRINT = "vlrl_fingerprint.txt"
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


def build_dataset(records: list[Record], data_dir: Path, cfg: ExperimentConfig):
    """A datasets.Dataset with TRL's conversational ``prompt``, an ``images`` column of PIL
    images (one or more per row), and the columns rewards read (problem, answer, problem_type,
    boxes, options, caption, image_sizes, task)."""
    import datasets

    fmt = get_prompt(cfg.prompt)
    rows = [
        {
            "prompt": to_conversation(r, fmt),
            "images": [str(data_dir / p) for p in r.images],
            "problem": r.problem,
            "answer": r.answer,
            "problem_type": r.problem_type,
            "boxes": r.boxes,
            "options": r.options,
            "caption": r.caption,
            "image_sizes": r.image_sizes,
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
    extra: dict[str, Any] = {}
    if cfg.use_vllm:
        extra |= {
            "use_vllm": True,
            "vllm_mode": cfg.vllm_mode,
            "vllm_gpu_memory_utilization": cfg.vllm_gpu_memory_utilization,
            "vllm_tensor_parallel_size": cfg.vllm_tensor_parallel_size,
        }
    if cfg.deepspeed:
        extra["deepspeed"] = str(paths.deepspeed_file(cfg.deepspeed))
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
        save_total_limit=cfg.save_total_limit,
        report_to="none",
        bf16=gpu,
        use_cpu=not gpu,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        disable_tqdm=False,
        **extra,
    )


def check_backends(cfg: GRPOConfig) -> None:
    """Fail early, naming the option, when a requested backend is not installed or has no GPU."""
    import importlib.util

    import torch

    wanted = {
        "grpo.use_vllm": ("vllm", cfg.use_vllm),
        "grpo.deepspeed": ("deepspeed", cfg.deepspeed),
    }
    for option, (module, on) in wanted.items():
        if not on:
            continue
        if importlib.util.find_spec(module) is None:
            raise StageError(f"{option} is set but {module} is not installed in this environment")
        if not torch.cuda.is_available():
            raise StageError(f"{option} is set but no GPU is visible")
    if cfg.deepspeed and not paths.deepspeed_file(cfg.deepspeed).is_file():
        raise StageError(f"grpo.deepspeed: {paths.deepspeed_file(cfg.deepspeed)} is missing")


def reward_functions(cfg: GRPOConfig) -> list[Any]:
    """The configured rewards in config order: registry rewards by name, and the reward-model
    reward ``sophiavl.thinking`` built from ``grpo.reward_model``."""
    from vlrl.rewards.thinking import get_thinking_reward

    funcs: list[Any] = []
    for name in cfg.rewards:
        if name == THINKING_REWARD:
            assert cfg.reward_model is not None  # config validation guarantees it
            funcs.append(get_thinking_reward(cfg.reward_model))
        else:
            funcs.append(NamedReward(name))
    return funcs


def resume_point(checkpoints: Path, fingerprint: str, enabled: bool) -> str | None:
    """The last checkpoint of an interrupted run with the same fingerprint, or None.

    A checkpoint directory left by a different configuration is cleared rather than resumed.
    """
    from transformers.trainer_utils import get_last_checkpoint

    stamp = checkpoints / FINGERPRINT
    if checkpoints.is_dir() and (
        not enabled or not stamp.is_file() or stamp.read_text() != fingerprint
    ):
        log.info("grpo: clearing %s (another configuration or resume off)", checkpoints)
        shutil.rmtree(checkpoints)
    checkpoints.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint)
    last = get_last_checkpoint(str(checkpoints))
    if last:
        log.info("grpo: resuming from %s", last)
    return last


def fingerprint(exp: str, cfg: ExperimentConfig, start: Path) -> str:
    """What a checkpoint must share with this run to be resumed: the grpo section, the seed,
    the prompt, and the start model's weights file metadata."""
    import hashlib
    import json

    weights = sorted(
        (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in start.glob("*.safetensors")
    )
    blob = json.dumps(
        {
            "exp": exp,
            "grpo": cfg.grpo.model_dump(mode="json"),
            "seed": cfg.seed,
            "prompt": cfg.prompt,
            "weights": weights,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


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


def write_curves(directory: Path, args: Any, history: list[dict[str, Any]]) -> None:
    """The training curves, written as transformers' DVCLive callback writes them during
    training (the run's arguments as params, one dvclive step per log row), from the whole log
    history without run times: a run resumed from a checkpoint gets the curves of every step,
    which its trainer state restored, not only of the steps it ran (only ``train/loss``, the
    Trainer's mean loss of the steps this run took, differs from an uninterrupted run's).

    ``dvcyaml=None``: dvclive must not edit the generated dvc.yaml (the plots are declared there).
    """
    from dvclive import Live
    from dvclive.plots import Metric
    from dvclive.utils import standardize_metric_name

    live = Live(dir=str(directory), dvcyaml=None, save_dvc_exp=False, report=None, resume=False)
    live.log_params(args.to_dict())
    for row in history:
        # keys sorted: a resumed run's first rows come back from the checkpoint's trainer state
        # sorted, and the curves' summary must not depend on that
        for key, value in sorted(row.items()):
            if key != "step" and Metric.could_log(value):
                live.log_metric(standardize_metric_name(key, "dvclive.huggingface"), value)
        live.next_step()
    live.end()


def split_log_history(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """TRL's log history without run times, and the run times (``step_time`` per logged step,
    the rest of the last row's: ``train_runtime``, ...).

    >>> rows, times = split_log_history([{"loss": 0.1, "step_time": 0.5, "step": 1},
    ...                                  {"train_loss": 0.1, "train_runtime": 2.0, "step": 1}])
    >>> rows
    [{'loss': 0.1, 'step': 1}, {'train_loss': 0.1, 'step': 1}]
    >>> times
    {'step_time': [0.5], 'train_runtime': 2.0}
    """
    kept_rows, step_times, totals = [], [], {}
    for row in history:
        kept, times = split_run_times(row)
        kept_rows.append(kept)
        if "step_time" in times:
            step_times.append(times.pop("step_time"))
        totals.update(times)
    return kept_rows, {"step_time": step_times, **totals}


# ------------------------------------------------------------------ reward-model servers
class _WithGRPO:
    """``cfg`` with its grpo section replaced; every other key is read from ``cfg`` (so a
    recording view, :mod:`vlrl.workflow.reads`, still records it)."""

    def __init__(self, cfg: ExperimentConfig, grpo: GRPOConfig) -> None:
        self._cfg, self.grpo = cfg, grpo

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cfg, name)


@contextlib.contextmanager
def served_reward_models(exp: str, cfg: ExperimentConfig) -> Iterator[ExperimentConfig]:
    """``cfg`` with the reward-model servers the run calls started: ``grpo.reward_model`` when
    ``sophiavl.thinking`` is a reward, ``grpo.trust.reward_model`` under trust_grpo, each when it
    sets ``serve`` (:func:`vlrl.servers.serving`; logs in ``logs/grpo/<exp>/``). They run in this
    process's care for the whole training, and the ranks get their addresses in their config
    file; they are stopped when the block ends, also on failure."""
    grpo = cfg.grpo
    rm = grpo.reward_model if THINKING_REWARD in grpo.rewards else None
    trust_rm = grpo.trust.reward_model if grpo.algorithm == "trust_grpo" and grpo.trust else None
    rm = rm if rm is not None and rm.serve is not None else None
    trust_rm = trust_rm if trust_rm is not None and trust_rm.serve is not None else None
    if rm is None and trust_rm is None:
        yield cfg
        return
    if cfg.resources.grpo.nodes > 1:
        raise StageError(
            "grpo: a reward model with serve runs on 127.0.0.1 of the first node, which the "
            "other nodes' ranks cannot reach; with resources.grpo.nodes > 1 give its base_url"
        )
    log_dir = paths.server_log_dir("grpo", exp)
    with contextlib.ExitStack() as stack:
        update: dict[str, Any] = {}
        if rm is not None:
            update["reward_model"] = stack.enter_context(serving(rm, log_dir, "reward_model"))
        if trust_rm is not None:
            served = stack.enter_context(serving(trust_rm, log_dir, "trust.reward_model"))
            update["trust"] = grpo.trust.model_copy(update={"reward_model": served})
        yield _WithGRPO(cfg, grpo.model_copy(update=update))  # type: ignore[misc]


def run(exp: str, cfg: ExperimentConfig) -> dict[str, Any]:
    """Train ``results/<exp>/grpo`` with TRL GRPO, in the processes of ``resources.grpo`` (one per
    GPU, else ``grpo.processes`` on CPU; :mod:`vlrl.distributed`).

    Returns:
        The run times TRL logged (``step_time`` per logged step, ``train_runtime``, ...), which
        the output leaves out; the stage's log has them too.
    """
    if not cfg.grpo.enabled:
        raise StageError(
            f"experiment {exp}: grpo.enabled is false; the workflow should not run grpo"
        )
    start = paths.policy_start_dir(exp, cfg.sft.enabled, cfg.base_model)
    data_dir = paths.data_dir(exp)
    for needed in (data_dir / "train.jsonl", start / "config.json"):
        if not needed.is_file():
            raise StageError(f"grpo: input {needed} is missing; run the earlier stages first")
    check_backends(cfg.grpo)
    checkpoints = paths.grpo_checkpoints_dir(exp)
    resume_from = resume_point(checkpoints, fingerprint(exp, cfg, start), cfg.grpo.resume)
    topo = topology(cfg.resources.grpo, cfg.grpo.processes)
    stop_at = stop_time(cfg.grpo.stop_margin_s)
    if stop_at is not None:
        os.environ[STOP_AT_ENV] = repr(stop_at)  # the ranks read it too
        log.info("grpo: stops to resume later %.0f s from now", stop_at - time.time())
    with atomic_dir(paths.grpo_dir(exp)) as out, served_reward_models(exp, cfg) as run_cfg:
        if topo.world_size == 1:
            times = train(exp, run_cfg, out, resume_from)
        else:
            times = train_in_ranks(exp, run_cfg, topo, out, resume_from)
        if "stopped_at" in times:
            _stopped(times["stopped_at"], cfg.grpo.max_steps, checkpoints)
    shutil.rmtree(checkpoints, ignore_errors=True)
    steps = times["step_time"]
    log.info(
        "grpo: run times (kept out of %s): median step %s s, %s",
        paths.grpo_dir(exp),
        f"{statistics.median(steps):.3f}" if steps else "-",
        json.dumps({**times, "step_time": [round(s, 4) for s in steps]}),
    )
    log.info("grpo: wrote %s", paths.grpo_dir(exp))
    return times


def _stopped(step: int, max_steps: int, checkpoints: Path) -> None:
    """After a run that stopped before its time limit: requeue the Slurm job (it restarts this
    rule, which resumes), and fail this run, leaving no output."""
    requeued = requeue_job()
    raise StageError(
        f"grpo: stopped after step {step} of {max_steps} before the job's time limit, with a "
        f"checkpoint in {checkpoints}; "
        + (
            "the Slurm job is requeued and resumes from it"
            if requeued
            else "rerun the stage to resume from it"
        )
    )


def train(exp: str, cfg: ExperimentConfig, out: Path, resume_from: str | None) -> dict[str, Any]:
    """One training process: build the dataset, policy, rewards and trainer, train, and (on
    the main process) save the policy and ``train_summary.json`` into ``out``.

    Under torchrun every rank runs this; accelerate reads the rank from the environment.

    Returns:
        The run times of the log history (see :func:`split_log_history`); only
        ``{"stopped_at": step}`` when it stopped before its time limit (``$VLRL_STOP_AT``,
        :mod:`vlrl.timelimit`), leaving a checkpoint instead of the policy.
    """
    from transformers import set_seed

    from vlrl.timelimit import StopBeforeLimit

    start = paths.policy_start_dir(exp, cfg.sft.enabled, cfg.base_model)
    data_dir = paths.data_dir(exp)
    set_seed(cfg.seed)
    records = select_tasks(read_records(data_dir / "train.jsonl"), cfg.grpo)
    dataset = build_dataset(records, data_dir, cfg)
    # Resuming a full fine-tune, the policy's weights come from the checkpoint through
    # from_pretrained: the Trainer's own reload misses every weight of a Qwen2.5-VL checkpoint
    # (it skips the key conversion from_pretrained applies, transformers#43701) and trains on
    # from the start model's weights, with only a warning.
    own_reload = resume_from is not None and not cfg.grpo.lora and not cfg.grpo.deepspeed
    model, processor = load_policy(start, cfg.grpo, Path(resume_from) if own_reload else None)
    log.info("grpo: CPU kernels %s", cpu_kernel_report())
    rewards = reward_functions(cfg.grpo)
    log.info(
        "grpo: %d prompts, %d steps, rewards %s, from %s",
        len(dataset),
        cfg.grpo.max_steps,
        dict(cfg.grpo.rewards),
        start,
    )
    main = int(os.environ.get("RANK", "0")) == 0
    callbacks = []
    stopper = None
    if os.environ.get(STOP_AT_ENV):
        stopper = StopBeforeLimit(float(os.environ[STOP_AT_ENV]))
        callbacks.append(stopper)
    trainer = build_trainer(
        cfg.grpo,
        model=model,
        reward_funcs=rewards,
        args=trl_config(cfg.grpo, paths.grpo_checkpoints_dir(exp), cfg.seed),
        train_dataset=dataset,
        processing_class=processor,
        peft_config=peft_config(cfg.grpo),
        callbacks=callbacks,
    )
    if own_reload:
        trainer._load_from_checkpoint = lambda *args, **kwargs: None  # loaded above
    log.info(
        "grpo: %s, %d trainable parameters",
        cfg.grpo.algorithm,
        sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
    )
    result = trainer.train(resume_from_checkpoint=resume_from)
    if stopper is not None and stopper.stopped_at is not None:
        return {"stopped_at": stopper.stopped_at}
    final = out / paths.GRPO_FINAL
    trainer.save_model(str(final))  # on the main process only
    history, times = split_log_history(trainer.state.log_history)
    if main:
        processor.save_pretrained(str(final))
        write_curves(out / paths.GRPO_DVCLIVE, trainer.args, history)
        write_json(
            out / "train_summary.json",
            {
                "start_model": str(start),
                "algorithm": cfg.grpo.algorithm,
                "resumed_from": resume_from,
                "steps": result.global_step,
                "train_loss": result.training_loss,
                "rewards": dict(cfg.grpo.rewards),
                "lora": cfg.grpo.lora,
                "log_history": history,
            },
        )
    return times


RANK_CONFIG = "vlrl_rank_config.json"
RANK_TIMES = "vlrl_rank_times.json"


def train_in_ranks(
    exp: str, cfg: ExperimentConfig, topo: Topology, out: Path, resume_from: str | None
) -> dict[str, Any]:
    """:func:`train` in the processes of ``topo`` under torchrun (gloo on CPU, nccl on GPUs;
    one torchrun per node through srun when it spans nodes, :mod:`vlrl.distributed`).

    The ranks get the config keys this stage declares (:data:`READS`, resolved, overrides
    included) as a file, and inherit this process's thread and kernel pins through the
    environment; they run in their own process group, stopped with the stage.
    """
    checkpoints = paths.grpo_checkpoints_dir(exp)
    config_file = checkpoints / RANK_CONFIG
    config_file.write_text(json.dumps(declared_config(cfg)))
    times_file = checkpoints / RANK_TIMES
    times_file.unlink(missing_ok=True)
    target = ["-m", __name__, exp, str(config_file), str(out), resume_from or ""]
    cmd = torchrun_command(topo, target, rendezvous_for(topo))
    log.info("grpo: %d processes: %s", topo.world_size, shlex.join(cmd))
    returncode = run_group(cmd, os.environ, stdout=sys.stderr)
    if returncode != 0:
        raise StageError(f"grpo: the training processes exited with {returncode} (see above)")
    if not times_file.is_file():
        raise StageError(f"grpo: the training processes finished without writing {times_file}")
    return json.loads(times_file.read_text())


def declared_config(cfg: ExperimentConfig) -> dict[str, Any]:
    """The keys of :data:`READS` of ``cfg`` as a nested dict (sections whole).

    >>> from vlrl.config import load_experiment
    >>> tree = declared_config(load_experiment("tiny_shapes"))
    >>> sorted(tree)
    ['base_model', 'cpu_kernels', 'cpu_threads', 'grpo', 'prompt', 'resources', 'seed', 'sft']
    >>> tree["sft"], tree["resources"]
    ({'enabled': True}, {'grpo': {'gpus': 0, 'nodes': 1}})
    """
    tree: dict[str, Any] = {}
    for key in READS:
        *parents, last = key.split(".")
        node, branch = cfg, tree
        for name in parents:
            node, branch = getattr(node, name), branch.setdefault(name, {})
        value = getattr(node, last)
        branch[last] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    return tree


def _merge(tree: dict[str, Any], update: dict[str, Any]) -> None:
    """Set ``update``'s leaves in ``tree``; a section of ``update`` that is whole in it (a key
    of :data:`READS`) replaces the tree's.

    >>> tree = {"a": {"b": 1, "c": 2}, "d": 3}
    >>> _merge(tree, {"a": {"b": 5}, "d": 4}); tree
    {'a': {'b': 5, 'c': 2}, 'd': 4}
    """
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict) and key not in READS:
            _merge(tree[key], value)
        else:
            tree[key] = value


def rank_main(argv: list[str]) -> None:
    """Entry point of one torchrun rank: ``exp config.json out resume_from``.

    The stage's declared keys come from the file (overrides included), the rest from the
    experiment file alone. :func:`train` reads only declared keys: the tests run it under
    ``VLRL_CHECK_READS`` in one process, where every read is recorded.
    """
    from vlrl.config import load_experiment

    exp, config_file, out, resume_from = argv
    rank = int(os.environ.get("RANK", "0"))
    logging.basicConfig(level=logging.INFO, format=f"[rank {rank}] %(message)s")
    tree = load_experiment(exp).model_dump(mode="json")
    _merge(tree, json.loads(Path(config_file).read_text()))
    times = train(exp, ExperimentConfig.model_validate(tree), Path(out), resume_from or None)
    if rank == 0:
        Path(config_file).with_name(RANK_TIMES).write_text(json.dumps(times))
    _leave_process_group()


def _leave_process_group() -> None:
    """Tear the gloo/nccl group down before the interpreter exits: left to interpreter
    shutdown, gloo's threads may be destroyed while running, and a rank that finished training
    aborts ("terminate called without an active exception", exit -6), failing the stage."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    rank_main(sys.argv[1:])
