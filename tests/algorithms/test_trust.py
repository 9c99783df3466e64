"""Trust-GRPO group arithmetic: the released custom.py and the paper's Eq. 1-6, case by case."""

from __future__ import annotations

import math

import pytest

from vlrl.algorithms.trust import (
    RELEASED_T,
    SKIPPED_GAMMA,
    GroupTrust,
    TrustRule,
    combine,
    is_skipped,
    rule_from_settings,
    select_queries,
)
from vlrl.config import ThinkingRewardConfig, TrustGRPOSettings

RELEASED = TrustRule()
PAPER = TrustRule(variant="paper", T=100.0)
A = 0.3  # α, hard-coded in the released code


@pytest.mark.parametrize(
    ("outcome", "rule", "skipped", "queried"),
    [
        # skip rule: all ≥ 0.9 (solved) or all ≤ 0.1 (failed); the bounds are inclusive
        ([1.0, 1.0, 0.9, 0.95], RELEASED, True, [False] * 4),
        ([0.0, 0.1, 0.05, 0.0], RELEASED, True, [False] * 4),
        ([0.9, 0.1], RELEASED, False, [True, False]),
        # query threshold 0.2, inclusive
        ([1.0, 0.2, 0.19, 0.0], RELEASED, False, [True, True, False, False]),
        ([0.5, 0.3], RELEASED, False, [True, True]),
        # the paper queries every response and never skips
        ([1.0, 1.0], PAPER, False, [True, True]),
        ([0.0, 0.0], PAPER, False, [True, True]),
        ([1.0, 0.0], PAPER, False, [True, True]),
    ],
)
def test_skip_and_query_rules(outcome, rule, skipped, queried):
    assert is_skipped(outcome, rule) is skipped
    assert select_queries(outcome, rule) == queried


def _anneal(step: int, T: float) -> float:
    return A * math.exp(-step / T)


@pytest.mark.parametrize(
    ("outcome", "thinking", "step", "rule", "expected_terms", "trust", "gamma"),
    [
        # binary task: wrong answers are not queried (0), μw = 0 ≤ μc → trust 1 (as released)
        ([1.0, 0.0, 1.0, 0.0], [0.8, None, 0.6, None], 0, RELEASED,
         [A * 0.8, 0.0, A * 0.6, 0.0], 1.0, 1.0),
        # graded scores in [0.2, 0.5) are queried and wrong: μc = 0.2 < μw = 0.9
        ([1.0, 0.3], [0.2, 0.9], 0, RELEASED,
         [A * math.exp(-0.7) * 0.2, A * math.exp(-0.7) * 0.9], math.exp(-0.7), math.exp(-1.4)),
        # μc < μw but nobody correct: released leaves the discount alone; logged γ still < 1
        ([0.3, 0.4], [0.2, 0.6], 0, RELEASED, [A * 0.2, A * 0.6], 1.0, math.exp(2 * -0.4)),
        # ... the paper applies γ = exp(μc − μw) with μc = 0 for the empty set
        ([0.3, 0.4], [0.2, 0.6], 0, PAPER,
         [A * math.exp(-0.4) * 0.2, A * math.exp(-0.4) * 0.6], math.exp(-0.4), math.exp(-0.8)),
        # annealing: exp(−step/T) with T = 500 released
        ([1.0, 0.0], [1.0, None], 500, RELEASED, [A * math.exp(-1.0), 0.0], 1.0, 1.0),
        # the paper scores wrong answers too; μc ≥ μw → γ = 1
        ([1.0, 0.0], [0.9, 0.1], 50, PAPER, [_anneal(50, 100) * 0.9, _anneal(50, 100) * 0.1],
         1.0, 1.0),
        # correct threshold 0.5 is inclusive
        ([0.5, 0.3], [0.1, 0.2], 0, RELEASED,
         [A * math.exp(-0.1) * 0.1, A * math.exp(-0.1) * 0.2], math.exp(-0.1), math.exp(-0.2)),
    ],
)  # fmt: skip
def test_combine_cases(outcome, thinking, step, rule, expected_terms, trust, gamma):
    result = combine(outcome, thinking, step, rule)
    assert not result.skipped and not result.dropped
    assert result.terms == pytest.approx(expected_terms)
    assert result.trust == pytest.approx(trust)
    assert result.gamma_logged == pytest.approx(gamma)
    assert result.discount == pytest.approx(_anneal(step, rule.T) * trust)


def test_skipped_group_has_zero_terms_and_logs_half():
    result = combine([1.0, 1.0, 1.0], [None, None, None], 3, RELEASED)
    assert result.skipped and result.terms == [0.0, 0.0, 0.0]
    assert (result.discount, result.gamma_logged) == (0.0, SKIPPED_GAMMA)


def test_a_failed_query_drops_the_group():
    # response 1 was queried (0.3 ≥ 0.2) but its call failed
    result = combine([1.0, 0.3, 0.0], [0.5, None, None], 0, RELEASED)
    assert result.dropped and result.terms == [None, None, None]
    # a non-queried None is not a failure
    assert not combine([1.0, 0.0], [0.5, None], 0, RELEASED).dropped
    assert combine([1.0, 0.0], [0.5, None], 0, PAPER).dropped


def test_every_field_of_a_skipped_a_dropped_and_a_scored_group():
    assert combine([1.0, 1.0], [None, None], 3, RELEASED) == GroupTrust(
        [0.0, 0.0], 0.0, 1.0, SKIPPED_GAMMA, 0.0, 0.0, skipped=True, dropped=False
    )
    assert combine([1.0, 0.3], [0.5, None], 3, RELEASED) == GroupTrust(
        [None, None], 0.0, 1.0, 1.0, 0.0, 0.0, skipped=False, dropped=True
    )
    # μc = 0.6 (the correct one), μw = (0.2 + 0) / 2: no distrust
    scored = combine([1.0, 0.3, 0.0], [0.6, 0.2, None], 0, RELEASED)
    assert scored == GroupTrust(
        [pytest.approx(0.18), pytest.approx(0.06), 0.0],
        pytest.approx(A),
        1.0,
        1.0,
        pytest.approx(0.6),
        pytest.approx(0.1),
        skipped=False,
        dropped=False,
    )


def test_a_score_given_for_a_response_not_queried_counts_as_0_as_released():
    # 0.1 < 0.2: not queried, so its score is not the reward model's to give
    assert combine([1.0, 0.1], [0.5, 0.9], 0, RELEASED).terms == [pytest.approx(0.5 * A), 0.0]


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="2 thinking scores for 3 outcomes"):
        combine([1.0, 0.0, 0.5], [0.1, 0.2], 0, RELEASED)


@pytest.mark.parametrize(
    ("variant", "T", "expected_T"),
    [("released", None, RELEASED_T), ("paper", None, 40.0), ("released", 12000.0, 12000.0)],
)
def test_rule_from_settings_defaults_T(variant, T, expected_T):
    settings = TrustGRPOSettings(
        variant=variant,
        T=T,
        reward_model=ThinkingRewardConfig(base_url="http://127.0.0.1:1/v1", model="m"),
    )
    rule = rule_from_settings(settings, max_steps=40)
    assert (rule.T, rule.variant, rule.alpha) == (expected_T, variant, A)


def test_rule_from_settings_passes_every_threshold_on():
    settings = TrustGRPOSettings(
        alpha=0.25,
        T=7.0,
        query_threshold=0.3,
        skip_high=0.8,
        skip_low=0.15,
        correct_threshold=0.6,
        reward_model=ThinkingRewardConfig(base_url="http://127.0.0.1:1/v1", model="m"),
    )
    assert rule_from_settings(settings, max_steps=40) == TrustRule(
        variant="released",
        alpha=0.25,
        T=7.0,
        query_threshold=0.3,
        skip_high=0.8,
        skip_low=0.15,
        correct_threshold=0.6,
    )
