"""grpo stage: GRPO with TRL's GRPOTrainer on the SFT model (or the base model when SFT is off).

The stage resumes, launches the training processes and keeps the output; TRL's set-up (the
dataset, TRL's config, the policy, the reward functions) is :mod:`vlrl.algorithms.trl_setup`
and the trainer that of ``grpo.algorithm`` (:func:`vlrl.algorithms.build_trainer`).

Rewards come from :data:`vlrl.rewards.REGISTRY` with the weights of ``grpo.rewards``; training
curves (reward per function, KL, completion length, ...) are logged with dvclive under
``results/<exp>/grpo/dvclive`` so ``dvc plots show`` draws them. The final policy is saved under
``results/<exp>/grpo/final`` (a LoRA adapter when ``grpo.lora``; merge makes it standalone).

The output holds only what the inputs determine: TRL's run times (``step_time``,
``train_runtime``, ``train_*_per_second``) are kept out of the curves and of
``train_summary.json`` and written to the stage's log instead (:mod:`vlrl.core.volatile`).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from vlrl import sharing
from vlrl.algorithms import build_trainer, grpo_servers
from vlrl.algorithms.history import split_log_history, write_curves
from vlrl.algorithms.trl_setup import (
    build_dataset,
    check_backends,
    join_deepspeed,
    load_policy,
    peft_config,
    quiet_progress,
    reward_functions,
    select_tasks,
    trl_config,
)
from vlrl.cluster import checkpoints as ckpt
from vlrl.cluster import preemption
from vlrl.cluster.distributed import (
    Topology,
    deepspeed_env,
    rendezvous_for,
    stage_step_command,
    topology,
    torchrun_command,
)
from vlrl.cluster.launch import run_group
from vlrl.cluster.preemption import STOP_AT_ENV, stop_on_signals, stop_time
from vlrl.cluster.rank_exit import exit_finished_rank, report_aborts
from vlrl.cluster.relay import RELAYED_ENV, TERM_GRACE_S
from vlrl.cluster.threads import cpu_kernel_report
from vlrl.config import ExperimentConfig, GRPOConfig
from vlrl.config.keys import assign, select
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_dir, write_json
from vlrl.items.records import read_records

log = logging.getLogger(__name__)

OPERATIONAL = ("resume", "stop_margin_s", "max_requeues", "save_steps", "save_total_limit")
"""grpo keys that change how a run checkpoints and requeues, not what it trains: changing one
(as a failed requeue's message may ask) keeps the checkpoints."""


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
            "grpo": cfg.grpo.model_dump(mode="json", exclude=set(OPERATIONAL)),
            "seed": cfg.seed,
            "prompt": cfg.prompt,
            "weights": weights,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def job_step(cfg: ExperimentConfig, argv: list[str], env=None) -> list[str] | None:
    """The command that reruns ``vlrl <argv>`` (this stage) in a job step of its own under the
    relay, when it runs in a Slurm job outside one; None: run here.

    Slurm delivers stop signals (the time limit's, preemption's) to a step's first process only
    on most clusters (``proctrack/cgroup``), and the first process of the step Snakemake's
    Slurm executor starts is Snakemake: the relay passes them on to the stage and its ranks
    (:mod:`vlrl.cluster.relay`).

    Raises:
        StageError: a Slurm job without ``srun`` (a container without the Slurm client).
    """
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job or RELAYED_ENV in env:
        return None
    if not shutil.which("srun", path=env.get("PATH")):
        raise StageError(
            f"grpo runs in Slurm job {job} but srun is not on PATH, so it cannot start its "
            "training where Slurm's stop signals reach it. Inside a container, bind the Slurm "
            'client and its configuration in (README, "Run on a cluster")'
        )
    split = grpo_servers.gpu_split(cfg)
    topo = topology(cfg.resources.grpo, cfg.grpo.processes, split.reserved, cfg.cpu_threads)
    return stage_step_command(topo, argv, job)


def run(exp: str, cfg: ExperimentConfig) -> dict[str, Any]:
    """Train ``results/<exp>/grpo`` with TRL GRPO, in the processes of ``resources.grpo`` (one per
    GPU, else ``grpo.processes`` on CPU; :mod:`vlrl.cluster.distributed`).

    Returns:
        The run times TRL logged (``step_time`` per logged step, ``train_runtime``, ...), which
        the output leaves out; the stage's log has them too.
    """
    if not cfg.grpo.enabled:
        raise StageError(
            f"experiment {exp}: grpo.enabled is false; the workflow should not run grpo"
        )
    start = sharing.policy_start_dir(exp, cfg.sft.enabled, cfg.base_model)
    data_dir = sharing.data_dir(exp)
    for needed in (data_dir / "train.jsonl", start / "config.json"):
        if not needed.is_file():
            raise StageError(f"grpo: input {needed} is missing; run the earlier stages first")
    split = grpo_servers.gpu_split(cfg)
    if cfg.resources.grpo.gpus:  # before torch starts CUDA: the ranks' GPUs, not the servers'
        os.environ["CUDA_VISIBLE_DEVICES"] = split.training_env
    check_backends(cfg.grpo)
    if cfg.grpo.deepspeed:
        import torch

        # DeepSpeed's CPU accelerator where no CUDA device is; the ranks inherit it
        os.environ.update(deepspeed_env(torch.cuda.is_available()))
    topo = topology(cfg.resources.grpo, cfg.grpo.processes, split.reserved, cfg.cpu_threads)
    checkpoints = paths.grpo_checkpoints_dir(exp)
    deepspeed = cfg.grpo.deepspeed is not None
    resume_from = ckpt.resume_point(
        checkpoints, fingerprint(exp, cfg, start), cfg.grpo.resume, deepspeed, topo
    )
    preemption.record_start(
        checkpoints, ckpt.checkpoint_step(Path(resume_from)) if resume_from else 0
    )
    stop_at = stop_time(cfg.grpo.stop_margin_s)
    if stop_at is not None:
        os.environ[STOP_AT_ENV] = repr(stop_at)  # the ranks read it too
        log.info("grpo: stops to resume later %.0f s from now", stop_at - time.time())
    servers = grpo_servers.served(exp, cfg, start, split)
    with atomic_dir(paths.grpo_dir(exp)) as out, servers as run_cfg:
        # a stop signal (Slurm's before the limit, preemption) checkpoints and stops the ranks
        with stop_on_signals(forward=True, grace_s=TERM_GRACE_S):
            if topo.world_size == 1:
                times = train(exp, run_cfg, out, resume_from)
            else:
                times = train_in_ranks(exp, run_cfg, topo, out, resume_from)
        if "stopped_at" in times:
            _stopped(times, cfg.grpo, checkpoints, topo.world_size)
    shutil.rmtree(checkpoints, ignore_errors=True)
    steps = times["step_time"]
    log.info(
        "grpo: run times (kept out of %s): %d logged steps, median %s s; %s",
        paths.grpo_dir(exp),
        len(steps),
        f"{statistics.median(steps):.3f}" if steps else "-",
        json.dumps({k: v for k, v in times.items() if k != "step_time"}),
    )
    log.info("grpo: wrote %s", paths.grpo_dir(exp))
    return times


def _stopped(times: dict[str, Any], cfg: GRPOConfig, checkpoints: Path, ranks: int) -> None:
    """After a run that stopped before its time limit or on a stop signal: requeue the Slurm
    job (it restarts this rule, which resumes) where that makes progress
    (:func:`vlrl.cluster.preemption.requeue_refusal`; never with ``grpo.resume`` off, where the
    rerun would start at step 0 and stop here again), and fail this run, leaving no output."""
    what = f"grpo: stopped after step {times['stopped_at']} of {cfg.max_steps} " + times.get(
        "stopped_by", "before the job's time limit"
    )
    if not cfg.resume:
        raise StageError(
            f"{what}; not requeued: grpo.resume is false, so a rerun would start again from "
            "step 0 and stop at the same point. Set grpo.resume: true, or give the job the time "
            "the whole run needs (resources.grpo.runtime)"
        )
    record = preemption.read_requeues(checkpoints)
    newest = ckpt.newest_complete(
        checkpoints, deepspeed=cfg.deepspeed is not None, remove=False, ranks=ranks
    )
    reached = ckpt.checkpoint_step(newest) if newest else None
    refusal = preemption.requeue_refusal(record, reached, cfg.max_requeues)
    if refusal:
        raise StageError(f"{what}; not requeued: {refusal}")
    if "SLURM_JOB_ID" in os.environ:  # said first: the requeue ends this job at once (SIGTERM)
        log.warning(
            "%s, with a checkpoint in %s; requeuing the Slurm job (time %d of at most %d)",
            what,
            checkpoints,
            record["requeues"] + 1,
            cfg.max_requeues,
        )
    requeued, why_not = preemption.requeue_job(checkpoints)
    if requeued:
        then = (
            f"the Slurm job is requeued (time {record['requeues'] + 1} of at most "
            f"{cfg.max_requeues}) and resumes from it"
        )
    elif "SLURM_JOB_ID" in os.environ:
        then = f"not requeued: {why_not}. Rerun the stage to resume from it"
    else:
        then = "rerun the stage to resume from it"
    raise StageError(f"{what}, with a checkpoint in {checkpoints}; {then}")


def train(exp: str, cfg: ExperimentConfig, out: Path, resume_from: str | None) -> dict[str, Any]:
    """One training process: build the dataset, policy, rewards and trainer, train, and (on
    the main process) save the policy and ``train_summary.json`` into ``out``.

    Under torchrun every rank runs this; accelerate reads the rank from the environment.

    Returns:
        The run times of the log history (see :func:`split_log_history`); only
        ``{"stopped_at": step, "stopped_by": why}`` when it stopped before its time limit
        (``$VLRL_STOP_AT``) or on a stop signal (:mod:`vlrl.cluster.timelimit`), leaving a
        checkpoint instead of the policy.
    """
    from transformers import set_seed

    from vlrl.algorithms.schedule import stop_callbacks
    from vlrl.cluster.timelimit import StopBeforeLimit

    start = sharing.policy_start_dir(exp, cfg.sft.enabled, cfg.base_model)
    data_dir = sharing.data_dir(exp)
    set_seed(cfg.seed)
    records = select_tasks(read_records(data_dir / "train.jsonl"), cfg.grpo)
    # Resuming a full fine-tune, the policy's weights come from the checkpoint through
    # from_pretrained: the Trainer's own reload misses every weight of a Qwen2.5-VL checkpoint
    # (it skips the key conversion from_pretrained applies, transformers#43701) and trains on
    # from the start model's weights, with only a warning.
    own_reload = resume_from is not None and not cfg.grpo.lora and not cfg.grpo.deepspeed
    model, processor = load_policy(start, cfg.grpo, Path(resume_from) if own_reload else None)
    # The policy's processor gives each image's input frame (the column input_size).
    dataset = build_dataset(records, data_dir, cfg, processor.image_processor)
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
    stop_at = os.environ.get(STOP_AT_ENV)
    stopper = StopBeforeLimit(float(stop_at) if stop_at else None, last_step=cfg.grpo.max_steps)
    callbacks = [stopper, *stop_callbacks(cfg.grpo)]
    args = trl_config(cfg.grpo, paths.grpo_checkpoints_dir(exp), cfg.seed)
    if cfg.grpo.deepspeed:
        join_deepspeed(args)
    trainer = build_trainer(
        cfg.grpo,
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=dataset,
        processing_class=processor,
        peft_config=peft_config(cfg.grpo),
        callbacks=callbacks,
    )
    quiet_progress(trainer, cfg.grpo.max_steps)
    if own_reload:
        trainer._load_from_checkpoint = lambda *args, **kwargs: None  # loaded above
    log.info(
        "grpo: %s, %d trainable parameters",
        cfg.grpo.algorithm,
        sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
    )
    result = trainer.train(resume_from_checkpoint=resume_from)
    if stopper.stopped_at is not None:
        return {"stopped_at": stopper.stopped_at, "stopped_by": stopper.stopped_by}
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
    one torchrun per node through srun when it spans nodes, :mod:`vlrl.cluster.distributed`).

    The ranks get the config keys this stage declares (:mod:`vlrl.config.reads`, resolved, overrides
    included) as a file, and inherit this process's thread and kernel pins through the
    environment; they run in their own process group, stopped with the stage.
    """
    checkpoints = paths.grpo_checkpoints_dir(exp)
    config_file = checkpoints / RANK_CONFIG
    config_file.write_text(json.dumps(select(cfg, declared_reads("grpo"))))
    times_file = checkpoints / RANK_TIMES
    times_file.unlink(missing_ok=True)
    target = ["-m", __name__, exp, str(config_file), str(out), resume_from or ""]
    cmd = torchrun_command(topo, target, rendezvous_for(topo))
    log.info("grpo: %d processes: %s", topo.world_size, shlex.join(cmd))
    returncode = run_group(cmd, os.environ, stdout=sys.stderr)
    times = json.loads(times_file.read_text()) if times_file.is_file() else None
    # torchrun exits non-zero after a SIGTERM even when its ranks checkpointed and stopped
    if returncode != 0 and not (times and "stopped_at" in times):
        raise StageError(f"grpo: the training processes exited with {returncode} (see above)")
    if times is None:
        raise StageError(f"grpo: the training processes finished without writing {times_file}")
    return times


def rank_main(argv: list[str]) -> NoReturn:
    """Entry point of one torchrun rank: ``exp config.json out resume_from``; it never returns
    (:func:`vlrl.cluster.rank_exit.exit_finished_rank` ends the finished rank).

    The stage's declared keys come from the file (overrides included), the rest from the
    experiment file alone. :func:`train` reads only declared keys: the tests run it under
    ``VLRL_CHECK_READS`` in one process, where every read is recorded.
    """
    from vlrl.config import load_experiment

    exp, config_file, out, resume_from = argv
    report_aborts()
    rank = int(os.environ.get("RANK", "0"))
    logging.basicConfig(level=logging.INFO, format=f"[rank {rank}] %(message)s")
    with stop_on_signals():  # Slurm signals every rank; torchrun passes SIGTERM on
        tree = assign(
            load_experiment(exp).model_dump(mode="json"),
            json.loads(Path(config_file).read_text()),
        )
        times = train(exp, ExperimentConfig.model_validate(tree), Path(out), resume_from or None)
    if rank == 0:
        Path(config_file).with_name(RANK_TIMES).write_text(json.dumps(times))
    exit_finished_rank()


if __name__ == "__main__":
    rank_main(sys.argv[1:])
