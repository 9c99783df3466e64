"""Intervals and paired tests against values computed by hand or by independent formulas.

Oracles, none of them :mod:`vlrl.scoring.stats` itself: the Wilson interval written out
(:func:`wilson`), Newcombe's published table of it, ``scipy.stats.bootstrap`` (percentile
method, fed the same seeded generator, so it draws the same resamples and must agree to
rounding) and the exact binomial sum for McNemar. Each interval is checked at 95 % and at
another level, both bounds, with tolerances far below the gap to the wrong level or method:
every such test also asserts that gap, so a 90 %-for-95 % mix-up cannot pass by a whisker.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from independent_stats import paired_items, scipy_paired_bootstrap
from scipy.stats import binomtest, norm

from vlrl.scoring.stats import (
    accuracy_summary,
    paired_difference,
    proportion_ci,
    summarize,
)


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


# ------------------------------------------------- intervals at their level, both bounds
LEVELS = (0.95, 0.9, 0.99, 0.8)
TIGHT = 1e-10
"""Tolerance against a computed oracle (only floating-point rounding separates them)."""
WIDE = 1e-5
"""The least gap each test asserts between its expected interval and the wrong level's:
10^5 times :data:`TIGHT`, so a mix-up of levels fails by a wide margin, never by a whisker."""


def other_level(level: float) -> float:
    """The level a mix-up would give instead: 90 % for 95 %, else 95 %."""
    return 0.9 if level == 0.95 else 0.95


def assert_far_apart(got: tuple[float, float], wrong: tuple[float, float], gap: float) -> None:
    """Sanity check of a test's own power: both bounds of ``wrong`` miss ``got`` by > ``gap``
    (a bound pinned at 0 or 1 for both is skipped: no level moves it)."""
    for mine, theirs in zip(got, wrong, strict=True):
        if mine == pytest.approx(theirs, abs=1e-12) and mine in (0.0, 1.0):
            continue
        assert abs(mine - theirs) > gap, (got, wrong)


#: Newcombe RG (1998), "Two-sided confidence intervals for the single proportion: comparison of
#: seven methods", Statistics in Medicine 17(8):857-872, Table I, method 3 (the Wilson score
#: interval without continuity correction), 95 %, printed to 4 decimals.
NEWCOMBE_95 = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), NEWCOMBE_95)
def test_proportion_ci_matches_newcombes_published_table(k, n, low, high):
    tol = 5e-5  # the table's rounding
    got = proportion_ci(k, n, 0.95)
    assert got[0] == pytest.approx(low, abs=tol) and got[1] == pytest.approx(high, abs=tol)
    assert proportion_ci(k, n) == got, "95 % is the default"
    # The likely wrong answers miss the table by at least 20 times its rounding: another level,
    # Clopper-Pearson, Wilson with continuity correction (the upper bound always; the lower
    # bound where it is not 0).
    wrong = [
        wilson(k, n, 0.9),
        tuple(binomtest(k, n).proportion_ci(0.95, method="exact")),
        tuple(binomtest(k, n).proportion_ci(0.95, method="wilsoncc")),
    ]
    for w_low, w_high in wrong:
        assert abs(w_high - high) > 20 * tol
        assert low == 0 or abs(w_low - low) > 20 * tol


def random_counts(count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` seeded (k, n): n from 1 to 2000, k anywhere in [0, n]."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        n = int(rng.integers(1, 2001))
        cases.append((int(rng.integers(0, n + 1)), n))
    return cases


def test_proportion_ci_is_wilson_at_every_level_on_random_counts():
    for k, n in random_counts(150, seed=0):
        for level in LEVELS:
            got = proportion_ci(k, n, level)
            expected = wilson(k, n, level)
            assert got[0] == pytest.approx(expected[0], abs=TIGHT), (k, n, level)
            assert got[1] == pytest.approx(expected[1], abs=TIGHT), (k, n, level)
            assert_far_apart(expected, wilson(k, n, other_level(level)), WIDE)


def grouped_items(seed: int) -> list[dict]:
    """Items of three tasks with different skills and sizes (seeded)."""
    rng = np.random.default_rng(seed)
    items = []
    for task, skill, n in (("color", 0.8, 120), ("count", 0.45, 75), ("caption", 0.2, 40)):
        items += [{"task": task, "correct": int(rng.random() < skill)} for _ in range(n)]
    return [items[i] for i in rng.permutation(len(items))]


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_summaries_give_every_interval_at_the_level_asked(level):
    items = grouped_items(seed=1)
    summary = summarize(items, level)
    expected_groups = {"": items} | {
        task: [i for i in items if i["task"] == task] for task in ("caption", "color", "count")
    }
    assert sorted(summary["per_task"]) == ["caption", "color", "count"]
    for task, group in expected_groups.items():
        correct = [i["correct"] for i in group]
        k, n = sum(correct), len(correct)
        got = summary if task == "" else summary["per_task"][task]
        assert (got["n"], got["accuracy"]) == (n, k / n)
        expected = wilson(k, n, level)
        assert got["ci_low"] == pytest.approx(expected[0], abs=TIGHT)
        assert got["ci_high"] == pytest.approx(expected[1], abs=TIGHT)
        assert_far_apart(expected, wilson(k, n, other_level(level)), WIDE)
        alone = accuracy_summary(correct, level)
        assert (alone["ci_low"], alone["ci_high"]) == pytest.approx(expected, abs=TIGHT)
        default = accuracy_summary(correct)  # the default level is 95 %
        assert (default["ci_low"], default["ci_high"]) == pytest.approx(
            wilson(k, n, 0.95), abs=TIGHT
        )


# n = 1500 resamples in chunks (paired_difference bounds its memory): the draws stay the same.
@pytest.mark.parametrize(("n", "seed"), [(90, 1), (400, 2), (1500, 3)])
@pytest.mark.parametrize("level", [0.95, 0.9, 0.99])
def test_paired_interval_is_scipys_percentile_bootstrap_at_the_level_asked(n, seed, level):
    a, b = paired_items(n, seed)
    r = paired_difference(a, b, level, resamples=2000, seed=seed)
    expected = scipy_paired_bootstrap(a, b, level, 2000, seed)
    assert r["ci_low"] == pytest.approx(expected[0], abs=1e-12)
    assert r["ci_high"] == pytest.approx(expected[1], abs=1e-12)
    # The wrong level's interval misses both bounds by at least 10^9 times the tolerance.
    assert_far_apart(expected, scipy_paired_bootstrap(a, b, other_level(level), 2000, seed), 1e-3)
    assert r["ci_low"] <= r["diff"] <= r["ci_high"]


def test_paired_interval_defaults_to_95_percent_2000_resamples_seed_0():
    a, b = paired_items(200, 4)
    expected = scipy_paired_bootstrap(a, b, 0.95, 2000, 0)
    r = paired_difference(a, b)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=1e-12)
    assert_far_apart(expected, scipy_paired_bootstrap(a, b, 0.9, 2000, 0), 1e-3)
