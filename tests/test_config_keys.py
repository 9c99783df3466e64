"""Dotted config keys (``vlrl.config.keys``): reading them from a tree or a validated config
(a stage's params), setting them (``-o key=value`` overrides, typed as YAML), and the small checks
every section shares (``KeyProblems``, ``UniqueList``, ``order_problems``, ``unknown:`` marks that
must name a key). Exact values and exact error messages: a user reads them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as S
from typing import Annotated, Any

import pytest
from pydantic import TypeAdapter, ValidationError

from vlrl.config import ConfigProblems, load_experiment_file
from vlrl.config.base import KeyProblems, UniqueList, _no_repeats, order_problems
from vlrl.config.data import DatasetConfig
from vlrl.config.keys import apply_overrides, assign, lookup, parse_overrides, select, set_dotted
from vlrl.config.training import GRPOConfig
from vlrl.core.errors import ConfigError

TREE = {"seed": 0, "sft": {"enabled": True, "extra": {"a": {"b": 2}}}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("seed", 0),
        ("sft.enabled", True),
        ("sft.extra.a.b", 2),
        ("sft.extra", {"a": {"b": 2}}),
        ("sft", TREE["sft"]),
    ],
)
def test_lookup_reads_a_tree(key: str, value: Any) -> None:
    assert lookup(TREE, key) == value


def test_lookup_reads_config_objects_and_mixed_trees() -> None:
    cfg = S(sft=S(lr=0.1), grpo=GRPOConfig(beta=0.25), tree={"x": S(y=[1])})
    assert lookup(cfg, "sft.lr") == 0.1
    assert lookup(cfg, "grpo.beta") == 0.25
    assert lookup(cfg, "tree.x.y") == [1]
    assert lookup({"grpo": cfg.grpo}, "grpo.num_generations") == cfg.grpo.num_generations


@pytest.mark.parametrize(
    ("config", "key", "stopped"),
    [
        (TREE, "sft.lr", "lr"),
        (TREE, "grpo.beta", "grpo"),
        (TREE, "seed.x", "x"),  # a value, not a section
        (S(sft=S(lr=1)), "sft.beta", "beta"),
        (S(), "grpo", "grpo"),
    ],
)
def test_lookup_names_the_key_and_where_it_stopped(config: Any, key: str, stopped: str) -> None:
    with pytest.raises(ConfigError) as info:
        lookup(config, key)
    assert str(info.value) == f"no config key {key!r} (stopped at {stopped!r})"


def test_select_gives_each_key_in_order_with_sections_as_plain_json() -> None:
    grpo = GRPOConfig(beta=0.5, rewards={"common.accuracy": 1.0})
    dataset = DatasetConfig(local="data/x", image_size=(640, 480))
    cfg = S(seed=7, grpo=grpo, datasets={"x": dataset})
    values = select(cfg, ["grpo.beta", "seed", "grpo", "datasets.x"])
    assert list(values) == ["grpo.beta", "seed", "grpo", "datasets.x"]
    assert values["grpo.beta"] == 0.5 and values["seed"] == 7
    assert type(values["grpo"]) is dict and values["grpo"] == grpo.model_dump(mode="json")
    assert values["grpo"]["rewards"] == {"common.accuracy": 1.0}
    # JSON mode: a tuple becomes a list, as the params files (JSON, YAML) hold it.
    assert values["datasets.x"]["image_size"] == [640, 480]
    assert values["datasets.x"]["local"] == "data/x"
    assert select(TREE, []) == {}
    with pytest.raises(ConfigError, match=r"no config key 'seed\.x' \(stopped at 'x'\)"):
        select(TREE, ["seed", "seed.x"])


def test_set_dotted_makes_sections_and_replaces_a_whole_section() -> None:
    tree: dict[str, Any] = {"sft": {"enabled": True, "lr": 1}}
    set_dotted(tree, "sft.enabled", False)
    set_dotted(tree, "grpo.extra.kwargs.x", 0.1)
    set_dotted(tree, "seed", 3)
    assert tree == {
        "sft": {"enabled": False, "lr": 1},
        "grpo": {"extra": {"kwargs": {"x": 0.1}}},
        "seed": 3,
    }
    set_dotted(tree, "sft", {"enabled": True})
    assert tree["sft"] == {"enabled": True}


def test_set_dotted_refuses_to_go_through_a_value() -> None:
    tree = {"seed": 0, "sft": {"lr": 1}}
    with pytest.raises(ConfigError) as info:
        set_dotted(tree, "sft.lr.x", 2)
    assert str(info.value) == "config key 'sft.lr.x': 'lr' is not a section"
    with pytest.raises(ConfigError) as info:
        set_dotted(tree, "seed.a.b", 2)
    assert str(info.value) == "config key 'seed.a.b': 'seed' is not a section"
    assert tree == {"seed": 0, "sft": {"lr": 1}}


def test_assign_sets_what_select_read() -> None:
    tree = {"seed": 0, "sft": {"enabled": True, "lr": 1}}
    out = assign(tree, {"seed": 3, "sft.enabled": False, "grpo.beta": 0.1})
    assert out is tree
    assert tree == {"seed": 3, "sft": {"enabled": False, "lr": 1}, "grpo": {"beta": 0.1}}
    # A round trip: the values a stage read, set into an empty tree, read back the same.
    values = select(TREE, ["seed", "sft.extra.a", "sft.enabled"])
    assert select(assign({}, values), list(values)) == values


@pytest.mark.parametrize(
    ("item", "pair"),
    [
        ("grpo.learning_rate=1e-5", ("grpo.learning_rate", 1e-5)),  # YAML 1.1: a string
        ("grpo.beta=0.04", ("grpo.beta", 0.04)),
        ("sft.enabled=false", ("sft.enabled", False)),
        ("seed=3", ("seed", 3)),
        (" seed = 4 ", ("seed", 4)),
        ("benchmarks=[a, b]", ("benchmarks", ["a", "b"])),
        ("grpo.rewards={common.format: 0.5}", ("grpo.rewards", {"common.format": 0.5})),
        ("description=a=b", ("description", "a=b")),  # only the first '=' splits
        ("prompt=think_answer", ("prompt", "think_answer")),
        ("cpu_threads=", ("cpu_threads", None)),
        ("x=1e3", ("x", 1000.0)),
        ("x=-2.5E-3", ("x", -0.0025)),
        ("x=.5e1", ("x", 5.0)),
        # text that float() would also read stays text
        ("description=nan", ("description", "nan")),
        ("prompt=Infinity", ("prompt", "Infinity")),
        ("name=1e5x", ("name", "1e5x")),
    ],
)
def test_parse_overrides_types_values_as_yaml(item: str, pair: tuple[str, Any]) -> None:
    parsed = parse_overrides([item])
    assert parsed == [pair]
    assert type(parsed[0][1]) is type(pair[1])


def test_parse_overrides_keeps_order_and_refuses_a_missing_value() -> None:
    assert parse_overrides([]) == []
    assert parse_overrides(["b=1", "a=x"]) == [("b", 1), ("a", "x")]
    with pytest.raises(ConfigError) as info:
        parse_overrides(["seed=1", "grpo.beta"])
    assert str(info.value) == "override 'grpo.beta' is not of the form key.sub=value"


def test_apply_overrides_sets_each_in_place() -> None:
    tree: dict[str, Any] = {"grpo": {"beta": 0.0, "tasks": ["count"]}}
    out = apply_overrides(tree, ["grpo.beta=0.04", "seed=1", "grpo.tasks=[a]", "new.key=x"])
    assert out is tree
    assert tree == {"grpo": {"beta": 0.04, "tasks": ["a"]}, "seed": 1, "new": {"key": "x"}}
    assert apply_overrides(tree, None) == apply_overrides(tree, []) == tree


def test_key_problems_name_every_key() -> None:
    exc = KeyProblems(("epsilon", "0.3 is above epsilon_high (0.2)"), ("tasks", "empty"))
    assert exc.problems == (("epsilon", "0.3 is above epsilon_high (0.2)"), ("tasks", "empty"))
    assert str(exc) == "epsilon: 0.3 is above epsilon_high (0.2); tasks: empty"
    assert str(KeyProblems(("", "one"))) == ": one"


def test_no_repeats_names_each_repeated_item_once() -> None:
    assert _no_repeats(["b", "a"]) == ["b", "a"]
    assert _no_repeats([]) == []
    with pytest.raises(ValueError) as info:
        _no_repeats(["b", "a", "c", "b", "a", "a"])
    assert str(info.value) == "lists ['a', 'b'] more than once"
    with pytest.raises(ValueError) as info:
        _no_repeats([2, 10, 2])
    assert str(info.value) == "lists ['2'] more than once"
    unique = TypeAdapter(Annotated[list[str], UniqueList])
    assert unique.validate_python(["x", "y"]) == ["x", "y"]
    with pytest.raises(ValidationError, match=r"lists \['x'\] more than once"):
        unique.validate_python(["x", "y", "x"])


@pytest.mark.parametrize(
    ("lo", "hi", "problems"),
    [
        (1, 2, []),
        (2, 2, []),  # equal bounds are in order
        (3, 2, [("min", "3 is above max (2)")]),
        (0.2, 0.1, [("min", "0.2 is above max (0.1)")]),
        (None, 2, []),
        (3, None, []),
        (None, None, []),
    ],
)
def test_order_problems(lo: Any, hi: Any, problems: list[tuple[str, str]]) -> None:
    assert order_problems(S(min=lo, max=hi), "min", "max") == problems
    assert order_problems(S(max=lo, min=hi), "max", "min") == [
        ("max", why.replace("max", "min")) for _, why in problems
    ]


EXPERIMENT = """\
base_model: tiny-qwen2.5-vl
benchmarks: [shapes_test]
sft:
  extra:
    lr_scheduler_kwargs: {min_lr: 0.1}
"""


def test_unknown_marks_name_keys_of_the_experiment(project: Path) -> None:
    path = project / "config" / "experiments" / "marks.yaml"
    known = [
        "seed",
        "sft",
        "image_pixels.min",
        "sft.extra",
        "sft.extra.lr_scheduler_kwargs",
        "sft.extra.lr_scheduler_kwargs.min_lr",
        "grpo.rewards",
    ]
    path.write_text(EXPERIMENT + "unknown:\n" + "".join(f"  {k}: a guess\n" for k in known))
    assert set(load_experiment_file(path).unknown) == set(known)
    wrong = ["nope", "seed.x", "sft.nope", "sft.extra.nope", "sft.extra.lr_scheduler_kwargs.x"]
    path.write_text(EXPERIMENT + "unknown:\n" + "".join(f"  {k}: a guess\n" for k in wrong))
    with pytest.raises(ConfigProblems) as info:
        load_experiment_file(path)
    assert info.value.problems == [
        f"{path}: unknown.{k}: is not a key of the experiment" for k in wrong
    ]
