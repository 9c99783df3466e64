"""A sample of each benchmark's items with every checkpoint's answer, so a person sees what
training changed: the image (for grounding, the reference box in green and each checkpoint's
predicted box in its colour), the question, each checkpoint's reasoning and answer, what the
scorer extracted from it, and the verdict.

The sample is drawn with the experiment's seed, the same items for every checkpoint: items on
which the checkpoints' verdicts differ first, then the others, each group spread over the
benchmark's tasks in turn. Thumbnails are PNG bytes (the page embeds them); nothing drawn
depends on the machine or the checkout's path.
"""

from __future__ import annotations

import io
import logging
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, UnidentifiedImageError

from vlrl import sharing
from vlrl.benchmarks import BenchmarkConfig, items_file
from vlrl.items.answers import extract_answer, parse_box
from vlrl.items.predictions import Prediction, ScoredItem, read_predictions
from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.labels import COLORS, TRUTH, label
from vlrl.scoring.rules import rescale_box

log = logging.getLogger(__name__)

MAX_IMAGES = 3
"""Thumbnails shown per item (boxes are drawn on the first: scoring reads only its boxes)."""
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
_ANSWER = re.compile(r"<answer>.*?(?:</answer>|$)", re.DOTALL)


@dataclass
class Answer:
    """One checkpoint's answer to a gallery item."""

    checkpoint: str
    model: str
    color: str
    reasoning: str
    answer: str
    extracted: str
    verdict: str


@dataclass
class Item:
    """One gallery item: the question, the reference, the thumbnails and every answer."""

    id: str
    task: str
    problem_type: str
    question: str
    options: list[str]
    truth: str
    images: list[bytes] = field(default_factory=list)
    missing_images: list[str] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)


def image_root(exp: str, bench: BenchmarkConfig) -> Path:
    """The directory a benchmark's image paths are relative to (as the infer stage reads
    them): that of the records file it reads."""
    return items_file(exp, bench).parent


def _spread(ids: list[str], task_of: dict[str, str]) -> list[str]:
    """``ids`` reordered to take one item of each task in turn (tasks in order of first
    appearance), keeping the order within a task.

    >>> _spread(["a1", "a2", "b1", "a3", "c1"], {"a1": "a", "a2": "a", "a3": "a", "b1": "b",
    ...                                          "c1": "c"})
    ['a1', 'b1', 'c1', 'a2', 'a3']
    """
    queues: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        queues[task_of[i]].append(i)
    spread = []
    for depth in range(max((len(q) for q in queues.values()), default=0)):
        spread += [q[depth] for q in queues.values() if depth < len(q)]
    return spread


def pick(
    verdicts: dict[str, tuple[int | None, ...]],
    task_of: dict[str, str],
    n: int,
    seed: int,
    salt: str = "",
) -> list[str]:
    """``n`` item ids, drawn reproducibly: ``verdicts`` maps an id to its checkpoints' verdicts
    (1, 0 or None for unscored); items whose verdicts differ come first.

    >>> v = {"1": (0, 1), "2": (1, 1), "3": (0, 0), "4": (1, 0)}
    >>> t = dict.fromkeys(v, "t")
    >>> sorted(pick(v, t, 2, seed=0))
    ['1', '4']
    >>> pick(v, t, 3, seed=0) == pick(v, t, 3, seed=0)
    True
    """
    ids = sorted(verdicts)
    rng = np.random.default_rng([seed, zlib.crc32(salt.encode())])
    order = [ids[i] for i in rng.permutation(len(ids))]
    differ = [i for i in order if len(set(verdicts[i])) > 1]
    agree = [i for i in order if len(set(verdicts[i])) <= 1]
    return (_spread(differ, task_of) + _spread(agree, task_of))[:n]


def reasoning(response: str, limit: int) -> str:
    """The reasoning of a response: its ``<think>`` part, else the response without its
    ``<answer>``; cut at ``limit`` characters.

    >>> reasoning("<think>two plus two</think><answer>4</answer>", 8)
    'two plus …'
    >>> reasoning("I count 3. <answer>3</answer>", 100), reasoning("<answer>3</answer>", 100)
    ('I count 3.', '–')
    """
    match = _THINK.search(response)
    text = (match.group(1) if match else _ANSWER.sub("", response)).strip()
    if not text:
        return fmt.DASH
    return text if len(text) <= limit else text[:limit].rstrip() + " …"


def verdict(item: ScoredItem) -> str:
    """right, wrong or unscored, and how it was decided when not by the rules.

    >>> from vlrl.items.predictions import ScoredItem
    >>> verdict(ScoredItem(id="1", task="t", problem_type="numerical", extracted="3",
    ...                    correct=None, score=None, method="judge"))
    'unscored (judge gave no verdict)'
    """
    if item.correct is None:
        return "unscored (judge gave no verdict)"
    text = "right" if item.correct else "wrong"
    if item.method == "failed":
        return f"{text} (generation failed)"
    if item.problem_type == "grounding" and item.score is not None:
        text += f", IoU {fmt.score(item.score)}"
    return text + (" (judge)" if item.method == "judge" else "")


def predicted_box(prediction: Prediction, item: ScoredItem) -> list[float] | None:
    """The box the scorer read, in the original image's pixels (rescaled from the model-input
    frame when the prediction records it, as scoring does)."""
    box = parse_box(item.extracted or "")
    if box is None:
        return None
    if prediction.input_size and prediction.image_sizes:
        return rescale_box(box, prediction.input_size, prediction.image_sizes[0])
    return box


def thumbnail(
    path: Path,
    longest: int,
    boxes: list[tuple[list[float], str]] = (),  # type: ignore[assignment]
) -> bytes:
    """PNG bytes of the image scaled to ``longest`` pixels on its longer side, with each
    ``(box, colour)`` drawn (boxes in the original image's pixels, xyxy)."""
    with Image.open(path) as img:
        rgb = img.convert("RGB")
    factor = longest / max(rgb.size)
    size = (max(1, round(rgb.width * factor)), max(1, round(rgb.height * factor)))
    small = rgb.resize(size, Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(small)
    width = max(2, longest // 128)
    for box, color in boxes:
        x1, y1, x2, y2 = (v * factor for v in box)
        draw.rectangle(
            [min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)], outline=color, width=width
        )
    buffer = io.BytesIO()
    small.save(buffer, format="PNG")
    return buffer.getvalue()


def _thumbnails(item: Item, prediction: Prediction, root: Path, longest: int, boxes) -> None:
    for index, relative in enumerate(prediction.images[:MAX_IMAGES]):
        path = root / relative
        try:
            item.images.append(thumbnail(path, longest, boxes if index == 0 else []))
        except (FileNotFoundError, UnidentifiedImageError, OSError) as exc:
            log.warning("report: gallery image %s of item %s: %s", path, item.id, exc)
            item.missing_images.append(relative)


def build(
    exp: str,
    ev: Evaluation,
    settings,
    seed: int,
    sft_enabled: bool,
) -> list[Item]:
    """The gallery of one benchmark (``settings``: ``report.gallery``)."""
    predictions = {
        c: {p.id: p for p in read_predictions(sharing.predictions_file(exp, c, ev.bench), "report")}
        for c in ev.scores
    }
    scored = {c: {i.id: i for i in s.items} for c, s in ev.scores.items()}
    common = set.intersection(*(set(by_id) for by_id in scored.values()))
    common &= set.intersection(*(set(by_id) for by_id in predictions.values()))
    verdicts = {i: tuple(scored[c][i].correct for c in scored) for i in common}
    first = next(iter(predictions))
    task_of = {i: predictions[first][i].task for i in common}
    root = image_root(exp, ev.config)
    items = []
    for item_id in pick(verdicts, task_of, settings.n, seed, ev.bench):
        p = predictions[first][item_id]
        item = Item(item_id, p.task, p.problem_type, p.problem, p.options, p.answer)
        boxes = [(box, TRUTH) for box in p.boxes[:1]] if p.problem_type == "grounding" else []
        for checkpoint in scored:
            prediction, verdict_of = predictions[checkpoint][item_id], scored[checkpoint][item_id]
            if p.problem_type == "grounding":
                box = predicted_box(prediction, verdict_of)
                if box is not None:
                    boxes.append((box, COLORS[checkpoint]))
            item.answers.append(
                Answer(
                    checkpoint=checkpoint,
                    model=label(checkpoint, sft_enabled),
                    color=COLORS[checkpoint],
                    reasoning=reasoning(prediction.response, settings.reasoning_chars),
                    answer=(
                        f"(no response: {prediction.error})"
                        if prediction.error
                        else extract_answer(prediction.response) or fmt.DASH
                    ),
                    extracted=verdict_of.extracted or fmt.DASH,
                    verdict=verdict(verdict_of),
                )
            )
        _thumbnails(item, p, root, settings.thumbnail_px, boxes)
        items.append(item)
    return items
