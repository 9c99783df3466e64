"""vlrl.reporting.published: what `vlrl check` says of a reference file's columns and of an
experiment's links to it, one message per problem, naming the file and the key."""

from __future__ import annotations

import pytest

from vlrl.config import ReportConfig
from vlrl.reporting.published import (
    link_problems,
    load_reference,
    reference_file,
    reference_problems,
    references,
)

HEAD = "paper: {title: T, url: u}\nprotocol: {toolkit: t, prompt: p, judge: j}\n"
ROW = "rows: [{id: r, model: M, source: {table: T1, row: M}, values: {A: 1}}]\n"


def write(name: str, columns: str, rows: str = ROW, head: str = HEAD):
    path = reference_file(name)
    path.write_text(head + f"columns: {{{columns}}}\n" + rows)
    return path


@pytest.mark.parametrize(
    "column, problem",
    [
        ("{benchmark: mme, metric: perception, scale: raw}", None),
        ("{benchmark: mme, metric: [perception, cognition], scale: raw}", None),
        ("{benchmark: mme, scale: percent}", None),
        (
            "{benchmark: mme, metric: perception, scale: percent}",
            "columns.A.scale: 'percent' does not fit mme's perception (raw is for scores on the "
            "benchmark's own scale, such as MME's)",
        ),
        (
            "{benchmark: mme, scale: raw}",
            "columns.A.scale: 'raw' does not fit mme's accuracy (raw is for scores on the "
            "benchmark's own scale, such as MME's)",
        ),
        (
            "{benchmark: mme, metric: [perception, speed], scale: raw}",
            "columns.A.metric: 'speed' is not a metric of mme; known: "
            "['accuracy', 'acc_plus', 'perception', 'cognition']",
        ),
        ("{benchmark: null, scale: raw}", None),
    ],
)
def test_a_columns_metric_and_scale_fit_its_benchmark(project, column, problem) -> None:
    path = write("cols", f"A: {column}")
    assert reference_problems("cols") == ([f"{path}: {problem}"] if problem else [])


def test_a_column_of_an_invalid_benchmark_file_says_so_once(project) -> None:
    (project / "config/benchmarks/broken.yaml").write_text("loader: [not, a, loader]\n")
    path = write("cols", "A: {benchmark: broken, scale: percent}")
    assert reference_problems("cols") == [
        f"{path}: columns.A.benchmark: config/benchmarks/broken.yaml is invalid"
    ]


def test_every_column_and_pooled_benchmark_is_checked(project) -> None:
    path = write(
        "cols",
        "A: {benchmark: nope1, scale: percent}, "
        "B: {benchmark: null, pooled: [shapes_test, nope2, nope3], scale: percent}",
    )
    assert reference_problems("cols") == [
        f"{path}: columns.A.benchmark: 'nope1' has no file config/benchmarks/nope1.yaml",
        f"{path}: columns.B.pooled.1: 'nope2' has no file config/benchmarks/nope2.yaml",
        f"{path}: columns.B.pooled.2: 'nope3' has no file config/benchmarks/nope3.yaml",
    ]


def test_a_rows_own_scoring_protocol_is_checked_too(project) -> None:
    rows = (
        "rows:\n"
        "  - {id: r, model: M, source: {table: T1, row: M}, values: {A: 1}}\n"
        "  - {id: s, model: N, source: {table: T1, row: N}, values: {A: 2},\n"
        "     protocol: {toolkit: t, prompt: p, judge: j, scoring: made_up}}\n"
    )
    path = write("rowproto", "A: {benchmark: shapes_test, scale: percent}", rows)
    (problem,) = reference_problems("rowproto")
    assert problem.startswith(
        f"{path}: rows.1.protocol.scoring: 'made_up' is not a scoring protocol; known: ["
    )
    ref = load_reference("rowproto")
    assert [key for key, _ in ref.protocols()] == ["protocol", "rows.1.protocol"]
    assert ref.row("s").model == "N"
    with pytest.raises(KeyError) as error:
        ref.row("t")
    assert error.value.args == ("t",)


def test_a_file_without_a_protocol_of_its_own_lists_only_its_rows(project) -> None:
    rows = (
        "rows: [{id: r, model: M, source: {table: T1, row: M}, values: {A: 1},\n"
        "        protocol: {toolkit: t, prompt: p, judge: j, scoring: vlrl}}]\n"
    )
    write(
        "own", "A: {benchmark: shapes_test, scale: percent}", rows, head=HEAD.split("\n")[0] + "\n"
    )
    assert [key for key, _ in load_reference("own").protocols()] == ["rows.0.protocol"]
    assert reference_problems("own") == []


def test_a_missing_reference_is_named_as_one(project) -> None:
    path = reference_file("absent")
    (problem,) = reference_problems("absent")
    assert problem.startswith(f"{path}: no such reference 'absent'")


def test_a_file_that_is_not_a_mapping_is_one_problem(project) -> None:
    reference_file("list").write_text("- a\n- b\n")
    (problem,) = reference_problems("list")
    assert problem.startswith(str(reference_file("list")))


def links(*published: dict):
    return ReportConfig.model_validate({"published": list(published)}).published


def test_each_link_is_checked_past_a_missing_or_invalid_reference(project) -> None:
    write("good", "A: {benchmark: shapes_test, scale: percent}")
    reference_file("invalid").write_text("paper: {title: T}\n")
    problems = link_problems(
        links(
            {"reference": "nope", "rows": {"base": "x"}},
            {"reference": "invalid", "rows": {"base": "x"}},
            {"reference": "good", "rows": {"base": "r", "sft": "q", "grpo": "z"}},
        ),
        "exp.yaml",
    )
    assert problems == [
        "exp.yaml: report.published.0.reference: 'nope' has no file "
        f"config/reference/nope.yaml; known: {references()}",
        f"exp.yaml: report.published.1.reference: {reference_file('invalid')} is invalid",
        "exp.yaml: report.published.2.rows.sft: no row 'q' in config/reference/good.yaml; "
        "known: ['r']",
        "exp.yaml: report.published.2.rows.grpo: no row 'z' in config/reference/good.yaml; "
        "known: ['r']",
    ]
    assert "good" in references() and "invalid" in references()
    assert link_problems(links({"reference": "good", "rows": {"base": "r"}}), "e.yaml") == []
