"""The ``score`` stage: per-item scores and accuracy of one checkpoint on one benchmark.

Input: ``results/<exp>/predictions/<checkpoint>/<bench>.jsonl`` (written by ``infer``), read as
:class:`vlrl.items.predictions.Prediction` rows. Output:
``results/<exp>/scores/<checkpoint>/<bench>.json``, a :class:`vlrl.items.predictions.Scores` written
atomically: n, accuracy and its interval, per-task
accuracy, the benchmark's metrics, judge metadata, counts of generation failures and unscored
items, and one :class:`~vlrl.items.predictions.ScoredItem` per prediction.

Every item is scored by the benchmark's *scoring protocol* (:mod:`vlrl.scoring.protocols`: the
rules of the scorer its paper used, e.g. VLMEvalKit as of May 2025, VLM-R1's REC script, the
MathVista authors' ``calculate_score``; ``score.protocol.<bench>`` picks another one the
benchmark supports), with the benchmark's constants (IoU threshold, box frame, ChartQA's
tolerance). An LLM judge (:mod:`vlrl.scoring.judge`, the endpoint in ``score.judge``) is used
only where the protocol's reference uses one (``optional``: in ``score.judge.mode``;
``always``: MM-Vet's grader) or where ``score.judge.benchmarks`` asks for it: a benchmark whose
reference scoring is rules only is never judged otherwise. The judge decides the items the
rules marked wrong (``fallback``, the Vision-SR1 protocol) or all items (``always``; the
benchmark may name its prompt, e.g. MM-Vet's grader), except grounding and detection items,
which only IoU decides. A judged item has ``method: "judge"`` and its score and verdict from
the judge. A judge failure (a call that failed after its retries, or a reply that does not
parse) is never a verdict and never moves a metric: in ``fallback`` mode the item keeps its
rule verdict (``judge_error`` says why) and the failure is counted; in ``always`` mode, by
default (``score.judge.on_failure: unscored``) the item is *unscored* (``correct`` and
``score`` null), left out of every accuracy and counted in ``unscored``, and a group metric
is computed over its complete groups only (its ``left_out`` counts the others); ``error``
fails the stage naming the items; ``score_zero`` scores them 0 and counts them.
Replies are cached in ``results/<exp>/judge_cache/`` as they arrive, so a rerun after a failure
or a kill only asks about the items without a verdict. A judge with ``score.judge.serve`` is
started for the judging (:func:`vlrl.serving.servers.serving`; its log in
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

import logging
from pathlib import Path

from vlrl import sharing
from vlrl.benchmarks import load_benchmark, protocol_for
from vlrl.config import ExperimentConfig
from vlrl.core import paths
from vlrl.core.errors import ConfigError, StageError
from vlrl.items.predictions import (
    MetricValue,
    Scores,
    TaskSummary,
    items_as_dicts,
    read_predictions,
    read_scores,
    write_scores,
)
from vlrl.scoring.judging import MAX_LISTED_FAILURES, apply_judge
from vlrl.scoring.metrics import compute as compute_metrics
from vlrl.scoring.protocols import get_protocol, judge_mode
from vlrl.scoring.stats import summarize
from vlrl.scoring.verdicts import rule_scores

log = logging.getLogger(__name__)


def run(exp: str, cfg: ExperimentConfig, checkpoint: str, bench: str) -> None:
    """Score one checkpoint's predictions on one benchmark (see the module docstring)."""
    score_benchmark(exp, cfg, checkpoint, bench)


def score_benchmark(
    exp: str,
    cfg: ExperimentConfig,
    checkpoint: str,
    bench: str,
    protocol_name: str | None = None,
    out: Path | None = None,
) -> Scores:
    """Score one checkpoint's predictions on one benchmark under ``protocol_name`` (default: the
    experiment's choice for the benchmark, else its default) into ``out`` (default: the stage's
    scores file); the scores written."""
    if checkpoint not in cfg.checkpoints:
        raise StageError(
            f"score: checkpoint {checkpoint!r} is not evaluated by experiment {exp} "
            f"(it evaluates {cfg.checkpoints}; see infer.checkpoints, sft.enabled, grpo.enabled)"
        )
    bench_cfg = load_benchmark(bench)
    chosen = {bench: protocol_name} if protocol_name else cfg.score.protocol
    try:
        protocol = get_protocol(protocol_for(bench, bench_cfg, chosen))
    except ConfigError as exc:
        raise StageError(f"score: {exc}") from None
    judge = cfg.score.judge
    mode = judge_mode(
        protocol, bench, judge.mode if judge else None, judge.benchmarks if judge else {}
    )
    if protocol.judge == "always" and mode is None:
        raise StageError(
            f"score: benchmark {bench} is scored by protocol {protocol.name!r}, an LLM judge's, "
            f"but experiment {exp} sets no score.judge; add one (base_url, model)"
        )
    source = sharing.predictions_file(exp, checkpoint, bench)
    predictions = read_predictions(source)
    log.info(
        "score: %s/%s on %s: %d items from %s", exp, checkpoint, bench, len(predictions), source
    )
    iou_threshold = (
        bench_cfg.iou_threshold if bench_cfg.iou_threshold is not None else cfg.score.iou_threshold
    )
    items = rule_scores(predictions, bench_cfg, iou_threshold, source, protocol)
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
    log.info("score: rules of protocol %s: accuracy %.1f%%", protocol.name, 100 * rule_acc)

    judge_meta = (
        apply_judge(
            exp,
            judge,
            bench_cfg.judge.prompt if bench_cfg.judge is not None else None,
            predictions,
            items,
            mode,
            paths.server_log_dir("score", exp, checkpoint, bench),
        )
        if mode is not None and judge is not None
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
        metrics = compute_metrics(items_as_dicts(items), bench_cfg.metrics, cfg.score.confidence)
    except StageError as exc:
        raise StageError(f"score: {bench}: {exc}") from None
    out = out or paths.scores_file(exp, checkpoint, bench)
    scores = Scores(
        experiment=exp,
        checkpoint=checkpoint,
        benchmark=bench,
        protocol=protocol.name,
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
        "score: %s/%s on %s (%s): accuracy %.1f%% [%.1f, %.1f] (n=%d%s) → %s",
        exp,
        checkpoint,
        bench,
        protocol.name,
        100 * scores.accuracy,
        100 * scores.ci_low,
        100 * scores.ci_high,
        scores.n,
        f", {scores.unscored} unscored" if scores.unscored else "",
        out,
    )
    return scores


def rescore(
    exp: str,
    cfg: ExperimentConfig,
    protocol_name: str,
    checkpoints: list[str] | None = None,
    benches: list[str] | None = None,
) -> list[tuple[Scores, Scores | None]]:
    """Rescore the experiment's existing predictions under ``protocol_name``, with no new
    inference, into ``results/<exp>/rescored/<protocol>/``; per checkpoint and benchmark that
    supports the protocol, ``(rescored, the stage's scores or None)``.

    Raises:
        StageError: no chosen benchmark supports the protocol, or predictions are missing.
    """
    get_protocol(protocol_name)
    supports = {b: load_benchmark(b).protocols for b in benches or cfg.benchmarks}
    supported = [b for b, names in supports.items() if protocol_name in names]
    if not supported:
        listed = "; ".join(f"{b}: {names}" for b, names in supports.items())
        raise StageError(f"rescore: no benchmark supports protocol {protocol_name!r} ({listed})")
    for bench in sorted(set(supports) - set(supported)):
        log.warning("rescore: %s does not support %s; skipped", bench, protocol_name)
    pairs = []
    for checkpoint in checkpoints or cfg.checkpoints:
        for bench in supported:
            out = paths.rescored_file(exp, protocol_name, checkpoint, bench)
            rescored = score_benchmark(exp, cfg, checkpoint, bench, protocol_name, out)
            stage_file = paths.scores_file(exp, checkpoint, bench)
            pairs.append((rescored, read_scores(stage_file) if stage_file.is_file() else None))
    return pairs
