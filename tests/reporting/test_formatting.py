"""vlrl.reporting.formatting: the one place the report's numbers become text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlrl.reporting import formatting as fmt

NAN = math.nan


@pytest.mark.parametrize(
    ("p", "shown", "why"),
    [
        (0.0, "< 0.001", "an exact 0 is never printed: no test proves p = 0"),
        (1e-12, "< 0.001", "tiny p-values are a bound"),
        (0.000999, "< 0.001", "just below the floor"),
        (0.001, "0.001", "the floor itself is a number"),
        (0.0041, "0.004", "three decimals"),
        (0.0625, "0.062", "rounded, not cut"),
        (0.5, "0.500", "fixed width"),
        (1.0, "1.000", "no discordant items: p = 1"),
        (None, "–", "no test"),
        (NAN, "–", "pandas' missing value"),
    ],
)
def test_p_values(p, shown, why):
    assert fmt.p_value(p) == shown, why


@pytest.mark.parametrize(
    ("call", "shown", "why"),
    [
        (lambda: fmt.value(0.30125), "30.1", "a fraction as a percentage"),
        (lambda: fmt.value(0.30125, "fraction"), "0.301", "a fraction as itself"),
        (lambda: fmt.value(2306.04, "raw"), "2306.0", "MME's score on its own scale"),
        (lambda: fmt.value(NAN), "–", "missing"),
        (lambda: fmt.interval(0.291, 0.311), "[29.1, 31.1]", "an interval"),
        (lambda: fmt.with_interval(0.301, 0.291, 0.311), "30.1 [29.1, 31.1]", "value and CI"),
        (lambda: fmt.with_interval(0.5, None, None), "50.0", "no CI: the value alone"),
        (lambda: fmt.signed(0.0104), "+1.0", "a gain in points"),
        (lambda: fmt.signed(-0.057), "-5.7", "a loss in points"),
        (lambda: fmt.signed(0.0), "+0.0", "no change keeps its sign"),
        (lambda: fmt.signed(97.6, "raw"), "+97.6", "a raw difference"),
        (lambda: fmt.signed_interval(-0.003, 0.018), "[-0.3, +1.8]", "a difference's CI"),
        (lambda: fmt.published(90.55), "90.55", "the paper's digits"),
        (lambda: fmt.published(2306.0), "2306.0", "a trailing zero as printed"),
        (lambda: fmt.published(1926), "1926", "no decimals as printed"),
        (lambda: fmt.count(8000.0), "8000", "a count from a float column"),
        (lambda: fmt.share(0.104, 458, 375), "10.4% (458 vs 375)", "the discordant share"),
        (lambda: fmt.level(0.95), "95%", "a confidence level"),
        (lambda: fmt.yes_no(False), "no", "inside the CI or not"),
        (lambda: fmt.yes_no(NAN), "–", "not applicable"),
        (lambda: fmt.score(0.4321), "0.43", "an IoU"),
        (lambda: fmt.score(None), "–", "an unscored item's score"),
        (lambda: fmt.count(None), "–", "no count"),
        (lambda: fmt.interval(0.5, None), "–", "an interval without its high end is none"),
        (lambda: fmt.interval(None, 0.5), "–", "an interval without its low end is none"),
        (lambda: fmt.interval(0.25, 0.5, "fraction"), "[0.250, 0.500]", "an interval's scale"),
        (lambda: fmt.with_interval(0.5, 0.25, None), "50.0", "no high end: the value alone"),
        (lambda: fmt.with_interval(0.5, None, 0.75), "50.0", "no low end: the value alone"),
        (
            lambda: fmt.with_interval(0.375, 0.25, 0.5, "fraction"),
            "0.375 [0.250, 0.500]",
            "a value and its interval on their scale",
        ),
        (lambda: fmt.share(NAN, 0, 0), "–", "no discordant share"),
        (lambda: fmt.signed(-0.0104, "fraction"), "-0.010", "a difference of fractions"),
        (lambda: fmt.signed_interval(0.5, None), "–", "a signed interval without its high end"),
        (lambda: fmt.signed_interval(None, 0.5), "–", "a signed interval without its low end"),
        (lambda: fmt.signed_interval(-0.25, 0.5, "fraction"), "[-0.250, +0.500]", "its scale"),
        (lambda: fmt.signed_interval(-12.5, 3.0, "raw"), "[-12.5, +3.0]", "a raw interval"),
        (
            lambda: fmt.signed_with_interval(0.125, -0.25, 0.5, "fraction"),
            "+0.125 [-0.250, +0.500]",
            "a difference and its interval on their scale",
        ),
        (lambda: fmt.published(np.float64(90.55)), "90.55", "a number read by pandas"),
    ],
    # named by what they show and why, not by position: a case added keeps the others' names
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_values(call, shown, why):
    assert call() == shown, why
