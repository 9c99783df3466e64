"""The errors a user sees for a bad config file, pinned word for word: the file, the dotted key,
the line of a repeated key, what is wrong (with the value given, but not for a missing key) and
the "did you mean" suggestion for a typo, on real YAML files (vlrl.config.loading)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vlrl.config import (
    ConfigProblems,
    DatasetConfig,
    InferConfig,
    KeyProblems,
    ModelConfig,
    load_dataset,
    load_experiment,
    load_experiment_file,
    load_model,
    load_named,
    load_yaml_model,
    read_yaml,
    validation_problems,
)
from vlrl.config.reading import did_you_mean
from vlrl.core.errors import ConfigError

EXTRA = "Extra inputs are not permitted"
#: What every experiment needs besides the lines under test.
REQUIRED = "base_model: tiny-qwen2.5-vl\nbenchmarks: [shapes_test]\n"


def _experiment(project: Path, name: str, text: str) -> Path:
    path = project / "config" / "experiments" / f"{name}.yaml"
    path.write_text(text)
    return path


def _problems(call, *args) -> list[str]:
    with pytest.raises(ConfigProblems) as caught:
        call(*args)
    assert str(caught.value) == "\n".join(caught.value.problems)
    return caught.value.problems


# did_you_mean ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("word", "known", "prefix", "expected"),
    [
        (
            "learing_rate",
            ["learning_rate", "beta"],
            "grpo.",
            "; did you mean 'grpo.learning_rate'?",
        ),
        ("x", [], "", ""),
        ("surprise", ["seed", "prompt"], "", ""),
        # at most two names, the closest first (difflib breaks ties by the later name)
        ("abcd", ["abce", "abcf", "abcg"], "", "; did you mean 'abcg' or 'abcf'?"),
        # similarity 0.7 is close enough, 0.6 is not
        ("abcdefghij", ["abcdefgxyz"], "", "; did you mean 'abcdefgxyz'?"),
        ("abcde", ["abcxy"], "", ""),
    ],
)
def test_did_you_mean(word: str, known: list[str], prefix: str, expected: str) -> None:
    assert did_you_mean(word, iter(known), prefix) == expected


def test_did_you_mean_has_no_prefix_by_default() -> None:
    assert did_you_mean("sed", ["seed", "prompt"]) == "; did you mean 'seed'?"


# unknown keys and wrong values in an experiment --------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sed: 1\n", [f"sed: {EXTRA} (got 1); did you mean 'seed'?"]),
        ("surprise: 1\n", [f"surprise: {EXTRA} (got 1)"]),
        (
            "grpo:\n  learing_rate: 1\n",
            [f"grpo.learing_rate: {EXTRA} (got 1); did you mean 'grpo.learning_rate'?"],
        ),
        (
            "resources:\n  grpo: {gpu: 1}\n",
            [f"resources.grpo.gpu: {EXTRA} (got 1); did you mean 'resources.grpo.gpus'?"],
        ),
        # through a list of sections
        (
            "data:\n  train:\n    - {dataset: x, split: a, max_sample: 3}\n",
            [f"data.train.0.max_sample: {EXTRA} (got 3); did you mean 'data.train.0.max_samples'?"],
        ),
        # through optional sections, three deep
        (
            "grpo:\n  trust:\n    reward_model: {base_url: 'http://a/v1', model: m, serv: 1}\n",
            [
                f"grpo.trust.reward_model.serv: {EXTRA} (got 1); "
                "did you mean 'grpo.trust.reward_model.serve'?"
            ],
        ),
        # a missing key shows no value; a typo nothing is close to gets no suggestion
        (
            "report:\n  published:\n    - {rows: {base: x}, titel: 2}\n",
            [
                "report.published.0.reference: Field required",
                f"report.published.0.titel: {EXTRA} (got 2)",
            ],
        ),
        # a wrong type names the value and suggests nothing (the key is right)
        (
            "grpo:\n  max_steps: many\n",
            [
                "grpo.max_steps: Input should be a valid integer, unable to parse string as an "
                "integer (got 'many')"
            ],
        ),
        (
            "data: 3\n",
            ["data: Input should be a valid dictionary or instance of DataConfig (got 3)"],
        ),
    ],
)
def test_an_experiment_problem_names_file_key_value_and_suggestion(
    project: Path, text: str, expected: list[str]
) -> None:
    path = _experiment(project, "bad", text + REQUIRED)
    assert _problems(load_experiment, "bad") == [f"{path}: {line}" for line in expected]


def test_a_problem_names_the_ancestor_that_set_the_key(project: Path) -> None:
    parent = _experiment(project, "parent", "grpo:\n  learing_rate: 1\n" + REQUIRED)
    child = _experiment(project, "child", "extends: parent\nseed: 1\nseed: 2\n")
    assert _problems(load_experiment, "child") == [
        # the reading problems first, then the validation ones
        f"{child}: seed: duplicate key (lines 2 and 3); YAML would keep only the last value",
        f"{parent}: grpo.learing_rate: {EXTRA} (got 1); did you mean 'grpo.learning_rate'?",
    ]


def test_an_experiment_file_anywhere_loads_with_overrides(project: Path, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.yaml"
    path.write_text("seed: 3\n" + REQUIRED)
    assert load_experiment_file(path).seed == 3
    assert load_experiment_file(str(path), ["seed=5"]).seed == 5
    _experiment(project, "named", "seed: 3\n" + REQUIRED)
    assert load_experiment("named", ["seed=6", "grpo.max_steps=2"]).grpo.max_steps == 2
    assert load_experiment("named").seed == 3


# missing named files: the folder's names and the closest ---------------------------------------
@pytest.fixture()
def names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root whose config folders hold a few names (and files that are not configs)."""
    for folder in ("experiments", "models", "datasets"):
        (tmp_path / "config" / folder).mkdir(parents=True)
        for name in ("tiny-a.yaml", "tiny-b.yaml", "zeta.yaml", "notes.md", "old.yml"):
            (tmp_path / "config" / folder / name).write_text("description: x\n")
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    return tmp_path


KNOWN = "known: ['tiny-a', 'tiny-b', 'zeta']"


@pytest.mark.parametrize(
    ("load", "kind", "folder"),
    [
        (load_experiment, "experiment", "experiments"),
        (load_model, "model", "models"),
        (load_dataset, "dataset", "datasets"),
    ],
)
@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("tiny-c", "; did you mean 'tiny-b' or 'tiny-a'?"),
        ("zeat", "; did you mean 'zeta'?"),
        ("q", ""),
    ],
)
def test_a_missing_file_lists_the_known_names(
    names: Path, load, kind: str, folder: str, name: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(name)
    path = names / "config" / folder / f"{name}.yaml"
    # a close name is suggested instead of the list; with none, the (few) known names
    expected = hint or f"; {KNOWN}"
    assert str(caught.value) == f"{path}: no such {kind} {name!r}{expected}"


def test_load_named_says_its_kind_and_sets_overrides(names: Path) -> None:
    folder = names / "config" / "references"
    folder.mkdir()
    (folder / "paper.yaml").write_text("description: the file's\n")
    with pytest.raises(ConfigError) as caught:
        load_named(folder / "papr.yaml", ModelConfig, "reference")
    assert str(caught.value) == (
        f"{folder / 'papr.yaml'}: no such reference 'papr'; did you mean 'paper'?"
    )
    path = folder / "paper.yaml"
    assert load_named(path, ModelConfig, "reference").description == "the file's"
    cfg = load_named(path, ModelConfig, "reference", ["description=set", "builder=tiny"])
    assert cfg.description == "set"


def test_named_files_load_valid(names: Path) -> None:
    (names / "config" / "models" / "tiny-a.yaml").write_text(
        "builder: tiny\ntiny: {vocab_size: 700}\n"
    )
    assert load_model("tiny-a").tiny.vocab_size == 700
    (names / "config" / "datasets" / "zeta.yaml").write_text("local: data/zeta\nformat: chartqa\n")
    cfg = load_dataset("zeta")
    assert isinstance(cfg, DatasetConfig) and (cfg.local, cfg.format) == ("data/zeta", "chartqa")


# a dataset's source: the hub, a git repository or a folder ---------------------------------
ONE_OF = "set exactly one of repo_id (a hub dataset), git (a git repository) and local (a folder)"
GIT = "git: https://github.com/Yijia-Xiao/LogicVista\n"
PIN = f"revision: '{'e' * 40}'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("format: chartqa\n", [f"repo_id: {ONE_OF}; none set"]),
        (f"repo_id: o/n\n{GIT}{PIN}", [f"repo_id: {ONE_OF}; repo_id and git set"]),
        (f"{GIT}local: data/n\n", [f"git: {ONE_OF}; git and local set"]),
        (
            f"repo_id: o/n\n{GIT}local: d\n",
            [f"repo_id: {ONE_OF}; repo_id and git and local set"],
        ),
        (
            GIT,
            [
                "revision: is missing: pin a 40-hex commit, or say why none could be found in "
                "unpinned (then `vlrl pin <dataset>` resolves it once, online)"
            ],
        ),
        (f"{GIT}{PIN}unpinned: why\n", ["unpinned: the revision is pinned: remove unpinned"]),
        (
            f"{GIT}revision: main\n",
            ["revision: String should match pattern '^[0-9a-f]{40}$' (got 'main')"],
        ),
        (
            f"git: --upload-pack=x\n{PIN}",
            ["git: String should match pattern '^[^\\s-]\\S*$' (got '--upload-pack=x')"],
        ),
        (
            f"local: d\n{PIN}unpinned: why\n",
            [
                "revision: is for hub and git datasets; this one is local",
                "unpinned: is for hub and git datasets; this one is local",
            ],
        ),
    ],
)
def test_a_dataset_names_the_keys_of_its_source(tmp_path: Path, text: str, expected: list) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    assert _problems(load_yaml_model, path, DatasetConfig) == [
        f"{path}: {line}" for line in expected
    ]


@pytest.mark.parametrize("pin", [PIN, "unpinned: the release names no commit\n"])
def test_a_git_dataset_loads_pinned_or_saying_why_not(tmp_path: Path, pin: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(f"{GIT}{pin}allow_patterns: [data/*]\n")
    cfg = load_yaml_model(path, DatasetConfig)
    assert (cfg.git, cfg.repo_id, cfg.local) == (
        "https://github.com/Yijia-Xiao/LogicVista",
        None,
        None,
    )
    assert (cfg.revision, cfg.allow_patterns) == ("e" * 40 if pin == PIN else None, ["data/*"])


# load_yaml_model --------------------------------------------------------------------------
def test_an_empty_file_is_every_default(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing set\n")
    assert load_yaml_model(path, ModelConfig) == ModelConfig()


@pytest.mark.parametrize(("text", "got"), [("- a\n- b\n", "list"), ("just text\n", "str")])
def test_a_file_that_is_not_a_mapping(tmp_path: Path, text: str, got: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    assert _problems(load_yaml_model, path, ModelConfig) == [
        f"{path}: <top>: must be a mapping, got {got}"
    ]


def test_a_model_file_lists_every_problem_with_suggestions(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("builer: hf\ndescription: a\ndescription: b\ntiny: {hiden_size: 8}\n")
    assert _problems(load_yaml_model, path, ModelConfig) == [
        f"{path}: description: duplicate key (lines 2 and 3); YAML would keep only the last value",
        # pydantic lists a section's own errors before its unknown keys
        f"{path}: tiny.hiden_size: {EXTRA} (got 8); "
        "did you mean 'tiny.hidden_size' or 'tiny.vision_hidden_size'?",
        f"{path}: builer: {EXTRA} (got 'hf'); did you mean 'builder'?",
    ]


def test_load_yaml_model_sets_overrides(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("tiny: {vocab_size: 700}\n")
    cfg = load_yaml_model(path, ModelConfig, ["tiny.vocab_size=800", "description=d"])
    assert (cfg.tiny.vocab_size, cfg.description) == (800, "d")
    assert _problems(load_yaml_model, path, ModelConfig, ["tiny.vocab_sise=8"]) == [
        f"{path}: tiny.vocab_sise: {EXTRA} (got 8); did you mean 'tiny.vocab_size'?"
    ]


# read_yaml --------------------------------------------------------------------------------
def test_read_yaml_refuses_a_repeated_key(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("a:\n  b: 1\n  b: 2\nc: [1, 2]\nc: 3\n")
    assert _problems(read_yaml, path) == [
        f"{path}: a.b: duplicate key (lines 2 and 3); YAML would keep only the last value",
        f"{path}: c: duplicate key (lines 4 and 5); YAML would keep only the last value",
    ]
    path.write_text("a:\n  b: 1\nc: [1, 2]\n")
    assert read_yaml(path) == {"a": {"b": 1}, "c": [1, 2]}


# validation_problems on any model ----------------------------------------------------------
def test_an_error_of_the_whole_document_is_at_top() -> None:
    with pytest.raises(ValidationError) as caught:
        InferConfig.model_validate([1])
    assert validation_problems(caught.value, "e.yaml") == [
        "e.yaml: <top>: Input should be a valid dictionary or instance of InferConfig (got [1])"
    ]


class _Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: int = 0
    gamma: int = 0


class _Other(BaseModel):
    model_config = ConfigDict(extra="forbid")
    beta: int = 0


class _Shapes(BaseModel):
    """Sections reached through every kind of annotation the hint walks: Annotated items, a
    union with a literal (pydantic names the member in the location), a union of models, a
    mapping's values and a tuple's items."""

    model_config = ConfigDict(extra="forbid")
    ann: list[Annotated[_Leaf, Field(description="x")]] = []
    lit: Literal["off"] | _Leaf = "off"
    two: _Leaf | _Other | None = None
    by_name: dict[str, _Leaf] = {}
    pair: tuple[int, _Leaf] | None = None

    @model_validator(mode="after")
    def _not_seven(self) -> _Shapes:
        if self.ann and self.ann[0].alpha == 7:
            raise KeyProblems(("", "seven is not allowed"))
        return self


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"ann": [{"alpah": 1}]}, [f"ann.0.alpah: {EXTRA} (got 1); did you mean 'ann.0.alpha'?"]),
        (
            {"lit": {"gama": 1}},
            [
                "lit.literal['off']: Input should be 'off' (got {'gama': 1})",
                f"lit._Leaf.gama: {EXTRA} (got 1); did you mean 'lit._Leaf.gamma'?",
            ],
        ),
        (
            {"two": {"alpah": 1}},
            [
                f"two._Leaf.alpah: {EXTRA} (got 1); did you mean 'two._Leaf.alpha'?",
                f"two._Other.alpah: {EXTRA} (got 1); did you mean 'two._Other.alpha'?",
            ],
        ),
        (
            {"by_name": {"k": {"alpah": 1}}},
            [f"by_name.k.alpah: {EXTRA} (got 1); did you mean 'by_name.k.alpha'?"],
        ),
        (
            {"pair": [1, {"alpah": 1}]},
            [f"pair.1.alpah: {EXTRA} (got 1); did you mean 'pair.1.alpha'?"],
        ),
        ({"ann": [{"alpha": 7}]}, ["<top>: seven is not allowed"]),
        ({"anns": []}, [f"anns: {EXTRA} (got []); did you mean 'ann'?"]),
    ],
)
def test_suggestions_reach_every_kind_of_section(data: dict, expected: list[str]) -> None:
    with pytest.raises(ValidationError) as caught:
        _Shapes.model_validate(data)
    assert validation_problems(caught.value, Path("s.yaml"), _Shapes) == [
        f"s.yaml: {line}" for line in expected
    ]
    # without the model: the same lines, no suggestions
    plain = [f"s.yaml: {line.split('; did you mean')[0]}" for line in expected]
    assert validation_problems(caught.value, "s.yaml") == plain
    # a function of the dotted key (empty for the whole document) names each line's file
    keys = ["" if line.startswith("<top>") else line.split(": ")[0] for line in expected]
    assert validation_problems(caught.value, lambda key: f"[{key}]", _Shapes) == [
        f"[{key}]: {line}" for key, line in zip(keys, expected, strict=True)
    ]
