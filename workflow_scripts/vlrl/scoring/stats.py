"""Confidence intervals for accuracies and paired comparisons of two models on the same items.

A one-point gap is noise unless the comparison is paired (Miller 2024, "Adding Error Bars to
Evals", arXiv:2411.00640), so the report gives a Wilson interval per accuracy and, for two
checkpoints on the same items, the bootstrap interval of the mean paired difference and McNemar's
exact test on the discordant items.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np


def proportion_ci(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials.

    Raises:
        ValueError: when ``n`` is 0 (there is no interval for no items) or ``k`` is not in [0, n].

    >>> low, high = proportion_ci(50, 100)
    >>> round(low, 4), round(high, 4)
    (0.4038, 0.5962)
    >>> proportion_ci(0, 10)[0]
    0.0
    """
    if n <= 0:
        raise ValueError("proportion_ci: n must be positive (no items scored)")
    if not 0 <= k <= n:
        raise ValueError(f"proportion_ci: k={k} is not between 0 and n={n}")
    from scipy.stats import binomtest  # (here: the Snakefile imports this module, scipy is slow)

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def accuracy_summary(correct: Sequence[int], confidence: float = 0.95) -> dict[str, Any]:
    """``{"n", "accuracy", "ci_low", "ci_high"}`` of 0/1 correctness (Wilson interval).

    >>> accuracy_summary([1, 0, 1, 1])["accuracy"]
    0.75
    """
    n = len(correct)
    k = int(sum(correct))
    low, high = proportion_ci(k, n, confidence)
    return {"n": n, "accuracy": k / n, "ci_low": low, "ci_high": high}


def paired_difference(
    a: np.ndarray,
    b: np.ndarray,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare two models' 0/1 correctness on the same items (``a[i]`` and ``b[i]``: item ``i``).

    Returns a dict with:
        ``n``; ``mean_a``, ``mean_b``; ``diff`` = mean(a − b); ``ci_low``/``ci_high``: percentile
        bootstrap interval of ``diff`` (items resampled with ``numpy.random.default_rng(seed)``);
        ``a_only`` / ``b_only``: items only ``a`` / only ``b`` gets right; ``discordant_fraction``
        = (a_only + b_only) / n; ``p_value``: McNemar's exact two-sided test, a binomial test of
        ``a_only`` out of the discordant items against 1/2 (1.0 when there are none).

    Raises:
        ValueError: if the arrays differ in length, are empty, or hold values other than 0 and 1,
            or ``resamples`` is below 1.

    >>> a = np.array([1, 1, 1, 1, 1, 1, 0, 0, 1, 1])
    >>> b = np.array([0, 0, 0, 0, 0, 1, 0, 0, 1, 1])
    >>> r = paired_difference(a, b, resamples=1000, seed=0)
    >>> r["diff"], r["a_only"], r["b_only"], r["discordant_fraction"], round(r["p_value"], 4)
    (0.5, 5, 0, 0.5, 0.0625)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired_difference: a{a.shape}, b{b.shape}: need 1-D, equal length")
    if a.size == 0:
        raise ValueError("paired_difference: no items")
    if not (np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()):
        raise ValueError("paired_difference: a and b must hold 0/1 correctness")
    if resamples < 1:
        raise ValueError(f"paired_difference: resamples must be at least 1, got {resamples}")
    n = a.size
    d = a - b
    a_only = int(np.sum(d > 0))
    b_only = int(np.sum(d < 0))
    discordant = a_only + b_only
    from scipy.stats import binomtest

    p_value = float(binomtest(a_only, discordant, 0.5).pvalue) if discordant else 1.0

    low, high = mean_interval(d, confidence, resamples, seed)
    return {
        "n": n,
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "diff": float(d.mean()),
        "ci_low": low,
        "ci_high": high,
        "a_only": a_only,
        "b_only": b_only,
        "discordant_fraction": discordant / n,
        "p_value": p_value,
    }


def mean_interval(
    values: np.ndarray, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-item ``values`` (items resampled with
    ``numpy.random.default_rng(seed)``, ``rng.integers(0, n, (resamples, n))`` as
    ``scipy.stats.bootstrap`` draws them): the interval of :func:`paired_difference`, and of any
    per-item difference, such as a gain with the image minus the same gain without it.

    >>> low, high = mean_interval(np.array([1.0, 0.0, 1.0, 1.0]), resamples=200)
    >>> 0.0 <= low <= 0.75 <= high <= 1.0
    True
    """
    values = np.asarray(values, dtype=float)
    n = values.size
    if n == 0 or values.ndim != 1:
        raise ValueError(f"mean_interval: values{values.shape}: need a 1-D array of items")
    if resamples < 1:
        raise ValueError(f"mean_interval: resamples must be at least 1, got {resamples}")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // n)  # bound memory: resample indices chunk by chunk
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def summarize(items: list[dict[str, Any]], confidence: float) -> dict[str, Any]:
    """Overall and per-task accuracy (items' ``correct`` grouped by ``task``) with intervals.

    >>> s = summarize([{"task": "a", "correct": 1}, {"task": "b", "correct": 0}], 0.95)
    >>> s["accuracy"], sorted(s["per_task"])
    (0.5, ['a', 'b'])
    """
    by_task: dict[str, list[int]] = defaultdict(list)
    for item in items:
        by_task[item["task"]].append(int(item["correct"]))
    overall = accuracy_summary([int(item["correct"]) for item in items], confidence)
    per_task = {task: accuracy_summary(by_task[task], confidence) for task in sorted(by_task)}
    return {**overall, "per_task": per_task}
