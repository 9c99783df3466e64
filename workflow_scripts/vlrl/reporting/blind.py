"""Baselines that cannot see: how much of a benchmark's accuracy needs no image.

The *answer prior* answers every test item with the training set's most common answer to the
same question (its text, case and spacing ignored) or, for a question the training set never
asks, the most common answer of the item's task and problem type (ties: the answer seen first).
Its answers are scored by the rules of the protocol that scored the checkpoints
(:func:`vlrl.scoring.verdicts.rule_scores`), and each checkpoint is paired with it on the same
items (:func:`vlrl.reporting.frames.paired`): a gain over base that the prior already has is the
answer distribution, not looking. Each gain between checkpoints is also measured on the items
the prior answers wrong: there the most common answer fails, so a gain needs more than the
question. Benchmarks whose answers are boxes (grounding, detection) have
no answer prior; neither has an experiment without training records.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from vlrl import sharing
from vlrl.core.errors import StageError
from vlrl.core.files import read_jsonl
from vlrl.items.predictions import Prediction, ScoredItem, read_predictions
from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import Evaluation, comparison_pairs, paired
from vlrl.reporting.labels import label
from vlrl.scoring.protocols import get_protocol
from vlrl.scoring.stats import accuracy_summary
from vlrl.scoring.verdicts import rule_scores

ANSWERED_BY_TEXT = frozenset({"multiple_choice", "yes_no", "numerical", "free_form", "ocr"})
"""The problem types whose answers are text a prior can repeat (not boxes)."""

TRAIN_FILE = "train.jsonl"


def question_key(text: str) -> str:
    """A question as the prior matches it: lower case, spacing collapsed.

    >>> question_key("  How many  Circles?")
    'how many circles?'
    """
    return re.sub(r"\s+", " ", text).strip().lower()


@dataclass(frozen=True)
class Prior:
    """The most common training answer per question and per (task, problem type)."""

    by_question: dict[str, str]
    by_type: dict[tuple[str, str], str]

    @classmethod
    def of(cls, records: list[dict[str, Any]]) -> Prior:
        """The prior of training records (``problem``, ``answer``, ``task``, ``problem_type``).

        >>> p = Prior.of([{"problem": "n?", "answer": "2", "task": "count",
        ...                "problem_type": "numerical"}] * 2 + [{"problem": "m?", "answer": "3",
        ...                "task": "count", "problem_type": "numerical"}])
        >>> p.answer("N?", "count", "numerical"), p.answer("k?", "count", "numerical")
        (('2', 'question'), ('2', 'type'))
        >>> p.answer("k?", "colour", "multiple_choice")
        (None, 'none')
        """
        questions: dict[str, Counter[str]] = {}
        types: dict[tuple[str, str], Counter[str]] = {}
        for r in records:
            answer = str(r["answer"])
            questions.setdefault(question_key(r["problem"]), Counter())[answer] += 1
            types.setdefault((r.get("task", ""), r["problem_type"]), Counter())[answer] += 1
        # Counter.most_common keeps first-seen order among equal counts: ties are deterministic
        return cls(
            {q: c.most_common(1)[0][0] for q, c in questions.items()},
            {t: c.most_common(1)[0][0] for t, c in types.items()},
        )

    def answer(self, problem: str, task: str, problem_type: str) -> tuple[str | None, str]:
        """``(answer, basis)``: basis ``question``, ``type``, or ``none`` (no answer)."""
        found = self.by_question.get(question_key(problem))
        if found is not None:
            return found, "question"
        found = self.by_type.get((task, problem_type))
        return (found, "type") if found is not None else (None, "none")


@dataclass(frozen=True)
class PriorScores:
    """The prior's verdicts on one benchmark, in the shape :func:`paired` reads."""

    items: list[ScoredItem]
    by_question: int
    by_type: int


def prior_scores(
    exp: str, ev: Evaluation, iou_threshold: float, train_file: Path
) -> PriorScores | None:
    """The answer prior's verdicts on ``ev``'s items (see the module docstring); None when the
    benchmark's answers are boxes or the experiment has no training records."""
    first = next(iter(ev.scores))
    if not train_file.is_file():
        return None
    predictions = read_predictions(sharing.predictions_file(exp, first, ev.bench), "report")
    if not predictions:
        return None
    if any(p.problem_type not in ANSWERED_BY_TEXT for p in predictions):
        return None
    try:
        prior = Prior.of(read_jsonl(train_file))
    except (OSError, ValueError, KeyError) as exc:
        raise StageError(f"report: {train_file}: cannot read its training records: {exc}") from None
    answered: list[Prediction] = []
    bases = Counter()
    for p in predictions:
        answer, basis = prior.answer(p.problem, p.task, p.problem_type)
        bases[basis] += 1
        response = "" if answer is None else f"<answer>{answer}</answer>"
        answered.append(p.model_copy(update={"response": response, "error": None}))
    protocol = get_protocol(ev.scores[first].protocol)
    where = sharing.predictions_file(exp, first, ev.bench)
    items = rule_scores(answered, ev.config, iou_threshold, where, protocol)
    return PriorScores(items, bases["question"], bases["type"])


def blind_rows(
    exp: str, evaluations: list[Evaluation], score: Any, seed: int, sft_enabled: bool
) -> list[dict[str, Any]]:
    """Per benchmark with an answer prior: its accuracy (Wilson interval), how its answers were
    found, and each checkpoint − prior, paired on the same items (``comparisons`` rows)."""
    train_file = sharing.data_dir(exp) / TRAIN_FILE
    rows = []
    for ev in evaluations:
        if ev.config.blank_images_of is not None:  # the same items as its twin: one prior
            continue
        iou = (
            ev.config.iou_threshold if ev.config.iou_threshold is not None else score.iou_threshold
        )
        prior = prior_scores(exp, ev, iou, train_file)
        if prior is None:
            continue
        summary = accuracy_summary([int(i.correct or 0) for i in prior.items], score.confidence)
        where = Path(f"<answer prior of {ev.bench}>")
        against = []
        for checkpoint, scores in ev.scores.items():
            stats = paired(
                (sharing.scores_file(exp, checkpoint, ev.bench), scores),
                (where, prior),
                score,
                seed,
            )
            against.append({"checkpoint": checkpoint, "model": label(checkpoint, sft_enabled),
                            **stats})  # fmt: skip
        wrong = {i.id for i in prior.items if i.correct == 0}
        where_wrong = []
        for a, b in comparison_pairs(list(ev.scores)) if wrong else []:
            only = [ev.scores[c].model_copy(update={"items": [i for i in ev.scores[c].items
                                                               if i.id in wrong]})
                    for c in (a, b)]  # fmt: skip
            stats = paired(
                (sharing.scores_file(exp, a, ev.bench), only[0]),
                (sharing.scores_file(exp, b, ev.bench), only[1]),
                score,
                seed,
            )
            comparison = f"{label(a, sft_enabled)} − {label(b, sft_enabled)}"
            where_wrong.append({"comparison": comparison, **stats})
        rows.append(
            {
                "benchmark": ev.bench,
                "n": summary["n"],
                "accuracy": summary["accuracy"],
                "ci_low": summary["ci_low"],
                "ci_high": summary["ci_high"],
                "by_question": prior.by_question,
                "by_type": prior.by_type,
                "comparisons": against,
                "where_prior_fails": where_wrong,
            }
        )
    return rows


def blind_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """Per benchmark with an answer prior (:func:`vlrl.reporting.blind.blind_rows`): the
    prior's accuracy and how its answers were found, then each model − prior, paired."""
    level = fmt.level(confidence)
    table = []
    for r in rows:
        cells = {
            "benchmark": r["benchmark"],
            "answer prior": fmt.with_interval(r["accuracy"], r["ci_low"], r["ci_high"]),
            "answered from": f"same question {fmt.count(r['by_question'])}, "
            f"same task and type {fmt.count(r['by_type'])} of {fmt.count(r['n'])}",
        }
        for c in r["comparisons"]:
            cells[f"{c['model']} − prior ({level} CI)"] = fmt.signed_with_interval(
                c["diff"], c["ci_low"], c["ci_high"]
            )
        table.append(cells)
    return pd.DataFrame(table)


def blind_lines(rows: list[dict[str, Any]], confidence: float) -> list[str]:
    """One sentence per benchmark: what a model that cannot see scores, and each model's
    accuracy against it (paired interval).

    >>> row = {"benchmark": "b", "accuracy": 0.381, "ci_low": 0.35, "ci_high": 0.41, "n": 1000,
    ...        "comparisons": [
    ...            {"model": "SFT", "diff": 0.017, "ci_low": -0.01, "ci_high": 0.04},
    ...            {"model": "SFT+GRPO", "diff": 0.089, "ci_low": 0.05, "ci_high": 0.12}]}
    >>> print(blind_lines([row], 0.95)[0])  # doctest: +NORMALIZE_WHITESPACE
    Without the image, the training set's most common answer to each question scores 38.1%
    on b [35.0, 41.0]; SFT 1.7 points over it [-1.0, +4.0], not distinguishable from it;
    SFT+GRPO 8.9 points over it [+5.0, +12.0].
    """
    lines = []
    for r in rows:
        parts = []
        for c in r["comparisons"]:
            side = "over" if c["diff"] >= 0 else "under"
            part = (f"{c['model']} {fmt.value(abs(c['diff']))} points {side} it "
                    f"{fmt.signed_interval(c['ci_low'], c['ci_high'])}")  # fmt: skip
            if c["ci_low"] <= 0 <= c["ci_high"]:
                part += ", not distinguishable from it"
            parts.append(part)
        lines.append(
            "Without the image, the training set's most common answer to each question scores "
            f"{fmt.value(r['accuracy'])}% on {r['benchmark']} "
            f"{fmt.interval(r['ci_low'], r['ci_high'])}; " + "; ".join(parts) + "."
        )
        gains = [
            f"{g['comparison']} {fmt.signed(g['diff'])} points "
            f"{fmt.signed_interval(g['ci_low'], g['ci_high'])} (McNemar "
            f"{fmt.p_stated(g['p_mcnemar'])})"
            for g in r.get("where_prior_fails", [])
        ]
        if gains:
            n = r["where_prior_fails"][0]["n"]
            lines.append(
                f"On the {fmt.count(n)} items of {r['benchmark']} where that answer is wrong "
                "(the question alone does not give it): " + "; ".join(gains) + "."
            )
    return lines
