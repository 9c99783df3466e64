"""The score stage's use of the LLM judge: which items it is asked about, and what its
verdicts and failures do to them (see :mod:`vlrl.stages.score`)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vlrl.config import JudgeConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.items.answers import extract_answer
from vlrl.items.predictions import JudgeMetadata, Prediction, ScoredItem
from vlrl.scoring.judge import NOT_JUDGED, Judge, judge_cache_dir, judge_request
from vlrl.serving.commands import unstarted
from vlrl.serving.servers import serving

log = logging.getLogger(__name__)

MAX_LISTED_FAILURES = 5


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
    judge_cfg: JudgeConfig,
    prompt: str | None,
    predictions: list[Prediction],
    items: list[ScoredItem],
    mode: str,
    log_dir: Path | None = None,
) -> JudgeMetadata:
    """Ask the judge about the items ``mode`` selects (``fallback``: those the rules marked
    wrong; ``always``: all) with the judge prompt ``prompt`` (None: each item's answer type's),
    update them in place; the judge metadata. A judge to serve is started for it, its log in
    ``log_dir`` (default: ``logs/score/<exp>``)."""
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
        item.judge_reply = outcome.reply
        if outcome.verdict is None:
            item.judge_error = outcome.error
            if mode == "fallback":
                continue  # the rule verdict stands: a failure must not move the metric
            item.method = "judge"
            if judge_cfg.on_failure == "score_zero":
                item.correct, item.score = 0, 0.0
            else:
                item.correct, item.score = None, None
            continue
        item.method = "judge"
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
        outcome = (
            "their rule verdicts kept"
            if mode == "fallback"
            else "scored 0"
            if judge_cfg.on_failure == "score_zero"
            else "left unscored"
        )
        log.warning(
            "score: the judge failed on %d of %d items: %s (%s)",
            meta.failures,
            len(requests),
            outcome,
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
