"""vlrl.reporting.blanked: the part of a gain that needs the image (its per-item difference
with the image minus blanked, and its interval), and the tables and sentences that tell it."""

from __future__ import annotations

from types import SimpleNamespace as C

import numpy as np
import pytest

from vlrl.items.predictions import ScoredItem
from vlrl.reporting.blanked import (
    blanked_csv,
    blanked_lines,
    blanked_table,
    gains_table,
    looking_part,
)
from vlrl.scoring.stats import mean_interval

SCORE = C(confidence=0.9, bootstrap_resamples=300)


def scores(correct: list[int | None]) -> C:
    items = [
        ScoredItem(id=f"i{k}", task="t", problem_type="numerical", extracted=None, correct=c,
                   score=None, method="rule")
        for k, c in enumerate(correct)
    ]  # fmt: skip
    return C(items=items)


def test_the_looking_part_is_the_gain_with_the_image_minus_the_gain_blanked() -> None:
    a, b = [1, 1, 1, 0, 1, None], [0, 1, 0, 0, 0, 1]
    blank_a, blank_b = [1, 0, 0, 0, 1, 1], [0, 0, 0, 1, 0, 0]
    found = looking_part([scores(v) for v in (a, b, blank_a, blank_b)], SCORE, seed=3)
    per_item = np.array([(1 - 0) - (1 - 0), 0 - 0, 1 - 0, 0 - (0 - 1), (1 - 0) - (1 - 0)])
    low, high = mean_interval(per_item, 0.9, 300, 3)
    assert found == {
        "looking": pytest.approx(per_item.mean(), abs=0),
        "looking_ci_low": low,
        "looking_ci_high": high,
        "looking_n": 5,  # item 5: unscored in a
    }
    assert found["looking"] == pytest.approx(0.4, abs=1e-12)


def test_an_item_unscored_in_any_of_the_four_is_left_out() -> None:
    full = [1, 0, 1]
    for missing in range(4):
        sets = [list(full) for _ in range(4)]
        sets[missing][1] = None
        assert looking_part([scores(v) for v in sets], SCORE, 0)["looking_n"] == 2


def test_no_item_scored_by_all_four_has_no_looking_part() -> None:
    found = looking_part([scores([1, None]), scores([None, 1]), scores([1, 1]), scores([1, 1])],
                         SCORE, 0)  # fmt: skip
    assert found == {"looking": None, "looking_ci_low": None, "looking_ci_high": None,
                     "looking_n": 0}  # fmt: skip


CHECKPOINT = {"checkpoint": "sft", "model": "SFT", "blanked": 0.25, "blanked_ci_low": 0.2,
              "blanked_ci_high": 0.3, "seeing": 0.6, "image_adds": 0.35,
              "image_adds_ci_low": 0.3, "image_adds_ci_high": 0.4, "n": 100}  # fmt: skip
GAIN = {"comparison": "SFT − base", "with_image": 0.1, "with_image_ci_low": 0.05,
        "with_image_ci_high": 0.15, "blanked": 0.04, "blanked_ci_low": -0.01,
        "blanked_ci_high": 0.09, "looking": 0.06, "looking_ci_low": -0.02,
        "looking_ci_high": 0.14, "looking_n": 100}  # fmt: skip
ROW = {"benchmark": "b", "blank": "b_blank", "checkpoints": [CHECKPOINT], "gains": [GAIN]}


def test_the_tables_show_each_checkpoint_and_each_gain() -> None:
    assert blanked_table([ROW], 0.9).to_dict("records") == [
        {"benchmark": "b", "model": "SFT", "with the image": "60.0",
         "blanked (90% CI)": "25.0 [20.0, 30.0]", "image adds (90% CI)": "+35.0 [+30.0, +40.0]"}
    ]  # fmt: skip
    assert gains_table([ROW], 0.9).to_dict("records") == [
        {"benchmark": "b", "comparison": "SFT − base",
         "with the image (90% CI)": "+10.0 [+5.0, +15.0]",
         "blanked (90% CI)": "+4.0 [-1.0, +9.0]",
         "from looking (90% CI)": "+6.0 [-2.0, +14.0]"}
    ]  # fmt: skip


def test_a_looking_part_holding_zero_is_said_to_be_indistinguishable() -> None:
    assert blanked_lines([ROW]) == [
        "With every image of b blanked, SFT − base is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0]): the part from looking, +6.0 [-2.0, +14.0], is not "
        "distinguishable from zero."
    ]


@pytest.mark.parametrize(
    "low, high, said",
    [
        (0.0, 0.1, ": the part from looking, +6.0 [+0.0, +10.0], is not distinguishable"),
        (-0.1, 0.0, ": the part from looking, +6.0 [-10.0, +0.0], is not distinguishable"),
        (0.001, 0.1, ": +6.0 of it from looking [+0.1, +10.0]."),
        (-0.1, -0.001, ": larger without the image, none of it from looking (+6.0 [-10.0, -0.1])"),
    ],
)
def test_the_interval_decides_what_is_said_of_the_looking_part(low, high, said) -> None:
    gain = {**GAIN, "looking_ci_low": low, "looking_ci_high": high}
    assert said in blanked_lines([{**ROW, "gains": [gain]}])[0]


@pytest.mark.parametrize("missing", ["looking", "looking_ci_low", "looking_ci_high"])
def test_without_a_looking_part_only_the_two_gains_are_told(missing) -> None:
    gain = {**GAIN, missing: None}
    assert blanked_lines([{**ROW, "gains": [gain]}]) == [
        "With every image of b blanked, SFT − base is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0])."
    ]


def test_a_benchmark_without_gains_has_no_sentence() -> None:
    assert blanked_lines([{**ROW, "gains": []}, ROW])[0].startswith("With every image of b")
    assert len(blanked_lines([{**ROW, "gains": []}])) == 0


def test_the_csv_has_the_checkpoints_then_the_gains_each_with_its_kind() -> None:
    two = {**ROW, "benchmark": "c", "blank": "c_blank"}
    flat = blanked_csv([ROW, two])
    assert [(r["benchmark"], r["blank"], r["kind"]) for r in flat] == [
        ("b", "b_blank", "checkpoint"),
        ("c", "c_blank", "checkpoint"),
        ("b", "b_blank", "gain"),
        ("c", "c_blank", "gain"),
    ]
    assert flat[0] == {"benchmark": "b", "blank": "b_blank", "kind": "checkpoint", **CHECKPOINT}
    assert flat[2] == {"benchmark": "b", "blank": "b_blank", "kind": "gain", **GAIN}
