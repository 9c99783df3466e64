"""vlrl.reporting.blanked: the part of a gain that needs the image (its per-item difference
with the image minus blanked, and its interval), and the tables and sentences that tell it."""

from __future__ import annotations

from types import SimpleNamespace as C

import numpy as np
import pytest

from vlrl.items.predictions import ScoredItem
from vlrl.reporting import blanked
from vlrl.reporting.blanked import (
    blanked_csv,
    blanked_lines,
    blanked_rows,
    blanked_table,
    gains_table,
    looking_part,
)
from vlrl.reporting.frames import Evaluation
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


# ---------------------------------------------------------------------- looking_part at its edges
def test_the_looking_part_spans_plus_two_to_minus_two_per_item() -> None:
    gained_only_seeing = looking_part([scores(v) for v in ([1], [0], [0], [1])], SCORE, 0)
    assert gained_only_seeing == {"looking": 2.0, "looking_ci_low": 2.0, "looking_ci_high": 2.0,
                                  "looking_n": 1}  # fmt: skip
    gained_only_blanked = looking_part([scores(v) for v in ([0], [1], [1], [0])], SCORE, 0)
    assert gained_only_blanked["looking"] == -2.0
    same_everywhere = looking_part([scores(v) for v in ([1, 0], [0, 0], [1, 0], [0, 0])], SCORE, 0)
    assert same_everywhere["looking"] == 0.0 and same_everywhere["looking_n"] == 2


def test_the_looking_interval_is_drawn_with_the_seed_confidence_and_resamples_given() -> None:
    n = 40
    a = [k % 2 for k in range(n)]
    b = [int(k % 3 == 0) for k in range(n)]
    blank_a = [int(k % 5 == 0) for k in range(n)]
    blank_b = [int(k % 7 == 0) for k in range(n)]
    found = looking_part([scores(v) for v in (a, b, blank_a, blank_b)], SCORE, seed=13)
    order = sorted(range(n), key=lambda k: f"i{k}")  # the items in the order of their ids
    per_item = np.array([(a[k] - b[k]) - (blank_a[k] - blank_b[k]) for k in order])
    assert found["looking"] == pytest.approx(0.1, abs=1e-12)  # ((20 - 14) - (8 - 6)) / 40
    assert found["looking_n"] == 40
    expected = mean_interval(per_item.astype(float), 0.9, 300, 13)
    assert (found["looking_ci_low"], found["looking_ci_high"]) == expected
    # seed 13's interval is one that few seeds draw (1 of the first 300): not the default seed's
    assert expected == (pytest.approx(-0.07625), pytest.approx(0.325))
    assert expected != mean_interval(per_item.astype(float), 0.9, 300, 0)


# ------------------------------------------------------------------------ blanked_lines, whole
def test_a_looking_part_above_zero_is_told_after_both_gains() -> None:
    gain = {**GAIN, "looking_ci_low": 0.01, "looking_ci_high": 0.11}
    assert blanked_lines([{**ROW, "gains": [gain]}]) == [
        "With every image of b blanked, SFT − base is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0]): +6.0 of it from looking [+1.0, +11.0]."
    ]


def test_a_looking_part_below_zero_is_told_after_both_gains() -> None:
    gain = {**GAIN, "looking": -0.06, "looking_ci_low": -0.11, "looking_ci_high": -0.01}
    assert blanked_lines([{**ROW, "gains": [gain]}]) == [
        "With every image of b blanked, SFT − base is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0]): larger without the image, none of it from looking "
        "(-6.0 [-11.0, -1.0])."
    ]


def test_the_gains_of_one_benchmark_share_one_sentence_separated_by_semicolons() -> None:
    second = {**GAIN, "comparison": "SFT+GRPO − SFT", "looking": None}
    assert blanked_lines([{**ROW, "gains": [GAIN, second]}]) == [
        "With every image of b blanked, SFT − base is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0]): the part from looking, +6.0 [-2.0, +14.0], is not "
        "distinguishable from zero; SFT+GRPO − SFT is +4.0 points [-1.0, +9.0] (+10.0 with the "
        "image [+5.0, +15.0])."
    ]


# --------------------------------------------------------------------------------- blanked_rows
EXP = "tiny_shapes"
RUN = C(confidence=0.9, bootstrap_resamples=300)


def tagged(tag: str, correct: list[int | None]) -> C:
    """Scores with a name, so a recorded call says which scores it was given."""
    return C(items=scores(correct).items, tag=tag)


def evaluation(bench: str, by_checkpoint: dict[str, C], blank_of: str | None = None) -> Evaluation:
    return Evaluation(bench, C(blank_images_of=blank_of), by_checkpoint)


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """``paired`` and ``looking_part`` replaced by recorders: each returns values naming its
    arguments (``paired``: the two scores files; ``looking_part``: the four scores)."""
    calls: dict[str, list] = {"paired": [], "looking": []}

    def fake_paired(a, b, score, seed):
        (file_a, scores_a), (file_b, scores_b) = a, b
        calls["paired"].append((str(file_a), scores_a.tag, str(file_b), scores_b.tag, score, seed))
        pair = f"{file_a.parent.name}/{file_a.stem} − {file_b.parent.name}/{file_b.stem}"
        return {key: f"{key} of {pair}" for key in ("n", "accuracy_a", "diff", "ci_low", "ci_high")}

    def fake_looking(four, score, seed):
        calls["looking"].append(([s.tag for s in four], score, seed))
        of = " ".join(s.tag for s in four)
        return {"looking": f"looking of {of}", "looking_ci_low": "low", "looking_ci_high": "high",
                "looking_n": 7}  # fmt: skip

    monkeypatch.setattr(blanked, "paired", fake_paired)
    monkeypatch.setattr(blanked, "looking_part", fake_looking)
    return calls


def scores_file(checkpoint: str, bench: str) -> str:
    return f"results/tiny_shapes/scores/{checkpoint}/{bench}.json"


def test_only_a_blanked_benchmark_whose_twin_is_evaluated_gets_a_row(project, recorded) -> None:
    evaluations = [
        evaluation("orphan_blank", {"base": tagged("o", [1])}, blank_of="not_evaluated"),
        evaluation("shapes_test", {"base": tagged("seeing base", [1, 0])}),
        evaluation("shapes_test_blank", {"base": tagged("blank base", [0, 1])}, "shapes_test"),
        evaluation("other", {"base": tagged("other base", [1])}),
    ]
    rows = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)
    assert [(r["benchmark"], r["blank"]) for r in rows] == [("shapes_test", "shapes_test_blank")]
    assert [c[1] + " / " + c[3] for c in recorded["paired"]] == ["seeing base / blank base"]


def test_a_benchmark_that_blanks_nothing_is_paired_with_none_whatever_the_names(
    project, recorded
) -> None:
    evaluations = [
        evaluation("XXXX", {"base": tagged("x", [1])}),
        evaluation("plain", {"base": tagged("plain", [1])}),
    ]
    assert blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True) == []
    assert recorded["paired"] == []


def test_each_checkpoint_row_holds_its_blanked_accuracy_and_what_the_image_adds(
    project, recorded
) -> None:
    seeing = {ck: tagged(f"seeing {ck}", [1, 1, 1, 1, 1, 1]) for ck in ("base", "sft", "grpo")}
    blank = {
        "base": tagged("blank base", [0, 0, 1, None]),  # 1 of the 3 scored
        "sft": tagged("blank sft", [1, 0, None, 1, 0, 1]),  # 3 of the 5 scored
        "grpo": tagged("blank grpo", [1, 1, 0, 1]),  # 3 of 4
    }
    evaluations = [
        evaluation("shapes_test", seeing),
        evaluation("shapes_test_blank", blank, blank_of="shapes_test"),
    ]
    (row,) = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)
    assert list(row) == ["benchmark", "blank", "checkpoints", "gains"]
    assert (row["benchmark"], row["blank"]) == ("shapes_test", "shapes_test_blank")

    def adds(ck: str) -> dict:
        pair = f"{ck}/shapes_test − {ck}/shapes_test_blank"
        return {"seeing": f"accuracy_a of {pair}", "image_adds": f"diff of {pair}",
                "image_adds_ci_low": f"ci_low of {pair}",
                "image_adds_ci_high": f"ci_high of {pair}", "n": f"n of {pair}"}  # fmt: skip

    # Wilson intervals at 90%: 1 of 3, 3 of 5, 3 of 4
    assert row["checkpoints"] == [
        {"checkpoint": "base", "model": "base", "blanked": pytest.approx(1 / 3),
         "blanked_ci_low": pytest.approx(0.0782657263),
         "blanked_ci_high": pytest.approx(0.7464661317),
         **adds("base")},
        {"checkpoint": "sft", "model": "SFT", "blanked": pytest.approx(0.6),
         "blanked_ci_low": pytest.approx(0.2724831719),
         "blanked_ci_high": pytest.approx(0.8572935280),
         **adds("sft")},
        {"checkpoint": "grpo", "model": "SFT+GRPO", "blanked": pytest.approx(0.75),
         "blanked_ci_low": pytest.approx(0.3561680086),
         "blanked_ci_high": pytest.approx(0.9420926788),
         **adds("grpo")},
    ]  # fmt: skip
    assert [list(c) for c in row["checkpoints"]] == [
        ["checkpoint", "model", "blanked", "blanked_ci_low", "blanked_ci_high", "seeing",
         "image_adds", "image_adds_ci_low", "image_adds_ci_high", "n"]
    ] * 3  # fmt: skip


def twins(*checkpoints: str) -> list:
    """shapes_test (every item right) and its blanked twin (every item wrong), tagged by
    checkpoint, for ``checkpoints`` in that order."""
    seeing = {ck: tagged(f"seeing {ck}", [1]) for ck in checkpoints}
    blank = {ck: tagged(f"blank {ck}", [0]) for ck in checkpoints}
    return [
        evaluation("shapes_test", seeing),
        evaluation("shapes_test_blank", blank, blank_of="shapes_test"),
    ]


def test_each_gain_is_paired_with_the_image_and_blanked_and_split_by_looking(
    project, recorded
) -> None:
    evaluations = twins("base", "sft", "grpo")
    (row,) = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)

    def gain(comparison: str, a: str, b: str) -> dict:
        seen = f"{a}/shapes_test − {b}/shapes_test"
        blind = f"{a}/shapes_test_blank − {b}/shapes_test_blank"
        return {"comparison": comparison, "with_image": f"diff of {seen}",
                "with_image_ci_low": f"ci_low of {seen}",
                "with_image_ci_high": f"ci_high of {seen}",
                "blanked": f"diff of {blind}", "blanked_ci_low": f"ci_low of {blind}",
                "blanked_ci_high": f"ci_high of {blind}",
                "looking": f"looking of seeing {a} seeing {b} blank {a} blank {b}",
                "looking_ci_low": "low", "looking_ci_high": "high", "looking_n": 7}  # fmt: skip

    assert row["gains"] == [
        gain("SFT − base", "sft", "base"),
        gain("SFT+GRPO − SFT", "grpo", "sft"),
        gain("SFT+GRPO − base", "grpo", "base"),
    ]
    assert recorded["looking"] == [
        (["seeing sft", "seeing base", "blank sft", "blank base"], RUN, 5),
        (["seeing grpo", "seeing sft", "blank grpo", "blank sft"], RUN, 5),
        (["seeing grpo", "seeing base", "blank grpo", "blank base"], RUN, 5),
    ]


def test_every_paired_comparison_gets_its_files_scores_settings_and_seed_in_order(
    project, recorded
) -> None:
    evaluations = twins("base", "sft")
    blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)
    assert recorded["paired"] == [
        # each checkpoint: with the image (a) against blanked (b)
        (scores_file("base", "shapes_test"), "seeing base",
         scores_file("base", "shapes_test_blank"), "blank base", RUN, 5),
        (scores_file("sft", "shapes_test"), "seeing sft",
         scores_file("sft", "shapes_test_blank"), "blank sft", RUN, 5),
        # the gain sft − base with the image, then blanked
        (scores_file("sft", "shapes_test"), "seeing sft",
         scores_file("base", "shapes_test"), "seeing base", RUN, 5),
        (scores_file("sft", "shapes_test_blank"), "blank sft",
         scores_file("base", "shapes_test_blank"), "blank base", RUN, 5),
    ]  # fmt: skip


def test_without_sft_the_checkpoints_and_gains_are_named_grpo(project, recorded) -> None:
    evaluations = twins("base", "grpo")
    (row,) = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=False)
    assert [(c["checkpoint"], c["model"]) for c in row["checkpoints"]] == [
        ("base", "base"),
        ("grpo", "GRPO"),
    ]
    assert [g["comparison"] for g in row["gains"]] == ["GRPO − base"]


def test_the_gains_follow_the_order_the_checkpoints_are_given_in(project, recorded) -> None:
    evaluations = twins("grpo", "sft")
    (row,) = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)
    assert [g["comparison"] for g in row["gains"]] == ["SFT − SFT+GRPO"]
    assert [c["model"] for c in row["checkpoints"]] == ["SFT+GRPO", "SFT"]


def test_blanked_rows_pair_real_scores_on_the_same_items(project) -> None:
    """Unrecorded: paired and looking_part on four items, the numbers worked out by hand."""
    seeing = {"base": scores([1, 0, 0, 1]), "sft": scores([1, 1, 1, 1])}
    blank = {"base": scores([0, 0, 0, 1]), "sft": scores([1, 0, 0, 1])}
    evaluations = [
        evaluation("shapes_test", seeing),
        evaluation("shapes_test_blank", blank, blank_of="shapes_test"),
    ]
    (row,) = blanked_rows(EXP, evaluations, RUN, 5, sft_enabled=True)
    base, sft = row["checkpoints"]
    assert (base["blanked"], base["seeing"], base["image_adds"], base["n"]) == (0.25, 0.5, 0.25, 4)
    assert (sft["blanked"], sft["seeing"], sft["image_adds"], sft["n"]) == (0.5, 1.0, 0.5, 4)
    (gain,) = row["gains"]
    # with the image 1.0 − 0.5; blanked 0.5 − 0.25; per item (0−1, 1−0, 1−0, 0−0): mean 0.25
    assert (gain["with_image"], gain["blanked"], gain["looking"], gain["looking_n"]) == (
        0.5, 0.25, 0.25, 4)  # fmt: skip
    for key in ("image_adds", "blanked"):
        assert base[f"{key}_ci_low"] <= base[key] <= base[f"{key}_ci_high"]
    for key in ("with_image", "blanked", "looking"):
        assert gain[f"{key}_ci_low"] <= gain[key] <= gain[f"{key}_ci_high"]
