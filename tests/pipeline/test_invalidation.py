"""Snakemake and DVC give one answer: the same stages to rerun after an edit, none after the other
tool ran, and a default changed in the vlrl.config package reruns exactly the stages that read it.

One shrunk copy of the default experiment is built once with `dvc repro` (a fresh workspace, as
after `make run`). Each case then edits one thing, asks both tools what they would run, and puts
the file back with its old content and time, so the next case starts from the built state.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from plans import add_comment, assert_same_plan, dvc_plan, edited, snakemake_plan
from scratch_project import Project

pytestmark = pytest.mark.slow

EXP, BENCH, MODEL = "tiny_shapes", "shapes_test", "tiny-qwen2.5-vl"
EXP_FILE = f"config/experiments/{EXP}.yaml"
MODEL_FILE = f"config/models/{MODEL}.yaml"
EVALS = [f"{c}--{BENCH}" for c in ("base", "sft", "grpo")]
INFER = [f"infer--{EXP}--{e}" for e in EVALS]
SCORE = [f"score--{EXP}--{e}" for e in EVALS]
REPORT = [f"report--{EXP}"]
CONFIG = "workflow_scripts/vlrl/config"


@pytest.fixture(scope="module")
def built(built_copy: Project) -> Project:
    """The shrunk default built with `dvc repro` (tests/pipeline/conftest.py), this module's
    copy."""
    return built_copy


def test_the_shrunk_default_runs_every_stage(built: Project) -> None:
    """`make test`'s end-to-end run (the full-size default is `make reproduce`'s): every stage
    ran and left what the report, `dvc exp show` and `dvc plots show` read."""
    for stage in ("data", "base_model", "sft", "grpo", "merge", "infer", "score", "report"):
        assert f"Running stage '{stage}--" in built.repro_log, stage
    report = built.root / "reports" / EXP
    for name in ("results.md", "results.csv", "comparisons.md", "accuracy.png", "index.html"):
        assert (report / name).is_file(), name
    metrics = json.loads((built.root / "results" / EXP / "metrics.json").read_text())
    assert set(metrics[BENCH]) == {"base", "sft", "grpo"}
    curves = built.root / "results" / EXP / "grpo" / "dvclive" / "plots" / "metrics"
    names = {p.relative_to(curves).as_posix() for p in curves.rglob("*.tsv")}
    assert {"reward.tsv", "kl.tsv", "completions/mean_length.tsv"} <= names, sorted(names)


def test_after_dvc_repro_snakemake_has_nothing_to_do(built: Project) -> None:
    assert "Nothing to be done" in built.snakemake("-n")
    assert "Data and pipelines are up to date" in built("dvc", "status")


CODE_EDITS = [
    ("stages/data.py", {f"data--{EXP}"}),
    ("stages/base_model.py", {f"base_model--{MODEL}"}),
    ("stages/sft.py", {f"sft--{EXP}"}),
    ("stages/grpo.py", {f"grpo--{EXP}"}),
    ("stages/merge.py", {f"merge--{EXP}"}),
    ("stages/infer.py", set(INFER)),
    ("stages/score.py", set(SCORE)),
    ("stages/report.py", set(REPORT)),
    # a module a stage reaches only through its imports
    ("rewards/common.py", {f"grpo--{EXP}"}),
    # a reward family the experiment does not use (its grpo.rewards are common.*)
    ("rewards/vlm_r1.py", set()),
    ("scoring/stats.py", {*SCORE, *REPORT}),
    ("generation/hf.py", set(INFER)),
    ("algorithms/trl_setup.py", {f"grpo--{EXP}"}),
    # what several stages read, declared once
    (
        "stages/__init__.py",
        {
            f"data--{EXP}",
            f"sft--{EXP}",
            f"grpo--{EXP}",
            f"merge--{EXP}",
            f"base_model--{MODEL}",
            *INFER,
            *SCORE,
            *REPORT,
        },
    ),
]


@pytest.mark.parametrize(("module", "expected"), CODE_EDITS, ids=[m for m, _ in CODE_EDITS])
def test_code_edit_plans_the_same_stages(built: Project, module: str, expected: set[str]) -> None:
    with edited(built, f"workflow_scripts/vlrl/{module}", add_comment):
        assert_same_plan(built, expected)


def _set(key: str, value: object):
    def change(text: str) -> str:
        tree = yaml.safe_load(text)
        *parents, last = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
        return yaml.safe_dump(tree, sort_keys=False)

    return change


def _default(cls: str, field: str, old: str, new: str):
    """Change the default of ``cls.field`` in its config module from ``old`` to ``new``."""

    def change(text: str) -> str:
        start = text.index(f"class {cls}(")
        line = re.compile(rf"(\n    {field}: [^\n]*?= ){re.escape(old)}")
        match = line.search(text, start)
        assert match, f"{cls}.{field} = {old} not found"
        return text[: match.start()] + match.group(1) + new + text[match.end() :]

    return change


CONFIG_EDITS = [
    (EXP_FILE, _set("data.shapes.n_test", 10), {f"data--{EXP}"}),
    (MODEL_FILE, _set("tiny.vocab_size", 640), {f"base_model--{MODEL}"}),
    (EXP_FILE, _set("sft.learning_rate", 1e-3), {f"sft--{EXP}"}),
    (EXP_FILE, _set("grpo.learning_rate", 1e-4), {f"grpo--{EXP}"}),
    (EXP_FILE, _set("infer.max_new_tokens", 6), set(INFER)),
    (EXP_FILE, _set("score.confidence", 0.9), {*SCORE, *REPORT}),
    (EXP_FILE, _set("description", "another"), set(REPORT)),
    # defaults in vlrl/config/: exactly the stages that read the key rerun
    (f"{CONFIG}/evaluation.py", _default("ReportConfig", "title", "None", '"T"'), REPORT),
    (
        f"{CONFIG}/evaluation.py",
        _default("ScoreConfig", "iou_threshold", "0.5", "0.6"),
        {*SCORE, *REPORT},
    ),
    (
        f"{CONFIG}/training.py",
        _default("GRPOConfig", "epsilon", "0.2", "0.25"),
        {f"grpo--{EXP}"},
    ),
]


@pytest.mark.parametrize(
    ("file", "change", "expected"),
    CONFIG_EDITS,
    ids=[
        "data",
        "model",
        "sft",
        "grpo",
        "infer",
        "score",
        "report",
        "d-report",
        "d-score",
        "d-grpo",
    ],
)
def test_config_edit_plans_the_same_stages(built: Project, file, change, expected) -> None:
    with edited(built, file, change):
        assert_same_plan(built, expected)


UNRELATED = [
    ("README.md", add_comment),
    ("workflow_scripts/vlrl/workflow/check.py", add_comment),
    ("config/experiments/tiny_shapes_satori.yaml", _set("grpo.learning_rate", 1e-3)),
]


@pytest.mark.parametrize(("file", "change"), UNRELATED, ids=[f for f, _ in UNRELATED])
def test_unrelated_edit_plans_nothing(built: Project, file, change) -> None:
    with edited(built, file, change):
        assert snakemake_plan(built) == (set(), set())
        assert dvc_plan(built) == (set(), set())


def test_after_snakemake_dvc_has_nothing_to_do_and_back(built: Project) -> None:
    """A Snakemake run records its jobs in dvc.lock (onsuccess): `dvc repro` and `snakemake -n`
    then have nothing to do. Back with DVC after an edit, Snakemake's older records of the jobs
    DVC reran do not make it plan them again."""
    built.set_values(EXP_FILE, {"score.confidence": 0.8})
    built.snakemake()
    assert "Data and pipelines are up to date" in built("dvc", "status")
    assert "Running stage" not in built("dvc", "repro")
    assert "Nothing to be done" in built.snakemake("-n")

    built.set_values(EXP_FILE, {"score.confidence": 0.9})
    repro = built("dvc", "repro")
    assert "Running stage 'report--" in repro and "Running stage 'infer--" not in repro
    assert "Nothing to be done" in built.snakemake("-n")
    assert "Data and pipelines are up to date" in built("dvc", "status")
