"""The GRPO training curves, as the grpo stage's dvclive logger wrote them.

dvclive writes one TSV per logged value under ``results/<exp>/grpo/dvclive/plots/metrics``
(``reward.tsv``, ``kl.tsv``, ``rewards/common.accuracy/mean.tsv``, ``completions/mean_length.tsv``
...), each with a ``step`` column and the value's column (the file's base name). The report
draws every one of them, the rewards, KL and completion length first.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from vlrl import paths
from vlrl.errors import StageError

FIRST = ("reward", "rewards/", "kl", "completions/mean_length", "loss", "entropy")
"""Curves shown first, in this order (a name or a prefix); the others follow by name."""
COLUMNS = 3


def curves_dir(exp: str) -> Path:
    return paths.grpo_curves_dir(exp)


def _rank(name: str) -> tuple[int, str]:
    """Sort key: the position of the first entry of :data:`FIRST` that names or prefixes it.

    >>> sorted(["loss", "kl", "rewards/a/mean", "reward", "grad_norm"], key=_rank)
    ['reward', 'rewards/a/mean', 'kl', 'loss', 'grad_norm']
    """
    for i, head in enumerate(FIRST):
        if name == head or (head.endswith("/") and name.startswith(head)):
            return i, name
    return len(FIRST), name


def read_curves(folder: Path) -> dict[str, pd.DataFrame]:
    """``{name: frame of (step, value)}`` for every TSV under ``folder`` (name: its path
    without ``.tsv``), in display order; empty when the folder does not exist."""
    if not folder.is_dir():
        return {}
    curves = {}
    for path in folder.rglob("*.tsv"):
        name = path.relative_to(folder).with_suffix("").as_posix()
        column = path.stem
        try:
            frame = pd.read_csv(path, sep="\t")
        except (ValueError, pd.errors.EmptyDataError) as exc:
            raise StageError(f"report: {path} is not a dvclive TSV: {exc}") from None
        if "step" not in frame.columns or column not in frame.columns:
            raise StageError(
                f"report: {path}: expected columns 'step' and {column!r}, got {list(frame)}"
            )
        curves[name] = frame[["step", column]].rename(columns={column: "value"})
    return {name: curves[name] for name in sorted(curves, key=_rank)}


def plot_curves(curves: dict[str, pd.DataFrame]) -> bytes:
    """PNG bytes: one small panel per curve, value against step."""
    rows = math.ceil(len(curves) / COLUMNS)
    fig = Figure(figsize=(3.6 * COLUMNS, 2.4 * rows), dpi=100)
    axes = fig.subplots(rows, COLUMNS, squeeze=False).ravel()
    for ax, (name, frame) in zip(axes, curves.items(), strict=False):
        ax.plot(frame["step"], frame["value"], marker="." if len(frame) < 30 else None)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[len(curves) :]:
        ax.set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
