"""vlrl.reporting.versus: a pooled column's accuracy over its benchmarks' items, and our value
of a published column's metric (one metric with its interval, or a sum without one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.reporting.combined import pooled_row
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.published import Column, reference_file
from vlrl.reporting.versus import (
    COLUMNS,
    _combined,
    _reproduced,
    _stored,
    linked,
    summary_columns,
    versus_rows,
)
from vlrl.scoring.stats import proportion_ci


def test_the_pooled_accuracy_weighs_each_benchmark_by_its_items_with_a_wilson_interval() -> None:
    row = pooled_row([{"n": 10, "accuracy": 0.3}, {"n": 30, "accuracy": 0.5}], 0.9)
    low, high = proportion_ci(18, 40, 0.9)
    assert row == {"n": 40, "accuracy": 18 / 40, "ci_low": low, "ci_high": high}
    assert low < 0.45 < high


def test_a_pooled_count_is_rounded_to_whole_verdicts() -> None:
    # 1/3 of 3 items is one verdict, not 0.999…: the accuracy is exactly 1/3 of 3 + 2/2
    row = pooled_row([{"n": 3, "accuracy": 1 / 3}, {"n": 2, "accuracy": 1.0}], 0.95)
    assert row["accuracy"] == 3 / 5


def test_a_pool_with_a_missing_benchmark_has_no_number() -> None:
    assert pooled_row([{"n": 3, "accuracy": 1.0}, None], 0.95) is None
    assert pooled_row([None, {"n": 3, "accuracy": 1.0}], 0.95) is None
    assert pooled_row([], 0.95) is None


def column(metric, scale: str = "percent") -> Column:
    return Column(benchmark="mme", metric=metric, scale=scale)


ROW = {
    "accuracy": 0.5,
    "ci_low": 0.4,
    "ci_high": 0.6,
    "metric.perception": 1500.0,
    "metric.perception.ci_low": 1400.0,
    "metric.perception.ci_high": 1600.0,
    "metric.cognition": 600.0,
}


def test_our_value_of_one_metric_keeps_its_interval() -> None:
    assert _reproduced(ROW, column("accuracy")) == (0.5, 0.4, 0.6)
    assert _reproduced(ROW, column("perception", "raw")) == (1500.0, 1400.0, 1600.0)
    assert _reproduced(None, column("accuracy")) == (None, None, None)


def test_a_sum_of_metrics_has_no_interval_and_no_value_with_a_part_missing() -> None:
    assert _reproduced(ROW, column(["perception", "cognition"], "raw")) == (2100.0, None, None)
    assert _reproduced(ROW, column(["perception", "reasoning"], "raw")) == (None, None, None)


@pytest.mark.parametrize("scale, stored", [("percent", 0.675), ("fraction", 67.5), ("raw", 67.5)])
def test_a_published_number_is_stored_as_a_fraction_only_when_printed_in_percent(
    scale: str, stored: float
) -> None:
    assert _stored(67.5, column("accuracy", scale)) == pytest.approx(stored, abs=0)


# --- versus_rows, linked, _combined and summary_columns, decision by decision --------------------
# The reference files below name benchmarks (aa, bb, cc) that need no config/benchmarks file:
# versus_rows reads only a benchmark's name and each checkpoint's scoring protocol.


@pytest.fixture()
def references_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of reference files alone (``$VLRL_ROOT``): quicker than conftest's copy of all
    of config/, and these tests read nothing else."""
    (tmp_path / "config" / "reference").mkdir(parents=True)
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    return tmp_path


def _links(*links: tuple[str, dict[str, str]]) -> list[SimpleNamespace]:
    """``report.published`` entries: (reference, checkpoint → row id)."""
    return [SimpleNamespace(reference=name, rows=rows) for name, rows in links]


def _evaluations(protocols: dict[str, dict[str, str]]) -> list[Evaluation]:
    """Benchmark → checkpoint → the protocol its scores file was scored by, in order."""
    config = SimpleNamespace(headline="accuracy", metrics=[])
    return [
        Evaluation(bench, config, {c: SimpleNamespace(protocol=p) for c, p in scored.items()})
        for bench, scored in protocols.items()
    ]


def _ours(bench: str, checkpoint: str, accuracy, low, high, n: int = 100, **extra) -> dict:
    """A results row (vlrl.reporting.frames.results_rows) of the fields versus_rows reads."""
    return {"benchmark": bench, "checkpoint": checkpoint, "model": checkpoint, "n": n,
            "accuracy": accuracy, "ci_low": low, "ci_high": high} | extra  # fmt: skip


def test_the_fields_of_a_row_are_published_csvs_columns_in_order() -> None:
    assert COLUMNS == [
        "benchmark", "metric", "checkpoint", "model", "evaluated", "reproduced", "ci_low",
        "ci_high", "published", "published_as_printed", "scale", "delta", "inside_interval",
        "reference", "paper", "arxiv", "column", "row_id", "table", "row", "published_model",
        "toolkit", "prompt", "judge", "differs", "published_protocol", "reproduced_protocol",
        "same_protocol", "not_comparable",
    ]  # fmt: skip


TWO_REFERENCES = """\
paper: {{title: {title}, url: u}}
protocol: {{toolkit: t, prompt: p, judge: j}}
columns: {{A: {{benchmark: aa, scale: percent}}}}
rows:
  - {{id: x, model: X, source: {{table: T, row: X}}, values: {{A: 1.0}}}}
  - {{id: y, model: Y, source: {{table: T, row: Y}}, values: {{A: 2.0}}}}
"""


def test_links_are_taken_in_the_order_of_report_published_then_of_the_checkpoints(
    references_only,
) -> None:
    reference_file("first").write_text(TWO_REFERENCES.format(title="First paper"))
    reference_file("second").write_text(TWO_REFERENCES.format(title="Second paper"))
    links = _links(
        ("first", {"grpo": "y", "sft": "x", "base": "x"}),  # sft is not a checkpoint here
        ("second", {"grpo": "x"}),
        ("first", {"base": "y"}),
    )
    found = linked(links, ["base", "grpo"])
    assert [(name, ref.paper.title, c, row_id) for name, ref, c, row_id in found] == [
        ("first", "First paper", "base", "x"),
        ("first", "First paper", "grpo", "y"),
        ("second", "Second paper", "grpo", "x"),
        ("first", "First paper", "base", "y"),
    ]
    assert found[0][1] is found[3][1], "a reference linked twice is loaded once"
    assert linked(links, []) == [] and linked([], ["base"]) == []


PAPER = """\
paper: {title: Paper X, arxiv: "2501.01234v2", url: https://example.org/x}
protocol: {toolkit: TK, prompt: PR, judge: JD, scoring: vlrl}
columns:
  Gone: {benchmark: null, scale: raw, differs: no benchmark of vlrl's}
  Cc: {benchmark: cc, scale: percent}
  Bb: {benchmark: bb, scale: fraction, differs: another split}
  Aa: {benchmark: aa, scale: percent}
rows:
  - {id: r1, model: Model-1, source: {table: Table 2, row: Model 1},
     values: {Gone: 12.5, Cc: 20.0, Bb: 0.25, Aa: 50.0}}
  - {id: r2, model: Model-2, source: {table: Table 3, row: Model 2},
     values: {Gone: null, Cc: null, Bb: 0.5, Aa: 50},
     protocol: {toolkit: TK2, prompt: PR2, judge: JD2, scoring: other},
     not_comparable: {Bb: all ten subsets}}
"""


def _paper_rows() -> list[dict]:
    reference_file("paper_x").write_text(PAPER)
    results = [
        _ours("aa", "base", 0.75, 0.5, 0.875),
        _ours("bb", "base", 0.5, 0.375, 0.625),
        _ours("aa", "grpo", 0.25, 0.125, 0.5),
        _ours("bb", "grpo", 0.625, 0.5, 0.75),
    ]
    evaluations = _evaluations(
        {"aa": {"base": "vlrl", "grpo": "vlrl"}, "bb": {"base": "vlrl", "grpo": "other"}}
    )
    links = _links(("paper_x", {"grpo": "r2", "sft": "r1", "base": "r1"}))
    return versus_rows(links, results, evaluations, sft_enabled=True)


# The fields every row of PAPER's rows shares, by row id.
R1 = {"reference": "paper_x", "paper": "Paper X", "arxiv": "2501.01234v2", "row_id": "r1",
      "table": "Table 2", "row": "Model 1", "published_model": "Model-1", "toolkit": "TK",
      "prompt": "PR", "judge": "JD", "published_protocol": "vlrl"}  # fmt: skip
R2 = {"reference": "paper_x", "paper": "Paper X", "arxiv": "2501.01234v2", "row_id": "r2",
      "table": "Table 3", "row": "Model 2", "published_model": "Model-2", "toolkit": "TK2",
      "prompt": "PR2", "judge": "JD2", "published_protocol": "other"}  # fmt: skip


def test_each_published_number_gets_a_whole_row_by_benchmark_then_as_linked(
    references_only,
) -> None:
    rows = _paper_rows()
    assert all(list(row) == COLUMNS for row in rows)
    assert rows == [
        {
            "benchmark": "aa", "metric": "accuracy", "checkpoint": "base", "model": "base",
            "evaluated": True, "reproduced": 0.75, "ci_low": 0.5, "ci_high": 0.875,
            "published": 0.5, "published_as_printed": 50.0, "scale": "percent", "delta": 0.25,
            "inside_interval": True, **R1, "column": "Aa", "differs": None,
            "reproduced_protocol": "vlrl", "same_protocol": True, "not_comparable": None,
        },
        {
            "benchmark": "aa", "metric": "accuracy", "checkpoint": "grpo", "model": "SFT+GRPO",
            "evaluated": True, "reproduced": 0.25, "ci_low": 0.125, "ci_high": 0.5,
            "published": 0.5, "published_as_printed": 50, "scale": "percent", "delta": -0.25,
            "inside_interval": True, **R2, "column": "Aa", "differs": None,
            "reproduced_protocol": "vlrl", "same_protocol": False, "not_comparable": None,
        },
        {
            "benchmark": "bb", "metric": "accuracy", "checkpoint": "base", "model": "base",
            "evaluated": True, "reproduced": 0.5, "ci_low": 0.375, "ci_high": 0.625,
            "published": 0.25, "published_as_printed": 0.25, "scale": "fraction",
            "delta": 0.25, "inside_interval": False, **R1, "column": "Bb",
            "differs": "another split", "reproduced_protocol": "vlrl", "same_protocol": True,
            "not_comparable": None,
        },
        {
            "benchmark": "bb", "metric": "accuracy", "checkpoint": "grpo", "model": "SFT+GRPO",
            "evaluated": True, "reproduced": 0.625, "ci_low": 0.5, "ci_high": 0.75,
            "published": 0.5, "published_as_printed": 0.5, "scale": "fraction", "delta": None,
            "inside_interval": None, **R2, "column": "Bb", "differs": "another split",
            "reproduced_protocol": "other", "same_protocol": True,
            "not_comparable": "all ten subsets",
        },
        {
            "benchmark": None, "metric": "accuracy", "checkpoint": "base", "model": "base",
            "evaluated": False, "reproduced": None, "ci_low": None, "ci_high": None,
            "published": 12.5, "published_as_printed": 12.5, "scale": "raw", "delta": None,
            "inside_interval": None, **R1, "column": "Gone", "differs": "no benchmark of vlrl's",
            "reproduced_protocol": None, "same_protocol": None, "not_comparable": None,
        },
        {
            "benchmark": "cc", "metric": "accuracy", "checkpoint": "base", "model": "base",
            "evaluated": False, "reproduced": None, "ci_low": None, "ci_high": None,
            "published": 0.2, "published_as_printed": 20.0, "scale": "percent", "delta": None,
            "inside_interval": None, **R1, "column": "Cc", "differs": None,
            "reproduced_protocol": None, "same_protocol": None, "not_comparable": None,
        },
    ]  # fmt: skip


def test_a_published_number_on_either_end_of_our_interval_lies_inside_it(references_only) -> None:
    aa_base, aa_grpo = _paper_rows()[:2]
    assert (aa_base["published"], aa_base["ci_low"], aa_base["inside_interval"]) == (
        0.5, 0.5, True,
    )  # fmt: skip
    assert (aa_grpo["published"], aa_grpo["ci_high"], aa_grpo["inside_interval"]) == (
        0.5, 0.5, True,
    )  # fmt: skip


def test_the_model_is_named_grpo_alone_when_sft_is_disabled(references_only) -> None:
    reference_file("paper_x").write_text(PAPER)
    links = _links(("paper_x", {"grpo": "r1"}))
    results = [_ours("aa", "grpo", 0.75, 0.5, 0.875)]
    rows = versus_rows(links, results, _evaluations({"aa": {"grpo": "vlrl"}}), False)
    assert [(r["column"], r["model"]) for r in rows] == [
        ("Aa", "GRPO"), ("Gone", "GRPO"), ("Cc", "GRPO"), ("Bb", "GRPO"),
    ]  # fmt: skip


def test_an_interval_with_a_missing_end_tests_nothing(references_only) -> None:
    reference_file("paper_x").write_text(PAPER)
    links = _links(("paper_x", {"base": "r1"}))
    evaluations = _evaluations({"aa": {"base": "vlrl"}, "bb": {"base": "vlrl"}})
    results = [_ours("aa", "base", 0.75, 0.5, None), _ours("bb", "base", 0.5, None, 0.625)]
    rows = versus_rows(links, results, evaluations, sft_enabled=True)
    assert [(r["column"], r["inside_interval"], r["delta"]) for r in rows[:2]] == [
        ("Aa", None, 0.25),
        ("Bb", None, 0.25),
    ]


def test_no_link_or_no_checkpoint_linked_gives_no_rows(references_only) -> None:
    reference_file("paper_x").write_text(PAPER)
    results = [_ours("aa", "base", 0.75, 0.5, 0.875)]
    evaluations = _evaluations({"aa": {"base": "vlrl"}})
    assert versus_rows([], results, evaluations, sft_enabled=True) == []
    links = _links(("paper_x", {"grpo": "r1"}))
    assert versus_rows(links, results, evaluations, sft_enabled=True) == []


POOLED_PAPER = """\
paper: {title: Pooled, url: u}
protocol: {toolkit: t, prompt: p, judge: j, scoring: vlrl}
columns:
  Cc: {benchmark: cc, scale: percent}
  Both: {benchmark: null, pooled: [aa, bb], scale: percent}
  Bb: {benchmark: bb, scale: percent}
rows:
  - {id: r, model: M, source: {table: T, row: M}, values: {Cc: 10.0, Both: 30.0, Bb: 20.0}}
"""

# A pooled column's fields read back: column, checkpoint, benchmark, evaluated, reproduced, its
# interval, the reproduced protocol and whether it is the published one.
POOLED_FIELDS = ("column", "checkpoint", "benchmark", "evaluated", "reproduced", "ci_low",
                 "ci_high", "reproduced_protocol", "same_protocol")  # fmt: skip


def test_a_pooled_column_is_the_checkpoints_combined_row_after_its_last_benchmark(
    references_only,
) -> None:
    """The combined rows' numbers are not what pooling the parts gives here (0.275): the row
    of ``report.combined`` is taken as it is, of the same checkpoint and benchmarks in any
    order, under its name, and sorted after the last of them (bb), before cc."""
    reference_file("pooled_paper").write_text(POOLED_PAPER)
    results = [
        _ours("aa", "base", 0.5, 0.375, 0.625, n=100),
        _ours("bb", "base", 0.2, 0.125, 0.25, n=300),
        _ours("cc", "base", 0.125, 0.0625, 0.25),
        _ours("aa", "grpo", 0.75, 0.625, 0.875, n=100),
        _ours("bb", "grpo", 0.25, 0.125, 0.375, n=300),
        _ours("cc", "grpo", 0.0625, 0.03125, 0.125),
        _ours("ac", "base", 0.875, 0.75, 0.9375, combines="aa+cc"),
        _ours("both", "base", 0.375, 0.25, 0.5, n=400, combines="bb+aa"),
        _ours("both", "grpo", 0.625, 0.5, 0.75, n=400, combines="bb+aa"),
    ]
    evaluations = _evaluations(
        {
            "aa": {"base": "vlrl", "grpo": "vlrl"},
            "bb": {"base": "vlrl", "grpo": "other"},
            "cc": {"base": "vlrl", "grpo": "vlrl"},
        }
    )
    links = _links(("pooled_paper", {"base": "r", "grpo": "r"}))
    rows = versus_rows(links, results, evaluations, sft_enabled=True)
    assert [tuple(r[f] for f in POOLED_FIELDS) for r in rows] == [
        ("Bb", "base", "bb", True, 0.2, 0.125, 0.25, "vlrl", True),
        ("Bb", "grpo", "bb", True, 0.25, 0.125, 0.375, "other", False),
        ("Both", "base", "both", True, 0.375, 0.25, 0.5, "vlrl", True),
        ("Both", "grpo", "both", True, 0.625, 0.5, 0.75, None, None),
        ("Cc", "base", "cc", True, 0.125, 0.0625, 0.25, "vlrl", True),
        ("Cc", "grpo", "cc", True, 0.0625, 0.03125, 0.125, "vlrl", True),
    ]
    both = rows[2]
    assert (both["published"], both["delta"], both["inside_interval"]) == (
        0.3, pytest.approx(0.075), True,
    )  # fmt: skip


def test_a_pooled_column_without_a_combined_row_is_pooled_here_under_its_members_names(
    references_only,
) -> None:
    """aa's 50 of 100 and bb's 60 of 300: 110 of 400, the Wilson interval at the default 95%;
    grpo has no row of bb, so no pooled number."""
    reference_file("pooled_paper").write_text(
        POOLED_PAPER.replace("pooled: [aa, bb]", "pooled: [bb, aa]")
    )
    results = [
        _ours("aa", "base", 0.5, 0.375, 0.625, n=100),
        _ours("bb", "base", 0.2, 0.125, 0.25, n=300),
        _ours("aa", "grpo", 0.75, 0.625, 0.875, n=100),
    ]
    evaluations = _evaluations({"aa": {"base": "vlrl", "grpo": "vlrl"}, "bb": {"base": "vlrl"}})
    links = _links(("pooled_paper", {"base": "r", "grpo": "r"}))
    rows = versus_rows(links, results, evaluations, sft_enabled=True)
    pooled = [r for r in rows if r["column"] == "Both"]
    assert [tuple(r[f] for f in POOLED_FIELDS) for r in pooled] == [
        ("Both", "base", "bb+aa", True, 0.275, pytest.approx(0.233539, abs=1e-6),
         pytest.approx(0.320742, abs=1e-6), "vlrl", True),
        ("Both", "grpo", "bb+aa", True, None, None, None, None, None),
    ]  # fmt: skip
    assert pooled[0]["delta"] == pytest.approx(-0.025) and pooled[0]["inside_interval"] is True
    assert pooled[1]["delta"] is None and pooled[1]["inside_interval"] is None
    assert [(r["column"], r["checkpoint"], r["reproduced"]) for r in rows] == [
        ("Bb", "base", 0.2), ("Bb", "grpo", None), ("Cc", "base", None),
        ("Both", "base", 0.275), ("Cc", "grpo", None), ("Both", "grpo", None),
    ], "bb+aa is no benchmark of the experiment's: with the not evaluated, as linked"  # fmt: skip


def test_a_pooled_column_with_a_benchmark_not_evaluated_is_not_evaluated(references_only) -> None:
    reference_file("pooled_paper").write_text(POOLED_PAPER)
    results = [_ours("aa", "base", 0.5, 0.375, 0.625)]
    links = _links(("pooled_paper", {"base": "r"}))
    rows = versus_rows(links, results, _evaluations({"aa": {"base": "vlrl"}}), True)
    assert [tuple(r[f] for f in POOLED_FIELDS) for r in rows] == [
        ("Cc", "base", "cc", False, None, None, None, None, None),
        ("Both", "base", "aa+bb", False, None, None, None, None, None),
        ("Bb", "base", "bb", False, None, None, None, None, None),
    ]


def test_the_combined_row_is_the_one_of_the_checkpoint_and_the_same_benchmarks() -> None:
    results = [
        _ours("aa", "base", 0.5, 0.4, 0.6),
        _ours("ab", "grpo", 0.1, 0.0, 0.2, combines="aa+bb"),
        _ours("abc", "base", 0.2, 0.1, 0.3, combines="aa+bb+cc"),
        _ours("ac", "base", 0.3, 0.2, 0.4, combines="aa+cc"),
        _ours("ba", "base", 0.4, 0.3, 0.5, combines="bb+aa"),
        _ours("ab", "base", 0.6, 0.5, 0.7, combines="aa+bb"),
    ]
    assert _combined(results, ["aa", "bb"], "base") is results[4], "the first, in any order"
    assert _combined(results, ["bb", "aa"], "grpo") is results[1]
    assert _combined(results, ["cc", "aa"], "base") is results[3]
    assert _combined(results, ["aa", "cc"], "grpo") is None
    assert _combined(results, ["aa"], "base") is None, "a benchmark's own row combines nothing"
    assert _combined([], ["aa", "bb"], "base") is None


def test_summary_columns_add_each_benchmarks_published_metrics_and_combined_numbers() -> None:
    evaluations = [
        SimpleNamespace(bench="aa", config=SimpleNamespace(headline="accuracy")),
        SimpleNamespace(bench="mme", config=SimpleNamespace(headline="accuracy")),
        SimpleNamespace(bench="cc", config=SimpleNamespace(headline="f1")),
    ]
    versus = [
        {"benchmark": "mme", "metric": "perception+cognition", "evaluated": True},
        {"benchmark": "mme", "metric": "perception+cognition", "evaluated": True},
        {"benchmark": "mme", "metric": "accuracy", "evaluated": True},
        {"benchmark": "aa", "metric": "recall", "evaluated": False},
        {"benchmark": "cc", "metric": "precision", "evaluated": True},
        {"benchmark": None, "metric": "accuracy", "evaluated": False},
    ]
    combined = {"y": ["cc", "aa"], "x": ["aa", "mme"]}
    assert summary_columns(evaluations, versus, combined) == [
        ("aa", "accuracy"),
        ("mme", "accuracy"),
        ("mme", "perception+cognition"),
        ("x", "accuracy"),
        ("cc", "f1"),
        ("cc", "precision"),
        ("y", "accuracy"),
    ]
    assert summary_columns(evaluations, versus) == [
        ("aa", "accuracy"),
        ("mme", "accuracy"),
        ("mme", "perception+cognition"),
        ("cc", "f1"),
        ("cc", "precision"),
    ]
    assert summary_columns([], versus, combined) == []
