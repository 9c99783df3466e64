"""Snakemake and DVC on one workspace: the hand-over of vlrl.workflow.handover, for real.

Runs the real rules data, base_model, infer and score (checkpoint base) of tiny_shapes in a
temporary git + DVC copy of the project; the heavy stages (sft, grpo) are not needed. The copy's
benchmark is capped at a few items so inference takes seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from scratch_project import Project

EXP, BENCH = "tiny_shapes", "shapes_test"
TARGET = f"results/{EXP}/scores/base/{BENCH}.json"
STAGE = f"score--{EXP}--base--{BENCH}"
CHAIN = ["data--tiny_shapes", "base_model--tiny-qwen2.5-vl", f"infer--{EXP}--base--{BENCH}", STAGE]
pytestmark = pytest.mark.slow


def make_project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.append(f"config/benchmarks/{BENCH}.yaml", "max_items: 8\n")
    # a few images instead of 11,000: the hand-over is under test, not the shapes world
    project.set_values(
        f"config/experiments/{EXP}.yaml",
        {"data.shapes.n_train": 40, "data.shapes.n_val": 4, "data.shapes.n_test": 8},
    )
    return project


def test_snakemake_then_dvc(tmp_path):
    """A successful Snakemake run records its jobs in dvc.lock (the Snakefile's onsuccess):
    `dvc status` and `dvc repro` then have nothing to do, and no file was rewritten."""
    project = make_project(tmp_path)
    project.snakemake(TARGET)
    assert "up to date" in project("dvc", "status", STAGE)
    before = project.outputs()
    out = project("dvc", "repro", STAGE)
    assert "Running stage" not in out, out
    for stage in CHAIN:
        assert f"Stage '{stage}' didn't change, skipping" in out
    assert project.outputs() == before, "dvc repro rewrote outputs Snakemake had built"
    # and the commit did not disturb Snakemake either
    assert "Nothing to be done" in project.snakemake("-n", TARGET)

    # A run of the last job alone: its hand-over records the whole chain again and rewrites no
    # output of the others (a relink from DVC's cache did, in no particular order)
    project.snakemake(TARGET, "--forcerun", "score")  # (--forcerun takes every name after it)
    after = project.outputs()
    assert {p: t for p, t in after.items() if p != TARGET} == {
        p: t for p, t in before.items() if p != TARGET
    }, "the hand-over rewrote outputs"
    assert "up to date" in project("dvc", "status", STAGE)
    assert "Nothing to be done" in project.snakemake("-n", TARGET)


def test_snakemake_without_hooks_leaves_dvc_to_be_told(tmp_path):
    """`--no-hooks` skips the handover; `vlrl resolve` and `dvc commit --force` do it by hand."""
    project = make_project(tmp_path)
    project.snakemake("--no-hooks", TARGET)
    assert "up to date" not in project("dvc", "status", STAGE)
    project("vlrl", "resolve")
    project("dvc", "commit", "--force", "--with-deps", STAGE)
    assert "up to date" in project("dvc", "status", STAGE)


def test_dvc_repro_twice_then_snakemake(tmp_path):
    """`dvc repro` twice: the second is a quick no-op; then `snakemake --touch` hands over."""
    project = make_project(tmp_path)
    first = project("dvc", "repro", STAGE)
    assert first.count("Running stage") == len(CHAIN) + 1, first  # and resolve

    start = time.perf_counter()
    second = project("dvc", "repro", STAGE)
    seconds = time.perf_counter() - start
    assert "Running stage" not in second, second
    assert seconds < 30, f"a no-op dvc repro took {seconds:.1f}s"
    print(f"no-op dvc repro of {len(CHAIN)} stages: {seconds:.2f}s")

    # A fresh clone or checkout gives the sources newer mtimes than the outputs DVC restored:
    # Snakemake, with no metadata of its own for these jobs, would rerun them.
    time.sleep(1)
    now = time.time()
    for path in [*(tmp_path / "workflow_scripts").rglob("*.py"), *(tmp_path / "config").rglob("*")]:
        os.utime(path, (now, now))
    assert "Nothing to be done" not in project.snakemake("-n", TARGET)

    before = project.outputs()
    project.snakemake("--touch", TARGET)
    assert "Nothing to be done" in project.snakemake("-n", TARGET)
    assert "up to date" in project("dvc", "status", STAGE), "snakemake --touch disturbed DVC"
    touched = project.outputs()
    assert set(touched) >= set(before), "snakemake --touch must not remove outputs"
    # only Snakemake's own marker files are new
    assert {Path(p).name for p in set(touched) - set(before)} <= {".snakemake_timestamp"}
