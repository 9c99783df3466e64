"""vlrl.workflow.check rule by rule, in a small project of its own (one experiment, one model,
a few benchmarks): each kind of problem ``vlrl check`` reports, with its whole line, and the
cases that are not problems."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from vlrl.config import ConfigProblems, ExperimentConfig
from vlrl.core.errors import ConfigError
from vlrl.workflow import check

REPO = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"
PROMPTS = (
    "['caption_bbox_answer', 'caption_bbox_think_answer', 'od_json', 'rec_baseline', 'rec_json', "
    "'see_think_boxed', 'sophiavl_think', 'think_answer', 'think_boxed']"
)
EXPERIMENT = """\
description: A small one.
prompt: think_answer
base_model: tiny-qwen2.5-vl
grpo:
  max_steps: 2
benchmarks: [shapes_test]
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """params.yaml, the schema, experiment ``small``, the tiny model, shapes_test (and its blank
    twin) and mmvet; no dataset and no reference file."""
    config = tmp_path / "config"
    for folder in ("schema", "experiments", "models", "benchmarks", "datasets", "reference"):
        (config / folder).mkdir(parents=True)
    shutil.copy(REPO / check.SCHEMA, config / "schema")
    shutil.copy(REPO / "config/models/tiny-qwen2.5-vl.yaml", config / "models")
    for bench in ("shapes_test", "shapes_test_blank", "mmvet"):
        shutil.copy(REPO / f"config/benchmarks/{bench}.yaml", config / "benchmarks")
    (config / "experiments" / "small.yaml").write_text(EXPERIMENT)
    (tmp_path / "params.yaml").write_text("experiments: [small]\n")
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.write_text(text)
    return path


def _problems() -> list[str]:
    with pytest.raises(ConfigError) as info:
        check.check_all()
    header, *lines = str(info.value).split("\n")
    assert header == f"{len(lines)} problem(s):"
    return lines


# ---------------------------------------------------------------------------- params
def test_the_files_are_under_the_root(root: Path) -> None:
    assert check.params_file() == root / "params.yaml"
    assert check.schema_file() == root / "config" / "schema" / "params.schema.yaml"


def test_params_problems_name_the_source_and_key_in_key_order(root: Path) -> None:
    assert check.params_problems({"experiments": ["small"]}) == []
    assert check.params_problems({"experiments": [1, "bad name"], "container": 3}, "P") == [
        "P: container: 3 is not of type 'string', 'null'",
        "P: experiments.0: 1 is not of type 'string'",
        "P: experiments.1: 'bad name' does not match '^[A-Za-z0-9][A-Za-z0-9_.-]*$'",
    ]
    assert check.params_problems(["x"]) == ["params.yaml: <top>: ['x'] is not of type 'object'"]


def test_an_unknown_key_gets_a_suggestion_when_any_is_close(root: Path) -> None:
    assert check.params_problems({"experiments": ["small"], "seeds": [1]}) == [
        "params.yaml: <top>: Additional properties are not allowed ('seeds' was unexpected)"
    ]
    assert check.params_problems({"experiment": 1, "zzzzqq": 2}, "P") == [
        "P: experiment: not a key of params.yaml; did you mean 'experiments'?",
        "P: zzzzqq: not a key of params.yaml",
    ]
    # the problems after a suggestion are listed too
    assert check.params_problems({"experiment": 1, "container": 3}, "P") == [
        "P: experiment: not a key of params.yaml; did you mean 'experiments'?",
        "P: container: 3 is not of type 'string', 'null'",
    ]


def test_an_unknown_nested_key_is_named_under_its_section(root: Path) -> None:
    (root / check.SCHEMA).write_text(
        "type: object\nadditionalProperties: false\nproperties:\n"
        "  slurm:\n    type: object\n    additionalProperties: false\n"
        "    properties: {account: {type: string}, partition: {type: string}}\n"
        "  retired: false\n"  # a boolean schema: no value is valid
    )
    # (jsonschema 4.26 gives a boolean schema's error no path: not pinned here)
    (retired,) = check.params_problems({"retired": 1}, "P")
    assert retired.startswith("P: ") and retired.endswith(": False schema does not allow 1")
    assert check.params_problems({"slurm": {"accout": "a", "partition": "p"}}, "P") == [
        "P: slurm.accout: not a key of params.yaml; did you mean 'account'?"
    ]
    assert check.params_problems({"slurm": {"zzzzqq": "a"}}, "P") == [
        "P: slurm: Additional properties are not allowed ('zzzzqq' was unexpected)"
    ]


@pytest.mark.parametrize(
    ("text", "problems", "names"),
    [
        ("", [], []),
        ("experiments: [small, 3, other]\n", ["experiments.1: 3 is not of type 'string'"],
         ["small", "other"]),
        ("experiments: small\n", ["experiments: 'small' is not of type 'array'"], []),
        ("- small\n", ["<top>: ['small'] is not of type 'object'"], []),
        ("container: x\ncontainer: y\nexperiments: [a]\nexperiments: [b]\n",
         ["container: duplicate key (lines 1 and 2); YAML would keep only the last value",
          "experiments: duplicate key (lines 3 and 4); YAML would keep only the last value"], []),
    ],
)  # fmt: skip
def test_check_params_reads_the_file_and_its_experiment_names(
    root: Path, text: str, problems: list[str], names: list[str]
) -> None:
    _write(root, "params.yaml", text)
    assert check.check_params() == ([f"{root / 'params.yaml'}: {p}" for p in problems], names)


def test_check_params_of_a_missing_file(root: Path) -> None:
    (root / "params.yaml").unlink()
    assert check.check_params() == ([f"{root / 'params.yaml'}: no such file"], [])


def test_lines_of_one_error_or_of_several() -> None:
    assert check._lines(ConfigError("one")) == ["one"]
    assert check._lines(ConfigProblems(["a", "b"])) == ["a", "b"]


# -------------------------------------------------------------------------- registry
def _cfg(**changes) -> NS:
    """What registry_problems reads, of a valid experiment."""
    fields = {
        "prompt": "think_answer",
        "infer": NS(prompt=None),
        "grpo": NS(rewards={"common.accuracy": 1.0}),
        "benchmarks": ["shapes_test"],
        "score": NS(protocol={}, judge=None),
    }
    return NS(**{**fields, **changes})


def test_a_valid_experiment_has_no_registry_problem(root: Path) -> None:
    assert check.registry_problems(_cfg(), "e.yaml") == []
    assert check.registry_problems(_cfg(infer=NS(prompt="think_boxed")), "e.yaml") == []


def test_unknown_prompts_and_rewards(root: Path) -> None:
    cfg = _cfg(
        prompt="nope",
        infer=NS(prompt="think_answr"),
        grpo=NS(rewards={"common.acc": 1.0, "common.format": 0.5}),
    )
    assert check.registry_problems(cfg, "e.yaml") == [
        f"e.yaml: prompt: 'nope' is not one of {PROMPTS}",
        f"e.yaml: infer.prompt: 'think_answr' is not one of {PROMPTS}",
        "e.yaml: grpo.rewards: unknown reward 'common.acc'; did you mean 'common.accuracy'?",
    ]


def test_no_grpo_section_and_no_score_section(root: Path) -> None:
    cfg = NS(prompt="think_answer", grpo=None, benchmarks=["shapes_test", "mmvet", "nada"])
    assert check.registry_problems(cfg, "e.yaml") == [
        "e.yaml: benchmarks.2: 'nada' has no file config/benchmarks/nada.yaml; known: "
        "['mmvet', 'shapes_test', 'shapes_test_blank']"
    ]


def test_a_missing_benchmark_gets_a_suggestion_or_the_count(root: Path) -> None:
    cfg = _cfg(benchmarks=["shapes_tst", "zzz"])
    for i in range(6):
        _write(root, f"config/benchmarks/other{i}.yaml", "")
    _write(root, "config/benchmarks/notes.txt", "")
    assert check.registry_problems(cfg, "e.yaml") == [
        "e.yaml: benchmarks.0: 'shapes_tst' has no file config/benchmarks/shapes_tst.yaml; did "
        "you mean 'shapes_test' or 'shapes_test_blank'?",
        "e.yaml: benchmarks.1: 'zzz' has no file config/benchmarks/zzz.yaml; 9 known, in "
        "config/benchmarks/",
    ]


def test_score_choices_must_name_the_experiments_benchmarks(root: Path) -> None:
    cfg = _cfg(
        benchmarks=["shapes_test", "mmvet"],
        score=NS(
            protocol={"shapes_test": "vlmevalkit_2505", "other": "vlrl"},
            judge=NS(benchmarks={"mmvet": "always", "zz": "fallback"}),
        ),
    )
    assert check.registry_problems(cfg, "e.yaml") == [
        "e.yaml: score.protocol.other: 'other' is not one of the experiment's benchmarks "
        "['shapes_test', 'mmvet']",
        "e.yaml: score.judge.benchmarks.zz: 'zz' is not one of the experiment's benchmarks "
        "['shapes_test', 'mmvet']",
    ]


def test_a_judges_protocol_needs_the_experiments_judge(root: Path) -> None:
    cfg = _cfg(benchmarks=["shapes_test", "mmvet"])
    assert check.registry_problems(cfg, "e.yaml") == [
        "e.yaml: benchmarks.1: 'mmvet' is scored by protocol 'mmvet_official', an LLM judge's, "
        "but score.judge is not set"
    ]
    judged = _cfg(benchmarks=["mmvet"], score=NS(protocol={}, judge=NS(benchmarks={})))
    assert check.registry_problems(judged, "e.yaml") == []


def test_a_chosen_protocol_the_benchmark_lacks(root: Path) -> None:
    cfg = _cfg(score=NS(protocol={"shapes_test": "mmvet_official"}, judge=None))
    assert check.registry_problems(cfg, "e.yaml") == [
        "e.yaml: score.protocol.shapes_test: 'mmvet_official' is not a protocol benchmark "
        f"shapes_test supports ({root / 'config/benchmarks/shapes_test.yaml'}: protocols "
        "['vlrl', 'vlmevalkit_2505', 'vlmevalkit_2608'])"
    ]


def test_unknown_protocols_of_a_benchmark_are_its_files_problems(root: Path) -> None:
    _write(
        root, "config/benchmarks/odd.yaml", "loader: experiment_split\nprotocols: [vlrll, zzz]\n"
    )
    assert check._protocol_problems("e.yaml", 0, "odd", NS(protocol={}, judge=None)) == [
        "config/benchmarks/odd.yaml: protocols: 'vlrll' is not a scoring protocol; did you mean "
        "'vlrl'?",
        "config/benchmarks/odd.yaml: protocols: 'zzz' is not a scoring protocol; 14 known, in "
        "`vlrl protocols`",
    ]


def test_an_invalid_benchmark_file_has_no_protocol_problem_here(root: Path) -> None:
    _write(root, "config/benchmarks/broken.yaml", "loader: nope\n")
    assert check._protocol_problems("e.yaml", 0, "broken", NS(protocol={}, judge=None)) == []


# ----------------------------------------------------------------------------- names
def test_names_of_an_invalid_file_take_the_defaults_of_wrong_types() -> None:
    names = check._names(
        {"prompt": 3, "grpo": {"rewards": {"a.b": "x", 1: 2}}, "benchmarks": ["x", 3]}
    )
    assert (names.prompt, names.grpo.rewards, names.benchmarks) == (
        "think_answer",
        {"a.b": 1.0, "1": 1.0},
        ["x"],
    )
    names = check._names({"prompt": "p", "grpo": [], "benchmarks": "x"})
    assert (names.prompt, names.grpo.rewards, names.benchmarks) == (
        "p",
        {"common.format": 0.5, "common.accuracy": 1.0},
        [],
    )
    names = check._names({"grpo": {"rewards": ["a"]}})
    assert names.grpo.rewards == {"common.format": 0.5, "common.accuracy": 1.0}
    assert isinstance(names, ExperimentConfig)


# ------------------------------------------------------------------------ experiments
def test_a_valid_experiment_comes_back_with_no_problem(root: Path) -> None:
    cfg, problems = check.experiment_problems("small", ["grpo.max_steps=3"])
    assert problems == [] and cfg.grpo.max_steps == 3
    assert check.load_checked("small", ["seed=5"]).seed == 5


def test_an_invalid_experiment_lists_schema_and_registry_problems(root: Path) -> None:
    path = _write(
        root,
        "config/experiments/bad.yaml",
        EXPERIMENT.replace("prompt: think_answer", "prompt: nope\nseed: zero"),
    )
    cfg, problems = check.experiment_problems("bad")
    assert cfg is None
    assert problems == [
        f"{path}: seed: Input should be a valid integer, unable to parse string as an integer "
        "(got 'zero')",
        f"{path}: prompt: 'nope' is not one of {PROMPTS}",
    ]
    with pytest.raises(ConfigProblems) as info:
        check.load_checked("bad")
    assert info.value.problems == problems


def test_overrides_reach_the_names_of_an_invalid_experiment(root: Path) -> None:
    cfg, problems = check.experiment_problems("small", ["seed=zero", "prompt=nope"])
    assert cfg is None
    assert (
        problems[-1]
        == f"{root / 'config/experiments/small.yaml'}: prompt: 'nope' is not one of {PROMPTS}"
    )
    assert len(problems) == 2


def test_extra_problems_of_an_experiment_name_its_file(root: Path) -> None:
    cfg, problems = check.experiment_problems("small", ["grpo.extra={no_such_option: 1}"])
    assert cfg is None
    assert problems == [
        f"{root / 'config/experiments/small.yaml'}: grpo.extra.no_such_option: is not an option "
        "of TRL's GRPOConfig"
    ]


def test_a_missing_experiment_is_one_problem(root: Path) -> None:
    assert check.experiment_problems("nope") == (
        None,
        [f"{root / 'config/experiments/nope.yaml'}: no such experiment 'nope'; known: ['small']"],
    )


def test_a_valid_schema_with_a_registry_problem_has_no_config(root: Path) -> None:
    cfg, problems = check.experiment_problems("small", ["infer.prompt=nope"])
    assert cfg is None
    assert problems == [
        f"{root / 'config/experiments/small.yaml'}: infer.prompt: 'nope' is not one of {PROMPTS}"
    ]


def test_every_kind_of_problem_of_a_valid_schema_is_listed(root: Path) -> None:
    _write(
        root,
        "config/experiments/many.yaml",
        EXPERIMENT.replace("[shapes_test]", "[shapes_test, zzz]")
        + "report:\n  published:\n    - {reference: nope, rows: {base: x}}\n",
    )
    _, problems = check.experiment_problems(
        "many",
        [
            "grpo.rewards={sophiavl.thinking: 1.0}",
            "grpo.use_vllm=true",
            "grpo.vllm_tensor_parallel_size=3",
        ],
    )
    path = root / "config/experiments/many.yaml"
    assert problems == [
        f"{path}: benchmarks.1: 'zzz' has no file config/benchmarks/zzz.yaml; known: "
        "['mmvet', 'shapes_test', 'shapes_test_blank']",
        f"{path}: grpo.reward_model: grpo.rewards lists sophiavl.thinking but grpo.reward_model "
        "(base_url, model) is missing",
        f"{path}: report.published.0.reference: 'nope' has no file config/reference/nope.yaml; "
        "known: []",
        f"{path}: grpo.vllm_tensor_parallel_size: tensor parallelism over 3 GPUs cannot split 4 "
        "attention heads (2 key/value) evenly; vLLM refuses it at start. Sizes that can: 1, 2, "
        "4 (base model tiny-qwen2.5-vl)",
    ]


# --------------------------------------------------------------------------- rewards
def test_reward_problems_name_missing_settings_and_added_rewards() -> None:
    grpo = NS(rewards={"common.accuracy": 1.0}, algorithm="grpo", reward_model=None)
    assert check.reward_problems(NS(grpo=grpo), "e.yaml") == []
    grpo = NS(rewards={"sophiavl.thinking": 1.0}, algorithm="grpo", reward_model=NS())
    assert check.reward_problems(NS(grpo=grpo), "e.yaml") == []
    grpo = NS(rewards={"common.accuracy": 1.0}, algorithm="trust_grpo", reward_model=None)
    assert check.reward_problems(NS(grpo=grpo), "e.yaml") == []
    grpo = NS(
        rewards={"sophiavl.thinking": 1.0, "common.accuracy": 1.0},
        algorithm="trust_grpo",
        reward_model=None,
    )
    assert check.reward_problems(NS(grpo=grpo), "e.yaml") == [
        "e.yaml: grpo.reward_model: grpo.rewards lists sophiavl.thinking but grpo.reward_model "
        "(base_url, model) is missing",
        "e.yaml: grpo.rewards: grpo.rewards lists sophiavl.thinking under trust_grpo, which adds "
        "the thinking reward itself; list only the outcome rewards",
    ]


def test_an_added_reward_is_named_by_the_last_part_of_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vlrl.algorithms

    monkeypatch.setitem(vlrl.algorithms.ADDED_REWARDS, "grpo", "team.judge.thinking")
    grpo = NS(rewards={"team.judge.thinking": 1.0}, algorithm="grpo", reward_model=None)
    assert check.reward_problems(NS(grpo=grpo), "e.yaml") == [
        "e.yaml: grpo.rewards: grpo.rewards lists team.judge.thinking under grpo, which adds the "
        "thinking reward itself; list only the outcome rewards"
    ]


def test_extra_options_must_be_trls_and_not_vlrls() -> None:
    from vlrl.config import GRPOConfig

    assert check.extra_problems(NS(grpo=GRPOConfig()), "e.yaml") == []
    grpo = GRPOConfig(extra={"no_such_option": 1, "learning_rate": 0.1})
    assert check.extra_problems(NS(grpo=grpo), "e.yaml") == [
        "e.yaml: grpo.extra.no_such_option: is not an option of TRL's GRPOConfig",
        "e.yaml: grpo.extra.learning_rate: vlrl sets it from the grpo section; set the grpo key "
        "instead",
    ]


def test_published_links_are_checked_for_each_link(root: Path) -> None:
    links = (NS(reference="nope", rows={}), NS(reference="gone", rows={}))
    assert check.published_problems(NS(report=NS(published=links)), "e.yaml") == [
        "e.yaml: report.published.0.reference: 'nope' has no file config/reference/nope.yaml; "
        "known: []",
        "e.yaml: report.published.1.reference: 'gone' has no file config/reference/gone.yaml; "
        "known: []",
    ]


# -------------------------------------------------------------------------- parallel
def _engines(base_model: str, **changes) -> NS:
    grpo = {
        "enabled": True,
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_tensor_parallel_size": 1,
        "vllm_server_gpus": 0,
    }
    grpo.update(changes.pop("grpo", {}))
    fields = {
        "base_model": base_model,
        "benchmarks": ["shapes_test"],
        "infer": NS(backend="vllm"),
        "resources": NS(infer=NS(gpus=0)),
        "grpo": NS(**grpo),
    }
    return NS(**{**fields, **changes})


@pytest.fixture
def three_heads(root: Path) -> str:
    """A hub model of 3 attention heads: one engine takes 1 or 3 GPUs."""
    _write(
        root,
        "config/models/three.yaml",
        f"builder: hf\nhf: {{repo_id: o/three, revision: '{SHA}'}}\n"
        "attention_heads: {text: 3, text_kv: 3}\n",
    )
    return "three"


PROBLEM = (
    "tensor parallelism over {n} GPUs cannot split 3 attention heads (3 key/value) evenly; vLLM "
    "refuses it at start. Sizes that can: 1, 3 (base model three)"
)


def test_no_gpu_asked_is_one_gpu_per_engine(three_heads: str) -> None:
    assert check.parallel_problems(_engines(three_heads), "e.yaml") == []
    server = _engines(three_heads, grpo={"vllm_mode": "server"})
    assert check.parallel_problems(server, "e.yaml") == []


def test_each_engine_is_held_to_the_heads(three_heads: str) -> None:
    infer = _engines(three_heads, resources=NS(infer=NS(gpus=2)))
    assert check.parallel_problems(infer, "e.yaml") == [
        "e.yaml: resources.infer.gpus: " + PROBLEM.format(n=2)
    ]
    colocate = _engines(three_heads, grpo={"vllm_tensor_parallel_size": 2})
    assert check.parallel_problems(colocate, "e.yaml") == [
        "e.yaml: grpo.vllm_tensor_parallel_size: " + PROBLEM.format(n=2)
    ]
    server = _engines(three_heads, grpo={"vllm_mode": "server", "vllm_server_gpus": 2})
    assert check.parallel_problems(server, "e.yaml") == [
        "e.yaml: grpo.vllm_server_gpus: " + PROBLEM.format(n=2)
    ]


def test_engines_that_do_not_run_are_not_held(three_heads: str) -> None:
    for cfg in (
        _engines(three_heads, benchmarks=[], resources=NS(infer=NS(gpus=2))),
        _engines(three_heads, infer=NS(backend="hf"), resources=NS(infer=NS(gpus=2))),
        _engines(three_heads, grpo={"enabled": False, "vllm_tensor_parallel_size": 2}),
        _engines(three_heads, grpo={"use_vllm": False, "vllm_tensor_parallel_size": 2}),
        _engines(three_heads, grpo={"vllm_mode": "server", "vllm_tensor_parallel_size": 2}),
        _engines(
            three_heads, grpo={"enabled": False, "vllm_mode": "server", "vllm_server_gpus": 2}
        ),
        _engines(
            three_heads, grpo={"use_vllm": False, "vllm_mode": "server", "vllm_server_gpus": 2}
        ),
        _engines(three_heads, grpo={"vllm_server_gpus": 2}),
    ):
        assert check.parallel_problems(cfg, "e.yaml") == [], cfg


def test_models_without_heads_or_file_are_not_held(root: Path) -> None:
    _write(
        root, "config/models/plain.yaml", f"builder: hf\nhf: {{repo_id: o/p, revision: '{SHA}'}}\n"
    )
    assert (
        check.parallel_problems(_engines("plain", grpo={"vllm_tensor_parallel_size": 7}), "e") == []
    )
    assert (
        check.parallel_problems(_engines("absent", grpo={"vllm_tensor_parallel_size": 7}), "e")
        == []
    )


# ---------------------------------------------------------------------- other files
def test_check_each_lists_the_problems_and_logs_what_is_fine(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def load(name: str) -> None:
        if name == "one":
            raise ConfigError("one: bad")
        if name == "two":
            raise ConfigProblems(["two: a", "two: b"])

    with caplog.at_level(logging.DEBUG, logger="vlrl.workflow.check"):
        assert check._check_each("thing", ["one", "fine", "two"], load) == [
            "one: bad",
            "two: a",
            "two: b",
        ]
    assert caplog.messages == ["thing fine: ok"]


def test_stems_are_the_sorted_yaml_files(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yaml", "c.txt", "d.yml"):
        (tmp_path / name).write_text("")
    assert check._stems(tmp_path) == ["a", "b"]


def test_a_dataset_format_must_exist(root: Path) -> None:
    _write(root, "config/datasets/good.yaml", "local: data/x\nformat: mmvet\n")
    _write(root, "config/datasets/plain.yaml", "local: data/x\n")
    path = _write(root, "config/datasets/odd.yaml", "local: data/x\nformat: mmvett\n")
    assert check._checked_dataset("good").format == "mmvet"
    assert check._checked_dataset("plain").format is None
    with pytest.raises(ConfigProblems) as info:
        check._checked_dataset("odd")
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{path}: format: 'mmvett' is not one of ['chartqa', ")


def test_a_benchmarks_names_must_exist(root: Path) -> None:
    _write(root, "config/datasets/here.yaml", "local: data/x\n")
    _write(
        root,
        "config/benchmarks/odd.yaml",
        "loader: records\ndataset: absent\nfile: t.jsonl\nprompt: nope\njudge: {prompt: mmvett}\n",
    )
    with pytest.raises(ConfigProblems) as info:
        check._checked_benchmark("odd")
    path = root / "config/benchmarks/odd.yaml"
    assert info.value.problems[0] == f"{path}: prompt: 'nope' is not one of {PROMPTS}"
    assert info.value.problems[1].startswith(f"{path}: judge.prompt: 'mmvett' is not one of [")
    assert "'mmvet'" in info.value.problems[1]
    assert info.value.problems[2:] == [
        f"{path}: dataset: 'absent' has no file config/datasets/absent.yaml; known: ['here']"
    ]


def test_a_benchmark_whose_names_exist_is_fine(root: Path) -> None:
    _write(root, "config/datasets/mmvet.yaml", "local: data/x\n")
    assert check._checked_benchmark("mmvet").judge.prompt == "mmvet"
    _write(
        root,
        "config/benchmarks/bare.yaml",
        "loader: experiment_split\nprotocols: [vlrl]\nprompt: think_boxed\n",
    )
    assert check._checked_benchmark("bare").dataset is None


def test_a_blank_twin_is_checked_in_its_twins_file_only(root: Path) -> None:
    _write(root, "config/datasets/mmvet.yaml", "local: data/x\n")
    twin = root / "config/benchmarks/shapes_test.yaml"
    twin.write_text(twin.read_text() + "prompt: nope\n")
    assert check._checked_benchmark("shapes_test_blank").blank_images_of == "shapes_test"
    assert _problems() == [f"{twin}: prompt: 'nope' is not one of {PROMPTS}"]


# ------------------------------------------------------------------------- check_all
def test_check_all_of_a_valid_project_logs_what_it_checked(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _write(root, "config/datasets/mmvet.yaml", "local: data/x\n")
    with caplog.at_level(logging.DEBUG, logger="vlrl.workflow.check"):
        check.check_all()
    assert [r.getMessage() for r in caplog.records if r.name == "vlrl.workflow.check"] == [
        "model tiny-qwen2.5-vl: ok",
        "dataset mmvet: ok",
        "benchmark mmvet: ok",
        "benchmark shapes_test: ok",
        "benchmark shapes_test_blank: ok",
        "ok: params.yaml, 1 experiments, 1 models, 1 datasets, 3 benchmarks, 0 references",
    ]


def test_check_all_lists_every_files_problems(root: Path) -> None:
    _write(root, "params.yaml", "experiments: [small, missing]\n")
    model = _write(root, "config/models/broken.yaml", "builder: nope\n")
    dataset = _write(root, "config/datasets/odd.yaml", "local: x\nformat: zz\n")
    _write(root, "config/reference/bad.yaml", "paper: 1\n")
    experiment = _write(root, "config/experiments/bad.yaml", EXPERIMENT + "seed: zero\n")
    lines = _problems()
    assert lines[0] == (
        f"{root / 'params.yaml'}: experiments: 'missing' has no file "
        "config/experiments/missing.yaml; known: ['bad', 'small']"
    )
    assert lines[1].startswith(f"{model}: builder: ")
    assert lines[2].startswith(f"{dataset}: format: 'zz' is not one of [")
    # mmvet names dataset mmvet, which this project lacks
    assert lines[3] == (
        f"{root / 'config/benchmarks/mmvet.yaml'}: dataset: 'mmvet' has no file "
        "config/datasets/mmvet.yaml; known: ['odd']"
    )
    reference = [line for line in lines if line.startswith(str(root / "config/reference"))]
    assert reference and lines[4 : 4 + len(reference)] == reference
    assert lines[4 + len(reference) :] == [
        f"{experiment}: seed: Input should be a valid integer, unable to parse string as an "
        "integer (got 'zero')"
    ]
