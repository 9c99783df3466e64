"""vlrl.reporting.published and .versus: the reference files validate, a bad one names its file
and key, and published numbers stand beside reproduced ones on the same scale."""

from __future__ import annotations

import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.config import ConfigProblems, ReportConfig
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.published import (
    link_problems,
    load_reference,
    reference_file,
    reference_problems,
    references,
)
from vlrl.reporting.versus import COLUMNS, summary_columns, versus_rows


def test_the_shipped_references_are_valid_and_hold_the_papers_numbers():
    assert references() == ["qwen2_5_vl", "satori_r1", "sophiavl_r1", "vlm_r1"]
    for name in references():
        assert reference_problems(name) == [], name
    vlm_r1 = load_reference("vlm_r1")
    assert vlm_r1.row("rl_step600").values["RefCOCO val"] == 90.55
    assert vlm_r1.row("qwen2_5_vl_3b").values["LISA-Grounding test"] == 56.51
    assert vlm_r1.columns["LISA-Grounding test"].benchmark is None, "not evaluated here"
    sophia = load_reference("sophiavl_r1")
    assert sophia.columns["MME"].metrics == ["perception", "cognition"]
    assert sophia.columns["MME"].scale == "raw"
    assert sophia.row("sophiavl_r1_7b").values["MME"] == 2403.8
    assert sophia.protocol_of(sophia.row("sophiavl_r1_7b")).toolkit == "VLMEvalKit"
    satori = load_reference("satori_r1")
    assert satori.protocol_of(satori.row("satori_3b")).toolkit.startswith("VLMEvalKit")
    assert satori.protocol_of(satori.row("qwen2_5_vl_3b")).judge == "not stated"


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
