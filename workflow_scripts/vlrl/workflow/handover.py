"""Keeping DVC's books in step with Snakemake's, so both tools agree on what is up to date.

Both run the same commands on the same paths but each records what it built: DVC in dvc.lock,
Snakemake in ``.snakemake/`` and in the files' times (the profiles set ``rerun-triggers:
mtime``, so the times alone decide: a stage's code and resolved config are input files, and
Snakemake's other records would only disagree with DVC's runs).

:func:`after_snakemake` runs from the Snakefile's ``onsuccess`` handler. It regenerates
dvc.yaml when it no longer describes the run's jobs (a benchmark, an experiment or a stage's
import added without ``vlrl dvc-yaml``), writes the resolved configs (``vlrl resolve``) and
records every job of the run's DAG in dvc.lock as ``dvc commit --force --no-relink`` does, in
one pass (:func:`_commit`): DVC hashes the outputs and copies them into its cache but leaves
the workspace's files alone (a relink would rewrite them, newest last in no particular order,
and Snakemake would then see predictions newer than their scores). ``dvc status`` then
reports nothing to do, and ``snakemake -n`` still has nothing to do. (``snakemake --no-hooks``
skips it.) The other way, after ``dvc repro``, outputs are newer than their inputs; where
times mislead (a checkout, outputs restored by ``dvc checkout``), ``snakemake --touch`` marks
the outputs current (see the README, "Snakemake and DVC on one workspace" and "Going back after
`dvc exp run`").
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from vlrl.core import paths
from vlrl.core.errors import VlrlError

log = logging.getLogger(__name__)


def _stages(root: Path) -> dict[str, Any]:
    return (yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages", {})


def _tracked(stage: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(deps, outs and metrics) of a dvc.yaml stage, as paths."""
    outs = [next(iter(o)) for o in [*stage.get("outs", []), *stage.get("metrics", [])]]
    return set(stage.get("deps", [])), set(outs)


def stale_stages(jobs: dict[str, tuple[set[str], set[str]]], root: Path) -> list[str]:
    """The jobs (stage name -> (input files, output files)) that dvc.yaml does not describe:
    no such stage, or other deps or outs.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "dvc.yaml").write_text("stages: {a: {deps: [x], outs: [{y: {}}]}}")
    >>> stale_stages({"a": ({"x"}, {"y"}), "b": (set(), {"z"})}, root)
    ['b']
    >>> stale_stages({"a": ({"x", "new.py"}, {"y"})}, root)
    ['a']
    """
    stages = _stages(root)
    return [name for name, io in jobs.items() if name not in stages or _tracked(stages[name]) != io]


def after_snakemake(jobs: Iterable[Any], root: Path | None = None) -> list[str]:
    """The Snakefile's ``onsuccess``: bring dvc.yaml up to date with the run's Snakemake jobs if
    it describes them otherwise, then record them as up to date in dvc.lock (:func:`to_dvc`).

    Returns the stages committed; does nothing outside a DVC project.
    """
    from vlrl.workflow.dvc_export import name_for

    root = Path(root or paths.root())
    if not _is_dvc_project(root):
        log.info("handover: %s is not a DVC project; nothing to record", root)
        return []
    ran = {
        name_for(job.rule.name, job.wildcards_dict.values()): (
            {str(f) for f in job.input},
            {str(f) for f in job.output},
        )
        for job in jobs
        if job.output
    }
    stale = stale_stages(ran, root)
    if stale:
        # What `dvc repro` would stop and ask for: the run's DAG is the truth. Said aloud, as
        # dvc.yaml is committed with dvc.lock.
        log.warning("handover: dvc.yaml does not describe %s: running `vlrl dvc-yaml`", stale)
        # With the interpreter running Snakemake, which has it: the rules' launcher may run
        # another environment (VLRL_VENV=.venv-gpu, the stages' packages only).
        _run([sys.executable, "-m", "vlrl.cli", "dvc-yaml"], root, "vlrl dvc-yaml")
    return to_dvc(list(ran), root)


def _is_dvc_project(root: Path) -> bool:
    return (root / ".dvc").is_dir() and (root / "dvc.yaml").is_file()


def _run(command: list[str], root: Path, what: str) -> None:
    """``command`` in the project ``root`` (its working directory and ``$VLRL_ROOT``)."""
    env = {**os.environ, "VLRL_ROOT": str(root)}
    out = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise VlrlError(f"handover: {what} failed ({out.returncode}):\n{out.stderr[-2000:]}")


def to_dvc(stage_names: Iterable[str], root: Path | None = None) -> list[str]:
    """Record the given DVC stages (and ``resolve``) as up to date in dvc.lock, changing no
    file but dvc.lock (``--no-relink``).

    Stages that dvc.yaml does not have (it is stale: run ``vlrl dvc-yaml``) are skipped with a
    warning. Returns the stages committed; does nothing outside a DVC project.
    """
    from vlrl.workflow import resolve
    from vlrl.workflow.dvc_export import RESOLVE

    root = Path(root or paths.root())
    if not _is_dvc_project(root):
        log.info("handover: %s is not a DVC project; nothing to record", root)
        return []
    if root.resolve() == paths.root():
        resolve.main()
    else:  # another project than this process's: its own configs, in its own process
        _run([sys.executable, "-m", "vlrl.cli", "resolve", "--no-check"], root, "vlrl resolve")
    known = set(_stages(root))
    wanted = list(dict.fromkeys(stage_names))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        log.warning(
            "handover: dvc.yaml has no stage %s (an experiment given with --config, not in "
            "params.yaml; else run `vlrl dvc-yaml`); DVC does not track them",
            unknown,
        )
    names = [RESOLVE, *(name for name in wanted if name in known)]
    _commit(root, names)
    log.info("handover: recorded %d stages in dvc.lock", len(names))
    return names


def _commit(root: Path, names: list[str]) -> None:
    """``dvc commit --force --no-relink <names>`` in one pass (:func:`_commit_in_one_pass`), in
    a process of its own in the project root: importing dvc binds its log handlers to the
    process's streams (``dvc.logger.setup``), which Snakemake's process should not share."""
    _run([sys.executable, "-m", __name__, *names], root, "dvc commit")


def _commit_in_one_pass(names: list[str]) -> None:
    """For each stage of dvc.yaml in the working folder, the steps of DVC's own commit
    (:func:`dvc.repo.commit.commit` with ``force``: save, then commit without a relink), with
    dvc.yaml read and dvc.lock written once. DVC's command commits its targets one at a time
    (``dvc.commands.commit``), each rereading dvc.yaml and rereading and rewriting dvc.lock:
    minutes for the hundred stages of a dozen experiments."""
    from dvc.dvcfile import load_file
    from dvc.repo import Repo, lock_repo

    with Repo() as repo, lock_repo(repo):
        pipeline = load_file(repo, "dvc.yaml")
        stages = [pipeline.stages[name] for name in names]
        for stage in stages:
            stage.save()
            stage.commit(relink=False)
        pipeline.dump_stages(stages, update_pipeline=False)


if __name__ == "__main__":
    _commit_in_one_pass(sys.argv[1:])
