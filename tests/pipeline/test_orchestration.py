"""Snakemake and DVC on one workspace: the handover recipe of vlrl.workflow.dvc_export, for real.

Runs the real rules data, base_model, infer and score (checkpoint base) of tiny_shapes in a
temporary git + DVC copy of the project; the heavy stages (sft, grpo) are not needed. The copy's
benchmark is capped at a few items so inference takes seconds.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXP, BENCH = "tiny_shapes", "shapes_test"
TARGET = f"results/{EXP}/scores/base/{BENCH}.json"
STAGE = f"score--{EXP}--base--{BENCH}"
CHAIN = ["data--tiny_shapes", "base_model--tiny-qwen2.5-vl", f"infer--{EXP}--base--{BENCH}", STAGE]
COPY = ["Snakefile", "rules", "config", "envs", "params.yaml", "dvc.yaml", "workflow_scripts"]
NEEDED = ["vlrl.stages.data", "vlrl.stages.base_model", "vlrl.stages.infer", "vlrl.stages.score"]

missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing), reason=f"stage modules not written yet: {missing}"),
]


class Project:
    """A throwaway git + DVC copy of the project; its own code runs (PYTHONPATH)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for item in COPY:
            src = ROOT / item
            if src.is_dir():
                shutil.copytree(src, root / item, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, root / item)
        bench = root / "config" / "benchmarks" / f"{BENCH}.yaml"
        bench.write_text(bench.read_text() + "max_items: 8\n")
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(root / "workflow_scripts"),
            "DVC_NO_ANALYTICS": "1",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
        }
        self("git", "init", "-q")
        self("dvc", "init", "-q")
        shutil.copy(ROOT / ".dvcignore", root / ".dvcignore")
        (root / ".gitignore").write_text((ROOT / ".gitignore").read_text())
        self("git", "add", "-A")
        self("git", "commit", "-qm", "copy")

    def __call__(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(args, cwd=self.root, env=self.env, capture_output=True, text=True)
        text = out.stdout + out.stderr
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({out.returncode}):\n{text[-3000:]}")
        return text

    def snakemake(self, *args: str) -> str:
        return self("snakemake", "--cores", "2", *args)

    def outputs(self) -> dict[str, int]:
        """mtime (ns) of every output file of the chain: changes iff something rewrote it."""
        found = {}
        for top in ("results", "resources"):
            for path in (self.root / top).rglob("*"):
                if path.is_file():
                    found[str(path.relative_to(self.root))] = path.stat().st_mtime_ns
        return found


def test_snakemake_then_dvc(tmp_path):
    """After Snakemake built the chain, `dvc commit --force` makes `dvc repro` a no-op."""
    project = Project(tmp_path)
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
    project = Project(tmp_path)
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
