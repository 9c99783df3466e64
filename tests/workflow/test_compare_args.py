"""vlrl.workflow.compare: ``vlrl compare A B`` pairs A with B at A's score settings and seed,
and shows the cells at A's confidence."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vlrl.reporting import experiments
from vlrl.workflow import compare

CONFIGS = {
    "a": SimpleNamespace(name="a", score=SimpleNamespace(confidence=0.9), seed=11),
    "b": SimpleNamespace(name="b", score=SimpleNamespace(confidence=0.5), seed=22),
}


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []

    def load(name: str):
        names.append(name)
        return CONFIGS[name]

    monkeypatch.setattr(compare, "load_experiment", load)
    return names


def test_compare_pairs_a_with_b_at_as_score_and_seed(
    monkeypatch: pytest.MonkeyPatch, loaded: list[str]
) -> None:
    calls = []

    def compare_rows(*args):
        calls.append(args)
        return [{"row": 1}]

    monkeypatch.setattr(experiments, "compare_rows", compare_rows)
    assert compare.compare("a", "b") == [{"row": 1}]
    assert loaded == ["a", "b"]
    assert calls == [("a", "b", CONFIGS["a"], CONFIGS["b"], CONFIGS["a"].score, 11)]


def test_display_uses_as_confidence(monkeypatch: pytest.MonkeyPatch, loaded: list[str]) -> None:
    calls = []

    def cells(rows, confidence):
        calls.append((rows, confidence))
        return [{"cell": "x"}]

    monkeypatch.setattr(experiments, "cells", cells)
    rows = [{"row": 1}]
    assert compare.display("a", rows) == [{"cell": "x"}]
    assert loaded == ["a"]
    assert calls == [(rows, 0.9)]
