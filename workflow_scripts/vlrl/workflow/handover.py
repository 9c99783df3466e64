"""Keeping DVC's books in step with Snakemake's, so both tools agree on what is up to date.

Both run the same commands on the same paths but each records what it built: DVC in dvc.lock,
Snakemake in ``.snakemake/``. :func:`to_dvc` runs from the Snakefile's ``onsuccess`` handler:
after a successful Snakemake run it writes the resolved configs (``vlrl resolve``) and records
every job of the run's DAG in dvc.lock with ``dvc commit --force``, which hashes the outputs
and changes no file. ``dvc status`` then reports nothing to do. (``snakemake --no-hooks`` skips
it.) The other way, after ``dvc repro``, ``snakemake -n`` has nothing to do as long as
Snakemake's records do not contradict DVC's; ``snakemake --touch`` re-records them when they do
(see the README, "Snakemake and DVC on one workspace").
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from vlrl import paths
from vlrl.errors import VlrlError

log = logging.getLogger(__name__)


def dvc_executable() -> str:
    """The ``dvc`` beside the running Python (the project's .venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "dvc"
    return str(beside) if beside.is_file() else (shutil.which("dvc") or "dvc")


def to_dvc(stage_names: Iterable[str], root: Path | None = None) -> list[str]:
    """Record the given DVC stages (and ``resolve``) as up to date in dvc.lock.

    Stages that dvc.yaml does not have (it is stale: run ``vlrl dvc-yaml``) are skipped with a
    warning. Returns the stages committed; does nothing outside a DVC project.
    """
    from vlrl.workflow import resolve
    from vlrl.workflow.dvc_export import RESOLVE

    root = Path(root or paths.root())
    if not (root / ".dvc").is_dir() or not (root / "dvc.yaml").is_file():
        log.info("handover: %s is not a DVC project; nothing to record", root)
        return []
    resolve.main()
    known = set((yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages", {}))
    wanted = list(dict.fromkeys(stage_names))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        log.warning(
            "handover: dvc.yaml has no stage %s; run `vlrl dvc-yaml` so DVC tracks them", unknown
        )
    names = [RESOLVE, *(name for name in wanted if name in known)]
    out = subprocess.run(
        [dvc_executable(), "commit", "--force", "--quiet", *names],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise VlrlError(f"handover: dvc commit failed ({out.returncode}):\n{out.stderr[-2000:]}")
    log.info("handover: recorded %d stages in dvc.lock", len(names))
    return names
