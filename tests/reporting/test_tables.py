"""vlrl.reporting.tables: the cells of the results, comparison, published-number and summary
tables, each built here from rows shaped as the report stage's frames make them."""

from __future__ import annotations

from types import SimpleNamespace

from vlrl.benchmarks import load_benchmark
from vlrl.reporting.formatting import DASH
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.tables import (
    _differs,
    _left_out,
    _protocols_of,
    compared,
    comparisons_table,
    not_evaluated_table,
    protocol,
    results_table,
    scored_by,
    scoring,
    source,
    summary_table,
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


# ---------------------------------------------------------------------------------- results
def _result(**cells) -> dict:
    row = {"benchmark": "mmbench_en_dev", "checkpoint": "base", "model": "base", "n": 10}
    row |= {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "unscored": 0, "protocol": "vlrl"}
    row |= {"judge": None, "generation_failures": 0, "judge_failures": 0}
    return row | cells


def test_a_results_table_leads_with_the_headline_then_accuracy_metrics_counts_and_tasks(project):
    ev = Evaluation("mmbench_en_dev", load_benchmark("mmbench_en_dev"), {})
    circular = {"metric.CircularEval": 0.3, "metric.CircularEval.ci_low": 0.2}
    circular |= {"metric.CircularEval.ci_high": 0.4, "metric.CircularEval.left_out": 1}
    tasks = {"a.n": 4, "a.accuracy": 0.5, "a.ci_low": 0.25, "a.ci_high": 0.75}
    tasks |= {"b.n": None, "b.accuracy": None, "b.ci_low": None, "b.ci_high": None}
    base = _result(**circular, **tasks, unscored=2)
    grpo = _result(**circular, **tasks, checkpoint="grpo", model="GRPO", **{"metric.kappa": 0.7})
    grpo |= {"b.n": 3.0, "b.accuracy": 1.0, "b.ci_low": 0.5, "b.ci_high": 1.0, "judge": "j"}
    grpo["metric.CircularEval.left_out"] = 3
    other = _result(benchmark="mme", model="elsewhere")

    table = results_table([base, other, grpo], ev)

    assert list(table.columns) == [
        "model", "CircularEval (headline)", "accuracy", "kappa", "n", "unscored", "a", "b",
        "scored by",
    ]  # fmt: skip
    assert table.to_dict("records") == [
        {
            "model": "base",
            "CircularEval (headline)": "30.0 [20.0, 40.0] (1 group left out)",
            "accuracy": "50.0 [40.0, 60.0]",
            "kappa": DASH,
            "n": "10",
            "unscored": "2",
            "a": "50.0 [25.0, 75.0] (n=4)",
            "b": DASH,
            "scored by": "vlrl rules",
        },
        {
            "model": "GRPO",
            "CircularEval (headline)": "30.0 [20.0, 40.0] (3 groups left out)",
            "accuracy": "50.0 [40.0, 60.0]",
            "kappa": "70.0",
            "n": "10",
            "unscored": "0",
            "a": "50.0 [25.0, 75.0] (n=4)",
            "b": "100.0 [50.0, 100.0] (n=3)",
            "scored by": "vlrl rules + judge j",
        },
    ]


def test_a_results_table_shows_a_task_sum_on_its_own_scale(project):
    ev = Evaluation("mme", load_benchmark("mme"), {})
    row = _result(benchmark="mme", **{"metric.perception": 1234.56})
    table = results_table([row], ev)
    assert list(table.columns)[:3] == ["model", "accuracy (headline)", "perception"]
    assert table.iloc[0]["perception"] == "1234.6"


# ---------------------------------------------------------------------------------- summary
def _evaluations(project_scores: dict[str, dict[str, str]]) -> list[Evaluation]:
    """Evaluations of ``{bench: {checkpoint: protocol}}`` (only the protocol is read)."""
    return [
        Evaluation(
            bench,
            load_benchmark(bench),
            {c: SimpleNamespace(protocol=p) for c, p in checkpoints.items()},
        )
        for bench, checkpoints in project_scores.items()
    ]


def test_the_summary_puts_our_checkpoints_then_each_published_row_in_the_papers_columns(project):
    evaluations = _evaluations(
        {"mme": {"base": "vlrl", "grpo": "vlrl"}, "mmbench_en_dev": {"base": "vlrl", "grpo": "x"}}
    )
    mme = {"metric.perception": 1200.0, "metric.cognition": 300.5, "unscored": 2}
    results = [
        _result(benchmark="mme", **mme),
        _result(benchmark="mmbench_en_dev", **{"metric.CircularEval": 0.25}),
        _result(benchmark="mme", checkpoint="grpo", model="GRPO", judge="j", **mme),
        _result(benchmark="mmbench_en_dev", checkpoint="grpo", model="GRPO", accuracy=None),
    ]
    published = {"reference": "paper_x", "row_id": "r1", "published_model": "X-7B"}
    published |= {"table": "Table 2", "judge": "gpt-4o", "published_protocol": None}
    published |= {"evaluated": True, "not_comparable": None}
    versus = [
        {**published, "benchmark": "mme", "metric": "perception+cognition"}
        | {"published_as_printed": 1500.5},
        {**published, "benchmark": "mmbench_en_dev", "metric": "CircularEval"}
        | {"published_as_printed": 70.1, "not_comparable": "another split"},
        {**published, "benchmark": "mmbench_en_dev", "metric": "accuracy"}
        | {"published_as_printed": 9.9},
        {**published, "benchmark": "mmstar", "metric": "accuracy", "evaluated": False}
        | {"published_as_printed": 8.8},
        {**published, "row_id": "r2", "published_model": "Y", "judge": "none"}
        | {"published_protocol": "vlrl", "benchmark": "mme", "metric": "perception+cognition"}
        | {"published_as_printed": 1400, "evaluated": False},
    ]
    columns = [("mme", "perception+cognition"), ("mmbench_en_dev", "CircularEval")]
    columns.append(("mmbench_en_dev", "accuracy"))

    table = summary_table(results, versus, evaluations, columns)

    assert table.to_dict("records") == [
        {
            "model": "base (reproduced)",
            "mme perception+cognition": "1500.5 (2 unscored)",
            "mmbench_en_dev CircularEval": "25.0",
            "mmbench_en_dev accuracy": "50.0",
            "judge": "none (rules)",
            "scoring protocol": "vlrl",
        },
        {
            "model": "GRPO (reproduced)",
            "mme perception+cognition": "1500.5 (2 unscored)",
            "mmbench_en_dev CircularEval": DASH,
            "mmbench_en_dev accuracy": DASH,
            "judge": "j on mme",
            "scoring protocol": "vlrl on mme; x on mmbench_en_dev",
        },
        {
            "model": "X-7B (paper_x, Table 2)",
            "mme perception+cognition": "1500.5",
            "mmbench_en_dev CircularEval": "70.1 (not comparable)",
            "mmbench_en_dev accuracy": "9.9",
            "judge": "as published: gpt-4o",
            "scoring protocol": "unknown",
        },
        {
            "model": "Y (paper_x, Table 2)",
            "mme perception+cognition": DASH,
            "mmbench_en_dev CircularEval": DASH,
            "mmbench_en_dev accuracy": DASH,
            "judge": "as published: none",
            "scoring protocol": "vlrl",
        },
    ]


def test_the_protocols_of_a_checkpoint_name_each_with_its_benchmarks_or_a_dash(project):
    evaluations = _evaluations(
        {
            "mme": {"base": "vlrl", "grpo": "a"},
            "mmstar": {"base": "vlrl", "grpo": "b"},
            "mmbench_en_dev": {"base": "vlrl", "grpo": "a"},
        }
    )
    assert _protocols_of(evaluations, "base") == "vlrl"
    assert _protocols_of(evaluations, "grpo") == "a on mme, mmbench_en_dev; b on mmstar"
    assert _protocols_of(evaluations, "sft") == DASH  # no scores of that checkpoint


def test_a_checkpoint_missing_a_benchmark_has_a_dash_there(project):
    evaluations = _evaluations({"mme": {"base": "vlrl"}, "mmstar": {}})
    results = [_result(benchmark="mme")]
    columns = [("mme", "accuracy"), ("mmstar", "accuracy")]
    [row] = summary_table(results, [], evaluations, columns).to_dict("records")
    assert row["mme accuracy"] == "50.0" and row["mmstar accuracy"] == DASH
    assert row["scoring protocol"] == "vlrl"


def test_two_judge_failures_are_plural_and_an_unevaluated_row_first_skips_only_itself():
    assert scored_by({"judge": "j", "judge_failures": 2}) == "rules + judge j; 2 judge failures"
    rows = [{**PUBLISHED, "evaluated": False}, {**PUBLISHED, "evaluated": True}]
    assert len(versus_table(rows, 0.9)) == 1


def test_the_summary_names_every_judge_and_the_groups_its_metric_left_out(project):
    evaluations = _evaluations({"mme": {"base": "vlrl"}, "mmbench_en_dev": {"base": "vlrl"}})
    circular = {"metric.CircularEval": 0.25, "metric.CircularEval.left_out": 1, "unscored": 2}
    results = [
        _result(benchmark="mme", judge="j"),
        _result(benchmark="mmbench_en_dev", judge="k", **circular),
    ]
    columns = [("mme", "accuracy"), ("mmbench_en_dev", "CircularEval")]
    [row] = summary_table(results, [], evaluations, columns).to_dict("records")
    assert row["judge"] == "j on mme; k on mmbench_en_dev"
    assert row["mmbench_en_dev CircularEval"] == "25.0 (2 unscored, 1 group left out)"
