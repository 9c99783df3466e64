"""vlrl.reporting.published and .versus: the reference files validate, a bad one names its file
and key, published numbers stand beside reproduced ones on the same scale, and a number scored
under another protocol, or of another subset, is never set beside ours as a plain comparison."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.config import ConfigProblems, ReportConfig
from vlrl.reporting import tables
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.published import (
    link_problems,
    load_reference,
    reference_file,
    reference_problems,
    references,
)
from vlrl.reporting.versus import COLUMNS, summary_columns, versus_rows
from vlrl.scoring import protocols

# The scoring protocols the shipped files name; vlrl.scoring.protocols registers them.
SHIPPED_SCORING = {"vlmevalkit_2505", "vlm_r1_rec", "vlm_r1_ovd", "vision_sr1"}


def test_the_shipped_references_name_registered_scoring_protocols():
    named = {
        protocol.scoring
        for name in references()
        for _, protocol in load_reference(name).protocols()
        if protocol.scoring
    }
    assert named == SHIPPED_SCORING
    assert named <= set(protocols.PROTOCOLS), sorted(named - set(protocols.PROTOCOLS))


def test_the_shipped_references_are_valid_and_hold_the_papers_numbers():
    assert references() == [
        "qwen2_5_vl", "satori_r1", "sophiavl_r1", "vision_sr1", "vlm_r1", "vlm_r1_math",
        "vlm_r1_ovd",
    ]  # fmt: skip
    for name in references():
        assert reference_problems(name) == [], name
    vlm_r1 = load_reference("vlm_r1")
    assert vlm_r1.row("rl_step600").values["RefCOCO val"] == 90.55
    assert vlm_r1.row("qwen2_5_vl_3b").values["LISA-Grounding test"] == 56.51
    assert vlm_r1.columns["LISA-Grounding test"].benchmark == "lisa_grounding"
    sophia = load_reference("sophiavl_r1")
    assert sophia.columns["MME"].metrics == ["perception", "cognition"]
    assert sophia.columns["MME"].scale == "raw"
    assert sophia.row("sophiavl_r1_7b").values["MME"] == 2403.8
    assert sophia.protocol_of(sophia.row("sophiavl_r1_7b")).toolkit == "VLMEvalKit"
    satori = load_reference("satori_r1")
    assert satori.protocol_of(satori.row("satori_3b")).toolkit.startswith("VLMEvalKit")
    assert satori.protocol_of(satori.row("qwen2_5_vl_3b")).judge == "not stated"
    # VLM-R1's README math-leaderboard image at e849858, read row by row
    math = load_reference("vlm_r1_math")
    assert math.row("vlm_r1_3b_math_0305").values == {
        "Avg. Score": 33.4, "MathVista": 62.7, "MathVision": 21.9, "MathVerse": 32.2,
        "DynaMath": 13, "WeMath": 30, "LogicVista": 40.5,
    }  # fmt: skip
    assert math.row("qwen2_5_vl_3b").values["WeMath"] == 22.9
    assert math.columns["MathVerse"].metric == "vision_only"


def test_each_paper_states_the_scoring_protocol_of_its_numbers():
    scoring = {
        name: {load_reference(name).protocol_of(r).scoring for r in load_reference(name).rows}
        for name in references()
    }
    assert scoring["sophiavl_r1"] == {"vlmevalkit_2505"}
    assert scoring["vision_sr1"] == {"vision_sr1"}
    assert scoring["qwen2_5_vl"] == {None}, "the README does not say: unknown"
    assert scoring["vlm_r1_math"] == {None}, "the leaderboard's VLMEvalKit of March 2025"
    satori = load_reference("satori_r1")
    assert satori.protocol_of(satori.row("satori_3b")).scoring == "vlmevalkit_2505"
    assert satori.protocol_of(satori.row("qwen2_5_vl_3b")).scoring is None, "not stated"
    vlm_r1 = load_reference("vlm_r1")
    assert vlm_r1.protocol_of(vlm_r1.row("rl_step600")).scoring == "vlm_r1_rec"
    assert vlm_r1.protocol_of(vlm_r1.row("sft_step100")).scoring is None, "another script"


def test_satori_olympiadbench_of_all_ten_subsets_is_not_comparable():
    satori = load_reference("satori_r1")
    marked = {r.id for r in satori.rows if "OlympiadBench" in r.not_comparable}
    assert marked == {"qwen2_5_vl_3b", "satori_3b_no_thinking", "satori_3b", "internvl3_2b"}
    assert "all ten" in satori.row("satori_3b").not_comparable["OlympiadBench"]
    assert not satori.row("satori_7b").not_comparable, "the 7B rows are on vlrl's subset"


SR1_COLUMNS = [
    "MMMU-Pro", "MMMU", "RealWorldQA", "VisNumBench", "MathVerse", "MATH-Vision",
    "HallusionBench",
]  # fmt: skip


def test_vision_sr1_holds_table_2_and_its_averages_agree():
    sr1 = load_reference("vision_sr1")
    assert list(sr1.columns) == [*SR1_COLUMNS, "Avg."]
    assert sr1.paper.arxiv == "2508.19652v2"
    assert sr1.row("vision_sr1_7b").values["MMMU-Pro"] == 40.7
    assert sr1.row("vision_sr1_7b").values["MMMU"] == 52.2, "the text: 40.7 MMMU-Pro, 52.2 MMMU"
    assert sr1.row("vision_r1_47k_7b").values["VisNumBench"] == 43, "printed without decimals"
    assert sr1.row("ablation_no_self_reward_7b").source.table == "Table 6"
    # A transcription check: each row's Avg. is the mean of its seven numbers, to 0.1.
    for row in sr1.rows:
        mean = sum(row.values[c] for c in SR1_COLUMNS) / len(SR1_COLUMNS)
        assert abs(mean - row.values["Avg."]) < 0.1, row.id
    benchmarks = {label: c.benchmark for label, c in sr1.columns.items()}
    # MMMU-Pro: the item-weighted mean of three configurations (weighted_mmmu_pro)
    assert sr1.columns["MMMU-Pro"].pooled == [
        "mmmu_pro_standard4", "mmmu_pro_standard10", "mmmu_pro_vision",
    ]  # fmt: skip
    assert benchmarks == {
        "MMMU-Pro": None,
        "MMMU": "mmmu_val",
        "RealWorldQA": "realworldqa",
        "VisNumBench": "visnumbench",
        "MathVerse": "mathverse_testmini",
        "MATH-Vision": "mathvision_test",
        "HallusionBench": "hallusionbench",
        "Avg.": None,
    }
    assert "weighted" in sr1.columns["MMMU-Pro"].differs
    assert "standard (4 options)" in sr1.columns["MMMU-Pro"].differs


def test_a_bad_file_names_the_file_and_the_key(project):
    path = reference_file("bad")
    path.write_text(
        "paper: {title: T, url: u}\n"
        "columns: {A: {benchmark: shapes_test, scale: percents}}\n"
        "rows: [{id: r, model: M, source: {table: T1, row: M}, values: {A: 1}, color: red}]\n"
    )
    with pytest.raises(ConfigProblems) as info:
        load_reference("bad")
    assert info.value.problems == [
        f"{path}: columns.A.scale: Input should be 'percent', 'fraction' or 'raw' (got 'percents')",
        f"{path}: rows.0.color: Extra inputs are not permitted (got 'red')",
    ]
    assert reference_problems("bad") == info.value.problems
    assert reference_problems("absent")[0].startswith(f"{reference_file('absent')}: no such")


def test_links_name_the_missing_reference_or_row(project):
    links = ReportConfig.model_validate(
        {
            "published": [
                {"reference": "vlm_r1", "rows": {"grpo": "rl_step9"}},
                {"reference": "nope", "rows": {"base": "x"}},
            ]
        }
    ).published
    problems = link_problems(links, "e.yaml")
    assert problems[0].startswith("e.yaml: report.published.0.rows.grpo: no row 'rl_step9' in ")
    assert problems[1].startswith("e.yaml: report.published.1.reference: 'nope' has no file")


def test_a_sum_of_metrics_on_the_raw_scale_is_compared_without_an_interval(project):
    reference_file("mme_paper").write_text(
        "paper: {title: P, url: u}\n"
        "protocol: {toolkit: VLMEvalKit, prompt: not stated, judge: not stated}\n"
        "columns:\n"
        "  MME: {benchmark: mme, metric: [perception, cognition], scale: raw}\n"
        "  Acc: {benchmark: mme, scale: percent}\n"
        "rows: [{id: m, model: M-7B, source: {table: T1, row: M-7B},"
        " values: {MME: 2306.0, Acc: 80.0}}]\n"
    )
    assert reference_problems("mme_paper") == []
    results = [
        {
            "benchmark": "mme",
            "checkpoint": "base",
            "model": "base",
            "accuracy": 0.79,
            "ci_low": 0.77,
            "ci_high": 0.81,
            "metric.perception": 1500.5,
            "metric.perception.ci_low": None,
            "metric.perception.ci_high": None,
            "metric.cognition": 600.25,
            "metric.cognition.ci_low": None,
            "metric.cognition.ci_high": None,
        },
    ]
    links = ReportConfig.model_validate(
        {"published": [{"reference": "mme_paper", "rows": {"base": "m", "grpo": "m"}}]}
    ).published
    ev = Evaluation("mme", load_benchmark("mme"), {})
    rows = versus_rows(links, results, [ev], sft_enabled=True)
    assert len(rows) == 2, "grpo is not evaluated: its link is left out"
    mme, acc = rows
    assert list(mme) == COLUMNS
    assert (mme["metric"], mme["reproduced"], mme["published"]) == (
        "perception+cognition",
        2100.75,
        2306.0,
    )
    assert mme["delta"] == pytest.approx(-205.25) and mme["inside_interval"] is None
    assert acc["published"] == pytest.approx(0.8) and acc["inside_interval"] is True
    assert summary_columns([ev], rows) == [("mme", "accuracy"), ("mme", "perception+cognition")]


def test_a_scoring_name_that_is_no_protocol_names_the_file_and_key(project):
    path = reference_file("odd")
    path.write_text(
        "paper: {title: T, url: u}\n"
        "protocol: {toolkit: t, prompt: p, judge: j, scoring: vlmevalkit_1999}\n"
        "columns: {A: {benchmark: shapes_test, scale: percent}}\n"
        "rows:\n"
        "  - {id: r, model: M, source: {table: T1, row: M}, values: {A: 1}}\n"
        "  - {id: s, model: N, source: {table: T1, row: N}, values: {A: 2},\n"
        "     protocol: {toolkit: t, prompt: p, judge: j, scoring: vlrl}}\n"
    )
    assert reference_problems("odd") == [
        f"{path}: protocol.scoring: 'vlmevalkit_1999' is not a scoring protocol; "
        f"known: {sorted(protocols.PROTOCOLS)}"
    ]


def test_not_comparable_names_a_column_the_row_has_a_number_in(project):
    path = reference_file("bad")
    path.write_text(
        "paper: {title: T, url: u}\n"
        "protocol: {toolkit: t, prompt: p, judge: j}\n"
        "columns: {A: {benchmark: shapes_test, scale: percent}, B: {benchmark: null, scale: raw}}\n"
        "rows: [{id: r, model: M, source: {table: T1, row: M}, values: {A: 1, B: null},\n"
        "        not_comparable: {B: other split, C: other split}}]\n"
    )
    with pytest.raises(ConfigProblems) as info:
        load_reference("bad")
    assert info.value.problems == [
        f"{path}: rows.0.not_comparable.B: the row has no number there",
        f"{path}: rows.0.not_comparable.C: not a column; known: ['A', 'B']",
    ]


MARKED = """\
paper: {title: P, url: u}
protocol: {toolkit: VLMEvalKit, prompt: not stated, judge: not stated, scoring: vlmevalkit_2505}
columns:
  Shapes: {benchmark: shapes_test, scale: percent}
rows:
  - {id: same, model: M-same, source: {table: T1, row: M}, values: {Shapes: 50.0},
     protocol: {toolkit: vlrl, prompt: p, judge: none, scoring: vlrl}}
  - {id: other, model: M-other, source: {table: T1, row: M}, values: {Shapes: 50.0}}
  - {id: unknown, model: M-unknown, source: {table: T1, row: M}, values: {Shapes: 50.0},
     protocol: {toolkit: not stated, prompt: not stated, judge: not stated}}
  - {id: subset, model: M-subset, source: {table: T1, row: M}, values: {Shapes: 50.0},
     protocol: {toolkit: vlrl, prompt: p, judge: none, scoring: vlrl},
     not_comparable: {Shapes: all ten subsets}}
"""


def _marked_rows(row_id: str) -> tuple[dict, list[Evaluation]]:
    results = [
        {"benchmark": "shapes_test", "checkpoint": "base", "model": "base", "accuracy": 0.52,
         "ci_low": 0.45, "ci_high": 0.59},
    ]  # fmt: skip
    links = ReportConfig.model_validate(
        {"published": [{"reference": "marked", "rows": {"base": row_id}}]}
    ).published
    scores = {"base": SimpleNamespace(protocol="vlrl")}
    evaluations = [Evaluation("shapes_test", load_benchmark("shapes_test"), scores)]
    (row,) = versus_rows(links, results, evaluations, sft_enabled=True)
    return row, evaluations


def test_a_difference_across_protocols_or_subsets_is_marked_not_plain(project):
    reference_file("marked").write_text(MARKED)
    same, _ = _marked_rows("same")
    assert (same["published_protocol"], same["reproduced_protocol"]) == ("vlrl", "vlrl")
    assert same["same_protocol"] is True and same["delta"] == pytest.approx(0.02)
    other, _ = _marked_rows("other")
    assert other["published_protocol"] == "vlmevalkit_2505" and other["same_protocol"] is False
    assert other["delta"] == pytest.approx(0.02), "the number is kept in published.csv"
    unknown, _ = _marked_rows("unknown")
    assert unknown["published_protocol"] is None and unknown["same_protocol"] is False
    subset, evaluations = _marked_rows("subset")
    assert subset["not_comparable"] == "all ten subsets"
    assert subset["reproduced"] == 0.52, "ours is still shown"
    assert subset["delta"] is None and subset["inside_interval"] is None

    table = tables.versus_table([same, other, unknown, subset], 0.95)
    delta = table["Δ (ours − published)"].tolist()
    assert delta == ["+2.0", "(+2.0) ≠ protocol", "(+2.0) ≠ protocol", "not compared"]
    assert table["published inside our CI"].tolist()[:2] == ["yes", "(yes) ≠ protocol"]
    assert table["scoring protocol"].tolist() == [
        "= vlrl",
        "≠: published vlmevalkit_2505, ours vlrl",
        "≠: published unknown, ours vlrl",
        "= vlrl",
    ]
    assert table["differs from ours"].tolist()[3] == "not comparable: all ten subsets"

    results = [{"benchmark": "shapes_test", "checkpoint": "base", "model": "base",
                "accuracy": 0.52, "ci_low": 0.45, "ci_high": 0.59, "judge": None}]  # fmt: skip
    summary = tables.summary_table(
        results, [other, subset], evaluations, [("shapes_test", "accuracy")]
    )
    assert summary["shapes_test accuracy"].tolist() == ["52.0", "50.0", "50.0 (not comparable)"]
    assert summary["scoring protocol"].tolist() == ["vlrl", "vlmevalkit_2505", "vlrl"]


POOLED = """\
paper: {title: P, url: u}
protocol: {toolkit: t, prompt: p, judge: j, scoring: vlrl}
columns:
  Both: {benchmark: null, pooled: [shapes_test, shapes_test_blank], scale: percent}
rows:
  - {id: r, model: M, source: {table: T1, row: M}, values: {Both: 30.0}}
"""


def test_a_pooled_column_is_the_item_weighted_accuracy(project):
    """Vision-SR1's MMMU-Pro: the settings' accuracies weighted by their item counts."""
    reference_file("pooled").write_text(POOLED)
    assert reference_problems("pooled") == []
    results = [
        {"benchmark": "shapes_test", "checkpoint": "base", "model": "base", "n": 100,
         "accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        {"benchmark": "shapes_test_blank", "checkpoint": "base", "model": "base", "n": 300,
         "accuracy": 0.2, "ci_low": 0.15, "ci_high": 0.25},
    ]  # fmt: skip
    links = ReportConfig.model_validate(
        {"published": [{"reference": "pooled", "rows": {"base": "r"}}]}
    ).published
    scores = {"base": SimpleNamespace(protocol="vlrl")}
    evaluations = [
        Evaluation(b, load_benchmark(b), scores) for b in ("shapes_test", "shapes_test_blank")
    ]
    (row,) = versus_rows(links, results, evaluations, sft_enabled=True, confidence=0.95)
    assert row["benchmark"] == "shapes_test+shapes_test_blank" and row["evaluated"]
    assert row["reproduced"] == pytest.approx(110 / 400)  # not the plain mean, 0.35
    assert row["ci_low"] < 110 / 400 < row["ci_high"]
    assert row["delta"] == pytest.approx(110 / 400 - 0.30)
    assert row["same_protocol"] is True
    # one of them not evaluated: the column is not evaluated
    (alone,) = versus_rows(links, results[:1], evaluations[:1], sft_enabled=True)
    assert not alone["evaluated"] and alone["reproduced"] is None


def test_a_pooled_column_names_its_unknown_benchmarks(project):
    path = reference_file("pooled_bad")
    path.write_text(POOLED.replace("shapes_test_blank]", "no_such_bench]"))
    assert reference_problems("pooled_bad") == [
        f"{path}: columns.Both.pooled.1: 'no_such_bench' has no file "
        "config/benchmarks/no_such_bench.yaml"
    ]
    path.write_text(POOLED.replace("benchmark: null,", "benchmark: shapes_test,"))
    with pytest.raises(ConfigProblems) as info:
        load_reference("pooled_bad")
    assert "pools accuracies: set benchmark null, metric accuracy" in str(info.value.problems)
