"""Snakemake and DVC on one workspace: the handover recipe of vlrl.workflow.dvc_export, for real.

Runs the real rules data, base_model, infer and score (checkpoint base) of tiny_shapes in a
temporary git + DVC copy of the project; the heavy stages (sft, grpo) are not needed. The copy's
benchmark is capped at a few items so inference takes seconds.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest
from scratch_project import Project

EXP, BENCH = "tiny_shapes", "shapes_test"
TARGET = f"results/{EXP}/scores/base/{BENCH}.json"
STAGE = f"score--{EXP}--base--{BENCH}"
CHAIN = ["data--tiny_shapes", "base_model--tiny-qwen2.5-vl", f"infer--{EXP}--base--{BENCH}", STAGE]
NEEDED = ["vlrl.stages.data", "vlrl.stages.base_model", "vlrl.stages.infer", "vlrl.stages.score"]

missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing), reason=f"stage modules not written yet: {missing}"),
]


def make_project(tmp_path: Path) -> Project:
    project = Project(tmp_path)
    project.append(f"config/benchmarks/{BENCH}.yaml", "max_items: 8\n")
    return project


def test_snakemake_then_dvc(tmp_path):
    """After Snakemake built the chain, `dvc commit --force` makes `dvc repro` a no-op."""
    project = make_project(tmp_path)
    project.snakemake(TARGET)
    status = project("dvc", "status", STAGE)
    assert "up to date" not in status, "without dvc.lock DVC must consider the stages changed"

    project("dvc", "commit", "--force", "--with-deps", STAGE)
    assert "up to date" in project("dvc", "status", STAGE)
    before = project.outputs()
    out = project("dvc", "repro", STAGE)
    assert "Running stage" not in out, out
    for stage in CHAIN:
        assert f"Stage '{stage}' didn't change, skipping" in out
    assert project.outputs() == before, "dvc repro rewrote outputs Snakemake had built"
    # and the commit did not disturb Snakemake either
    assert "Nothing to be done" in project.snakemake("-n", TARGET)


def test_dvc_repro_twice_then_snakemake(tmp_path):
    """`dvc repro` twice: the second is a quick no-op; then `snakemake --touch` hands over."""
    project = make_project(tmp_path)
    first = project("dvc", "repro", STAGE)
    assert first.count("Running stage") == len(CHAIN), first

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
