"""The accuracy plot: grouped bars per task and overall, checkpoints side by side; and how
every report figure becomes PNG bytes that depend on its data alone."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any, ParamSpec

import matplotlib as mpl
import numpy as np
from matplotlib.figure import Figure

from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import tasks_of
from vlrl.reporting.labels import COLORS

P = ParamSpec("P")


def rc_defaults(draw: Callable[P, bytes]) -> Callable[P, bytes]:
    """Decorator: ``draw`` builds its figure under matplotlib's own defaults, whatever a
    ``matplotlibrc``, a style or the caller set (restored afterwards), so that the same data
    give the same PNG on every machine (the report's bytes are in dvc.lock)."""

    @functools.wraps(draw)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> bytes:
        with mpl.rc_context():
            mpl.rcdefaults()
            return draw(*args, **kwargs)

    return drawn


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes (Agg, the figure's dpi). The PNG's only metadata is matplotlib's
    version: no time, no path, so the same figure always gives the same bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi)
    return buffer.getvalue()


def _nan(value: float | None) -> float:
    return float("nan") if fmt.missing(value) else value


@rc_defaults
def accuracy_png(rows: list[dict[str, Any]], confidence: float) -> bytes:
    """PNG bytes: one panel per benchmark, groups = tasks + overall, error bars = the Wilson
    intervals, each checkpoint in its colour (:data:`vlrl.reporting.labels.COLORS`)."""
    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    most_groups = max(len(tasks_of([r for r in rows if r["benchmark"] == b])) + 1 for b in benches)
    fig = Figure(figsize=(max(6.0, 1.4 * most_groups + 2), 3.8 * len(benches)), dpi=120)
    axes = fig.subplots(len(benches), 1, squeeze=False)[:, 0]
    for ax, bench in zip(axes, benches, strict=True):
        bench_rows = [r for r in rows if r["benchmark"] == bench]
        groups = [*tasks_of(bench_rows), "overall"]
        width = 0.8 / len(bench_rows)
        x = np.arange(len(groups))
        for j, r in enumerate(bench_rows):
            keys = [f"{g}." if g != "overall" else "" for g in groups]
            acc = np.array([_nan(r[f"{k}accuracy"]) for k in keys]) * 100
            low = np.array([_nan(r[f"{k}ci_low"]) for k in keys]) * 100
            high = np.array([_nan(r[f"{k}ci_high"]) for k in keys]) * 100
            bars = ax.bar(
                x + (j - (len(bench_rows) - 1) / 2) * width,
                acc,
                width,
                yerr=[acc - low, high - acc],
                capsize=3,
                label=r["model"],
                color=COLORS[r["checkpoint"]],
            )
            for bar, value in zip(bars, acc, strict=True):  # value at the foot of its bar
                if not np.isnan(value) and value >= 6:
                    ax.text(
                        bar.get_x() + bar.get_width() / 2, 1.5, fmt.whole(value), ha="center",
                        va="bottom", fontsize=8, color="white", fontweight="bold",
                    )  # fmt: skip
        ax.set_xticks(x, groups)
        ax.set_ylim(0, 118)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{bench}: accuracy with {fmt.level(confidence)} CI")
        ax.legend(loc="upper center", fontsize=8, ncols=len(bench_rows), frameon=False)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png(fig)
