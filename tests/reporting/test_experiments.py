"""vlrl.reporting.experiments: two experiments paired on what both evaluate on the same items
(a child and its parent here: tiny_shapes_grpo_lr shares tiny_shapes' data, base and SFT)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as C

import pytest

from vlrl import sharing
from vlrl.config import load_experiment
from vlrl.core.errors import StageError
from vlrl.reporting.experiments import (
    COLUMNS,
    cells,
    common,
    compare_rows,
    parent_pairs,
    parent_table,
    same_data,
    sentence,
)

CHILD, PARENT = "tiny_shapes_grpo_lr", "tiny_shapes"
SCORE = C(confidence=0.95, bootstrap_resamples=200)


def test_common_pairs_shared_benchmarks_and_checkpoints_in_a_s_order() -> None:
    a = C(
        benchmarks=["mmmu_val", "mathvista_testmini", "shapes_test"], checkpoints=["base", "grpo"]
    )
    b = C(benchmarks=["shapes_test", "mmmu_val"], checkpoints=["grpo", "sft", "base"])
    assert common(a, b) == [
        ("mmmu_val", "base"),
        ("mmmu_val", "grpo"),
        ("shapes_test", "base"),
        ("shapes_test", "grpo"),
    ]
    # a benchmark with fixed items stays comparable across different data; a split does not
    assert common(a, b, same_data=False) == [("mmmu_val", "base"), ("mmmu_val", "grpo")]


def verdicts(correct: list[int | None]) -> list[dict]:
    return [
        {"id": f"i{k}", "task": "count", "problem_type": "numerical", "extracted": "1",
         "correct": c, "score": None if c is None else float(c), "method": "rule"}
        for k, c in enumerate(correct)
    ]  # fmt: skip


def write_scores(exp: str, checkpoint: str, correct: list[int | None]) -> Path:
    path = sharing.scores_file(exp, checkpoint, "shapes_test")
    path.parent.mkdir(parents=True, exist_ok=True)
    scored = [c for c in correct if c is not None]
    path.write_text(
        json.dumps(
            {
                "experiment": exp, "checkpoint": checkpoint, "benchmark": "shapes_test",
                "n": len(scored), "accuracy": sum(scored) / len(scored), "ci_low": 0.0,
                "ci_high": 1.0, "per_task": {}, "headline": "accuracy", "metrics": {},
                "confidence": 0.95, "generation_failures": 0,
                "unscored": len(correct) - len(scored),
                "judge": None, "items": verdicts(correct),
            }
        )
    )  # fmt: skip
    return path


@pytest.fixture
def configs(project):
    child, parent = load_experiment(CHILD), load_experiment(PARENT)
    # one benchmark: shapes_test_blank would need its own files
    child = child.model_copy(update={"benchmarks": ["shapes_test"]})
    parent = parent.model_copy(update={"benchmarks": ["shapes_test"]})
    return child, parent


def test_a_child_shares_its_parents_data_and_pairs_every_checkpoint(configs) -> None:
    child, parent = configs
    assert same_data(CHILD, PARENT) and same_data(PARENT, PARENT)
    pairs = parent_pairs(CHILD, child, parent)
    assert [(b, c) for b, c, _, _ in pairs] == [
        ("shapes_test", "base"),
        ("shapes_test", "sft"),
        ("shapes_test", "grpo"),
    ]
    files = {c: (mine.as_posix(), theirs.as_posix()) for _, c, mine, theirs in pairs}
    assert files["sft"] == ("results/tiny_shapes/scores/sft/shapes_test.json",) * 2
    assert files["grpo"] == (
        "results/tiny_shapes_grpo_lr/scores/grpo/shapes_test.json",
        "results/tiny_shapes/scores/grpo/shapes_test.json",
    )


def test_compare_rows_pairs_what_differs_and_marks_what_is_shared(configs) -> None:
    child, parent = configs
    write_scores(PARENT, "base", [0, 0, 1, 0, None, 0])
    write_scores(PARENT, "sft", [0, 1, 1, 0, 1, 0])
    write_scores(PARENT, "grpo", [0, 1, 1, 1, 1, 0])
    write_scores(CHILD, "grpo", [1, 1, 1, 1, 1, None])
    rows = compare_rows(CHILD, PARENT, child, parent, SCORE, seed=0)
    assert [list(r) for r in rows] == [COLUMNS] * 3
    base, sft, grpo = rows
    assert (base["shared"], sft["shared"], grpo["shared"]) == (True, True, False)
    assert base["n"] is None and base["diff"] is None
    assert base["sentence"] == (
        "tiny_shapes_grpo_lr's base on shapes_test is tiny_shapes's own (one shared output): "
        "the same answers"
    )
    assert sft["model"] == "SFT" and grpo["model"] == "SFT+GRPO"
    assert (grpo["a"], grpo["b"], grpo["checkpoint"]) == (CHILD, PARENT, "grpo")
    # the items both scored: five of six (the child left one unscored)
    assert (grpo["n"], grpo["excluded"], grpo["a_only"], grpo["b_only"]) == (5, 1, 1, 0)
    assert grpo["diff"] == pytest.approx(0.2)
    assert grpo["file_a"] == "results/tiny_shapes_grpo_lr/scores/grpo/shapes_test.json"
    assert grpo["sentence"].startswith(
        "tiny_shapes_grpo_lr's SFT+GRPO is 20.0 points better than tiny_shapes's on shapes_test"
    )


def test_a_missing_scores_file_names_itself_and_the_command_that_makes_it(configs) -> None:
    child, parent = configs
    write_scores(PARENT, "base", [0, 1])
    write_scores(PARENT, "sft", [0, 1])
    write_scores(PARENT, "grpo", [0, 1])
    with pytest.raises(StageError) as error:
        compare_rows(CHILD, PARENT, child, parent, SCORE, seed=0)
    assert str(error.value) == (
        "results/tiny_shapes_grpo_lr/scores/grpo/shapes_test.json does not exist: "
        "tiny_shapes_grpo_lr has not scored grpo on shapes_test; run `vlrl score "
        "tiny_shapes_grpo_lr grpo shapes_test` (or `dvc repro` with tiny_shapes_grpo_lr in "
        "params.yaml's experiments)"
    )


def test_experiments_with_nothing_in_common_are_an_error(configs) -> None:
    child, parent = configs
    other = parent.model_copy(update={"benchmarks": ["mmmu_val"]})
    with pytest.raises(StageError, match="nothing to compare") as error:
        compare_rows(CHILD, PARENT, child, other, SCORE, seed=0)
    assert "tiny_shapes: ['mmmu_val'] × ['base', 'sft', 'grpo']" in str(error.value)
    assert "tiny_shapes_grpo_lr: ['shapes_test'] ×" in str(error.value)


ROW = {"a": "A1", "b": "B1", "model": "SFT", "benchmark": "b", "shared": False, "diff": 0.0,
       "ci_low": 0.0, "ci_high": 0.02, "accuracy_a": 0.5, "accuracy_b": 0.5,
       "p_mcnemar": 1.0, "n": 40}  # fmt: skip


def test_a_tie_is_better_by_zero_and_an_interval_touching_zero_is_indistinguishable() -> None:
    assert sentence(ROW, 0.9) == (
        "A1's SFT is 0.0 points better than B1's on b, not distinguishable from zero "
        "(50.0% vs 50.0%, paired 90% interval [+0.0, +2.0], McNemar p = 1.000, n = 40)"
    )
    row = {**ROW, "diff": 0.03, "ci_low": 0.01, "ci_high": 0.05}
    assert ", not distinguishable" not in sentence(row, 0.9)
    row = {**ROW, "diff": -0.01, "ci_low": -0.02, "ci_high": 0.0}
    assert sentence(row, 0.9).startswith("A1's SFT is 1.0 points worse than B1's on b, not")


def test_cells_head_the_columns_and_dash_a_shared_checkpoint() -> None:
    shared = {**ROW, "shared": True, "model": "base"}
    table = cells([ROW, shared], 0.9, "mine", "theirs")
    assert table == [
        {"benchmark": "b", "model": "SFT", "mine": "50.0", "theirs": "50.0",
         "mine − theirs (pts)": "+0.0", "90% CI (paired bootstrap)": "[+0.0, +2.0]",
         "McNemar p": "1.000", "n paired": "40"},
        {"benchmark": "b", "model": "base", "mine": "shared", "theirs": "shared",
         "mine − theirs (pts)": "–", "90% CI (paired bootstrap)": "–", "McNemar p": "–",
         "n paired": "–"},
    ]  # fmt: skip
    assert list(cells([ROW], 0.95)[0])[2:5] == ["A", "B", "A − B (pts)"]
    assert list(parent_table([ROW], 0.95).columns)[2:5] == [
        "child",
        "parent",
        "child − parent (pts)",
    ]


OTHER_DATA = "tiny_shapes_other_data"


@pytest.fixture
def other_data(project):
    """A child of tiny_shapes drawing its own shapes (another seed): its shapes_test items are
    not its parent's."""
    (project / "config" / "experiments" / f"{OTHER_DATA}.yaml").write_text(
        "extends: tiny_shapes\ndata: {shapes: {n_test: 30}}\n"
    )
    child, parent = load_experiment(OTHER_DATA), load_experiment(PARENT)
    assert not same_data(OTHER_DATA, PARENT)
    keep = {"benchmarks": ["shapes_test"]}
    return child.model_copy(update=keep), parent.model_copy(update=keep)


def test_a_child_with_its_own_data_pairs_nothing_of_its_data_splits(other_data) -> None:
    child, parent = other_data
    assert parent_pairs(OTHER_DATA, child, parent) == []


def test_experiments_whose_data_differ_have_nothing_to_compare_said_whole(other_data) -> None:
    child, parent = other_data
    with pytest.raises(StageError) as error:
        compare_rows(OTHER_DATA, PARENT, child, parent, SCORE, seed=0)
    assert str(error.value) == (
        f"{OTHER_DATA} and {PARENT} evaluate no checkpoint on the same items of a common "
        "benchmark (a benchmark split from each one's data counts only when they share the "
        f"data; {OTHER_DATA}: ['shapes_test'] × ['base', 'sft', 'grpo']; {PARENT}: "
        "['shapes_test'] × ['base', 'sft', 'grpo']): nothing to compare"
    )


def test_each_pair_is_compared_from_both_files_with_the_seed(configs, monkeypatch) -> None:
    child, parent = configs
    for exp in (PARENT, CHILD):
        write_scores(exp, "grpo", [0, 1, 1])
    write_scores(PARENT, "base", [0, 1])
    write_scores(PARENT, "sft", [0, 1])
    calls = []

    def paired(a, b, score, seed):
        calls.append((a[0].as_posix(), a[1].n, b[0].as_posix(), b[1].n, score, seed))
        return {"n": 3, "diff": 0.0, "ci_low": 0.0, "ci_high": 0.0}

    monkeypatch.setattr("vlrl.reporting.experiments.paired", paired)
    rows = compare_rows(CHILD, PARENT, child, parent, SCORE, seed=7)
    files = ("results/tiny_shapes_grpo_lr/scores/grpo/shapes_test.json",
             "results/tiny_shapes/scores/grpo/shapes_test.json")  # fmt: skip
    assert calls == [(files[0], 3, files[1], 3, SCORE, 7)]
    assert (rows[2]["file_a"], rows[2]["file_b"]) == files


@pytest.mark.parametrize("broken", [CHILD, PARENT])
def test_a_malformed_scores_file_is_named_as_the_comparisons(configs, broken) -> None:
    child, parent = configs
    for exp in (PARENT, CHILD):
        write_scores(exp, "grpo", [0, 1])
    write_scores(PARENT, "base", [0, 1])
    write_scores(PARENT, "sft", [0, 1])
    path = sharing.scores_file(broken, "grpo", "shapes_test")
    path.write_text("{")
    with pytest.raises(StageError) as error:
        compare_rows(CHILD, PARENT, child, parent, SCORE, seed=0)
    assert str(error.value).startswith(f"compare: {path} is not a valid scores file: ")
