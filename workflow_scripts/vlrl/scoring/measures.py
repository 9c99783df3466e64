"""Names of the numbers a benchmark's metric can report, which benchmark configs refer to: one
declaration for the config schema (:mod:`vlrl.benchmarks`) and the scorer
(:mod:`vlrl.scoring.metrics`)."""

from __future__ import annotations

from typing import Literal, get_args

WemathMeasure = Literal[
    "score_strict", "score_loose", "IK", "IG", "CM_strict", "CM_loose", "RM_strict", "RM_loose"
]
"""The numbers :func:`vlrl.scoring.metrics.wemath_four_dimensional` gives (a
``wemath_four_dimensional`` metric's ``measure``): the scores, then the four dimensions (IK and
IG are the same in both settings)."""

WEMATH_MEASURES: tuple[WemathMeasure, ...] = get_args(WemathMeasure)
"""Every :data:`WemathMeasure`, in that order."""
