"""vlrl.reporting.curves: the GRPO training curves, from a dvclive-like TSV tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from vlrl.errors import StageError
from vlrl.reporting.curves import plot_curves, read_curves


def write_tree(folder: Path, names: list[str], steps: int = 6) -> None:
    """What dvclive writes: one TSV per value, its column named after the file."""
    for name in names:
        path = folder / f"{name}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"{1700000000000 + s}\t{s}\t{s / 10}\n" for s in range(1, steps + 1))
        path.write_text(f"timestamp\tstep\t{path.stem}\n{rows}")


def test_curves_are_read_in_display_order(tmp_path: Path):
    names = [
        "loss",
        "grad_norm",
        "kl",
        "completions/mean_length",
        "rewards/common.format/mean",
        "reward",
        "rewards/common.accuracy/mean",
    ]
    write_tree(tmp_path, names)
    curves = read_curves(tmp_path)
    assert list(curves) == [
        "reward",
        "rewards/common.accuracy/mean",
        "rewards/common.format/mean",
        "kl",
        "completions/mean_length",
        "loss",
        "grad_norm",
    ]
    frame = curves["kl"]
    assert list(frame.columns) == ["step", "value"]
    assert list(frame.step) == [1, 2, 3, 4, 5, 6] and frame.value.iloc[-1] == pytest.approx(0.6)


def test_the_plot_has_a_panel_per_curve_and_is_the_same_each_time(tmp_path: Path):
    write_tree(tmp_path, ["reward", "kl", "loss", "entropy"])
    png = plot_curves(read_curves(tmp_path))
    (tmp_path / "c.png").write_bytes(png)
    with Image.open(tmp_path / "c.png") as image:
        assert image.format == "PNG" and image.height > 400  # two rows of three panels
    assert plot_curves(read_curves(tmp_path)) == png, "no time or path in the PNG"


def test_no_folder_means_no_curves_and_a_bad_file_is_named(tmp_path: Path):
    assert read_curves(tmp_path / "absent") == {}
    (tmp_path / "kl.tsv").write_text("step\tother\n1\t0.1\n")
    with pytest.raises(StageError, match=r"kl\.tsv: expected columns 'step' and 'kl'"):
        read_curves(tmp_path)
    (tmp_path / "kl.tsv").write_text("")
    with pytest.raises(StageError, match=r"kl\.tsv is not a dvclive TSV"):
        read_curves(tmp_path)
