"""Two of the report stage's own decisions, in process and in milliseconds: whether an experiment
is compared with the one it extends (vlrl.stages.report.against_parent, the comparison itself a
recorder) and how blind.csv flattens the answer prior's rows (blind_csv). The whole report is
exercised by test_report.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.config import load_experiment
from vlrl.stages import report

EXP = "tiny_shapes"


@pytest.fixture()
def recorded(project: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Recorders for the parent comparison's helpers; ``common`` answers ``shared`` pairs."""
    state: dict = {"calls": [], "shared": [("shapes_test", "base")]}

    def same_data(a, b):
        state["calls"].append(("same_data", a, b))
        return "same-data-answer"

    def common(cfg_a, cfg_b, shared_data):
        state["calls"].append(("common", cfg_a.extends, cfg_b.description, shared_data))
        return state["shared"]

    def compare_rows(a, b, cfg_a, cfg_b, score, seed):
        state["calls"].append(("compare", a, b, cfg_a.extends, cfg_b.description, score, seed))
        return [{"sentence": "better"}]

    monkeypatch.setattr(report.experiments, "same_data", same_data)
    monkeypatch.setattr(report.experiments, "common", common)
    monkeypatch.setattr(report.experiments, "compare_rows", compare_rows)
    return state


def _child():
    cfg = load_experiment(EXP, ["seed=3"])
    return cfg.model_copy(update={"extends": EXP})


def test_an_experiment_without_a_parent_is_compared_with_nothing(recorded: dict) -> None:
    assert report.against_parent(EXP, load_experiment(EXP)) == []
    assert recorded["calls"] == []


def test_a_child_is_compared_with_its_parent_on_what_both_evaluate(recorded: dict) -> None:
    child = _child()
    parent_description = load_experiment(EXP).description
    assert report.against_parent("child", child) == [{"sentence": "better"}]
    assert recorded["calls"] == [
        ("same_data", "child", EXP),
        ("common", EXP, parent_description, "same-data-answer"),
        ("compare", "child", EXP, EXP, parent_description, child.score, 3),
    ]


def test_a_child_with_nothing_in_common_is_not_compared(recorded: dict) -> None:
    recorded["shared"] = []
    assert report.against_parent("child", _child()) == []
    assert [c[0] for c in recorded["calls"]] == ["same_data", "common"]


def test_blind_csv_puts_the_prior_beside_each_comparison_and_gain() -> None:
    rows = [
        {
            "benchmark": "b1",
            "n": 40,
            "accuracy": 0.25,
            "ci_low": 0.1,
            "ci_high": 0.4,
            "by_question": True,
            "by_type": False,
            "comparisons": [{"model": "base", "diff": 0.5}, {"model": "sft", "diff": 0.6}],
            "where_prior_fails": [{"gain": "sft − base", "diff": 0.125}],
        },
        {
            "benchmark": "b2",
            "n": 8,
            "accuracy": 0.5,
            "ci_low": 0.2,
            "ci_high": 0.8,
            "by_question": False,
            "by_type": True,
            "comparisons": [],
            "where_prior_fails": [],
        },
    ]
    prior = {"prior_n": 40, "prior_accuracy": 0.25, "prior_ci_low": 0.1, "prior_ci_high": 0.4}
    basis = {"by_question": True, "by_type": False}
    flat = report.blind_csv(rows)
    assert flat == [
        {
            "benchmark": "b1",
            "kind": "model − prior",
            **prior,
            **basis,
            "model": "base",
            "diff": 0.5,
        },
        {"benchmark": "b1", "kind": "model − prior", **prior, **basis, "model": "sft", "diff": 0.6},
        {
            "benchmark": "b1",
            "kind": "gain where the prior is wrong",
            **prior,
            **basis,
            "gain": "sft − base",
            "diff": 0.125,
        },
    ]
    assert list(flat[0]) == [
        "benchmark",
        "kind",
        "prior_n",
        "prior_accuracy",
        "prior_ci_low",
        "prior_ci_high",
        "by_question",
        "by_type",
        "model",
        "diff",
    ]
