"""Experiments as small diffs (``extends:``), values derived from others, ``unknown:`` marks,
checked ``extra:`` options, and ``vlrl show``: every value with the file and line it comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.config import ConfigProblems, experiment_tree, load_experiment
from vlrl.workflow import show
from vlrl.workflow.check import experiment_problems

PARENT = """\
description: A parent recipe.
seed: 3
base_model: tiny-qwen2.5-vl
image_pixels: {min: 3136, max: 6272}
grpo:
  rewards: {common.format: 0.5, common.accuracy: 1.0}
  beta: 0.04  # run_grpo_rec.sh line 12
  max_completion_length: 40
  num_generations: 4
  per_device_train_batch_size: 8
unknown:
  grpo.beta: the paper gives none; VLM-R1's value
benchmarks: [shapes_test]
"""


def write(project: Path, name: str, text: str) -> Path:
    path = project / "config" / "experiments" / f"{name}.yaml"
    path.write_text(text)
    return path


def test_a_child_states_only_what_it_changes(project: Path) -> None:
    write(project, "parent", PARENT)
    write(
        project,
        "child",
        "extends: parent\ndescription: An ablation.\ngrpo:\n  rewards: {common.accuracy: 1.0}\n"
        "  learning_rate: 2.0e-6\n",
    )
    child, parent = load_experiment("child"), load_experiment("parent")
    assert child.extends == "parent" and child.description == "An ablation."
    # Mappings merge key by key; the reward set is replaced whole (an ablation drops a reward).
    assert child.grpo.rewards == {"common.accuracy": 1.0}
    assert child.grpo.beta == parent.grpo.beta == 0.04
    assert child.grpo.learning_rate == 2e-6 and parent.grpo.learning_rate == 1e-6
    assert child.seed == 3 and child.unknown == parent.unknown
    before = {k: v for k, v in parent.model_dump().items() if k not in ("extends", "description")}
    after = {k: v for k, v in child.model_dump().items() if k not in ("extends", "description")}
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"grpo"}


def test_chains_resolve_and_name_their_files(project: Path) -> None:
    write(project, "parent", PARENT)
    write(project, "child", "extends: parent\nseed: 4\n")
    write(project, "grandchild", "extends: child\ngrpo: {beta: 0.0}\n")
    tree = experiment_tree(project / "config/experiments/grandchild.yaml")
    assert [Path(p).stem for p in tree.chain] == ["grandchild", "child", "parent"]
    cfg = load_experiment("grandchild")
    assert (cfg.seed, cfg.grpo.beta, cfg.grpo.num_generations) == (4, 0.0, 4)
    assert Path(tree.origins["seed"].file).stem == "child"
    assert Path(tree.origins["grpo.num_generations"].file).stem == "parent"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"a": "extends: b\n", "b": "extends: a\n"},
            r"b\.yaml: extends: 'a' extends this file again \(.*a\.yaml → .*b\.yaml → .*a\.yaml\)",
        ),
        ({"a": "extends: nowhere\n"}, r"a\.yaml: extends: no experiment 'nowhere'; \d+ known, in "),
        ({"a": "extends: [b]\n"}, r"a\.yaml: extends: must be an experiment name"),
    ],
)
def test_a_bad_parent_is_named(project: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        write(project, name, text + "base_model: tiny-qwen2.5-vl\nbenchmarks: [shapes_test]\n")
    with pytest.raises(ConfigProblems, match=message):
        load_experiment("a")


def test_a_missing_parent_is_the_only_problem(project: Path) -> None:
    """`extends: tiny_shape` is one problem with a suggestion, not also the keys the missing
    parent would have given (base_model, benchmarks: Field required)."""
    write(project, "a", "extends: tiny_shape\n")
    with pytest.raises(ConfigProblems) as caught:
        load_experiment("a")
    assert len(caught.value.problems) == 1, caught.value.problems
    assert caught.value.problems[0].endswith(
        "extends: no experiment 'tiny_shape'; did you mean 'tiny_shapes' or 'tiny_shapes_satori'?"
    )


def test_a_problem_names_the_file_that_set_the_key(project: Path) -> None:
    write(project, "parent", PARENT.replace("beta: 0.04", "beta: -1"))
    write(project, "child", "extends: parent\ngrpo: {top_p: 2}\n")
    with pytest.raises(ConfigProblems) as caught:
        load_experiment("child")
    problems = caught.value.problems
    assert any("experiments/parent.yaml: grpo.beta: " in p for p in problems), problems
    assert any("child.yaml: grpo.top_p" in p for p in problems), problems


def test_derived_values_follow_their_source_unless_set(project: Path) -> None:
    write(project, "parent", PARENT)
    cfg = load_experiment("parent")
    assert cfg.sft.image_max_pixels == cfg.grpo.image_max_pixels == 6272
    assert cfg.sft.image_min_pixels == cfg.grpo.image_min_pixels == 3136
    assert cfg.infer.max_new_tokens == cfg.grpo.max_completion_length == 40
    own = load_experiment("parent", ["sft.image_max_pixels=4000", "infer.max_new_tokens=9"])
    assert (own.sft.image_max_pixels, own.grpo.image_max_pixels) == (4000, 6272)
    assert own.infer.max_new_tokens == 9
    no_grpo = load_experiment("parent", ["grpo.enabled=false"])
    assert no_grpo.infer.max_new_tokens == 2048  # VLMEvalKit's budget when nothing trained
    with pytest.raises(ConfigProblems, match=r"grpo.image_min_pixels: 9000 is above"):
        load_experiment("parent", ["grpo.image_min_pixels=9000"])


def test_unknown_marks_name_real_keys(project: Path) -> None:
    write(project, "parent", PARENT.replace("benchmarks:", "  grpo.no_such_key: typo\nbenchmarks:"))
    with pytest.raises(ConfigProblems, match=r"unknown.grpo.no_such_key: is not a key"):
        load_experiment("parent")


def test_extra_options_are_checked_against_trl(project: Path) -> None:
    write(project, "parent", PARENT)
    ok = ["grpo.extra={report_to: wandb, mask_truncated_completions: true}"]
    assert experiment_problems("parent", ok)[1] == []
    _, problems = experiment_problems("parent", ["grpo.extra={no_such_option: 1, beta: 0.1}"])
    assert any("grpo.extra.no_such_option: is not an option of TRL" in p for p in problems)
    assert any("grpo.extra.beta: vlrl sets it from the grpo section" in p for p in problems)


def test_show_gives_each_value_its_origin(project: Path) -> None:
    write(project, "parent", PARENT)
    write(project, "child", "extends: parent\ngrpo:\n  learning_rate: 2.0e-6  # paper §4\n")
    rows = {row.key: row for row in show.shown("child", ["seed=9"])}
    assert rows["grpo.learning_rate"].origin == "config/experiments/child.yaml:3"
    assert rows["grpo.learning_rate"].note == "paper §4"
    assert rows["grpo.beta"].origin == "config/experiments/parent.yaml:7"
    assert rows["grpo.beta"].unknown and "the paper gives none" in rows["grpo.beta"].note
    assert "run_grpo_rec.sh line 12" in rows["grpo.beta"].note
    assert rows["seed"].origin == "--set"
    assert rows["sft.image_max_pixels"].origin == "derived from image_pixels.max"
    assert rows["grpo.epsilon"].origin == "default"
    text = show.render("child", only_set=True)
    assert "files: config/experiments/child.yaml ← config/experiments/parent.yaml" in text
    # a child's --only-set is what differs from its parent: its own file's keys and --sets
    assert "grpo.learning_rate = 2e-06  (config/experiments/child.yaml:3)" in text
    assert "grpo.epsilon" not in text and "grpo.beta" not in text
    assert "parent.yaml:" not in text.split("\n", 2)[2]
    parent_text = show.render("parent", only_set=True)
    assert "grpo.beta" in parent_text and "[UNKNOWN in the sources]" in parent_text
