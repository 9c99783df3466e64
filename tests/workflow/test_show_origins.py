"""vlrl.workflow.show: each resolved key's line (value, origin, unknown flag, cited note), the
``--only-set`` selection, the header and deviations of ``vlrl show``, its records, and the
"as trained" summary for each kind of horizon, on a parent and a child experiment of a scratch
project."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.config import load_experiment
from vlrl.workflow import show

PARENT = """\
seed: 3  # the paper's seed
prompt: think_answer
base_model: tiny-qwen2.5-vl
image_pixels:
  max: 20000
grpo:
  max_steps: 5
  rewards:
    common.accuracy: 1.0
benchmarks: [shapes_test]
unknown:
  grpo.beta: not given in the paper
  seed: the paper says 3 once
deviations:
  seed: ours
  prompt: theirs
"""
CHILD = """\
extends: par
description: The child.
grpo:
  # a cited step count
  max_steps: 7
"""
THINK_ANSWER = [
    "# prompt think_answer, a question with one image as the model sees it:",
    "#   (om-ai-lab/VLM-R1 @ 90052f4: qwen_module.py get_question_template default + "
    "grpo_jsonl.py format_reward)",
    "#   user: '<image>{question} First output the thinking process in <think> </think> tags "
    "and then output the final answer in <answer> </answer> tags.'",
]


@pytest.fixture
def experiments(project: Path) -> Path:
    folder = project / "config" / "experiments"
    (folder / "par.yaml").write_text(PARENT)
    (folder / "kid.yaml").write_text(CHILD)
    return folder


def _by_key(rows: list[show.Shown]) -> dict[str, show.Shown]:
    return {row.key: row for row in rows}


# ------------------------------------------------------------------------------ helpers
def test_a_line_shows_value_origin_flag_and_note() -> None:
    assert show.Shown("a.b", 3, "f.yaml:2").line() == "a.b = 3  (f.yaml:2)"
    assert show.Shown("a", "x", "default", "why", True).line() == (
        "a = x  (default)  [UNKNOWN in the sources]  # why"
    )
    assert show.Shown("a", None, "--set", "cited").line() == "a = null  (--set)  # cited"


def test_text_is_json_but_for_strings_and_keeps_non_ascii() -> None:
    assert show._text("ünïcode [x]") == "ünïcode [x]"
    assert show._text(["é", 1.5, None, True]) == '["é", 1.5, null, true]'
    assert show._text({"k": "ß"}) == '{"k": "ß"}'


def test_relative_is_from_the_project_root(project: Path) -> None:
    assert show._relative(str(project / "config" / "a.yaml")) == "config/a.yaml"
    assert show._relative("config/b.yaml") == "config/b.yaml"  # from the root, the cwd here
    assert show._relative("/elsewhere/c.yaml") == "/elsewhere/c.yaml"


def test_leaves_are_dotted_keys_and_an_empty_mapping_is_a_leaf() -> None:
    tree = {"a": {"b": 1, "c": {}, "d": {"e": [1]}}, "f": "g"}
    assert show._leaves(tree, "") == [("a.b", 1), ("a.c", {}), ("a.d.e", [1]), ("f", "g")]
    assert show._leaves({"x": 1}, "top") == [("top.x", 1)]
    assert show._leaves({}, "top") == [("top", {})]


# -------------------------------------------------------------------------------- shown
def test_every_key_has_its_origin(experiments: Path) -> None:
    rows = _by_key(show.shown("kid", ["infer.batch_size=4"]))
    assert rows["grpo.max_steps"] == show.Shown(
        "grpo.max_steps", 7, "config/experiments/kid.yaml:5", "a cited step count"
    )
    assert rows["grpo.rewards.common.accuracy"] == show.Shown(
        "grpo.rewards.common.accuracy", 1.0, "config/experiments/par.yaml:9"
    )
    assert rows["infer.batch_size"] == show.Shown("infer.batch_size", 4, "--set")
    assert rows["sft.image_max_pixels"] == show.Shown(
        "sft.image_max_pixels", 20000, "derived from image_pixels.max"
    )
    assert rows["score.confidence"] == show.Shown("score.confidence", 0.95, "default")
    assert rows["grpo.beta"] == show.Shown(
        "grpo.beta", 0.0, "default", "not given in the paper", True
    )
    assert rows["seed"] == show.Shown(
        "seed", 3, "config/experiments/par.yaml:1", "the paper says 3 once; the paper's seed", True
    )
    assert not [key for key in rows if key.startswith(("unknown", "deviations"))]
    assert list(rows)[:4] == ["description", "extends", "reported", "seed"]


# ----------------------------------------------------------------------------- selected
def test_only_set_of_a_child_is_its_own_file_and_the_overrides(experiments: Path) -> None:
    cfg, chain, rows = show.selected("kid", ["infer.batch_size=4"], only_set=True)
    assert cfg.grpo.max_steps == 7 and cfg.infer.batch_size == 4
    assert [Path(f).name for f in chain] == ["kid.yaml", "par.yaml"]
    assert [(r.key, r.origin) for r in rows] == [
        ("description", "config/experiments/kid.yaml:2"),
        ("extends", "config/experiments/kid.yaml:1"),
        ("grpo.max_steps", "config/experiments/kid.yaml:5"),
        ("infer.batch_size", "--set"),
    ]


def test_only_set_of_an_experiment_without_parent_leaves_out_the_defaults(
    experiments: Path,
) -> None:
    _, chain, rows = show.selected("par", only_set=True)
    assert [Path(f).name for f in chain] == ["par.yaml"]
    assert [r.key for r in rows] == [
        "seed",
        "prompt",
        "image_pixels.max",
        "base_model",
        "sft.image_max_pixels",
        "sft.image_min_pixels",
        "grpo.rewards.common.accuracy",
        "grpo.max_steps",
        "grpo.image_max_pixels",
        "grpo.image_min_pixels",
        "infer.max_new_tokens",
        "benchmarks",
    ]  # not grpo.beta: unknown, but at its default


def test_without_only_set_every_key_is_shown(experiments: Path) -> None:
    assert len(show.selected("kid")[2]) == len(show.shown("kid"))
    assert len(show.selected("par")[2]) == len(show.shown("par"))


def test_selected_validates_as_vlrl_check_does(experiments: Path) -> None:
    from vlrl.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"grpo\.rewards: .*'common\.acuracy'"):
        show.selected("par", ["grpo.rewards={common.acuracy: 1.0}"])


# ------------------------------------------------------------------------------- render
def test_render_of_a_child_with_only_set(experiments: Path) -> None:
    text = show.render("kid", ["infer.batch_size=4"], only_set=True)
    assert text.splitlines() == [
        "# kid: The child.",
        "# files: config/experiments/kid.yaml ← config/experiments/par.yaml",
        "# only what differs from par (this file and --set)",
        "description = The child.  (config/experiments/kid.yaml:2)",
        "extends = par  (config/experiments/kid.yaml:1)",
        "grpo.max_steps = 7  (config/experiments/kid.yaml:5)  # a cited step count",
        "infer.batch_size = 4  (--set)",
        "",
        "# as trained:",
        "#   sft: from tiny-qwen2.5-vl; a schedule of 2.0 epochs, boxes in the original frame",
        "#   grpo: from the sft output of tiny-qwen2.5-vl; stops at step 7 of a schedule of 7 "
        "steps",
        *THINK_ANSWER,
        "",
        "# deviations from the sources:",
        "#   seed: ours",
        "#   prompt: theirs",
    ]


def test_render_without_description_deviations_or_parent(project: Path) -> None:
    (project / "config" / "experiments" / "bare.yaml").write_text(
        "base_model: tiny-qwen2.5-vl\nbenchmarks: [shapes_test]\ngrpo: {enabled: false}\n"
        "sft: {enabled: false}\n"
    )
    lines = show.render("bare", only_set=True).splitlines()
    assert lines == [
        "# bare",
        "# files: config/experiments/bare.yaml",
        "base_model = tiny-qwen2.5-vl  (config/experiments/bare.yaml:1)",
        "sft.enabled = false  (config/experiments/bare.yaml:4)",
        "sft.image_max_pixels = 12544  (derived from image_pixels.max)",
        "sft.image_min_pixels = 3136  (derived from image_pixels.min)",
        "grpo.enabled = false  (config/experiments/bare.yaml:3)",
        "grpo.image_max_pixels = 12544  (derived from image_pixels.max)",
        "grpo.image_min_pixels = 3136  (derived from image_pixels.min)",
        "infer.max_new_tokens = 2048  (derived from grpo.max_completion_length)",
        'benchmarks = ["shapes_test"]  (config/experiments/bare.yaml:2)',
        "",
        "# as trained:",
        *THINK_ANSWER,
    ]


def test_render_of_every_key_has_no_only_set_line(experiments: Path) -> None:
    lines = show.render("kid").splitlines()
    assert lines[:3] == [
        "# kid: The child.",
        "# files: config/experiments/kid.yaml ← config/experiments/par.yaml",
        "description = The child.  (config/experiments/kid.yaml:2)",
    ]
    assert len(lines) == 2 + len(show.shown("kid")) + 1 + 6 + 4


def test_the_header_keeps_a_description_ending_in_any_letter(experiments: Path) -> None:
    kid = experiments / "kid.yaml"
    kid.write_text(kid.read_text().replace("The child.", "Ablation X"))
    assert show.render("kid").splitlines()[0] == "# kid: Ablation X"


def test_rows_are_the_shown_lines_as_records(experiments: Path) -> None:
    assert show.rows("kid", ["infer.batch_size=4"], only_set=True)[2:] == [
        {
            "key": "grpo.max_steps",
            "value": 7,
            "origin": "config/experiments/kid.yaml:5",
            "note": "a cited step count",
            "unknown": False,
        },
        {"key": "infer.batch_size", "value": 4, "origin": "--set", "note": "", "unknown": False},
    ]
    every = show.rows("par")
    assert [row["key"] for row in every] == [row.key for row in show.shown("par")]
    (seed,) = [row for row in every if row["key"] == "seed"]
    assert seed["unknown"] is True


# --------------------------------------------------------------------------- as_trained
def test_sft_stopped_early_and_no_grpo(experiments: Path) -> None:
    cfg = load_experiment("par", ["sft.max_steps=9", "grpo.enabled=false"])
    assert show.as_trained(cfg) == [
        "# as trained:",
        "#   sft: from tiny-qwen2.5-vl; stops at step 9 of a schedule of 2.0 epochs, boxes in the "
        "original frame",
        *THINK_ANSWER,
    ]


def test_grpo_from_the_base_model_on_an_epoch_schedule_with_a_system_turn(
    experiments: Path,
) -> None:
    cfg = load_experiment(
        "par", ["sft.enabled=false", "grpo.schedule_epochs=1.5", "prompt=sophiavl_think"]
    )
    lines = show.as_trained(cfg)
    assert lines[:3] == [
        "# as trained:",
        "#   grpo: from tiny-qwen2.5-vl; stops at step 5 of a schedule of 1.5 epochs",
        "# prompt sophiavl_think, a question with one image as the model sees it:",
    ]
    assert lines[4].startswith("#   system: 'You FIRST think about the reasoning process")
    assert lines[5].startswith('#   user: "<image>{question}\\nPlease think about this question')
    assert lines[5].endswith('Please provide your text answer within the <answer> </answer> tags."')
    assert len(lines) == 6


def test_grpo_on_a_step_schedule_longer_than_its_run(experiments: Path) -> None:
    cfg = load_experiment("par", ["grpo.schedule_steps=50", "sft.box_frame=model_input"])
    assert show.as_trained(cfg)[1:3] == [
        "#   sft: from tiny-qwen2.5-vl; a schedule of 2.0 epochs, boxes in the model_input frame",
        "#   grpo: from the sft output of tiny-qwen2.5-vl; stops at step 5 of a schedule of 50 "
        "steps",
    ]


def test_the_image_position_follows_the_prompt_format(experiments: Path) -> None:
    cfg = load_experiment("par", ["prompt=see_think_boxed"])
    (user,) = [line for line in show.as_trained(cfg) if line.startswith("#   user: ")]
    assert user.startswith("#   user: '{question}<image> ")
