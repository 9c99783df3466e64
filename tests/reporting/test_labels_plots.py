"""vlrl.reporting.labels and .plots: how a checkpoint is named and ordered, and how a figure
becomes the same PNG bytes whatever matplotlib settings the caller has."""

from __future__ import annotations

import io
import math

import matplotlib as mpl
import pytest
from matplotlib.figure import Figure
from PIL import Image

from vlrl.reporting.labels import label, ordered
from vlrl.reporting.plots import _nan, png, rc_defaults


@pytest.mark.parametrize(
    "checkpoint, sft_enabled, name",
    [
        ("base", True, "base"),
        ("base", False, "base"),
        ("sft", True, "SFT"),
        ("sft", False, "SFT"),
        ("grpo", True, "SFT+GRPO"),
        ("grpo", False, "GRPO"),
        ("merged", True, "merged"),
    ],
)
def test_a_checkpoint_is_named_for_what_trained_it(checkpoint, sft_enabled, name) -> None:
    assert label(checkpoint, sft_enabled) == name


def test_checkpoints_are_ordered_as_they_are_trained() -> None:
    assert ordered(["grpo", "sft", "base"]) == ["base", "sft", "grpo"]
    assert ordered(["sft", "grpo"]) == ["sft", "grpo"]
    assert ordered([]) == []


def test_a_figure_is_drawn_under_matplotlibs_defaults_and_the_callers_settings_return() -> None:
    seen = {}

    @rc_defaults
    def draw(size: int, *, colour: str) -> bytes:
        """Draws."""
        seen.update(size=size, colour=colour, dpi=mpl.rcParams["figure.dpi"],
                    font=mpl.rcParams["font.size"])  # fmt: skip
        return b"png"

    with mpl.rc_context({"font.size": 31.0, "figure.dpi": 33.0}):
        assert draw(3, colour="red") == b"png"
        assert (mpl.rcParams["font.size"], mpl.rcParams["figure.dpi"]) == (31.0, 33.0)
    assert seen == {"size": 3, "colour": "red", "dpi": 100.0, "font": 10.0}
    assert draw.__name__ == "draw" and draw.__doc__ == "Draws."


def test_png_bytes_are_the_figure_at_its_dpi_and_the_same_each_time() -> None:
    fig = Figure(figsize=(2.0, 1.0), dpi=50)
    fig.subplots().plot([0, 1], [1, 0])
    first = png(fig)
    assert first == png(fig)
    with Image.open(io.BytesIO(first)) as image:
        assert (image.format, image.size) == ("PNG", (100, 50))
    # a PNG at the figure's dpi whatever the caller's savefig settings say
    with mpl.rc_context({"savefig.dpi": 200, "savefig.format": "svg"}):
        assert png(fig) == first


def test_a_missing_value_is_nan_in_a_plot() -> None:
    assert math.isnan(_nan(None)) and math.isnan(_nan(float("nan")))
    assert _nan(0.0) == 0.0 and _nan(0.25) == 0.25
