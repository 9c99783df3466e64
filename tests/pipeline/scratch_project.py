"""A throwaway git + DVC copy of the project, for tests that run the real DAG."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COPY = (
    "Snakefile",
    "rules",
    "config",
    "envs",
    "profiles",
    "params.yaml",
    "dvc.yaml",
    "dvc.lock",
    "workflow_scripts",
    "results",
    "README.md",
    ".dvcignore",
    ".gitignore",
)
"""What a clone of the working tree has at these places (results: the committed params.yaml and
metrics.json of each experiment)."""

SHRUNK_DEFAULT = {
    "data.shapes.n_train": 48,
    "data.shapes.n_val": 4,
    "data.shapes.n_test": 12,
    "sft.num_train_epochs": 1,
    "sft.processes": 1,  # the DAG, not the training, is under test: no launcher start-up
    "grpo.processes": 1,
    "grpo.max_steps": 2,
    "grpo.per_device_train_batch_size": 8,
    "grpo.num_generations": 4,
    "grpo.max_completion_length": 8,
    "grpo.logging_steps": 1,
    "infer.max_new_tokens": 8,
    "benchmarks": ["shapes_test"],  # (shapes_test_blank: the same jobs again, blanked)
}
"""Values that shrink the default experiment (config/experiments/tiny_shapes.yaml) to a run of
every stage in about a minute (:meth:`Project.shrink`)."""
DEFAULT_FILE = "config/experiments/tiny_shapes.yaml"


def clone_files() -> list[Path]:
    """The working tree's files a fresh clone would have: tracked or not ignored, under COPY."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *COPY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [Path(name) for name in sorted(set(out.stdout.split("\0"))) if (ROOT / name).is_file()]


ERROR_LINE = re.compile(
    r"Error|error:|Exception|terminate called|what\(\)|Abort|Fatal|Segmentation|Killed|signal \d+"
)


def excerpt(log: str, lines: int = 40, tail: int = 3000) -> str:
    """A failed command's log, short: the first ``lines`` lines that name an error (a rank's
    abort hides above the launcher's traceback) and the last ``tail`` characters."""
    named = [line for line in log.splitlines() if ERROR_LINE.search(line)][:lines]
    head = "\n".join(named)
    return f"lines naming an error:\n{head}\n... the end of the log:\n{log[-tail:]}"


FAILED_JOB_LOG = re.compile(r"log: (\S+) \(check log file")


def failed_job_logs(root: Path, snakemake_output: str) -> str:
    """The excerpts of the logs of the jobs Snakemake reports failed: the stage's own traceback,
    which Snakemake's output only points to."""
    parts = []
    for name in dict.fromkeys(FAILED_JOB_LOG.findall(snakemake_output)):
        path = root / name
        text = path.read_text(errors="replace") if path.is_file() else "(no such file)"
        parts.append(f"\n=== {name} ===\n{excerpt(text)}")
    return "".join(parts)


class Project:
    """A throwaway git + DVC copy of the project; its own code runs (PYTHONPATH)."""

    def __init__(self, root: Path, copy_of: Project | None = None, existing: bool = False) -> None:
        """A fresh copy of the working tree at ``root``, or (``copy_of``) a copy of another
        scratch project as it stands: its git history, DVC cache and records, Snakemake's
        records and every file, with their times (what a rebuilt one would have), or
        (``existing``) the scratch project already at ``root``."""
        self.root = root
        if existing:
            pass
        elif copy_of is not None:
            shutil.copytree(copy_of.root, root, symlinks=True, dirs_exist_ok=True)
        else:
            for name in clone_files():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / name, root / name)
        self.env = {
            **os.environ,
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(root / "workflow_scripts"),
            "DVC_NO_ANALYTICS": "1",
            # the copy has no .venv-sft of its own: use the project's
            "VLRL_LLAMAFACTORY_CLI": os.environ.get(
                "VLRL_LLAMAFACTORY_CLI", str(ROOT / ".venv-sft" / "bin" / "llamafactory-cli")
            ),
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
        }
        if copy_of is not None or existing:
            return
        self("git", "init", "-q")
        self("dvc", "init", "-q")
        self("git", "add", "-A")
        self("git", "commit", "-qm", "copy")

    def __call__(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(args, cwd=self.root, env=self.env, capture_output=True, text=True)
        text = out.stdout + out.stderr
        if check and out.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} failed ({out.returncode}):\n{excerpt(text)}"
                + failed_job_logs(self.root, text)
            )
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

    def set_values(self, relative: str, values: dict[str, object], commit: bool = True) -> None:
        """Set dotted keys of a copied YAML config file (the copy only; comments are lost)."""
        path = self.root / relative
        tree = yaml.safe_load(path.read_text()) or {}
        for dotted, value in values.items():
            *parents, last = dotted.split(".")
            node = tree
            for key in parents:
                node = node.setdefault(key, {})
            node[last] = value
        path.write_text(yaml.safe_dump(tree, sort_keys=False))
        if commit:
            self("git", "commit", "-qam", f"edit {relative}")

    def shrink(self, values: dict[str, object] | None = None, commit: bool = True) -> None:
        """Set :data:`SHRUNK_DEFAULT` (or ``values``) in the default experiment and regenerate
        dvc.yaml (one benchmark fewer: the committed one lists stages the copy no longer has)."""
        self.set_values(DEFAULT_FILE, SHRUNK_DEFAULT if values is None else values, commit=False)
        self("vlrl", "dvc-yaml")
        if commit:
            self("git", "add", "-A")
            self("git", "commit", "-qm", "the shrunk default")

    def append(self, relative: str, text: str) -> None:
        """Append YAML keys to a copied config file (the copy only)."""
        path = self.root / relative
        path.write_text(path.read_text() + text)
        self("git", "commit", "-qam", f"edit {relative}")
