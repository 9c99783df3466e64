"""The ``score`` stage: per-item scores and accuracy of one checkpoint on one benchmark.

Input: ``results/<exp>/predictions/<checkpoint>/<bench>.jsonl`` (written by ``infer``), read as
:class:`vlrl.predictions.Prediction` rows. Output:
``results/<exp>/scores/<checkpoint>/<bench>.json``, a :class:`vlrl.predictions.Scores` written
atomically: n, accuracy and its interval, per-task
accuracy, the benchmark's metrics, judge metadata, counts of generation failures and unscored
items, and one :class:`~vlrl.predictions.ScoredItem` per prediction.

Every item is scored by the rules (:mod:`vlrl.scoring.rules`, with the benchmark's protocol:
IoU threshold and strictness, box frame, ChartQA's relaxed accuracy, its choice-extraction
rule). With ``score.judge`` set, an LLM judge (:mod:`vlrl.scoring.judge`) then decides the items
the rules marked wrong (``mode: fallback``, the Vision-SR1 protocol) or all items (``mode:
always``; a benchmark may impose its mode and its own prompt, e.g. MM-Vet's grader), except
grounding and detection items, which only IoU decides. A judged item has ``method: "judge"``
and its score and verdict from the judge. A judge failure (a call that failed after its
retries, or a reply that does not parse) is never a verdict: by default
(``score.judge.on_failure: unscored``) the item is *unscored* (``correct`` and ``score`` null,
``judge_error`` says why), left out of every accuracy and metric and counted in ``unscored``;
``error`` fails the stage naming the items; ``score_zero`` scores them 0 and counts them.
Replies are cached in ``results/<exp>/judge_cache/`` as they arrive, so a rerun after a failure
or a kill only asks about the items without a verdict. A judge with ``score.judge.serve`` is
started for the judging (:func:`vlrl.servers.serving`; its log in
``logs/score/<exp>/<checkpoint>/<bench>/judge.log``) and stopped after it, also on failure; with
nothing to judge, or every verdict already in the cache, none is started.

A prediction the infer stage recorded as failed (its ``error`` is set: the ``openai`` backend got
no response after its retries) is not an answer: neither the rules nor the judge see it. By
default (``score.generation_failures: error``) the stage then fails, naming the items; with
``score_zero`` its item has ``method: "failed"``, ``extracted: null``, ``generation_error``
saying why and ``correct = score = 0`` (it counts against accuracy: a model whose server fails
is not rewarded with a smaller denominator), and ``generation_failures`` counts such items.

Accuracy is the mean of ``correct`` over the scored items; intervals are Wilson intervals at
``score.confidence``. The benchmark's metrics beyond accuracy (:mod:`vlrl.scoring.metrics`:
HallusionBench's fAcc / qAcc, CircularEval, MME's score, ...) are computed from the same items
into ``metrics``; ``headline`` names the one tables lead with.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vlrl import paths
from vlrl.answers import extract_answer
from vlrl.benchmarks import BenchmarkConfig, load_benchmark
from vlrl.config import ExperimentConfig
from vlrl.errors import StageError
from vlrl.predictions import (
    JudgeMetadata,
    MetricValue,
    Prediction,
    ScoredItem,
    Scores,
    TaskSummary,
    items_as_dicts,
    read_predictions,
    write_scores,
)
from vlrl.scoring.judge import NOT_JUDGED, Judge, judge_cache_dir, judge_request
from vlrl.scoring.metrics import compute as compute_metrics
from vlrl.scoring.rules import score_item
from vlrl.scoring.stats import summarize
from vlrl.servers import serving, unstarted

log = logging.getLogger(__name__)

#: Experiment config keys this stage reads: its params (vlrl.workflow.stage_deps).
READS = ("score", "infer.checkpoints", "sft.enabled", "grpo.enabled")

MAX_LISTED_FAILURES = 5


def rule_scores(
    predictions: list[Prediction],
    bench_cfg: BenchmarkConfig,
    iou_threshold: float,
    where: Path,
) -> list[ScoredItem]:
    """Score every prediction by the rules, with the benchmark's protocol. With ``box_frame``
    ``model_input``, a grounding prediction must carry its ``input_size`` and ``image_sizes``
    (the infer stage writes them)."""
    items = []
    for lineno, prediction in enumerate(predictions, 1):
        common = {
            "id": prediction.id,
            "task": prediction.task,
            "groups": prediction.groups,
            "problem_type": prediction.problem_type,
        }
        if prediction.error:  # no response: nothing to score (see the module docstring)
            items.append(
                ScoredItem(
                    **common,
                    extracted=None,
                    correct=0,
                    score=0.0,
                    method="failed",
                    generation_error=prediction.error,
                )
            )
            continue
        try:
            extracted, score, correct = score_item(
                prediction.response,
                prediction.answer,
                prediction.problem_type,
                prediction.options,
                prediction.boxes,
                iou_threshold,
                bench_cfg.iou_strict,
                bench_cfg.relaxed_tolerance,
                _box_frames(prediction, bench_cfg.box_frame, where, lineno),
                bench_cfg.choice_rule,
            )
        except ValueError as exc:
            raise StageError(f"score: {where}:{lineno}: {exc}") from None
        items.append(
            ScoredItem(
                **common, extracted=extracted, correct=correct, score=float(score), method="rule"
            )
        )
    return items


def _box_frames(
    prediction: Prediction, box_frame: str, where: Path, lineno: int
) -> tuple[list[float], list[float]] | None:
    if box_frame != "model_input" or prediction.problem_type != "grounding":
        return None
    sizes = prediction.image_sizes or []
    if not prediction.input_size or not sizes:
        raise StageError(
            f"score: {where}:{lineno}: the benchmark's boxes are in the model-input frame "
            "(box_frame: model_input) but the row has no input_size / image_sizes; rerun infer"
        )
    return prediction.input_size, sizes[0]


def candidate(response: str) -> str:
    """What the judge reads of a response: its ``<answer>`` (or last ``\\boxed{}``) if it has
    one, else the whole response, reasoning included.

    >>> candidate("<think>hmm</think><answer>blue</answer>"), candidate("just blue")
    ('blue', 'just blue')
    """
    answer = extract_answer(response)
    return answer if answer is not None else response


def apply_judge(
    exp: str,
    cfg: ExperimentConfig,
    bench_cfg: BenchmarkConfig,
    predictions: list[Prediction],
    items: list[ScoredItem],
    log_dir: Path | None = None,
) -> JudgeMetadata:
    """Ask the judge about the selected items, update them in place; the judge metadata. A
    judge to serve is started for it, its log in ``log_dir`` (default: ``logs/score/<exp>``)."""
    judge_cfg = cfg.score.judge
    assert judge_cfg is not None
    protocol = bench_cfg.judge
    mode = protocol.mode if protocol is not None and protocol.mode else judge_cfg.mode
    prompt = protocol.prompt if protocol is not None else None
    chosen = [
        i
        for i, item in enumerate(items)
        if item.problem_type not in NOT_JUDGED
        and item.method != "failed"
        and (mode == "always" or item.correct == 0)
    ]
    requests = [
        judge_request(
            p.id, p.problem, p.answer, p.problem_type, p.options, candidate(p.response), prompt
        )
        for p in (predictions[i] for i in chosen)
    ]
    planned = unstarted(judge_cfg)
    to_ask = Judge(planned.model_copy(update={"mode": mode}), judge_cache_dir(exp)).uncached(
        requests
    )
    server = (
        serving(judge_cfg, log_dir or paths.server_log_dir("score", exp), name="judge")
        if to_ask
        else contextlib.nullcontext(planned)  # nothing to ask, or every verdict cached: no server
    )
    with server as served:
        judge = Judge(served.model_copy(update={"mode": mode}), judge_cache_dir(exp))
        log.info(
            "score: judge %s (mode %s%s): %d of %d items",
            served.model,
            mode,
            f", prompt {prompt}" if prompt else "",
            len(chosen),
            len(items),
        )
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
        item.method = "judge"
        item.judge_reply = outcome.reply
        if outcome.verdict is None:
            item.judge_error = outcome.error
            if judge_cfg.on_failure == "score_zero":
                item.correct, item.score = 0, 0.0
            else:
                item.correct, item.score = None, None
            continue
        flipped += int(outcome.verdict != item.correct)
        item.correct, item.score = outcome.verdict, outcome.score

    meta = JudgeMetadata.model_validate(judge.metadata())
    log.info(
        "score: judge calls %d, cache hits %d, failures %d; verdict differs from the rules on %d",
        meta.calls,
        meta.cache_hits,
        meta.failures,
        flipped,
    )
    if meta.failures and judge_cfg.on_failure == "error":
        listed = "; ".join(judge.errors[:MAX_LISTED_FAILURES])
        raise StageError(
            f"score: the judge failed on {meta.failures} of {len(requests)} items "
            f"(first: {listed}). Replies so far are cached in {judge_cache_dir(exp)}; rerun, fix "
            "the judge, or set score.judge.on_failure=unscored to leave those items unscored"
        )
    if meta.failures:
        log.warning(
            "score: the judge failed on %d of %d items: %s (%s)",
            meta.failures,
            len(requests),
            "scored 0" if judge_cfg.on_failure == "score_zero" else "left unscored",
            "; ".join(judge.errors[:MAX_LISTED_FAILURES]),
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
    bench_cfg = load_benchmark(bench)
    if bench_cfg.judge is not None and bench_cfg.judge.required and cfg.score.judge is None:
        raise StageError(
            f"score: benchmark {bench} is scored by an LLM judge ({paths.benchmark_file(bench)}: "
            f"judge.required) but experiment {exp} sets no score.judge; add one (base_url, model)"
        )
    source = paths.predictions_file(exp, checkpoint, bench)
    predictions = read_predictions(source)
    log.info(
        "score: %s/%s on %s: %d items from %s", exp, checkpoint, bench, len(predictions), source
    )
    iou_threshold = (
        bench_cfg.iou_threshold if bench_cfg.iou_threshold is not None else cfg.score.iou_threshold
    )
    items = rule_scores(predictions, bench_cfg, iou_threshold, source)
    failed = [item.id for item in items if item.method == "failed"]
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
    rule_acc = sum(item.correct or 0 for item in items) / len(items)
    log.info("score: rules: accuracy %.1f%%", 100 * rule_acc)

    judge_meta = (
        apply_judge(
            exp,
            cfg,
            bench_cfg,
            predictions,
            items,
            paths.server_log_dir("score", exp, checkpoint, bench),
        )
        if cfg.score.judge is not None
        else None
    )
    scored = items_as_dicts([item for item in items if item.scored])
    if not scored:
        raise StageError(
            f"score: none of the {len(items)} items of {source} could be scored (every judge "
            "call failed); see the log for why"
        )
    summary = summarize(scored, cfg.score.confidence)
    try:
        metrics = compute_metrics(scored, bench_cfg.metrics, cfg.score.confidence)
    except StageError as exc:
        raise StageError(f"score: {bench}: {exc}") from None
    out = paths.scores_file(exp, checkpoint, bench)
    scores = Scores(
        experiment=exp,
        checkpoint=checkpoint,
        benchmark=bench,
        n=summary["n"],
        accuracy=summary["accuracy"],
        ci_low=summary["ci_low"],
        ci_high=summary["ci_high"],
        per_task={t: TaskSummary(**v) for t, v in summary["per_task"].items()},
        headline=bench_cfg.headline,
        metrics={name: MetricValue(**value) for name, value in metrics.items()},
        confidence=cfg.score.confidence,
        generation_failures=len(failed),
        unscored=len(items) - len(scored),
        judge=judge_meta,
        items=items,
    )
    write_scores(out, scores)
    log.info(
        "score: %s/%s on %s: accuracy %.1f%% [%.1f, %.1f] (n=%d%s) → %s",
        exp,
        checkpoint,
        bench,
        100 * scores.accuracy,
        100 * scores.ci_low,
        100 * scores.ci_high,
        scores.n,
        f", {scores.unscored} unscored" if scores.unscored else "",
        out,
    )
