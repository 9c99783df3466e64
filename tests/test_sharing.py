"""Which outputs a child experiment takes from its ancestors (vlrl.sharing), on config files alone.

The whole loop (both tools plan and run only what the child changes) is in
tests/pipeline/test_sharing_pipeline.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vlrl import sharing
from vlrl.core import paths
from vlrl.workflow import resolve

PARENT = "tiny_shapes"
EVALUATIONS = [("base", "shapes_test"), ("sft", "shapes_test"), ("grpo", "shapes_test")]


def _child(project: Path, name: str, body: dict, parent: str = PARENT) -> str:
    text = yaml.safe_dump({"extends": parent, **body}, sort_keys=False)
    (project / "config" / "experiments" / f"{name}.yaml").write_text(text)
    return name


def _homes(exp: str) -> dict[str, str]:
    found = {s: sharing.home(exp, s) for s in ("data", "sft", "grpo", "merge")}
    for c, b in EVALUATIONS:
        found[f"infer/{c}"] = sharing.home(exp, "infer", c, b)
        found[f"score/{c}"] = sharing.home(exp, "score", c, b)
    return found


def _owned(homes: dict[str, str], exp: str) -> set[str]:
    return {output for output, owner in homes.items() if owner == exp}


def test_a_grpo_change_shares_everything_before_grpo(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    homes = _homes(child)
    assert _owned(homes, child) == {"grpo", "merge", "infer/grpo", "score/grpo"}
    assert set(homes.values()) == {child, PARENT}
    assert sharing.data_dir(child) == paths.data_dir(PARENT)
    assert sharing.policy_start_dir(child, True, "x") == paths.sft_dir(PARENT)
    assert sharing.scores_file(child, "sft", "shapes_test") == paths.scores_file(
        PARENT, "sft", "shapes_test"
    )
    assert sharing.checkpoint_model_dir(child, "grpo", "x") == paths.merged_model_dir(child)


@pytest.mark.parametrize(
    ("body", "owned"),
    [
        # the data changes everything after it
        ({"data": {"shapes": {"n_train": 50}}}, None),
        # an SFT setting: SFT and all that follows it, not the data or the base model's scores
        (
            {"sft": {"learning_rate": 1.0e-3}},
            {"sft", "grpo", "merge", "infer/sft", "score/sft", "infer/grpo", "score/grpo"},
        ),
        # generation length: every inference, no training
        (
            {"infer": {"max_new_tokens": 7}},
            {"infer/base", "score/base", "infer/sft", "score/sft", "infer/grpo", "score/grpo"},
        ),
        # scoring only: the predictions stay shared
        ({"score": {"iou_threshold": 0.6}}, {"score/base", "score/sft", "score/grpo"}),
        # the seed is read by every stage
        ({"seed": 1}, None),
        # a new benchmark's evaluations are the child's own; the parent's are shared
        ({"description": "only the text differs"}, set()),
    ],
)
def test_what_a_change_unshares(project: Path, body: dict, owned: set[str] | None) -> None:
    child = _child(project, "child", body)
    homes = _homes(child)
    expected = set(homes) if owned is None else owned
    assert _owned(homes, child) == expected


def test_an_evaluation_the_parent_does_not_make_is_the_childs(project: Path) -> None:
    child = _child(project, "child", {"benchmarks": ["shapes_test", "smoke_test"]})
    assert sharing.home(child, "infer", "base", "shapes_test") == PARENT
    assert sharing.home(child, "score", "grpo", "shapes_test") == PARENT
    assert sharing.home(child, "infer", "base", "smoke_test") == child
    assert sharing.home(child, "score", "sft", "smoke_test") == child
    assert sharing.home(child, "sft") == PARENT


def test_the_owner_is_the_oldest_ancestor_that_computes_the_same(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    grandchild = _child(project, "grandchild", {"grpo": {"beta": 0.1}}, parent=child)
    assert sharing.home(grandchild, "sft") == PARENT
    assert sharing.home(grandchild, "grpo") == grandchild
    same = _child(project, "same", {"description": "a copy"}, parent=child)
    assert sharing.home(same, "grpo") == child
    assert sharing.home(same, "data") == PARENT


def test_overrides_of_the_command_line_count(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    try:
        sharing.use_overrides(child, ["sft.num_train_epochs=3"])
        assert sharing.home(child, "sft") == child
        assert sharing.home(child, "data") == PARENT
    finally:
        sharing.use_overrides(child, None)
    assert sharing.home(child, "sft") == PARENT


def test_a_parent_that_does_not_load_shares_nothing(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    experiment = project / "config" / "experiments" / f"{PARENT}.yaml"
    experiment.write_text(experiment.read_text() + "\nnot_a_key: 1\n")
    assert sharing.resolved(child) is None
    assert sharing.home(child, "sft") == child


def test_a_params_file_names_what_it_reads_from_an_ancestor(project: Path) -> None:
    """Moving an input to another owner must rewrite the params file (both tools rerun on it)."""
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    text = resolve.render("grpo", child)
    assert "# Shared with ancestors (same values, vlrl.sharing): data of tiny_shapes, " in text
    assert "sft of tiny_shapes" in text
    assert "Shared" not in resolve.render("grpo", PARENT)
    _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}, "sft": {"learning_rate": 1e-3}})
    assert "sft of" not in resolve.render("grpo", child)
    # the params of the parent's own stages are written when only the child is listed
    assert resolve.with_owners([child]) == [child, PARENT]
