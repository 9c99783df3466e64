"""The GRPO training curves that say how the RL went, from what the grpo stage's dvclive logger
wrote.

dvclive writes one TSV per logged value under ``results/<exp>/grpo/dvclive/plots/metrics``
(``reward.tsv``, ``rewards/common.accuracy/mean.tsv``, ``kl.tsv``, ``clip_ratio/low_min.tsv``
...: ``dvc plots show`` draws every one) and the trainer's arguments in ``dvclive/params.yaml``.
The report draws the curves of :data:`SHOWN` (the total reward, each reward function's mean, the
KL to the reference model, the completion length, the token entropy), each one an exponential
moving average over its raw points, drawn faint. A series that never changed (TRL logs the clip
ratios as 0 when nothing was clipped) or that has a single point (the run's closing row) has no
panel: it draws no curve. The total reward, the one GRPO optimised (:data:`REWARD`), also has a
figure of its own (:func:`plot_reward`), which leads the report.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from vlrl import sharing
from vlrl.core.errors import StageError
from vlrl.reporting.plots import png, rc_defaults

SHOWN = (
    (r"reward", "reward (weighted sum of the functions)"),
    (r"rewards/(?P<f>[^/]+)/mean", "reward: {f}"),
    (r"rewards/(?P<f>[^/]+)", "reward: {f}"),  # TRL before the /mean and /std split
    (r"kl", "KL to the reference model"),
    (r"completions/mean_length|completion_length", "completion length (tokens, mean)"),
    (r"entropy", "token entropy (mean)"),
)
"""The curves drawn, in this order (a regular expression the whole logged name matches, and
its panel's title); several names one expression matches follow by name. The names are TRL's
log keys, as dvclive stores them."""
REWARD = "reward"
"""TRL's log key of the total reward (the weighted sum of the reward functions): what GRPO
optimised."""
AXIS = "optimizer step"
"""The x axis of every curve: dvclive's step column, which the grpo stage writes as TRL's
optimizer step (``dvc plots show`` draws the same axis)."""
COLUMNS = 3
MIN_SPAN = 5
"""The moving average spans a tenth of the series, and at least this many points."""


def curves_dir(exp: str) -> Path:
    return sharing.grpo_curves_dir(exp)


def _shown(name: str) -> tuple[int, str] | None:
    """Where ``name`` is drawn (its :data:`SHOWN` entry, then its name), or None: not drawn.

    >>> sorted(["entropy", "kl", "rewards/b/mean", "reward", "rewards/a/mean"], key=_shown)
    ['reward', 'rewards/a/mean', 'rewards/b/mean', 'kl', 'entropy']
    >>> [_shown(n) for n in ("rewards/a/std", "loss", "clip_ratio/low_min")]
    [None, None, None]
    """
    for i, (pattern, _) in enumerate(SHOWN):
        if re.fullmatch(pattern, name):
            return i, name
    return None


def title(name: str) -> str:
    """The panel title of a drawn curve.

    >>> title("rewards/common.accuracy/mean"), title("completions/mean_length")
    ('reward: common.accuracy', 'completion length (tokens, mean)')
    """
    for pattern, text in SHOWN:
        if match := re.fullmatch(pattern, name):
            return text.format(**match.groupdict())
    raise KeyError(f"{name!r} is not a curve the report draws (vlrl.reporting.curves.SHOWN)")


def _read(path: Path) -> pd.DataFrame:
    """A dvclive TSV as a frame of (step, value); an unreadable one is an error naming it."""
    column = path.stem
    try:
        frame = pd.read_csv(path, sep="\t")
    except (ValueError, pd.errors.EmptyDataError) as exc:
        raise StageError(f"report: {path} is not a dvclive TSV: {exc}") from None
    if "step" not in frame.columns or column not in frame.columns:
        raise StageError(
            f"report: {path}: expected columns 'step' and {column!r}, got {list(frame)}"
        )
    return frame[["step", column]].rename(columns={column: "value"})


def read_curves(folder: Path) -> dict[str, pd.DataFrame]:
    """``{name: frame}`` of the curves the report draws (name: the TSV's path under ``folder``
    without ``.tsv``; see :data:`SHOWN`), in display order, leaving out a series that never
    changed or has a single point; empty when the folder does not exist.

    Each frame has two columns: ``optimizer step`` (the grpo stage writes each log row at its
    optimizer step, :func:`vlrl.algorithms.history.write_curves`), then ``value``."""
    if not folder.is_dir():
        return {}
    curves = {}
    for path in folder.rglob("*.tsv"):
        name = path.relative_to(folder).with_suffix("").as_posix()
        if _shown(name) is None:
            continue
        frame = _read(path)
        if frame["value"].nunique() < 2:  # constant, or a single point: no curve to see
            continue
        curves[name] = frame.rename(columns={"step": AXIS})
    return {name: curves[name] for name in sorted(curves, key=_shown)}


def smoothed(values: pd.Series) -> pd.Series:
    """An exponential moving average spanning a tenth of the series (at least :data:`MIN_SPAN`
    points), weighted over the points seen so far (pandas' ``adjust=True``): the first points
    are not pulled towards a start value.

    >>> smoothed(pd.Series([1.0, 1.0, 4.0])).round(3).tolist()
    [1.0, 1.0, 2.421]
    """
    return values.ewm(span=span(len(values))).mean()


def span(points: int) -> int:
    return max(MIN_SPAN, points // 10)


def _draw(ax: Axes, frame: pd.DataFrame) -> None:
    """A curve's raw points, faint, and their moving average, against the frame's first column."""
    x, values = frame.iloc[:, 0], frame["value"]
    ax.plot(x, values, ".", color="C0", alpha=0.3, markersize=4, label="logged")
    ax.plot(x, smoothed(values), color="C0", linewidth=1.6, label=f"EMA, span {span(len(x))}")


@rc_defaults
def plot_curves(curves: dict[str, pd.DataFrame]) -> bytes:
    """PNG bytes: one panel per curve (as :func:`read_curves` gives them), its moving average
    over its raw points, against the frame's first column."""
    rows = math.ceil(len(curves) / COLUMNS)
    fig = Figure(figsize=(3.8 * COLUMNS, 2.7 * rows), dpi=100)
    axes = fig.subplots(rows, COLUMNS, squeeze=False).ravel()
    for i, (ax, (name, frame)) in enumerate(zip(axes, curves.items(), strict=False)):
        _draw(ax, frame)
        ax.set_title(title(name), fontsize=10)
        ax.set_xlabel(frame.columns[0], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7, frameon=False)
    for ax in axes[len(curves) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return png(fig)


@rc_defaults
def plot_reward(frame: pd.DataFrame) -> bytes:
    """PNG bytes: the total reward (:data:`REWARD`, a frame as :func:`read_curves` gives it),
    its raw points and moving average as in :func:`plot_curves`, on one panel of its own."""
    fig = Figure(figsize=(6.4, 3.2), dpi=100)
    ax = fig.subplots()
    _draw(ax, frame)
    ax.set_title("GRPO training reward")
    ax.set_xlabel(frame.columns[0])
    ax.set_ylabel("reward")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return png(fig)
