"""The ``score`` stage: per-item scores and accuracy of one checkpoint on one benchmark.

Input: ``results/<exp>/predictions/<checkpoint>/<bench>.jsonl`` (written by ``infer``).
Output: ``results/<exp>/scores/<checkpoint>/<bench>.json``, written atomically::

    {"experiment", "checkpoint", "benchmark", "n", "accuracy", "ci_low", "ci_high",
     "per_task": {task: {"n", "accuracy", "ci_low", "ci_high"}},
     "headline": metric name, "metrics": {name: {"value", "n", "ci_low", "ci_high"}},
     "confidence",
     "generation_failures",
     "judge": null | {"model", "base_url", "mode", "calls", "failures", "cache_hits", ...},
     "items": [{"id", "task", "groups", "problem_type", "extracted", "correct", "score", "method",
                "judge_reply", "judge_error", "generation_error"}]}

Every item is scored by the rules (:mod:`vlrl.scoring.rules`). With ``score.judge`` set, an
LLM judge (:mod:`vlrl.scoring.judge`) then decides the items the rules marked wrong
(``mode: fallback``, the Vision-SR1 protocol) or all items (``mode: always``), except grounding
and detection items, which only IoU decides. A judged item has ``method: "judge"`` and
``correct = score = verdict``. A judge failure (a call that failed after its retries, or a reply
that is not a 0/1 verdict) fails the stage, naming the items, unless
``score.judge.on_failure: score_zero``: then the item scores 0, ``judge_error`` says why, and
``judge.failures`` counts it. Verdicts are cached in ``results/<exp>/judge_cache/``, so a rerun
after a failure only asks again about the failed items.

A prediction the infer stage recorded as failed (its ``error`` is set: the ``openai`` backend got
no response after its retries) is not an answer: neither the rules nor the judge see it. By
default (``score.generation_failures: error``) the stage then fails, naming the items; with
``score_zero`` its item has ``method: "failed"``, ``extracted: null``, ``generation_error``
saying why and ``correct = score = 0`` (it counts against accuracy: a model whose server fails
is not rewarded with a smaller denominator), and ``generation_failures`` counts such items; a
warning names them.

Accuracy is the mean of ``correct``; intervals are Wilson intervals at ``score.confidence``. The
benchmark's config (``config/benchmarks/<bench>.yaml``) sets its scoring protocol (IoU threshold
and strictness, ChartQA's relaxed accuracy) and its metrics beyond accuracy
(:mod:`vlrl.scoring.metrics`: HallusionBench's fAcc / qAcc, CircularEval, MME's score, ...),
computed from the per-item verdicts into ``metrics``; ``headline`` names the one tables lead
with.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vlrl import paths
from vlrl.answers import extract_answer
from vlrl.benchmarks import load_benchmark
from vlrl.config import ExperimentConfig
from vlrl.errors import StageError
from vlrl.files import read_jsonl, write_json
from vlrl.scoring.judge import (
    NOT_JUDGED,
    Judge,
    JudgeRequest,
    judge_cache_dir,
    render_question,
    render_reference,
)
from vlrl.scoring.metrics import compute as compute_metrics
from vlrl.scoring.rules import score_item
from vlrl.scoring.stats import summarize

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = ("score", "infer.checkpoints", "sft.enabled", "grpo.enabled")

REQUIRED = ("id", "problem_type", "answer", "response")
MAX_LISTED_FAILURES = 5


def load_predictions(path: Path) -> list[dict[str, Any]]:
    """Read a predictions file; a missing file, bad line, missing key or repeated id raises
    StageError naming the file and line."""
    if not path.is_file():
        raise StageError(f"score: predictions {path} do not exist; run the infer stage first")
    try:
        rows = read_jsonl(path)
    except ValueError as exc:
        raise StageError(f"score: {exc}") from None
    if not rows:
        raise StageError(f"score: {path} has no predictions")
    seen: set[str] = set()
    for lineno, row in enumerate(rows, 1):
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise StageError(f"score: {path}:{lineno}: missing {missing}")
        if not isinstance(row["response"], str):
            raise StageError(f"score: {path}:{lineno}: response is not text: {row['response']!r}")
        if not isinstance(row.get("error"), str | None):
            raise StageError(f"score: {path}:{lineno}: error is not text: {row['error']!r}")
        if row["id"] in seen:
            raise StageError(f"score: {path}:{lineno}: id {row['id']!r} appears twice")
        seen.add(row["id"])
    return rows


def rule_scores(
    rows: list[dict[str, Any]],
    iou_threshold: float,
    where: Path,
    iou_strict: bool = False,
    relaxed_tolerance: float | None = None,
    box_frame: str = "original",
) -> list[dict]:
    """Score every row by the rules (with the benchmark's protocol); the item dicts of the
    scores file. With ``box_frame`` ``model_input``, a grounding row must carry its
    ``input_size`` and ``image_sizes`` (the infer stage writes them)."""
    items = []
    for lineno, row in enumerate(rows, 1):
        if row.get("error"):  # no response: nothing to score (see the module docstring)
            items.append(
                {
                    "id": row["id"],
                    "task": row.get("task") or row["problem_type"],
                    "groups": row.get("groups") or {},
                    "problem_type": row["problem_type"],
                    "extracted": None,
                    "correct": 0,
                    "score": 0.0,
                    "method": "failed",
                    "judge_reply": None,
                    "judge_error": None,
                    "generation_error": row["error"],
                }
            )
            continue
        try:
            extracted, score, correct = score_item(
                row["response"],
                str(row["answer"]),
                row["problem_type"],
                row.get("options") or [],
                row.get("boxes") or [],
                iou_threshold,
                iou_strict,
                relaxed_tolerance,
                _box_frames(row, box_frame, where, lineno),
            )
        except ValueError as exc:
            raise StageError(f"score: {where}:{lineno}: {exc}") from None
        items.append(
            {
                "id": row["id"],
                "task": row.get("task") or row["problem_type"],
                "groups": row.get("groups") or {},
                "problem_type": row["problem_type"],
                "extracted": extracted,
                "correct": correct,
                "score": float(score),
                "method": "rule",
                "judge_reply": None,
                "judge_error": None,
                "generation_error": None,
            }
        )
    return items


def _box_frames(
    row: dict[str, Any], box_frame: str, where: Path, lineno: int
) -> tuple[list[float], list[float]] | None:
    if box_frame != "model_input" or row["problem_type"] != "grounding":
        return None
    sizes = row.get("image_sizes") or []
    if not row.get("input_size") or not sizes:
        raise StageError(
            f"score: {where}:{lineno}: the benchmark's boxes are in the model-input frame "
            "(box_frame: model_input) but the row has no input_size / image_sizes; rerun infer"
        )
    return row["input_size"], sizes[0]


def judge_request(row: dict[str, Any]) -> JudgeRequest:
    """What the judge sees: the question (with options), the reference and the candidate's
    ``<answer>`` if it has one, else its whole response (reasoning included).

    >>> r = judge_request({"id": "q1", "problem": "Color?", "options": ["red", "blue"],
    ...                    "answer": "B", "problem_type": "multiple_choice",
    ...                    "response": "<think>hmm</think><answer>blue</answer>"})
    >>> r.question, r.reference, r.candidate
    ('Color?\\nOptions: A. red  B. blue', 'B. blue', 'blue')
    """
    options = row.get("options") or []
    answer = extract_answer(row["response"])
    return JudgeRequest(
        item_id=str(row["id"]),
        question=render_question(str(row.get("problem") or ""), options),
        reference=render_reference(str(row["answer"]), row["problem_type"], options),
        candidate=answer if answer is not None else row["response"],
    )


def apply_judge(
    exp: str, cfg: ExperimentConfig, rows: list[dict[str, Any]], items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Ask the judge about the selected items, update them in place; the judge metadata."""
    judge_cfg = cfg.score.judge
    assert judge_cfg is not None
    chosen = [
        i
        for i, item in enumerate(items)
        if item["problem_type"] not in NOT_JUDGED
        and item["method"] != "failed"
        and (judge_cfg.mode == "always" or item["correct"] == 0)
    ]
    judge = Judge(judge_cfg, judge_cache_dir(exp))
    log.info(
        "score: judge %s (%s, mode %s): %d of %d items",
        judge_cfg.model,
        judge.metadata()["base_url"],
        judge_cfg.mode,
        len(chosen),
        len(items),
    )
    requests = [judge_request(rows[i]) for i in chosen]
    with Progress(
        TextColumn("judge"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_console(),
        transient=True,
    ) as bar:
        task = bar.add_task("judge", total=len(requests))
        outcomes = judge.judge(requests, progress=lambda: bar.advance(task))

    flipped = 0
    for i, outcome in zip(chosen, outcomes, strict=True):
        item = items[i]
        item["method"] = "judge"
        item["judge_reply"] = outcome.reply
        if outcome.verdict is None:
            item["judge_error"] = outcome.error
            item["correct"], item["score"] = 0, 0.0
            continue
        flipped += int(outcome.verdict != item["correct"])
        item["correct"], item["score"] = outcome.verdict, float(outcome.verdict)

    meta = judge.metadata()
    log.info(
        "score: judge calls %d, cache hits %d, failures %d; verdict differs from the rules on %d",
        meta["calls"],
        meta["cache_hits"],
        meta["failures"],
        flipped,
    )
    if judge.stats.failures and judge_cfg.on_failure == "error":
        listed = "; ".join(judge.errors[:MAX_LISTED_FAILURES])
        raise StageError(
            f"score: the judge failed on {judge.stats.failures} of {len(requests)} items "
            f"(first: {listed}). Verdicts so far are cached in {judge_cache_dir(exp)}; rerun, fix "
            "the judge, or set score.judge.on_failure=score_zero to score failures as 0"
        )
    return meta


def _console() -> Console:
    """The console the CLI logs to (so the progress bar and log lines do not interleave)."""
    for logger in (logging.getLogger("vlrl"), logging.getLogger()):
        for handler in logger.handlers:
            if isinstance(handler, RichHandler):
                return handler.console
    return Console(stderr=True)


def run(exp: str, cfg: ExperimentConfig, checkpoint: str, bench: str) -> None:
    """Score one checkpoint's predictions on one benchmark (see the module docstring)."""
    if checkpoint not in cfg.checkpoints:
        raise StageError(
            f"score: checkpoint {checkpoint!r} is not evaluated by experiment {exp} "
            f"(it evaluates {cfg.checkpoints}; see infer.checkpoints, sft.enabled, grpo.enabled)"
        )
    source = paths.predictions_file(exp, checkpoint, bench)
    rows = load_predictions(source)
    log.info("score: %s/%s on %s: %d items from %s", exp, checkpoint, bench, len(rows), source)
    bench_cfg = load_benchmark(bench)
    iou_threshold = (
        bench_cfg.iou_threshold if bench_cfg.iou_threshold is not None else cfg.score.iou_threshold
    )
    items = rule_scores(
        rows,
        iou_threshold,
        source,
        bench_cfg.iou_strict,
        bench_cfg.relaxed_tolerance,
        bench_cfg.box_frame,
    )
    failed = [item["id"] for item in items if item["method"] == "failed"]
    if failed:
        listed = ", ".join(map(str, failed[:MAX_LISTED_FAILURES]))
        if cfg.score.generation_failures == "error":
            raise StageError(
                f"score: {len(failed)} of {len(items)} predictions in {source} have no response "
                f"(the infer stage's endpoint failed for them: see their 'error'): {listed}"
                f"{', …' if len(failed) > MAX_LISTED_FAILURES else ''}. Rerun infer once the "
                "server answers (dvc repro --force on that infer stage), or set "
                "score.generation_failures: score_zero to score them 0"
            )
        log.warning(
            "score: %d of %d predictions have no response (generation failed; scored 0, "
            "method 'failed'): %s%s",
            len(failed),
            len(items),
            listed,
            ", …" if len(failed) > MAX_LISTED_FAILURES else "",
        )
    rule_acc = sum(item["correct"] for item in items) / len(items)
    log.info("score: rules: accuracy %.1f%%", 100 * rule_acc)

    judge_meta = apply_judge(exp, cfg, rows, items) if cfg.score.judge is not None else None

    summary = summarize(items, cfg.score.confidence)
    try:
        metrics = compute_metrics(items, bench_cfg.metrics, cfg.score.confidence)
    except StageError as exc:
        raise StageError(f"score: {bench}: {exc}") from None
    out = paths.scores_file(exp, checkpoint, bench)
    write_json(
        out,
        {
            "experiment": exp,
            "checkpoint": checkpoint,
            "benchmark": bench,
            **summary,
            "headline": bench_cfg.headline,
            "metrics": metrics,
            "confidence": cfg.score.confidence,
            "generation_failures": len(failed),
            "judge": judge_meta,
            "items": items,
        },
    )
    log.info(
        "score: %s/%s on %s: accuracy %.1f%% [%.1f, %.1f] (n=%d) → %s",
        exp,
        checkpoint,
        bench,
        100 * summary["accuracy"],
        100 * summary["ci_low"],
        100 * summary["ci_high"],
        summary["n"],
        out,
    )
