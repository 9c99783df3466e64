"""infer stage: predictions of one model of the experiment on one benchmark.

Writes ``results/<exp>/predictions/<checkpoint>/<bench>.jsonl`` (one row per item, the raw
response kept for the judge), atomically.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PIL import Image
from tqdm import tqdm

from vlrl import paths
from vlrl.benchmarks import load_benchmark, load_items
from vlrl.config import ExperimentConfig
from vlrl.data.convert import to_conversation
from vlrl.errors import StageError
from vlrl.files import write_jsonl
from vlrl.generation import make_generator
from vlrl.prompts import get_prompt

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = (
    "seed",
    "cpu_threads",
    "cpu_kernels",
    "prompt",
    "base_model",
    "infer",
    "sft.enabled",
    "grpo.enabled",
)


def checkpoint_dir(exp: str, cfg: ExperimentConfig, checkpoint: str) -> Path:
    """The model directory of ``checkpoint`` (base, sft or grpo) of the experiment."""
    if checkpoint not in cfg.checkpoints:
        raise StageError(
            f"checkpoint {checkpoint!r} is not evaluated by {exp}; it has {cfg.checkpoints}"
        )
    return {
        "base": paths.model_resource(cfg.base_model),
        "sft": paths.sft_dir(exp),
        "grpo": paths.merged_model_dir(exp),
    }[checkpoint]


def run(exp: str, cfg: ExperimentConfig, checkpoint: str, bench: str) -> None:
    """Generate one response per benchmark item with the configured backend."""
    model_dir = checkpoint_dir(exp, cfg, checkpoint)
    if not (model_dir / "config.json").is_file():
        raise StageError(f"infer: model {model_dir} is missing; run the stage that builds it first")
    bench_cfg = load_benchmark(bench)
    fmt = get_prompt(bench_cfg.prompt or cfg.prompt)
    items, base_dir = load_items(exp, bench)
    generator = make_generator(cfg.infer, str(model_dir), cfg.seed)
    log.info(
        "infer: %s/%s on %s: %d items, backend %s",
        exp,
        checkpoint,
        bench,
        len(items),
        cfg.infer.backend,
    )

    rows = []
    size = cfg.infer.batch_size
    for start in tqdm(range(0, len(items), size), desc=f"infer {checkpoint}/{bench}", unit="batch"):
        batch = items[start : start + size]
        conversations = [to_conversation(r, fmt) for r in batch]
        images = [[Image.open(base_dir / p).convert("RGB") for p in r.images] for r in batch]
        responses = generator.generate(conversations, images)
        for record, conversation, response in zip(batch, conversations, responses, strict=True):
            rows.append(
                {
                    "id": record.id,
                    "task": record.task or record.problem_type,
                    "problem_type": record.problem_type,
                    "problem": record.problem,
                    "answer": record.answer,
                    "options": record.options,
                    "boxes": record.boxes,
                    "images": record.images,
                    "prompt": conversation[-1]["content"][-1]["text"],
                    "response": response,
                    "model": str(model_dir),
                    "checkpoint": checkpoint,
                }
            )
    write_jsonl(paths.predictions_file(exp, checkpoint, bench), rows)
    log.info("infer: wrote %s", paths.predictions_file(exp, checkpoint, bench))
