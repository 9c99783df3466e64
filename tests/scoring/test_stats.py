"""Intervals and paired tests against values computed by hand or by independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from vlrl.scoring.stats import accuracy_summary, paired_difference, proportion_ci


def wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The Wilson interval written out (Wilson 1927), independent of scipy's implementation."""
    z = norm.ppf(1 - (1 - confidence) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(
    ("k", "n", "confidence"),
    [(50, 100, 0.95), (0, 10, 0.95), (10, 10, 0.95), (3, 7, 0.9), (240, 400, 0.99)],
)
def test_proportion_ci_is_wilson(k, n, confidence):
    assert proportion_ci(k, n, confidence) == pytest.approx(wilson(k, n, confidence), abs=1e-12)


def test_proportion_ci_known_value():
    # 50/100 at 95 %: 0.4038 .. 0.5962 (textbook value)
    assert proportion_ci(50, 100) == pytest.approx((0.40383, 0.59617), abs=1e-5)


def test_proportion_ci_rejects_nonsense():
    with pytest.raises(ValueError, match="positive"):
        proportion_ci(0, 0)
    with pytest.raises(ValueError, match="between"):
        proportion_ci(5, 4)


def test_accuracy_summary():
    s = accuracy_summary([1, 1, 0, 0], 0.95)
    assert s["n"] == 4 and s["accuracy"] == 0.5
    assert (s["ci_low"], s["ci_high"]) == pytest.approx(wilson(2, 4, 0.95))


def test_paired_difference_mcnemar_exact():
    # 8 items only a gets right, 2 only b: exact two-sided binomial p = 2 * P(X <= 2 | 10, 1/2)
    a = np.array([1] * 8 + [0] * 2 + [1] * 5 + [0] * 5)
    b = np.array([0] * 8 + [1] * 2 + [1] * 5 + [0] * 5)
    r = paired_difference(a, b, resamples=500, seed=1)
    expected_p = 2 * sum(math.comb(10, i) for i in range(3)) / 2**10
    assert r["p_value"] == pytest.approx(expected_p)  # 0.109375
    assert (r["a_only"], r["b_only"], r["n"]) == (8, 2, 20)
    assert r["diff"] == pytest.approx(0.3)
    assert r["discordant_fraction"] == pytest.approx(0.5)
    assert (r["mean_a"], r["mean_b"]) == (0.65, 0.35)


def test_paired_difference_identical_models():
    a = np.array([1, 0, 1, 1, 0])
    r = paired_difference(a, a.copy(), resamples=100)
    assert r["diff"] == 0.0 and r["p_value"] == 1.0 and r["discordant_fraction"] == 0.0
    assert r["ci_low"] == r["ci_high"] == 0.0


def test_paired_bootstrap_matches_normal_approximation():
    # Large n: the bootstrap interval approaches the paired normal interval diff ± z * sd(d) /
    # sqrt(n) (Miller 2024, arXiv:2411.00640).
    rng = np.random.default_rng(0)
    n = 4000
    b = rng.integers(0, 2, n)
    flip = rng.random(n) < 0.15  # 15 % discordant
    a = np.where(flip, 1 - b, b)
    a[:200] = 1  # a better on some items
    r = paired_difference(a, b, resamples=4000, seed=0)
    d = a - b
    half = 1.959964 * d.std(ddof=1) / math.sqrt(n)
    assert r["ci_low"] == pytest.approx(d.mean() - half, abs=0.002)
    assert r["ci_high"] == pytest.approx(d.mean() + half, abs=0.002)
    assert r["ci_low"] < r["diff"] < r["ci_high"]


def test_paired_difference_is_seeded():
    a = np.array([1, 0, 1, 1, 0, 1, 0, 1])
    b = np.array([0, 0, 1, 0, 1, 1, 0, 0])
    assert paired_difference(a, b, seed=3) == paired_difference(a, b, seed=3)
    assert paired_difference(a, b, seed=3)["ci_low"] <= paired_difference(a, b)["diff"]


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ([1, 0], [1], "equal length"),
        ([], [], "no items"),
        ([1, 2], [0, 1], "0/1"),
    ],
)
def test_paired_difference_rejects_bad_input(a, b, match):
    with pytest.raises(ValueError, match=match):
        paired_difference(np.array(a), np.array(b))
