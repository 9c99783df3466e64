"""infer stage: predictions of one model of the experiment on one benchmark.

A ``blank_images_of`` benchmark is its twin's items with every image blanked (:func:`blanked`).

Writes ``results/<exp>/predictions/<checkpoint>/<bench>.jsonl``, one
:class:`vlrl.items.predictions.Prediction` per item (the raw response kept for the judge),
atomically. A row's ``error`` is None, or says why the ``openai`` backend got no response for
it after its retries (``response`` is then ""): such items are recorded as failed, and the
score stage does not score them as answers.

With ``infer.backend: openai`` and ``infer.openai.serve``, the server is started for the
generation (:func:`vlrl.serving.servers.serving`, serving ``serve.model`` or, when it is unset, the
checkpoint being evaluated; its log in ``logs/infer/<exp>/<checkpoint>/<bench>/openai.log``) and
stopped after it, also on failure; when every batch is already done, none is started.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import multiprocessing
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm import tqdm

from vlrl import sharing
from vlrl.benchmarks import load_benchmark, load_items
from vlrl.cluster.threads import pin_cpu_threads
from vlrl.config import ExperimentConfig, InferConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_file
from vlrl.data.convert import to_conversation
from vlrl.generation import generating_processes, make_generator
from vlrl.items.frames import processor_input_size
from vlrl.items.predictions import prediction_of, write_predictions
from vlrl.items.prompts import get_prompt
from vlrl.serving.servers import serving

log = logging.getLogger(__name__)


def checkpoint_dir(exp: str, cfg: ExperimentConfig, checkpoint: str) -> Path:
    """The model directory of ``checkpoint`` (base, sft or grpo) of the experiment."""
    if checkpoint not in cfg.checkpoints:
        raise StageError(
            f"checkpoint {checkpoint!r} is not evaluated by {exp}; it has {cfg.checkpoints}"
        )
    return sharing.checkpoint_model_dir(exp, checkpoint, cfg.base_model)


def run(exp: str, cfg: ExperimentConfig, checkpoint: str, bench: str) -> None:
    """Generate one response per benchmark item with the configured backend.

    Each finished batch is saved at once under ``<predictions file>.partial/``; a rerun after a
    kill resumes from the saved batches when the model, the items and the generation settings
    are the same (else it starts over). The predictions file is written when every batch is done.
    """
    model_dir = checkpoint_dir(exp, cfg, checkpoint)
    if not (model_dir / "config.json").is_file():
        raise StageError(f"infer: model {model_dir} is missing; run the stage that builds it first")
    bench_cfg = load_benchmark(bench)
    fmt = get_prompt(cfg.infer.prompt or bench_cfg.prompt or cfg.prompt)
    items, base_dir = load_items(exp, bench)
    infer_cfg = cfg.infer.model_copy()
    if bench_cfg.max_new_tokens is not None:  # the benchmark's generation budget
        infer_cfg = infer_cfg.model_copy(update={"max_new_tokens": bench_cfg.max_new_tokens})
    conversations = [to_conversation(r, fmt) for r in items]
    images = [[str(base_dir / p) for p in r.images] for r in items]
    out = paths.predictions_file(exp, checkpoint, bench)
    partial = Partial(
        out.with_name(out.name + PARTIAL),
        fingerprint(model_dir, infer_cfg, cfg.seed, [r.id for r in items], conversations),
    )
    done = partial.open()
    shards = batch_shards(len(items), infer_cfg.batch_size, generating_processes(infer_cfg))
    log.info(
        "infer: %s/%s on %s: %d items, backend %s, %d process(es)%s",
        exp,
        checkpoint,
        bench,
        len(items),
        infer_cfg.backend,
        len(shards),
        f", resuming with {len(done)} batches done" if done else "",
    )
    todo = [
        [b for b in range(a, stop, infer_cfg.batch_size) if b not in done] for a, stop in shards
    ]
    log_dir = paths.server_log_dir("infer", exp, checkpoint, bench)
    with served_openai(infer_cfg, model_dir, log_dir, any(todo)) as gen_cfg:
        jobs = [
            (
                Shard(
                    str(model_dir),
                    gen_cfg,
                    cfg.seed,
                    cfg.cpu_threads,
                    f"{checkpoint}/{bench}",
                    i,
                    gpus=cfg.resources.infer.gpus,
                    max_images=max((len(p) for p in images), default=0),
                    blank_images=bench_cfg.blank_images_of is not None,
                ),
                conversations,
                images,
                starts,
                partial,
            )
            for i, starts in enumerate(todo)
        ]
        if len(jobs) == 1:
            generate_shard(*jobs[0])
        else:
            # spawn, not fork: the parent may hold torch's thread pool; the children inherit the
            # pinned kernel and thread variables through the environment. Leaving the block
            # (also on an error or SIGTERM) terminates the workers.
            with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
                pool.starmap(generate_shard, jobs)
    responses = partial.responses(len(items), infer_cfg.batch_size)
    failed = sum(not isinstance(r, str) for r in responses)
    if failed:
        log.warning(
            "infer: %d of %d items got no response (recorded with their error in %s)",
            failed,
            len(items),
            out,
        )

    frames = model_input_sizes(model_dir, images) if bench_cfg.box_frame == "model_input" else None
    predictions = [
        prediction_of(
            record,
            response if isinstance(response, str) else "",
            error=None if isinstance(response, str) else response["error"],
            prompt="".join(p.get("text", "") for p in conversation[-1]["content"]),
            model=str(model_dir),
            checkpoint=checkpoint,
            # The frame score needs to rescale boxes (benchmark box_frame: model_input).
            input_size=frames[i] if frames is not None else None,
        )
        for i, (record, conversation, response) in enumerate(
            zip(items, conversations, responses, strict=True)
        )
    ]
    write_predictions(out, predictions)
    partial.remove()
    log.info("infer: wrote %s", out)


@contextlib.contextmanager
def served_openai(cfg: InferConfig, model_dir: Path, log_dir: Path, needed: bool):
    """``cfg`` with the ``openai`` backend's server started when it sets ``serve`` and
    ``needed`` (there is something to generate); ``serve.model`` unset serves ``model_dir``."""
    endpoint = cfg.openai
    if cfg.backend != "openai" or endpoint is None or endpoint.serve is None or not needed:
        yield cfg
        return
    if endpoint.serve.model is None:
        serve = endpoint.serve.model_copy(update={"model": str(model_dir)})
        endpoint = endpoint.model_copy(update={"serve": serve})
    with serving(endpoint, log_dir, name="openai") as served:
        yield cfg.model_copy(update={"openai": served})


PARTIAL = ".partial"
"""Suffix of the directory holding the finished batches of an unfinished run."""


def fingerprint(
    model_dir: Path, cfg: InferConfig, seed: int, ids: list[str], conversations: list
) -> str:
    """What saved batches must match to be reused: the model's files (names, sizes, modification
    times), the generation settings, the seed and the items with their prompts."""
    files = sorted(
        (str(f.relative_to(model_dir)), f.stat().st_size, f.stat().st_mtime_ns)
        for f in model_dir.rglob("*")
        if f.is_file()
    )
    settings = cfg.model_dump(mode="json", exclude={"workers"})  # workers: same responses
    payload = [files, settings, seed, ids, conversations]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Partial:
    """The saved batches of one predictions file: ``batch-<first item>.json`` each, beside a
    ``fingerprint`` file naming the run they belong to."""

    root: Path
    key: str

    def open(self) -> set[int]:
        """Prepare the directory; return the first-item indices of the batches already saved."""
        stamp = self.root / "fingerprint"
        if self.root.is_dir() and (not stamp.is_file() or stamp.read_text() != self.key):
            log.info(
                "infer: %s is from another run (model or settings changed): discarded", self.root
            )
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        if not stamp.is_file():
            stamp.write_text(self.key)
        return {int(f.stem.removeprefix("batch-")) for f in self.root.glob("batch-*.json")}

    def save(self, start: int, responses: list[str | dict[str, str]]) -> None:
        """Save one batch: a response text, or ``{"error": why}``, per item."""
        with atomic_file(self.root / f"batch-{start:08d}.json") as fh:
            json.dump(responses, fh, ensure_ascii=False)

    def responses(self, n_items: int, batch_size: int) -> list[str | dict[str, str]]:
        """Every item's response (or ``{"error"}``), in item order (all batches must be saved)."""
        out: list[str | dict[str, str]] = []
        for start in range(0, n_items, batch_size):
            batch = json.loads((self.root / f"batch-{start:08d}.json").read_text())
            if len(batch) != min(batch_size, n_items - start):
                raise StageError(f"infer: saved batch {start} in {self.root} has {len(batch)} rows")
            out.extend(batch)
        return out

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def batch_shards(n_items: int, batch_size: int, n_workers: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, end)`` item ranges, one per worker, each a whole number of batches.

    Every batch is then the same as with one process (same items, same padding), so the
    responses do not depend on the worker count. Never more shards than batches.

    >>> batch_shards(10, 3, 2)
    [(0, 6), (6, 10)]
    >>> batch_shards(10, 16, 4)
    [(0, 10)]
    >>> batch_shards(0, 8, 2)
    [(0, 0)]
    """
    n_batches = max(1, math.ceil(n_items / batch_size))
    n_workers = min(n_workers, n_batches)
    per_worker, extra = divmod(n_batches, n_workers)
    shards, start = [], 0
    for i in range(n_workers):
        end = min(n_items, start + (per_worker + (i < extra)) * batch_size)
        shards.append((start, end))
        start = end
    return shards


@dataclass(frozen=True)
class Shard:
    """What a generating process needs besides its items (picklable, for spawned workers)."""

    model_dir: str
    cfg: InferConfig
    seed: int
    cpu_threads: int | None
    desc: str
    position: int
    gpus: int = 1
    """The job's GPUs (``resources.infer.gpus``): the vllm backend's tensor parallelism."""
    max_images: int | None = None
    """The most images one item has: what the vllm backend admits per prompt."""
    blank_images: bool = False
    """Show every image blanked (:func:`blanked`): a ``blank_images_of`` benchmark."""


BLANK = (128, 128, 128)
"""The colour of a blanked image: mid gray, no content to read."""


def blanked(image: Image.Image) -> Image.Image:
    """A uniform :data:`BLANK` image of ``image``'s size: the processor makes the same image
    tokens of it (the same resize, the same grid), so the prompt differs only in what the image
    shows.

    >>> img = blanked(Image.new("RGB", (30, 20), (255, 0, 0)))
    >>> img.size, img.getcolors()
    ((30, 20), [(600, (128, 128, 128))])
    """
    return Image.new("RGB", image.size, BLANK)


def model_input_sizes(model_dir: Path, image_paths: list[list[str]]) -> list[list[int] | None]:
    """Per item, ``[width, height]`` of its first image as the model's processor resizes it
    (``image_grid_thw`` × patch size, as VLM-R1's ``test_rec_r1.py`` reads it:
    :func:`vlrl.items.frames.processor_input_size`); None for an item without an image."""
    from transformers import AutoProcessor

    image_processor = AutoProcessor.from_pretrained(model_dir).image_processor
    sizes: list[list[int] | None] = []
    for paths_ in image_paths:
        if not paths_:
            sizes.append(None)
            continue
        with Image.open(paths_[0]) as img:  # the header: no decoding
            sizes.append(processor_input_size(image_processor, *img.size))
    return sizes


def generate_shard(
    shard: Shard,
    conversations: list[list[dict[str, Any]]],
    image_paths: list[list[str]],
    starts: list[int],
    partial: Partial,
) -> None:
    """Generate the batches beginning at ``starts`` (item indices) and save each as it finishes
    (one process; the model is loaded only if there is a batch to do)."""
    if not starts:
        return
    pin_cpu_threads(shard.cpu_threads)
    generator = make_generator(
        shard.cfg, shard.model_dir, shard.seed, gpus=shard.gpus, max_images=shard.max_images
    )
    size = shard.cfg.batch_size
    desc = f"infer {shard.desc}" + (f" [{shard.position}]" if shard.position else "")
    for start in tqdm(starts, desc=desc, unit="batch", position=shard.position):
        images = [
            [Image.open(p).convert("RGB") for p in paths_]
            for paths_ in image_paths[start : start + size]
        ]
        if shard.blank_images:
            images = [[blanked(img) for img in item] for item in images]
        responses = generator.generate(conversations[start : start + size], images)
        # A failure (not a text) is kept as its message: the row records it as the error.
        partial.save(start, [r if isinstance(r, str) else {"error": str(r)} for r in responses])
