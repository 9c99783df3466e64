"""vlrl.reporting.tables: the cells of the results, comparison, published-number and summary
tables, each built here from rows shaped as the report stage's frames make them."""

from __future__ import annotations

from vlrl.reporting.formatting import DASH
from vlrl.reporting.tables import (
    _differs,
    _left_out,
    compared,
    comparisons_table,
    not_evaluated_table,
    protocol,
    scored_by,
    scoring,
    source,
    versus_table,
)


def test_scored_by_names_the_protocol_the_judge_and_each_kind_of_failure() -> None:
    assert scored_by({}) == "rules"
    assert scored_by({"protocol": "vlrl", "judge": None}) == "vlrl rules"
    assert scored_by({"protocol": "", "judge": "j", "judge_failures": 1}) == (
        "rules + judge j; 1 judge failure"
    )
    assert scored_by({"judge": "j", "judge_failures": 3, "generation_failures": 1}) == (
        "rules + judge j; 3 judge failures; 1 failed generations scored 0"
    )
    assert scored_by({"judge_failures": None, "generation_failures": None}) == "rules"


def test_left_out_counts_unscored_items_and_the_groups_a_metric_left_out() -> None:
    assert _left_out(None, "accuracy") == ""
    assert _left_out({"unscored": 1}, "accuracy") == " (1 unscored)"
    assert _left_out({"unscored": 3, "metric.acc.left_out": 2}, "acc") == (
        " (3 unscored, 2 groups left out)"
    )
    assert _left_out({"unscored": 3, "metric.other.left_out": 2}, "acc") == " (3 unscored)"
    assert _left_out({"unscored": 3, "metric.acc.left_out": 0}, "acc") == " (3 unscored)"


def test_source_and_protocol_of_a_published_number() -> None:
    row = {"paper": "P", "table": "Table 2", "row": "R-3B", "arxiv": None}
    assert source(row) == 'P, Table 2, row "R-3B"'
    assert protocol({"toolkit": "lmms-eval", "prompt": "CoT", "judge": "none"}) == (
        "toolkit: lmms-eval; prompt: CoT; judge: none"
    )


def test_scoring_is_the_same_only_when_a_known_published_protocol_is_ours() -> None:
    assert scoring({"published_protocol": "a", "reproduced_protocol": "b"}) == (
        "≠: published a, ours b"
    )
    assert scoring({"published_protocol": "a", "reproduced_protocol": None}) == (
        "≠: published a, ours unknown"
    )
    assert scoring({"published_protocol": None, "reproduced_protocol": None}) == (
        "≠: published unknown, ours unknown"
    )


def test_a_dash_stays_a_dash_across_protocols() -> None:
    assert compared(DASH, {"not_comparable": None, "same_protocol": False}) == DASH


def test_what_differs_joins_the_reason_not_comparable_and_the_stated_differences() -> None:
    assert _differs({"not_comparable": None, "differs": None}) == DASH
    assert _differs({"not_comparable": None, "differs": "greedy decoding"}) == "greedy decoding"
    assert _differs({"not_comparable": "ten subsets", "differs": None}) == (
        "not comparable: ten subsets"
    )
    assert _differs({"not_comparable": "ten subsets", "differs": "greedy"}) == (
        "not comparable: ten subsets; greedy"
    )


PUBLISHED = {
    "benchmark": "mathvista",
    "metric": "accuracy",
    "model": "SFT+GRPO",
    "scale": "percent",
    "reproduced": 0.5,
    "ci_low": 0.45,
    "ci_high": 0.55,
    "published_as_printed": "52.3",
    "delta": -0.023,
    "inside_interval": True,
    "not_comparable": None,
    "same_protocol": True,
    "published_protocol": "vlrl",
    "reproduced_protocol": "vlrl",
    "published_model": "X-7B",
    "paper": "P",
    "arxiv": "2501.1",
    "table": "Table 1",
    "row": "X-7B",
    "toolkit": "own",
    "prompt": "think",
    "judge": "none",
    "differs": None,
    "column": "MathVista",
}


def test_the_versus_table_shows_evaluated_numbers_only_with_every_column() -> None:
    assert versus_table([{**PUBLISHED, "evaluated": False}], 0.9).empty
    table = versus_table([{**PUBLISHED, "evaluated": True}, {**PUBLISHED, "evaluated": False}], 0.9)
    assert table.to_dict("records") == [
        {
            "benchmark": "mathvista",
            "metric": "accuracy",
            "ours": "SFT+GRPO",
            "reproduced [90% CI]": "50.0 [45.0, 55.0]",
            "published": "52.3",
            "Δ (ours − published)": "-2.3",
            "published inside our CI": "yes",
            "scoring protocol": "= vlrl",
            "published model": "X-7B",
            "source": 'P (arXiv 2501.1), Table 1, row "X-7B"',
            "protocol": "toolkit: own; prompt: think; judge: none",
            "differs from ours": DASH,
        }
    ]


def test_a_raw_scale_number_is_shown_on_its_scale() -> None:
    row = {**PUBLISHED, "evaluated": True, "scale": "raw", "reproduced": 2306.04, "delta": 12.5}
    row.update(ci_low=None, ci_high=None)
    cells = versus_table([row], 0.95).iloc[0]
    assert cells["reproduced [95% CI]"] == "2306.0"
    assert cells["Δ (ours − published)"] == "+12.5"


def test_numbers_not_evaluated_are_listed_with_their_link() -> None:
    rows = [
        {**PUBLISHED, "evaluated": False, "benchmark": None},
        {**PUBLISHED, "evaluated": True},
        {**PUBLISHED, "evaluated": False, "column": "MMMU", "benchmark": "mmmu"},
    ]
    assert not_evaluated_table(rows).to_dict("records") == [
        {
            "column": "MathVista",
            "benchmark": "none in vlrl",
            "published": "52.3",
            "published model": "X-7B",
            "linked to": "SFT+GRPO",
            "source": 'P (arXiv 2501.1), Table 1, row "X-7B"',
            "protocol": "toolkit: own; prompt: think; judge: none",
        },
        {
            "column": "MMMU",
            "benchmark": "mmmu",
            "published": "52.3",
            "published model": "X-7B",
            "linked to": "SFT+GRPO",
            "source": 'P (arXiv 2501.1), Table 1, row "X-7B"',
            "protocol": "toolkit: own; prompt: think; judge: none",
        },
    ]


def test_a_comparison_row_is_told_with_its_counts_interval_and_judge() -> None:
    row = {
        "benchmark": "b", "comparison": "SFT − base", "n": 1200, "excluded": 3,
        "accuracy_a": 0.61, "accuracy_b": 0.5, "diff": 0.11, "ci_low": 0.05, "ci_high": 0.17,
        "p_mcnemar": 0.0001, "discordant_fraction": 0.2, "a_only": 180, "b_only": 60,
        "judge": "j",
    }  # fmt: skip
    table = comparisons_table([row, {**row, "judge": None}], 0.99)
    assert table.iloc[0].to_dict() == {
        "benchmark": "b",
        "comparison": "SFT − base",
        "n paired": "1200",
        "unscored, left out": "3",
        "accuracies": "61.0 vs 50.0",
        "difference (pts)": "+11.0",
        "99% CI (paired bootstrap)": "[+5.0, +17.0]",
        "McNemar p": "< 0.001",
        "discordant": table.iloc[0]["discordant"],
        "scored by": "rules + judge j",
    }
    assert "180" in table.iloc[0]["discordant"] and "60" in table.iloc[0]["discordant"]
    assert table.iloc[1]["scored by"] == "rules"
