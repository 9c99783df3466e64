"""sft stage: cold-start supervised fine-tuning with LLaMA-Factory.

Writes LLaMA-Factory's ``dataset_info.json``, the sharegpt data and a train yaml from the
experiment config, then runs ``llamafactory-cli train`` from the sft environment (LLaMA-Factory's
pins conflict with TRL's, so it lives in its own venv; see envs/sft.in). The output directory is a
standalone HF model (LLaMA-Factory saves the processor with it); the files it trained from are kept
under ``vlrl_sft/`` beside it.

The output holds only what the inputs determine, so that every checkout and every machine hashes
it the same: the train yaml names paths relative to the project root (the final output directory,
not the temporary one LLaMA-Factory writes into), the sharegpt rows name images relative to the
data directory (``media_dir``), and LLaMA-Factory's run times (``train_runtime``,
``elapsed_time``, ...) and its files holding absolute paths (the model card ``README.md``, the
pickled ``training_args.bin``) go to the stage's log instead (:func:`drop_run_records`).

Unlike grpo (:mod:`vlrl.cluster.preemption`, :mod:`vlrl.cluster.checkpoints`), sft neither
checkpoints on a signal nor resumes: a stopped or killed run (SIGTERM: the CLI stops LLaMA-Factory's
process group, :mod:`vlrl.cluster.launch`) starts again from step 0 when rerun. LLaMA-Factory 0.9.5
gives no hook for it: it handles no signal but SIGABRT, and that only under its web UI
(``LLAMABOARD_ENABLED``; llamafactory/train/callbacks.py, ``LogCallback``), where it stops
without a checkpoint; it resumes only from a ``checkpoint-*`` in the same ``output_dir`` with
``overwrite_output_dir`` off (llamafactory/hparams/parser.py), while this stage trains into a
fresh temporary directory with ``save_strategy: no`` so that its output holds only what the
inputs determine; and transformers' own ``enable_jit_checkpoint`` (SIGTERM only) lets each rank
save on its own timer, with no agreement on the step. Cold-start SFT is short beside GRPO: give
its job the time it needs (``resources.sft.runtime``).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from vlrl import sharing
from vlrl.cluster import llamafactory_train
from vlrl.cluster.distributed import (
    deepspeed_env,
    llamafactory_command,
    rendezvous_for,
    topology,
)
from vlrl.cluster.launch import run_group
from vlrl.cluster.threads import KERNEL_VARIABLES, MACHINE_KERNEL_VARIABLES
from vlrl.config import ExperimentConfig, SFTConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_dir
from vlrl.core.volatile import split_run_times
from vlrl.data.convert import SHAREGPT_DATASET_INFO, needs_reasoning, to_sharegpt
from vlrl.items.frames import llamafactory_input_size, to_input_frame
from vlrl.items.prompts import get_prompt
from vlrl.items.records import Record, read_records

log = logging.getLogger(__name__)

DATASET_NAME = "vlrl_train"
WORK = "vlrl_sft"
"""The output's subdirectory holding the files LLaMA-Factory trained from."""
DROPPED_FILES = ("README.md", "training_args.bin")
"""LLaMA-Factory's files that hold absolute paths (the temporary output directory, the base
model's path); what they record is in ``vlrl_sft/train.yaml``."""
RESULT_FILES = ("all_results.json", "train_results.json")
TRAINER_STATE = "trainer_state.json"
TRAINER_LOG = "trainer_log.jsonl"
# LLaMA-Factory's template for Qwen2-VL and Qwen2.5-VL (llamafactory 0.9.5 extras/constants.py)
TEMPLATE = "qwen2_vl"


def llamafactory_cli() -> str:
    """``$VLRL_LLAMAFACTORY_CLI``, else ``.venv-sft/bin/llamafactory-cli``, else the one on PATH."""
    candidates = [
        os.environ.get("VLRL_LLAMAFACTORY_CLI"),
        str(paths.root() / ".venv-sft" / "bin" / "llamafactory-cli"),
        shutil.which("llamafactory-cli"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    raise StageError(
        "llamafactory-cli not found: run `make setup` (creates .venv-sft) "
        "or set VLRL_LLAMAFACTORY_CLI"
    )


def train_command(cli: str) -> list[str]:
    """The command that takes ``llamafactory-cli train``'s arguments: the python beside ``cli``
    (its environment) running :mod:`vlrl.cluster.llamafactory_train`, LLaMA-Factory's CLI with
    vlrl's callbacks (``sft.max_steps``); a ``cli`` with no python beside it (a test's stand-in)
    runs as it is.

    >>> train_command("/nowhere/bin/llamafactory-cli")
    ['/nowhere/bin/llamafactory-cli', 'train']
    """
    python = Path(cli).with_name("python")
    if not python.is_file():
        return [cli, "train"]
    return [str(python), "-m", llamafactory_train.MODULE, "train"]


def has_accelerator() -> bool:
    """Whether torch sees a CUDA device (decides bf16 and CPU flags)."""
    import torch

    return torch.cuda.is_available()


#: LLaMA-Factory options vlrl sets for its own runs, not from the sft section: ``sft.extra`` may
#: change them (e.g. ``logging_steps``, ``report_to``).
OVERRIDABLE = frozenset(
    {
        "logging_steps",
        "report_to",
        "plot_loss",
        "save_strategy",
        "save_only_model",
        "preprocessing_num_workers",
        "dataloader_num_workers",
        "overwrite_cache",
        "bf16",
        "use_cpu",
        "flash_attn",
        "trust_remote_code",
    }
)


def train_args(
    cfg: SFTConfig,
    model_dir: Path,
    data_dir: Path,
    output_dir: Path,
    seed: int,
    media_dir: Path | None = None,
) -> dict[str, Any]:
    """The LLaMA-Factory train yaml as a dict (keys of LLaMA-Factory 0.9.5's ``hparams`` arguments).

    Paths are written as given: relative ones resolve against the directory LLaMA-Factory runs
    in (the project root), so the yaml is the same in every checkout. ``data_dir`` holds
    ``dataset_info.json``; ``media_dir`` is what the rows' image paths are relative to
    (default: ``data_dir``).
    """
    gpu = has_accelerator()
    args: dict[str, Any] = {
        "model_name_or_path": str(model_dir),
        "trust_remote_code": False,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": cfg.finetuning_type,
        "freeze_vision_tower": cfg.freeze_vision_tower,
        "freeze_multi_modal_projector": cfg.freeze_vision_tower,
        "image_max_pixels": cfg.image_max_pixels,
        "image_min_pixels": cfg.image_min_pixels,
        "dataset": DATASET_NAME,
        "dataset_dir": str(data_dir),
        "media_dir": str(media_dir or data_dir),
        "template": TEMPLATE,
        "cutoff_len": cfg.cutoff_len,
        "disable_gradient_checkpointing": not cfg.gradient_checkpointing,
        "overwrite_cache": True,
        "preprocessing_num_workers": 1,
        "dataloader_num_workers": 0,
        "output_dir": str(output_dir),
        "overwrite_output_dir": True,
        "save_strategy": "no",
        "save_only_model": True,
        "logging_steps": 5,
        "plot_loss": False,
        "report_to": "none",
        "per_device_train_batch_size": cfg.per_device_train_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "learning_rate": cfg.learning_rate,
        "num_train_epochs": cfg.num_train_epochs,
        "lr_scheduler_type": cfg.lr_scheduler_type,
        "warmup_ratio": cfg.warmup_ratio,
        "weight_decay": cfg.weight_decay,
        "max_grad_norm": cfg.max_grad_norm,
        "seed": seed,
        "data_seed": seed,
        "bf16": gpu,
        "use_cpu": not gpu,
        "flash_attn": "auto" if gpu else "sdpa",
    }
    if cfg.max_samples is not None:
        args["max_samples"] = cfg.max_samples
    if cfg.finetuning_type == "lora":
        args.update(lora_rank=cfg.lora_rank, lora_target="all")
    if cfg.deepspeed is not None:
        # relative, as every other path here: the saved yaml hashes the same in every checkout
        args["deepspeed"] = str(paths.deepspeed_file(cfg.deepspeed).relative_to(paths.root()))
    clash = sorted(set(cfg.extra) & (set(args) - OVERRIDABLE))
    if clash:
        raise StageError(
            f"sft.extra: {clash} are set by vlrl from the sft section; set the sft keys instead"
        )
    args.update(cfg.extra)
    return args


def run(exp: str, cfg: ExperimentConfig) -> dict[str, Any]:
    """Train ``results/<exp>/sft`` from the base model on the experiment's train split (its own
    cold-start records, ``sft_train.jsonl``, when the data stage wrote them).

    Returns:
        LLaMA-Factory's run times (``train_runtime``, ...), which the output leaves out; the
        stage's log has them too.
    """
    if not cfg.sft.enabled:
        raise StageError(f"experiment {exp}: sft.enabled is false; the workflow should not run sft")
    fmt = get_prompt(cfg.prompt)
    data_dir = sharing.data_dir(exp)
    model_dir = paths.model_resource(cfg.base_model)
    train = data_dir / "sft_train.jsonl"
    if not train.is_file():
        train = data_dir / "train.jsonl"
    for needed in (train, model_dir / "config.json"):
        if not needed.is_file():
            raise StageError(
                f"sft: input {needed} is missing; run the data / base_model stages first"
            )
    records = read_records(train, cfg.sft.max_samples)
    if cfg.sft.box_frame == "model_input":
        records = boxes_in_training_frame(records, model_dir, cfg.sft)
    cli = llamafactory_cli()

    final = paths.sft_dir(exp)
    with atomic_dir(final) as out:
        work = out / WORK
        work.mkdir()
        # A verbatim assistant turn (cold-start data) is a target as it is; a format without a
        # thinking part (VLM-R1's SFT baseline) needs no reasoning.
        missing = [
            r.id
            for r in records
            if needs_reasoning(fmt) and not r.reasoning and r.response is None and r.turns is None
        ]
        if missing and cfg.sft.missing_reasoning == "stop":
            shown = ", ".join(missing[:20]) + (
                f" and {len(missing) - 20} more" if len(missing) > 20 else ""
            )
            raise StageError(
                f"sft: {len(missing)} of {len(records)} records in {train} "
                f"have no reasoning target: {shown}. Fill them in, or set "
                "sft.missing_reasoning: drop"
            )
        skip = set(missing)
        rows = [to_sharegpt(r, fmt) for r in records if r.id not in skip]
        if not rows:
            raise StageError(f"sft: no record in {train} has a reasoning target")
        if missing:
            log.warning("sft: dropped %d records without a reasoning target", len(missing))
            _write_json(work / "dropped.json", {"missing_reasoning": len(missing), "ids": missing})
        (work / f"{DATASET_NAME}.json").write_text(json.dumps(rows, ensure_ascii=False))
        info = {DATASET_NAME: {"file_name": f"{DATASET_NAME}.json", **SHAREGPT_DATASET_INFO}}
        (work / "dataset_info.json").write_text(json.dumps(info, indent=2))
        # The saved yaml names the final directories: run from the project root it retrains
        # this output. LLaMA-Factory writes into the temporary one (command-line overrides).
        args = train_args(cfg.sft, model_dir, final / WORK, final, cfg.seed, media_dir=data_dir)
        header = ""
        if cfg.sft.max_steps is not None:  # not a LLaMA-Factory option: say how the run stops
            header = (
                f"# vlrl stops this run after step {cfg.sft.max_steps} of its schedule "
                f"(sft.max_steps): {llamafactory_train.MAX_STEPS}={cfg.sft.max_steps} "
                f"python -m {llamafactory_train.MODULE} train <this file>\n"
            )
        (work / "train.yaml").write_text(header + yaml.safe_dump(args, sort_keys=False))
        overrides = [f"output_dir={out}", f"dataset_dir={work}"]
        topo = topology(cfg.resources.sft, cfg.sft.processes, cpu_threads=cfg.cpu_threads)
        cmd, launch_env = llamafactory_command(
            topo,
            [*train_command(cli), str(work / "train.yaml"), *overrides],
            rendezvous_for(topo),
            os.environ.get("PATH", ""),
        )
        log.info(
            "sft: %d samples, %s epochs%s, %d process(es): %s",
            len(rows),
            cfg.sft.num_train_epochs,
            f" (stopping after step {cfg.sft.max_steps})" if cfg.sft.max_steps else "",
            topo.world_size,
            shlex.join(cmd),
        )
        env = {
            **os.environ,
            "DISABLE_VERSION_CHECK": "1",
            "WANDB_DISABLED": "true",
            "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1"),
            "PYTHONUNBUFFERED": "1",
        }
        env.update(launch_env)
        env.pop(llamafactory_train.MAX_STEPS, None)
        if cfg.sft.max_steps is not None:
            env[llamafactory_train.MAX_STEPS] = str(cfg.sft.max_steps)
        if cfg.sft.deepspeed:  # DeepSpeed's CPU accelerator where no CUDA device is
            env.update(deepspeed_env(has_accelerator(), str(Path(cli).parent.parent), env))
        kernels = {k: env[k] for k in (*KERNEL_VARIABLES, *MACHINE_KERNEL_VARIABLES) if k in env}
        log.info("sft: CPU kernel settings passed to LLaMA-Factory: %s", kernels or "none")
        # Its own process group: torchrun's workers are stopped with it if the stage is killed.
        returncode = run_group(cmd, env=env, stdout=sys.stderr)
        if returncode != 0:
            raise StageError(
                f"sft: llamafactory-cli train exited with {returncode} (see the log above)"
            )
        for needed in ("config.json", "model.safetensors"):
            if not any(out.glob(needed.replace(".safetensors", "*.safetensors"))):
                raise StageError(f"sft: LLaMA-Factory finished but wrote no {needed} in {out}")
        if cfg.sft.max_steps is not None:
            state_file = out / TRAINER_STATE
            state = json.loads(state_file.read_text()) if state_file.is_file() else {}
            trained = state.get("global_step", "an unknown number of")
            if trained != cfg.sft.max_steps:
                raise StageError(
                    f"sft: sft.max_steps is {cfg.sft.max_steps} but LLaMA-Factory trained "
                    f"{trained} steps ({shlex.join(cmd[:3])} does not stop the run)"
                )
        times = drop_run_records(out)
        log.info("sft: run times (kept out of %s): %s", final, json.dumps(times))
    log.info("sft: wrote %s", final)
    return times


def boxes_in_training_frame(records: list[Record], model_dir: Path, cfg: SFTConfig) -> list[Record]:
    """``records`` with their boxes moved from original pixels into the frame the model sees
    each first image in during SFT (:func:`vlrl.items.frames.llamafactory_input_size`, with the
    base model's image processor and ``cfg``'s pixel bounds): the frame Qwen2.5-VL answers in
    (``sft.box_frame: model_input``).

    Raises:
        StageError: naming a record with boxes but no ``image_sizes``.
    """
    from transformers import AutoImageProcessor

    image_processor = AutoImageProcessor.from_pretrained(model_dir)
    moved = []
    for record in records:
        if record.boxes:
            if not record.image_sizes:
                raise StageError(
                    f"sft: record {record.id} has boxes but no image_sizes, which "
                    "sft.box_frame: model_input needs to move them into the model's frame"
                )
            width, height = record.image_sizes[0]
            frame = llamafactory_input_size(
                image_processor, width, height, cfg.image_min_pixels, cfg.image_max_pixels
            )
            boxes = [to_input_frame(box, [width, height], frame) for box in record.boxes]
            record = record.model_copy(update={"boxes": boxes})
        moved.append(record)
    return moved


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def drop_run_records(out: Path) -> dict[str, Any]:
    """Remove what varies from run to run from LLaMA-Factory's output ``out``; return the times.

    Deletes :data:`DROPPED_FILES` and strips run times (:func:`vlrl.core.volatile.is_run_time`) from
    the results files, the trainer state's log history and ``trainer_log.jsonl``; the loss curve,
    learning rates, epochs, train loss and FLOPs stay.
    """
    for name in DROPPED_FILES:
        (out / name).unlink(missing_ok=True)
    times: dict[str, Any] = {}
    for name in RESULT_FILES:
        path = out / name
        if path.is_file():
            kept, dropped = split_run_times(json.loads(path.read_text()))
            times.update(dropped)
            _write_json(path, kept)
    state_file = out / TRAINER_STATE
    if state_file.is_file():
        state = json.loads(state_file.read_text())
        state["log_history"] = [split_run_times(r)[0] for r in state.get("log_history", [])]
        _write_json(state_file, state)
    log_file = out / TRAINER_LOG
    if log_file.is_file():
        rows = [json.loads(line) for line in log_file.read_text().splitlines() if line.strip()]
        kept_rows = []
        for row in rows:
            kept, dropped = split_run_times(row)
            kept_rows.append(kept)
            if "elapsed_time" in dropped:
                times["elapsed_time"] = dropped["elapsed_time"]
        log_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept_rows))
    return times
