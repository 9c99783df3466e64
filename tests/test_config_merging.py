"""Experiment inheritance as ``vlrl show`` and ``vlrl explain`` see it: the exact tree an
``extends:`` chain merges to (mappings key by key, the reward set, protocol choice and resources
replaced whole, lists replaced), where each key was set (file, line, the comment that cites its
source), the ``-o`` overrides, and the problems a file's content has (repeated keys with both
lines, a top level that is not a mapping, a bad, missing or circular parent), on real files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vlrl.config import experiment_tree
from vlrl.config.loading import COMMENT_CHARS, ExperimentTree, Origin, _comments
from vlrl.config.reading import parse_yaml
from vlrl.core import paths
from vlrl.core.errors import ConfigError


@pytest.fixture()
def exps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``config/experiments`` of a scratch project (``$VLRL_ROOT``)."""
    folder = tmp_path / "config" / "experiments"
    folder.mkdir(parents=True)
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    return folder


def write(name: str, text: str) -> str:
    path = paths.experiment_file(name)
    path.write_text(text)
    return str(path)


PARENT = """\
# A parent recipe.
description: parent
seed: 3  # the paper's seed
grpo:
  # VLM-R1's KL weight
  beta: 0.04
  learning_rate: 1.0e-6
  rewards:
    common.format: 0.5
    common.accuracy: 1.0
score:
  protocol: {mathvista: vlmevalkit}
  confidence: 0.95
resources:
  grpo: {gpus: 2, nodes: 1}
benchmarks: [a, b]
"""

CHILD = """\
# An ablation: half the learning rate,
# and no format reward.
extends: parent

seed: 4
grpo:
  learning_rate: 5.0e-7  # half
  rewards: {common.accuracy: 1.0}
benchmarks: [c]
"""


def test_a_chain_merges_to_the_exact_tree_with_each_keys_origin(exps: Path) -> None:
    parent, child = write("parent", PARENT), write("child", CHILD)
    tree = experiment_tree(Path(child))
    assert tree.tree == {
        "description": "parent",
        "extends": "parent",
        "seed": 4,
        "grpo": {"beta": 0.04, "learning_rate": 5e-7, "rewards": {"common.accuracy": 1.0}},
        "score": {"protocol": {"mathvista": "vlmevalkit"}, "confidence": 0.95},
        "resources": {"grpo": {"gpus": 2, "nodes": 1}},
        "benchmarks": ["c"],
    }
    assert tree.chain == [child, parent] and tree.problems == []
    ablation = "An ablation: half the learning rate, and no format reward."
    assert tree.origins == {
        "description": Origin(parent, 2, "A parent recipe."),
        "seed": Origin(child, 5),
        "grpo": Origin(child, 6),
        "grpo.beta": Origin(parent, 6, "VLM-R1's KL weight"),
        "grpo.learning_rate": Origin(child, 7, "half"),
        # The parent's format reward went with its reward set: no origin left for it.
        "grpo.rewards": Origin(child, 8),
        "grpo.rewards.common.accuracy": Origin(child, 8),
        "score": Origin(parent, 11),
        "score.protocol": Origin(parent, 12),
        "score.protocol.mathvista": Origin(parent, 12),
        "score.confidence": Origin(parent, 13),
        "resources": Origin(parent, 14),
        "resources.grpo": Origin(parent, 15),
        "resources.grpo.gpus": Origin(parent, 15),
        "resources.grpo.nodes": Origin(parent, 15),
        "benchmarks": Origin(child, 9),
        "extends": Origin(child, 3, ablation),
    }
    # An origin without a comment has an empty one (what `vlrl show` prints), not None.
    assert tree.origins["seed"].comment == ""
    assert str(tree.origins["grpo.beta"]) == f"{parent}:6" and str(Origin("--set")) == "--set"


def test_a_grandchild_replaces_protocol_and_resources_whole(exps: Path) -> None:
    parent = write("parent", PARENT)
    child = write("child", "extends: parent\nseed: 5\n")
    grandchild = write(
        "grandchild",
        "extends: child\nscore:\n  protocol: {mmmu: vlrl}\nresources:\n  infer: {gpus: 1}\n"
        "grpo:\n  rewards: {common.format: 1.0}\n",
    )
    tree = experiment_tree(Path(grandchild))
    assert tree.chain == [grandchild, child, parent]
    assert tree.tree == {
        "description": "parent",
        "extends": "child",
        "seed": 5,
        "grpo": {"beta": 0.04, "learning_rate": 1e-6, "rewards": {"common.format": 1.0}},
        "score": {"protocol": {"mmmu": "vlrl"}, "confidence": 0.95},
        "resources": {"infer": {"gpus": 1}},
        "benchmarks": ["a", "b"],
    }
    assert tree.origins["seed"] == Origin(child, 2)
    assert tree.origins["grpo.beta"] == Origin(parent, 6, "VLM-R1's KL weight")
    assert tree.origins["grpo.rewards.common.format"] == Origin(grandchild, 7)
    assert tree.origins["score.confidence"] == Origin(parent, 13)
    kept = sorted(k for k in tree.origins if k.startswith(("resources", "score.", "grpo.r")))
    assert kept == [
        "grpo.rewards",
        "grpo.rewards.common.format",
        "resources",
        "resources.infer",
        "resources.infer.gpus",
        "score.confidence",
        "score.protocol",
        "score.protocol.mmmu",
    ]


def test_source_of_names_the_file_that_set_the_key_or_its_section(exps: Path) -> None:
    parent, child = write("parent", PARENT), write("child", CHILD)
    tree = experiment_tree(Path(child), ["grpo.beta=0.1", "sft.enabled=false", "score.x.y=1"])
    assert tree.source_of("grpo.beta") == "--set"  # an override is blamed on the --set
    assert tree.source_of("grpo.learning_rate") == child
    assert tree.source_of("score.confidence") == parent
    assert tree.source_of("score.nope") == parent  # the nearest section
    assert tree.source_of("score.x.y") == "--set"
    assert tree.source_of("resources.grpo.nope.deeper") == parent
    assert tree.source_of("sft.enabled") == "--set"
    assert tree.source_of("description") == parent
    assert tree.source_of("nope") == child
    assert ExperimentTree({}, chain=["e.yaml"]).source_of("a.b") == "e.yaml"
    assert ExperimentTree({}).source_of("a.b") == "<config>"


def test_overrides_are_set_typed_and_marked(exps: Path) -> None:
    child = write("child", CHILD)
    write("parent", PARENT)
    overrides = ["grpo.beta=0.1", "grpo.rewards={common.format: 1}", "sft.enabled=false"]
    tree = experiment_tree(Path(child), overrides)
    assert tree.tree["grpo"] == {
        "beta": 0.1,
        "learning_rate": 5e-7,
        "rewards": {"common.format": 1},
    }
    assert tree.tree["sft"] == {"enabled": False}
    for key in ("grpo.beta", "grpo.rewards", "sft.enabled"):
        assert tree.origins[key] == Origin("--set")
    assert experiment_tree(Path(child), None) == experiment_tree(Path(child), [])
    with pytest.raises(ConfigError, match=r"override 'seed' is not of the form key\.sub=value"):
        experiment_tree(Path(child), ["seed"])


@pytest.mark.parametrize(
    ("text", "tree", "lines"),
    [
        ("", {}, {}),
        ("# only a comment\n", {}, {}),
        ("seed: 1\n", {"seed": 1}, {"seed": 1}),
    ],
)
def test_an_empty_file_is_an_empty_experiment(
    exps: Path, text: str, tree: dict, lines: dict[str, int]
) -> None:
    path = write("e", text)
    origins = {key: Origin(path, line) for key, line in lines.items()}
    assert experiment_tree(Path(path)) == ExperimentTree(tree, origins, [path], [])


@pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "list"), ("3\n", "int"), ("x\n", "str")])
def test_a_top_level_that_is_not_a_mapping(exps: Path, text: str, kind: str) -> None:
    path = write("e", text)
    problem = f"{path}: <top>: must be a mapping, got {kind}"
    assert experiment_tree(Path(path)) == ExperimentTree({}, {}, [path], [problem])


@pytest.mark.parametrize(("value", "shown"), [("[b]", "['b']"), ("''", "''"), ("3", "3")])
def test_extends_must_be_a_name(exps: Path, value: str, shown: str) -> None:
    path = write("e", f"seed: 1  # mine\nextends: {value}\n")
    got = experiment_tree(Path(path))
    parsed = {"seed": 1, "extends": parse_yaml(Path(path))[0]["extends"]}
    origins = {"seed": Origin(path, 1, "mine"), "extends": Origin(path, 2)}
    problem = f"{path}: extends: must be an experiment name, got {shown}"
    assert got == ExperimentTree(parsed, origins, [path], [problem])
    assert got.tree["seed"] == 1


def test_a_missing_parent_names_the_known_ones(exps: Path) -> None:
    write("parent", PARENT)
    write("other", "seed: 1\n")
    path = write("e", "extends: parnet\nseed: 2\n")
    problem = f"{path}: extends: no experiment 'parnet'; did you mean 'parent'?"
    origins = {"extends": Origin(path, 1), "seed": Origin(path, 2)}
    tree = {"extends": "parnet", "seed": 2}
    expected = ExperimentTree(tree, origins, [path], [problem])
    assert experiment_tree(Path(path)) == expected
    far = write("far", "extends: zzz\n")
    assert experiment_tree(Path(far)).problems == [
        f"{far}: extends: no experiment 'zzz'; known: ['e', 'far', 'other', 'parent']"
    ]


def test_a_cycle_is_a_problem_not_a_hang(exps: Path) -> None:
    a = write("a", "extends: b\nseed: 1\n")
    b = write("b", "extends: a\nseed: 2\ndescription: b\n")
    got = experiment_tree(Path(a))
    cycle = f"{b}: extends: 'a' extends this file again ({a} → {b} → {a})"
    origins = {
        "extends": Origin(a, 1),
        "seed": Origin(a, 2),
        "description": Origin(b, 3),
    }
    tree = {"extends": "b", "seed": 1, "description": "b"}
    assert got == ExperimentTree(tree, origins, [a, b], [cycle])
    self_ref = write("self", "extends: self\n")
    assert experiment_tree(Path(self_ref)).problems == [
        f"{self_ref}: extends: 'self' extends this file again ({self_ref} → {self_ref})"
    ]


def test_problems_of_the_whole_chain_parent_first(exps: Path) -> None:
    parent = write("parent", "seed: 1\nseed: 2\n")
    child = write("child", "extends: parent\nbeta: 1\nbeta: 2\n")
    got = experiment_tree(Path(child))
    assert got.problems == [
        f"{parent}: seed: duplicate key (lines 1 and 2); YAML would keep only the last value",
        f"{child}: beta: duplicate key (lines 2 and 3); YAML would keep only the last value",
    ]
    assert got.tree == {"seed": 2, "extends": "parent", "beta": 2}


def test_a_missing_or_broken_file_raises(exps: Path) -> None:
    missing = paths.experiment_file("missing")
    with pytest.raises(ConfigError) as info:
        experiment_tree(missing)
    assert str(info.value) == f"{missing}: no such file"
    broken = write("broken", "a: [1\n")
    with pytest.raises(ConfigError) as info:
        experiment_tree(Path(broken))
    assert str(info.value).startswith(f"{broken}: not valid YAML: while parsing a flow sequence")
    # A broken parent is the child's error too: the parent's file is named.
    child = write("child", "extends: broken\n")
    with pytest.raises(ConfigError, match="^" + re.escape(f"{broken}: not valid YAML")):
        experiment_tree(Path(child))


REPEATS = """\
seed: 1
grpo:
  beta: 0.1
  beta: 0.2
  extra:
    a: 1
    a: 2
seed: 2
benchmarks:
  - {x: 1, x: 2}
  - {y: 1}
  - name: n
    name: m
base: &b
  k: 1
  k: 2
copy: *b
other: {z: 1}
"""


def test_repeated_keys_are_named_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(REPEATS)
    tree, problems = parse_yaml(path)
    assert tree == {
        "seed": 2,
        "grpo": {"beta": 0.2, "extra": {"a": 2}},
        "benchmarks": [{"x": 2}, {"y": 1}, {"name": "m"}],
        "base": {"k": 2},
        "copy": {"k": 2},
        "other": {"z": 1},
    }
    where = [
        ("grpo.beta", 3, 4),
        ("grpo.extra.a", 6, 7),
        ("seed", 1, 8),
        ("benchmarks.0.x", 10, 10),
        ("benchmarks.2.name", 12, 13),
        ("base.k", 15, 16),  # once: the alias below is the same mapping
    ]
    assert problems == [
        f"{path}: {key}: duplicate key (lines {first} and {again}); YAML would keep only the "
        "last value"
        for key, first, again in where
    ]


def test_key_lines_of_a_file_with_repeats_lists_and_aliases(exps: Path) -> None:
    path = write("r", REPEATS)
    lines = {
        "seed": 1,  # the first of a repeated key
        "grpo": 2,
        "grpo.beta": 3,
        "grpo.extra": 5,
        "grpo.extra.a": 6,
        "benchmarks": 9,  # not into lists
        "base": 14,
        "base.k": 15,
        "copy": 17,
        "copy.k": 15,  # an alias: where its mapping was written
        "other": 18,
        "other.z": 18,
    }
    assert experiment_tree(Path(path)).origins == {k: Origin(path, n) for k, n in lines.items()}


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("", None),
        ("# nothing\n", None),
        ("[1, 2]\n", [1, 2]),
        ("a: {b: [1, {c: d}]}\n", {"a": {"b": [1, {"c": "d"}]}}),
        ("a: &x {b: 1}\nc: {<<: *x, d: 2}\n", {"a": {"b": 1}, "c": {"b": 1, "d": 2}}),
    ],
)
def test_parse_yaml_reads_any_document(tmp_path: Path, text: str, tree: object) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert parse_yaml(path) == (tree, [])


@pytest.mark.parametrize(
    ("text", "start"),
    [("a: 1\n---\nb: 2\n", "expected a single document"), ("a: [1\n", "while parsing")],
)
def test_parse_yaml_names_the_file_when_not_yaml(tmp_path: Path, text: str, start: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        parse_yaml(path)
    assert str(info.value).startswith(f"{path}: not valid YAML: {start}")
    with pytest.raises(ConfigError) as info:
        parse_yaml(tmp_path / "none.yaml")
    assert str(info.value) == f"{tmp_path / 'none.yaml'}: no such file"


LONG = "x" * (COMMENT_CHARS - 2)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a: 1\nb: 2\n", {}),
        ("a: 1  # trailing\n", {1: "trailing"}),
        ("# above\na: 1\n", {1 + 1: "above"}),
        ("# first\n#second\n  ##  third  \na: 1  # own\n", {4: "first second third own"}),
        ("# far\n\n# near\na: 1\n", {4: "near"}),  # a blank line ends the comment block
        ("a: 1\n\n# c\nb: 2\n\nc: 3 # d\n", {4: "c", 6: "d"}),
        ("a: 1 # see x #y # z\n", {1: "see x #y # z"}),
        ("url: http://x/#frag\n", {}),  # '#' inside a value is no comment
        ("#XLA first\nb: 2\n", {2: "XLA first"}),
        ("- a\n# c\n- b\n", {3: "c"}),
        (f"# {LONG}\na: 1  # y\n", {2: f"{LONG} y"}),  # exactly COMMENT_CHARS: kept
        (f"# {LONG}\na: 1  # yz\n", {2: f"{LONG} …"}),  # one more: cut to COMMENT_CHARS
    ],
)
def test_comments_are_the_lines_above_and_the_trailing_one(text: str, found: dict) -> None:
    assert _comments(text) == found
    assert all(len(c) <= COMMENT_CHARS for c in found.values())


def test_origins_carry_the_cut_comment(exps: Path) -> None:
    long = "y" * (3 * COMMENT_CHARS)
    path = write("e", f"# {long}\nseed: 1\n")
    comment = experiment_tree(Path(path)).origins["seed"].comment
    assert comment == "y" * (COMMENT_CHARS - 1) + "…"
