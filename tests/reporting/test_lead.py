"""vlrl.reporting.tables.lead_lines: the report's first line per benchmark, told from the paired
comparisons' own rows (built here by vlrl.scoring.stats.paired_difference on chosen items)."""

from __future__ import annotations

import numpy as np

from vlrl.reporting import formatting as fmt
from vlrl.reporting.tables import comparisons_table, lead_lines
from vlrl.scoring.stats import paired_difference

LEVEL = 0.95


def row(bench: str, a: str, b: str, right_a: list[int], right_b: list[int], excluded=0) -> dict:
    """A comparison row as vlrl.reporting.frames.comparison_rows makes one: a − b paired."""
    r = paired_difference(np.array(right_a), np.array(right_b), LEVEL, resamples=500, seed=0)
    return {
        "benchmark": bench, "comparison": f"{a} − {b}", "a": a, "b": b, "n": r["n"],
        "accuracy_a": r["mean_a"], "accuracy_b": r["mean_b"], "diff": r["diff"],
        "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_mcnemar": r["p_value"],
        "a_only": r["a_only"], "b_only": r["b_only"],
        "discordant_fraction": r["discordant_fraction"], "excluded": excluded, "judge": None,
    }  # fmt: skip


def items(right: int, n: int = 100, first: int = 0) -> list[int]:
    """``n`` items of which ``right`` are right, starting at item ``first`` (wrapping)."""
    out = [0] * n
    for i in range(right):
        out[(first + i) % n] = 1
    return out


BASE, SFT, GRPO = items(10), items(40), items(55)  # each adds items over the one before
UP = row("shapes_test", "grpo", "sft", GRPO, SFT)
SFT_UP = row("shapes_test", "sft", "base", SFT, BASE)


def text(line: dict) -> str:
    return f"**{line['lead']}**{line['rest']}"


def test_the_lead_says_what_rl_and_sft_added_in_the_comparisons_numbers():
    rows = [SFT_UP, UP, row("shapes_test", "grpo", "base", GRPO, BASE)]
    [line] = lead_lines(rows, sft_enabled=True, confidence=LEVEL)
    cells = comparisons_table(rows, LEVEL).set_index("comparison")
    rl, sft = cells.loc["grpo − sft"], cells.loc["sft − base"]  # comparisons.md's own cells
    assert rl["difference (pts)"] == "+15.0" and rl["McNemar p"] == "< 0.001"
    accuracy_a, accuracy_b = rl["accuracies"].split(" vs ")
    assert text(line) == (
        f"**RL added {rl['difference (pts)']} points** on shapes_test (SFT+GRPO {accuracy_a}% vs"
        f" SFT {accuracy_b}%, paired 95% interval {rl['95% CI (paired bootstrap)']}, McNemar"
        f" p {rl['McNemar p']}, n = {rl['n paired']}); SFT added {sft['difference (pts)']} points"
        f" over base {sft['95% CI (paired bootstrap)']}."
    )
    assert line["benchmark"] == "shapes_test"


def test_an_interval_holding_zero_is_said_plainly():
    # 3 items only GRPO gets right, 2 only SFT: +1 point, an interval across zero.
    sft, grpo = items(40), items(40)
    grpo[40:43], grpo[0:2] = [1, 1, 1], [0, 0]
    flat = row("b", "grpo", "sft", grpo, sft)
    assert flat["ci_low"] < 0 < flat["ci_high"] and flat["diff"] == 0.01
    [line] = lead_lines([flat], sft_enabled=True, confidence=LEVEL)
    assert line["lead"] == "RL's change, +1.0 points, is not distinguishable from zero"
    assert f"interval {fmt.signed_interval(flat['ci_low'], flat['ci_high'])}," in line["rest"]
    assert f"McNemar p = {fmt.p_value(flat['p_mcnemar'])}, n = 100)" in line["rest"]
    sft_flat = row("b", "sft", "base", grpo, sft)  # the same items, as SFT over base
    [line] = lead_lines([sft_flat, flat], sft_enabled=True, confidence=LEVEL)
    ci = fmt.signed_interval(sft_flat["ci_low"], sft_flat["ci_high"])
    assert line["rest"].endswith(
        f"; SFT's change over base, +1.0 points {ci}, is not distinguishable from zero."
    )


def test_a_negative_effect_is_a_loss():
    down = row("b", "grpo", "sft", SFT, GRPO)  # GRPO's items and SFT's swapped: −15 points
    assert down["ci_high"] < 0
    sft_down = row("b", "sft", "base", BASE, SFT)
    [line] = lead_lines([sft_down, down], sft_enabled=True, confidence=LEVEL)
    assert line["lead"] == "RL lost 15.0 points"
    assert "(SFT+GRPO 40.0% vs SFT 55.0%, paired 95% interval [-" in line["rest"]
    ci = fmt.signed_interval(sft_down["ci_low"], sft_down["ci_high"])
    assert line["rest"].endswith(f"; SFT lost 30.0 points against base {ci}.")


def test_without_grpo_only_sft_is_told_and_without_sft_rl_is_over_base():
    [line] = lead_lines([SFT_UP], sft_enabled=True, confidence=LEVEL)
    assert line["lead"] == "SFT added +30.0 points"
    assert line["rest"].startswith(" on shapes_test (SFT 40.0% vs base 10.0%, paired 95%")
    assert "RL" not in text(line) and line["rest"].endswith(", n = 100).")
    direct = row("shapes_test", "grpo", "base", GRPO, BASE)
    [line] = lead_lines([direct], sft_enabled=False, confidence=LEVEL)
    assert line["lead"] == "RL added +45.0 points"
    assert line["rest"].startswith(" on shapes_test (GRPO 55.0% vs base 10.0%,")
    assert "SFT" not in text(line)


def test_sft_grpo_over_base_without_an_sft_checkpoint_is_named_as_such():
    both = row("shapes_test", "grpo", "base", GRPO, BASE)
    [line] = lead_lines([both], sft_enabled=True, confidence=LEVEL)
    assert line["lead"] == "SFT+GRPO added +45.0 points"
    assert line["rest"].startswith(" on shapes_test (SFT+GRPO 55.0% vs base 10.0%,")


def test_nothing_to_compare_means_no_line_and_each_benchmark_has_its_own():
    assert lead_lines([], sft_enabled=True, confidence=LEVEL) == []
    other = row("other", "grpo", "sft", SFT, SFT, excluded=3)
    lines = lead_lines([SFT_UP, UP, other], sft_enabled=True, confidence=0.9)
    assert [line["benchmark"] for line in lines] == ["shapes_test", "other"]
    assert "paired 90% interval" in lines[0]["rest"]
    assert lines[1]["lead"] == "RL's change, +0.0 points, is not distinguishable from zero"
    assert "McNemar p = 1.000, n = 100, 3 unscored left out)." in lines[1]["rest"]
    assert "SFT added" not in lines[1]["rest"], "other has no SFT − base row"
