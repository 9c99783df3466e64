"""Intervals computed by scipy, independently of ``vlrl.scoring.stats``: the expected values of
the tests that check the scorer's and the report's statistics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import binomtest, bootstrap


def scipy_wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """scipy's Wilson score interval of ``k`` successes in ``n``."""
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def scipy_paired_bootstrap(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[float, float]:
    """``scipy.stats.bootstrap``'s paired percentile interval of mean(a − b), from the same
    seeded generator: scipy draws its resampled indices as ``rng.integers(0, n, (resamples,
    n))``, the draws ``paired_difference`` documents, so the two agree up to rounding."""
    result = bootstrap(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_items(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two models' 0/1 correctness on ``n`` items: 40 % flipped, the first sixth right by a."""
    rng = np.random.default_rng([n, seed])
    b = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.4, 1 - b, b)
    a[: n // 6] = 1
    return a, b
