"""Trust-GRPO's group arithmetic (SophiaVL-R1: arXiv:2505.17018 §3.4 and the released code).

Pure functions over one group of responses to one question, so each rule has a table test. The
trainer (:mod:`vlrl.algorithms.trust_grpo`) calls :func:`select_queries` to decide which
responses go to the thinking reward model, then :func:`combine` to turn the thinking scores into
the term added to each outcome reward.

Released code (``variant="released"``, the default; kxfan2002/SophiaVL-R1 @ a818494,
``verl/workers/reward/custom.py`` ``CustomRewardManager.__call__``):

1. Skip rule: every outcome ≥ 0.9 or every outcome ≤ 0.1 → no queries, thinking term 0 for the
   group, discount 0 (γ logged as 0.5).
2. Only responses with outcome ≥ 0.2 are queried; the others get thinking score 0.
3. correct = outcome ≥ 0.5; μc, μw = mean thinking score over correct / wrong responses (0 for
   an empty set).
4. discount = α·exp(−step/T); when μc < μw and some response is correct, discount ·= exp(μc−μw).
5. term_i = discount · thinking_i. The logged γ is exp(2(μc−μw)) when μc < μw, else 1: it is only
   a metric in the released code, never applied.

Paper (``variant="paper"``, Eq. 1-6): every response is queried; γ = exp(μc−μw) when μc < μw,
else 1, whether or not any response is correct; term_i = γ·α·exp(−step/T)·thinking_i; T defaults
to the total number of training steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Variant = Literal["released", "paper"]

RELEASED_T = 500.0
"""``verl/workers/reward/config.py`` dataclass default of ``alpha`` (the T of exp(-step/T))."""
SKIPPED_GAMMA = 0.5
"""The γ the released code logs for a skipped group."""


@dataclass(frozen=True)
class TrustRule:
    """The numbers of one Trust-GRPO variant (defaults: the released code)."""

    variant: Variant = "released"
    alpha: float = 0.3
    T: float = RELEASED_T
    query_threshold: float = 0.2
    skip_high: float = 0.9
    skip_low: float = 0.1
    correct_threshold: float = 0.5


@dataclass(frozen=True)
class GroupTrust:
    """What :func:`combine` decided for one group.

    Attributes:
        terms: the thinking term added to each outcome reward; all None when the group is
            dropped because a queried score is missing (a failed reward-model call).
        discount: α·exp(−step/T), times the trust factor where it applies (0 when skipped).
        trust: the factor applied to the thinking reward (1 when none applies).
        gamma_logged: the γ the released code logs (exp(2(μc−μw)) or 1; 0.5 when skipped).
        mu_correct, mu_wrong: mean thinking score over correct / wrong responses.
        skipped: the skip rule applied.
        dropped: a queried score is missing, so the group carries no thinking comparison.
    """

    terms: list[float | None]
    discount: float
    trust: float
    gamma_logged: float
    mu_correct: float
    mu_wrong: float
    skipped: bool
    dropped: bool


def is_skipped(outcome: Sequence[float], rule: TrustRule) -> bool:
    """The released skip rule: a group that is all solved or all failed gets no thinking reward.

    >>> rule = TrustRule()
    >>> is_skipped([1.0, 0.95], rule), is_skipped([0.0, 0.1], rule), is_skipped([1.0, 0.0], rule)
    (True, True, False)
    >>> is_skipped([1.0, 1.0], TrustRule(variant="paper"))
    False
    """
    if rule.variant == "paper":
        return False
    return all(o >= rule.skip_high for o in outcome) or all(o <= rule.skip_low for o in outcome)


def select_queries(outcome: Sequence[float], rule: TrustRule) -> list[bool]:
    """Which responses of one group are sent to the thinking reward model.

    >>> select_queries([1.0, 0.3, 0.1, 0.0], TrustRule())
    [True, True, False, False]
    >>> select_queries([1.0, 1.0], TrustRule())
    [False, False]
    >>> select_queries([1.0, 0.0], TrustRule(variant="paper"))
    [True, True]
    """
    if rule.variant == "paper":
        return [True] * len(outcome)
    if is_skipped(outcome, rule):
        return [False] * len(outcome)
    return [o >= rule.query_threshold for o in outcome]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def combine(
    outcome: Sequence[float],
    thinking: Sequence[float | None],
    step: int,
    rule: TrustRule,
) -> GroupTrust:
    """The thinking term of each response of one group.

    ``thinking[i]`` is the reward model's score for response i, or None where it was not
    queried (scored 0, as released) or where the call failed. A failed queried call drops the
    group (all terms None): the trainer then gives the group no advantage rather than scoring the
    failure.

    >>> g = combine([1.0, 0.0], [0.8, None], step=0, rule=TrustRule())
    >>> [round(t, 2) for t in g.terms], g.trust
    ([0.24, 0.0], 1.0)
    >>> g = combine([1.0, 0.3], [0.2, 0.9], step=0, rule=TrustRule())
    >>> round(g.trust, 4), round(g.discount, 4)
    (0.4966, 0.149)
    """
    if len(thinking) != len(outcome):
        raise ValueError(f"{len(thinking)} thinking scores for {len(outcome)} outcomes")
    anneal = rule.alpha * math.exp(-step / rule.T)
    queried = select_queries(outcome, rule)
    if is_skipped(outcome, rule):
        zeros: list[float | None] = [0.0] * len(outcome)
        return GroupTrust(zeros, 0.0, 1.0, SKIPPED_GAMMA, 0.0, 0.0, skipped=True, dropped=False)
    if any(q and t is None for q, t in zip(queried, thinking, strict=True)):
        nones: list[float | None] = [None] * len(outcome)
        return GroupTrust(nones, 0.0, 1.0, 1.0, 0.0, 0.0, skipped=False, dropped=True)
    pairs = zip(queried, thinking, strict=True)
    scores = [float(t) if q and t is not None else 0.0 for q, t in pairs]
    correct = [o >= rule.correct_threshold for o in outcome]
    mu_c = _mean([s for s, c in zip(scores, correct, strict=True) if c])
    mu_w = _mean([s for s, c in zip(scores, correct, strict=True) if not c])
    distrust = mu_c < mu_w
    if rule.variant == "paper":
        trust = math.exp(mu_c - mu_w) if distrust else 1.0
    else:
        trust = math.exp(mu_c - mu_w) if distrust and any(correct) else 1.0
    gamma_logged = math.exp(2 * (mu_c - mu_w)) if distrust else 1.0
    discount = anneal * trust
    terms: list[float | None] = [discount * s for s in scores]
    return GroupTrust(terms, discount, trust, gamma_logged, mu_c, mu_w, False, False)


def rule_from_settings(settings, max_steps: int) -> TrustRule:
    """A :class:`TrustRule` from ``grpo.trust`` (:class:`vlrl.config.TrustGRPOSettings`).

    T defaults to :data:`RELEASED_T` for the released variant and to ``max_steps`` for the paper.
    """
    default_t = RELEASED_T if settings.variant == "released" else float(max_steps)
    return TrustRule(
        variant=settings.variant,
        alpha=settings.alpha,
        T=settings.T if settings.T is not None else default_t,
        query_threshold=settings.query_threshold,
        skip_high=settings.skip_high,
        skip_low=settings.skip_low,
        correct_threshold=settings.correct_threshold,
    )
