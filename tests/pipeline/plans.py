"""What each tool would run, as DVC stage names, and edits undone afterwards: the comparisons of
the invalidation tests (test_invalidation.py, test_hub_benchmark.py)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import yaml
from scratch_project import Project


def snakemake_plan(project: Project) -> tuple[set[str], set[str]]:
    """(every job `snakemake -n` would run, the jobs it would run for a reason of their own),
    as DVC stage names."""
    out = project.snakemake("-n")
    if "Nothing to be done" in out:
        return set(), set()
    planned, direct = set(), set()
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        head = re.match(r"(?:local)?rule (\w+):", block)
        if not head or head.group(1) == "all":
            continue
        wildcards = re.search(r"\n\s*wildcards: (.*)", block)
        values = [kv.split("=", 1)[1] for kv in wildcards.group(1).split(", ")] if wildcards else []
        name = "--".join([head.group(1), *values])
        planned.add(name)
        reasons = re.search(r"\n\s*reason: (.*)", block).group(1).split("; ")
        if any(not r.startswith("Input files updated by another job") for r in reasons):
            direct.add(name)
    return planned, direct


def downstream(project: Project, stages: set[str]) -> set[str]:
    """``stages`` and every DVC stage that depends, directly or not, on their outputs."""
    spec = yaml.safe_load((project.root / "dvc.yaml").read_text())["stages"]
    outs = {
        name: [next(iter(o)) for o in [*s.get("outs", []), *s.get("metrics", [])]]
        for name, s in spec.items()
    }
    closed = set(stages)
    grew = True
    while grew:
        grew = False
        for name, stage in spec.items():
            if name in closed:
                continue
            deps = stage.get("deps", [])
            if any(d == o or d.startswith(o + "/") for s in closed for o in outs[s] for d in deps):
                closed.add(name)
                grew = True
    return closed


def dvc_plan(project: Project) -> tuple[set[str], set[str]]:
    """(what `dvc repro` would run, the stages `dvc status` reports changed), after the cheap
    resolve stage has written the resolved configs (the first thing `dvc repro` does)."""
    project("dvc", "repro", "--single-item", "resolve")
    status = json.loads(project("dvc", "status", "--json").strip() or "{}")
    direct = set(status) - {"resolve"}
    return (downstream(project, direct) if direct else set()), direct


def assert_same_plan(project: Project, expected: set[str]) -> None:
    smk_all, smk_direct = snakemake_plan(project)
    dvc_all, dvc_direct = dvc_plan(project)
    # Snakemake names one reason per job: a job downstream of another rerun shows only that one
    assert smk_direct <= dvc_direct, f"invalidated: snakemake {smk_direct}, dvc {dvc_direct}"
    assert smk_all == dvc_all, f"planned: snakemake {sorted(smk_all)}, dvc {sorted(dvc_all)}"
    assert smk_all == downstream(project, expected), sorted(smk_all)


@contextmanager
def edited(project: Project, relative: str, change) -> Iterator[None]:
    """Apply ``change(text) -> text`` to a file; afterwards put back its content and time, and
    those of the stages' params files (which the plans rewrote), as if nothing had happened."""
    path = project.root / relative
    kept = {
        p: (p.read_bytes(), p.stat())
        for p in [
            path,
            *project.root.glob("results/*/params/*.yaml"),
            *project.root.glob("resources/params/**/*.yaml"),
        ]
    }
    before = path.read_text()
    new = change(before)
    assert new != before, f"the edit of {relative} changed nothing"
    path.write_text(new)
    try:
        yield
    finally:
        for kept_path, (content, stat) in kept.items():
            kept_path.write_bytes(content)
            os.utime(kept_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def add_comment(text: str) -> str:
    return text + "\n# an edit\n"
