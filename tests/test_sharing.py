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
from vlrl.core.errors import ConfigError
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


def test_a_child_that_restates_a_mapping_in_another_order_shares(project: Path) -> None:
    """The identity reads values, not the order the child's file lists a mapping's keys in."""
    child = _child(
        project, "child", {"grpo": {"rewards": {"common.accuracy": 1.0, "common.format": 0.5}}}
    )
    assert list(sharing.resolved(child)["grpo"]["rewards"]) == ["common.accuracy", "common.format"]
    assert list(sharing.resolved(PARENT)["grpo"]["rewards"]) == ["common.format", "common.accuracy"]
    assert sharing.home(child, "grpo") == PARENT


def test_sft_settings_of_a_run_without_sft_change_nothing_after_it(project: Path) -> None:
    no_sft = _child(project, "no_sft", {"sft": {"enabled": False}})
    child = _child(project, "child", {"sft": {"learning_rate": 1.0e-3}}, parent=no_sft)
    assert sharing.home(child, "sft") == child
    assert sharing.home(child, "grpo") == no_sft  # GRPO starts from the base model
    assert sharing.policy_start_dir(child, False, "tiny") == paths.model_resource("tiny")
    assert sharing.policy_start_dir(child, True, "tiny") == paths.sft_dir(child)


def test_a_grandchild_shares_the_evaluations_of_its_grandparent(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    grandchild = _child(project, "grandchild", {"grpo": {"beta": 0.1}}, parent=child)
    assert sharing.home(grandchild, "infer", "sft", "shapes_test") == PARENT
    assert sharing.home(grandchild, "score", "base", "shapes_test") == PARENT
    assert sharing.home(grandchild, "score", "grpo", "shapes_test") == grandchild


def test_the_files_a_stage_reads_are_their_owners(project: Path) -> None:
    """A child that changes only scoring reads its parent's models and predictions and writes
    scores of its own."""
    child = _child(project, "child", {"score": {"iou_threshold": 0.6}})
    bench = "shapes_test"
    assert sharing.predictions_file(child, "sft", bench) == paths.predictions_file(
        PARENT, "sft", bench
    )
    assert sharing.scores_file(child, "sft", bench) == paths.scores_file(child, "sft", bench)
    assert sharing.grpo_dir(child) == paths.grpo_dir(PARENT)
    assert sharing.grpo_final_dir(child) == paths.grpo_final_dir(PARENT)
    assert sharing.grpo_curves_dir(child) == paths.grpo_curves_dir(PARENT)
    assert sharing.checkpoint_model_dir(child, "sft", "tiny") == paths.sft_dir(PARENT)
    assert sharing.checkpoint_model_dir(child, "grpo", "tiny") == paths.merged_model_dir(PARENT)
    assert sharing.checkpoint_model_dir(child, "base", "tiny") == paths.model_resource("tiny")
    trained = _child(project, "trained", {"grpo": {"learning_rate": 1.0e-4}})
    assert sharing.grpo_dir(trained) == paths.grpo_dir(trained)
    assert sharing.grpo_final_dir(trained) == paths.grpo_final_dir(trained)
    assert sharing.grpo_curves_dir(trained) == paths.grpo_curves_dir(trained)
    assert sharing.predictions_file(trained, "grpo", bench) == paths.predictions_file(
        trained, "grpo", bench
    )
    generates = _child(project, "generates", {"infer": {"max_new_tokens": 7}})
    assert sharing.predictions_file(generates, "sft", bench) == paths.predictions_file(
        generates, "sft", bench
    )  # the SFT model is the parent's; its predictions are not
    with pytest.raises(ValueError, match="unknown checkpoint 'best'"):
        sharing.checkpoint_model_dir(child, "best", "tiny")


def test_each_stages_params_name_the_inputs_it_reads_from_ancestors(project: Path) -> None:
    child = _child(project, "child", {"grpo": {"learning_rate": 1.0e-4}})
    shared = {"data": PARENT, "sft": PARENT}
    assert sharing.shared_inputs(child, "data") == {}
    assert sharing.shared_inputs(child, "sft") == {"data": PARENT}
    assert sharing.shared_inputs(child, "grpo") == shared
    assert sharing.shared_inputs(child, "merge") == {"sft": PARENT}
    assert sharing.shared_inputs(child, "infer") == shared  # base and sft read; grpo's own merge
    evaluations = [
        f"{c}/{b}" for c in ("base", "sft") for b in ("shapes_test", "shapes_test_blank")
    ]
    assert sharing.shared_inputs(child, "score") == {f"infer/{e}": PARENT for e in evaluations}
    assert sharing.shared_inputs(child, "report") == {
        **{f"infer/{e}": PARENT for e in evaluations},
        **{f"score/{e}": PARENT for e in evaluations},
    }
    assert sharing.shared_inputs(child, "plots") == {}  # not a stage that reads outputs
    assert sharing.shared_inputs("no_such_experiment", "grpo") == {}


def test_a_report_reads_the_grpo_run_only_when_grpo_runs(project: Path) -> None:
    same = _child(project, "same", {"description": "a copy"})
    assert sharing.shared_inputs(same, "report")["grpo"] == PARENT
    no_grpo = _child(project, "no_grpo", {"grpo": {"enabled": False}})
    copy = _child(project, "copy", {"description": "a copy"}, parent=no_grpo)
    assert sharing.home(copy, "grpo") == no_grpo
    assert "grpo" not in sharing.shared_inputs(copy, "report")
    assert sharing.shared_inputs(copy, "report")["score/base/shapes_test"] == no_grpo


def test_an_identity_needs_an_experiment_and_a_stage_that_load(project: Path) -> None:
    with pytest.raises(ConfigError) as err:
        sharing.identity("no_such_experiment", "data")
    assert str(err.value) == "experiment 'no_such_experiment' does not load; run `vlrl check`"
    with pytest.raises(ValueError) as not_shared:
        sharing.identity(PARENT, "report")
    assert str(not_shared.value) == (
        "stage 'report' is not one of ('data', 'sft', 'grpo', 'merge', 'infer', 'score')"
    )


def test_each_project_resolves_its_own_files(project: Path, tmp_path_factory, monkeypatch) -> None:
    """Two checkouts whose experiment files have the same names and times (a copy keeps them)
    are still two projects."""
    import os
    import shutil

    other = tmp_path_factory.mktemp("other")
    shutil.copytree(project / "config", other / "config")
    experiment = other / "config" / "experiments" / f"{PARENT}.yaml"
    times = experiment.stat()
    experiment.write_text(experiment.read_text().replace("max_steps: 90", "max_steps: 91"))
    os.utime(experiment, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert sharing.resolved(PARENT)["grpo"]["max_steps"] == 90
    monkeypatch.setenv("VLRL_ROOT", str(other))
    assert sharing.resolved(PARENT)["grpo"]["max_steps"] == 91
