"""vlrl.reporting.curves: the GRPO training curves the report draws, from a dvclive-like tree."""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
import pandas as pd
import pytest
from PIL import Image

from vlrl.core.errors import StageError
from vlrl.reporting.curves import (
    REWARD,
    plot_curves,
    plot_reward,
    read_curves,
    smoothed,
)

VARYING = [
    "loss",
    "grad_norm",
    "reward_std",
    "kl",
    "completions/mean_length",
    "completions/max_length",
    "rewards/common.format/mean",
    "rewards/common.format/std",
    "reward",
    "rewards/common.accuracy/mean",
    "entropy",
]
ARGS = "logging_strategy: steps\nlogging_steps: 5\nlogging_first_step: false\neval_strategy: no\n"
"""What dvclive's params.yaml says of logging, as the grpo stage writes it (YAML 1.1: no=false)."""


def write_tree(
    folder: Path, names: list[str], steps: int = 6, value=lambda s: s / 10, step=lambda i: i
) -> None:
    """What dvclive writes: one TSV per value, its column named after the file."""
    for name in names:
        path = folder / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"{step(s)}\t{value(s)}\n" for s in range(steps))
        path.write_text(f"step\t{path.stem}\n{rows}")


def dvclive_run(root: Path, args: str | None = ARGS) -> Path:
    """A dvclive folder as the grpo stage leaves it: params.yaml beside plots/metrics/, with
    the curves that matter, the ones that do not, a constant series and a closing row's."""
    metrics = root / "plots" / "metrics"
    write_tree(metrics, VARYING)
    write_tree(metrics, ["clip_ratio/low_min", "learning_rate"], value=lambda s: 1e-4)  # constant
    write_tree(metrics, ["rewards/never.varies/mean"], value=lambda s: 1.0)  # constant
    (metrics / "train").mkdir()
    (metrics / "train/loss.tsv").write_text("step\tloss\n6\t-0.002\n")  # a single point
    (metrics / "total_flos.tsv").write_text("step\ttotal_flos\n6\t0.0\n")
    if args is not None:
        (root / "params.yaml").write_text(args)
    return metrics


def test_the_curves_that_matter_are_chosen_in_display_order(tmp_path: Path):
    curves = read_curves(dvclive_run(tmp_path))
    assert list(curves) == [
        "reward",
        "rewards/common.accuracy/mean",
        "rewards/common.format/mean",
        "kl",
        "completions/mean_length",
        "entropy",
    ], "constant and single-point series, and the curves that do not matter, have no panel"


def test_a_single_point_or_a_constant_series_of_a_curve_that_matters_has_no_panel(
    tmp_path: Path,
):
    metrics = tmp_path / "plots" / "metrics"
    write_tree(metrics, ["reward"], steps=1)
    write_tree(metrics, ["kl"], value=lambda s: 0.0)  # beta = 0: TRL logs a zero KL
    write_tree(metrics, ["entropy"], steps=2)
    assert list(read_curves(metrics)) == ["entropy"], "two different points make a curve"


def test_x_is_the_optimizer_step_the_tsv_holds(tmp_path: Path):
    """The grpo stage writes each row at its optimizer step (5, 10, …), which is the axis,
    whatever the trainer's logging arguments."""
    metrics = tmp_path / "plots" / "metrics"
    write_tree(metrics, ["kl"], steps=6, step=lambda i: 5 * (i + 1))
    frame = read_curves(metrics)["kl"]
    assert list(frame.columns) == ["optimizer step", "value"]
    assert list(frame["optimizer step"]) == [5, 10, 15, 20, 25, 30]
    assert frame.value.iloc[-1] == pytest.approx(0.5)


def test_the_moving_average_follows_a_step_with_a_lag():
    values = pd.Series([0.0] * 20 + [1.0] * 20)
    ema = smoothed(values)
    assert (
        ema.iloc[0] == 0.0
        and ema.iloc[19] == 0.0
        and ema.iloc[20] == pytest.approx(1 / 3, abs=1e-3)
    )
    assert 0.99 < ema.iloc[-1] < 1.0 and ema.is_monotonic_increasing


def test_the_plot_has_a_panel_per_curve_and_is_the_same_each_time(tmp_path: Path):
    curves = read_curves(dvclive_run(tmp_path))
    png = plot_curves(curves)
    (tmp_path / "c.png").write_bytes(png)
    with Image.open(tmp_path / "c.png") as image:
        assert image.format == "PNG"
        assert image.size == (1140, 540), "two rows of three panels at 100 dpi"
    assert plot_curves(read_curves(dvclive_run(tmp_path / "again"))) == png, "no time or path"
    with mpl.rc_context({"lines.linewidth": 5, "font.size": 20, "axes.grid": True}):
        assert plot_curves(curves) == png, "a caller's or a matplotlibrc's settings change nothing"
    assert mpl.rcParams["lines.linewidth"] == mpl.rcParamsDefault["lines.linewidth"]


def test_no_folder_means_no_curves_and_a_bad_file_is_named(tmp_path: Path):
    assert read_curves(tmp_path / "absent") == {}
    (tmp_path / "kl.tsv").write_text("step\tother\n1\t0.1\n")
    with pytest.raises(StageError, match=r"kl\.tsv: expected columns 'step' and 'kl'"):
        read_curves(tmp_path)
    (tmp_path / "kl.tsv").write_text("")
    with pytest.raises(StageError, match=r"kl\.tsv is not a dvclive TSV"):
        read_curves(tmp_path)


def test_the_reward_has_a_figure_of_its_own_the_same_each_time(tmp_path: Path):
    reward = read_curves(dvclive_run(tmp_path))[REWARD]
    png = plot_reward(reward)
    (tmp_path / "r.png").write_bytes(png)
    with Image.open(tmp_path / "r.png") as image:
        assert image.format == "PNG" and image.size == (640, 320), "one panel at 100 dpi"
        assert set(image.info) <= {"Software", "dpi"}, "no time, no path in the metadata"
    assert plot_reward(read_curves(dvclive_run(tmp_path / "again"))[REWARD]) == png
    with mpl.rc_context({"lines.linewidth": 5, "font.size": 20}):
        assert plot_reward(reward) == png, "a caller's settings change nothing"
    other = reward.assign(value=reward["value"][::-1].to_numpy())
    assert plot_reward(other) != png, "the bytes are the data's"
    assert plot_curves({REWARD: reward}) != png, "not the panel of the full set"


def test_a_curve_is_its_faint_points_and_their_moving_average_against_the_step() -> None:
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    from vlrl.reporting.curves import _draw

    steps = [5 * (i + 1) for i in range(60)]
    values = pd.Series([float(i % 7) for i in range(60)])
    frame = pd.DataFrame({"optimizer step": steps, "value": values})
    ax = Figure().subplots()
    _draw(ax, frame)
    points, average = ax.lines
    assert list(points.get_xdata()) == steps and list(average.get_xdata()) == steps
    assert list(points.get_ydata()) == values.tolist()
    assert list(average.get_ydata()) == smoothed(values).tolist()
    assert (points.get_marker(), points.get_linestyle()) == (".", "None")
    assert (points.get_alpha(), points.get_markersize(), points.get_label()) == (0.3, 4, "logged")
    assert to_rgba(points.get_color()) == to_rgba(average.get_color()) == to_rgba("C0")
    assert (average.get_linewidth(), average.get_label()) == (1.6, "EMA, span 6")
    assert average.get_alpha() is None
    # in C0 whatever the axes held before: an explicit colour, not the next of the cycle
    ax = Figure().subplots()
    ax.plot([0, 1], [1, 0])
    _draw(ax, frame)
    assert [to_rgba(line.get_color()) for line in ax.lines[1:]] == [to_rgba("C0")] * 2


@pytest.mark.parametrize("points, span_", [(0, 5), (49, 5), (59, 5), (60, 6), (69, 6), (110, 11)])
def test_the_average_spans_a_tenth_of_the_points_and_at_least_five(points, span_) -> None:
    from vlrl.reporting.curves import span

    assert span(points) == span_ and isinstance(span(points), int)


def test_a_name_the_report_does_not_draw_has_no_title() -> None:
    from vlrl.reporting.curves import title

    with pytest.raises(KeyError) as error:
        title("loss")
    assert error.value.args == (
        "'loss' is not a curve the report draws (vlrl.reporting.curves.SHOWN)",
    )
