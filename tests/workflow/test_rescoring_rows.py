"""vlrl.workflow.rescoring: the rows of ``vlrl rescore`` (headlines under both protocols and
the verdicts that changed) and of ``vlrl protocols`` (each protocol and the benchmarks that
support it), on stand-in scores and benchmark configs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.workflow import rescoring


def _scores(bench, checkpoint, protocol, verdicts, value=0.5, n=4, headline="accuracy"):
    return SimpleNamespace(
        benchmark=bench,
        checkpoint=checkpoint,
        protocol=protocol,
        headline=headline,
        metrics={headline: SimpleNamespace(value=value, n=n), "other": None},
        items=[SimpleNamespace(id=i, correct=c) for i, c in verdicts.items()],
    )


def test_a_rate_headline_is_a_percentage_and_a_raw_one_two_decimals() -> None:
    assert rescoring._headline(_scores("b", "c", "p", {}, value=2 / 3, n=3)) == "66.7"
    assert rescoring._headline(_scores("b", "c", "p", {}, value=0.125, n=None)) == "0.12"
    assert rescoring._headline(_scores("b", "c", "p", {}, value=3.456, n=None)) == "3.46"


def test_rescored_files_go_under_the_experiments_results() -> None:
    assert rescoring.rescored_dir("exp", "proto") == Path("results/exp/rescored/proto")


def test_rescore_rows_compare_the_stages_headline_and_count_changed_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = object()
    asked = []

    def rescore(exp, config, protocol, checkpoints, benches):
        asked.append((exp, config, protocol, checkpoints, benches))
        new_a = _scores("mmmu", "grpo", "vlmevalkit", {"1": 1, "2": 0, "3": 1, "4": 1}, 0.75)
        old_a = _scores("mmmu", "grpo", "vlrl", {"1": 1, "2": 1, "3": 1}, 0.25)
        new_b = _scores("mathvista", "base", "vlmevalkit", {"1": 0}, 0.0, headline="score")
        return [(new_a, old_a), (new_b, None)]

    monkeypatch.setattr(rescoring, "load_experiment", lambda name: {"e": cfg}[name])
    monkeypatch.setattr(rescoring.stage, "rescore", rescore)
    rows = rescoring.rescore_rows("e", "vlmevalkit", ["grpo"], ["mmmu"])
    assert asked == [("e", cfg, "vlmevalkit", ["grpo"], ["mmmu"])]
    assert rows == [
        {
            "benchmark": "mmmu",
            "checkpoint": "grpo",
            "metric": "accuracy",
            "stage (protocol)": "25.0 (vlrl)",
            "rescored": "75.0",
            # item 2 flipped, item 4 was not in the stage's file
            "verdicts changed": "2",
        },
        {
            "benchmark": "mathvista",
            "checkpoint": "base",
            "metric": "score",
            "stage (protocol)": "not scored",
            "rescored": "0.0",
            "verdicts changed": "-",
        },
    ]


def test_no_changed_verdict_counts_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    same = {"1": 1, "2": 0}
    pair = (_scores("b", "c", "new", same), _scores("b", "c", "old", same))
    monkeypatch.setattr(rescoring, "load_experiment", lambda name: None)
    monkeypatch.setattr(rescoring.stage, "rescore", lambda *args: [pair])
    assert rescoring.rescore_rows("e", "new", None, None)[0]["verdicts changed"] == "0"


def test_the_protocol_headings() -> None:
    assert rescoring.PROTOCOL_HEADINGS == {
        "protocol": "protocol",
        "judge": "judge",
        "source": "source",
        "benchmarks": "benchmarks (* default)",
    }


@pytest.fixture
def benchmarks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three benchmark files and stand-in configs; the protocols z, a, m and unused."""
    folder = tmp_path / "config" / "benchmarks"
    folder.mkdir(parents=True)
    configs = {
        "bench_b": SimpleNamespace(protocols=["a", "z"], protocol="z"),
        "bench_a": SimpleNamespace(protocols=["a", "m"], protocol="a"),
        "bench_c": SimpleNamespace(protocols=["a"], protocol="a"),
    }
    for name in configs:
        (folder / f"{name}.yaml").write_text("")
    (folder / "notes.txt").write_text("")
    loaded: list[str] = []

    def load(name: str):
        loaded.append(name)
        return configs[name]

    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.setattr(rescoring, "load_benchmark", load)
    monkeypatch.setattr(
        rescoring,
        "PROTOCOLS",
        {
            "z": SimpleNamespace(judge="never", source="Z toolkit"),
            "a": SimpleNamespace(judge="optional", source="A paper"),
            "m": SimpleNamespace(judge="always", source="M grader"),
            "unused": SimpleNamespace(judge="never", source="nobody"),
        },
    )
    return loaded


def test_protocol_rows_list_every_protocol_with_its_benchmarks(benchmarks: list[str]) -> None:
    assert rescoring.protocol_rows() == [
        {
            "protocol": "a",
            "judge": "optional",
            "source": "A paper",
            "benchmarks": "bench_a*, bench_b, bench_c*",
        },
        {"protocol": "m", "judge": "always", "source": "M grader", "benchmarks": "bench_a"},
        {"protocol": "unused", "judge": "never", "source": "nobody", "benchmarks": "-"},
        {"protocol": "z", "judge": "never", "source": "Z toolkit", "benchmarks": "bench_b*"},
    ]
    assert benchmarks == ["bench_a", "bench_b", "bench_c"]


def test_protocol_rows_of_one_benchmark_list_only_its_protocols(benchmarks: list[str]) -> None:
    assert rescoring.protocol_rows("bench_b") == [
        {"protocol": "a", "judge": "optional", "source": "A paper", "benchmarks": "bench_b"},
        {"protocol": "z", "judge": "never", "source": "Z toolkit", "benchmarks": "bench_b*"},
    ]
    assert benchmarks == ["bench_b"]
