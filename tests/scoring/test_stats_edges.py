"""Edges of :mod:`vlrl.scoring.stats` that ``test_stats.py`` leaves open: the exact error a
user gets for a bad input, the smallest number of resamples, the default number of resamples
and the seed, and inputs that are not float64 arrays (float32 as torch gives, booleans).

Oracles are independent of the module: ``scipy.stats.bootstrap`` (percentile method, fed the
same seeded generator: :func:`independent_stats.scipy_paired_bootstrap`), exact fractions k/n
and the exact binomial sum. Every interval test also asserts the gap to the answer a wrong
default, level or seed would give, so the tolerance cannot let such a mistake through.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from independent_stats import paired_items, scipy_paired_bootstrap

from vlrl.scoring.stats import accuracy_summary, paired_difference, proportion_ci

TIGHT = 1e-12
"""Tolerance against scipy on the same draws (only rounding separates them)."""


def exactly(message: str) -> str:
    """A ``pytest.raises`` pattern matching the whole message and nothing else."""
    return f"^{re.escape(message)}$"


def far_apart(got: tuple[float, float], other: tuple[float, float], gap: float) -> bool:
    """Whether some bound of ``other`` misses ``got`` by more than ``gap``."""
    return max(abs(x - y) for x, y in zip(got, other, strict=True)) > gap


# ------------------------------------------------------------------ errors a user reads
@pytest.mark.parametrize(("k", "n"), [(0, 0), (3, 0), (0, -2)])
def test_proportion_ci_without_items_says_so(k, n):
    with pytest.raises(
        ValueError, match=exactly("proportion_ci: n must be positive (no items scored)")
    ):
        proportion_ci(k, n)


def test_accuracy_of_no_items_is_an_error_not_nan():
    with pytest.raises(
        ValueError, match=exactly("proportion_ci: n must be positive (no items scored)")
    ):
        accuracy_summary([])


@pytest.mark.parametrize(("k", "n"), [(-1, 5), (6, 5)])
def test_proportion_ci_names_k_and_n_when_k_is_out_of_range(k, n):
    with pytest.raises(
        ValueError, match=exactly(f"proportion_ci: k={k} is not between 0 and n={n}")
    ):
        proportion_ci(k, n)


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([], [], "paired_difference: no items"),
        ([1, 0.5], [0, 1], "paired_difference: a and b must hold 0/1 correctness"),
        ([1, 0], [0, -1], "paired_difference: a and b must hold 0/1 correctness"),
        ([1, 0], [1], "paired_difference: a(2,), b(1,): need 1-D, equal length"),
        ([[1, 0]], [[1, 0]], "paired_difference: a(1, 2), b(1, 2): need 1-D, equal length"),
    ],
)
def test_paired_difference_says_what_is_wrong_with_its_input(a, b, message):
    with pytest.raises(ValueError, match=exactly(message)):
        paired_difference(np.array(a), np.array(b))


@pytest.mark.parametrize("resamples", [0, -3])
def test_paired_difference_needs_a_resample(resamples):
    message = f"paired_difference: resamples must be at least 1, got {resamples}"
    with pytest.raises(ValueError, match=exactly(message)):
        paired_difference(np.array([1, 0, 1]), np.array([0, 0, 1]), resamples=resamples)


# ---------------------------------------------------------------- resamples and the seed
@pytest.mark.filterwarnings(
    "ignore:Degrees of freedom", "ignore:invalid value"
)  # scipy, 1 resample
@pytest.mark.parametrize("resamples", [1, 2, 3])
def test_one_resample_is_allowed_and_is_scipys(resamples):
    a, b = paired_items(30, 5)
    r = paired_difference(a, b, resamples=resamples)
    expected = scipy_paired_bootstrap(a, b, 0.95, resamples, 0)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=TIGHT)
    if resamples == 1:  # a single resample: both bounds are its mean
        assert r["ci_low"] == pytest.approx(r["ci_high"], abs=TIGHT)


def test_the_default_is_2000_resamples_95_percent_seed_0():
    # At n = 1000 the 2.5 % and 97.5 % quantiles fall between distinct resampled means, so one
    # resample more (2001) or another seed moves a bound by 2.5e-5 or more: 10^7 tolerances.
    a, b = paired_items(1000, 2)
    expected = scipy_paired_bootstrap(a, b, 0.95, 2000, 0)
    r = paired_difference(a, b)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=TIGHT)
    for wrong in (
        scipy_paired_bootstrap(a, b, 0.95, 2001, 0),
        scipy_paired_bootstrap(a, b, 0.95, 1999, 0),
        scipy_paired_bootstrap(a, b, 0.95, 2000, 1),
        scipy_paired_bootstrap(a, b, 0.9, 2000, 0),
    ):
        assert far_apart(expected, wrong, 1e-5), wrong


@pytest.mark.parametrize("seed", [1, 7, 12345])
def test_the_seed_picks_scipys_draws_for_that_seed(seed):
    a, b = paired_items(1000, 2)
    expected = scipy_paired_bootstrap(a, b, 0.95, 2000, seed)
    r = paired_difference(a, b, seed=seed)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=TIGHT)
    assert far_apart(expected, scipy_paired_bootstrap(a, b, 0.95, 2000, 0), 1e-4)
    assert paired_difference(a, b, seed=seed) == r, "the same seed gives the same result"


def test_chunked_resampling_draws_what_one_call_would():
    # n = 666667 divides 2_000_001 (= 3 * 666667): paired_difference resamples 2 items-rows per
    # chunk, so 5 resamples take 3 chunks; scipy draws all 5 rows at once from the same seed.
    a, b = paired_items(666_667, 8)
    r = paired_difference(a, b, 0.9, resamples=5, seed=3)
    expected = scipy_paired_bootstrap(a, b, 0.9, 5, 3)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=1e-15)


# ----------------------------------------------------------------- inputs of other types
@pytest.mark.parametrize("dtype", [np.float32, np.float16, bool, np.int8])
@pytest.mark.parametrize("side", ["a", "b", "both"])
def test_correctness_of_any_numeric_dtype_is_averaged_exactly(dtype, side):
    # float32 is what torch gives: its mean of [1, 0, 0] is 0.33333334, not 1/3.
    a = np.array([1, 0, 0, 1, 1, 0, 1])
    b = np.array([0, 0, 1, 0, 1, 0, 0])
    a_in = a.astype(dtype) if side in ("a", "both") else a
    b_in = b.astype(dtype) if side in ("b", "both") else b
    r = paired_difference(a_in, b_in, resamples=200, seed=4)
    assert r["mean_a"] == 4 / 7 and r["mean_b"] == 2 / 7
    assert r["diff"] == pytest.approx(2 / 7, abs=1e-15)
    assert (r["a_only"], r["b_only"], r["n"]) == (3, 1, 7)
    assert r["discordant_fraction"] == 4 / 7
    # McNemar exact: 3 of 4 discordant for a, two-sided p = 2 * P(X <= 1 | 4, 1/2)
    assert r["p_value"] == pytest.approx(2 * (1 + 4) / 2**4, abs=1e-15)
    expected = scipy_paired_bootstrap(a, b, 0.95, 200, 4)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=TIGHT)


def test_mcnemar_p_is_exact_and_two_sided_on_lopsided_counts():
    # 9 discordant items: a alone right on 1, b alone on 8: p = 2 * P(X <= 1 | 9, 1/2).
    a = np.array([1] + [0] * 8 + [1] * 6 + [0] * 5)
    b = np.array([0] + [1] * 8 + [1] * 6 + [0] * 5)
    r = paired_difference(a, b, resamples=50)
    expected = 2 * (math.comb(9, 0) + math.comb(9, 1)) / 2**9
    assert r["p_value"] == pytest.approx(expected, abs=1e-15)  # 0.0390625
    assert (r["a_only"], r["b_only"]) == (1, 8)
