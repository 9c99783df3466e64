"""A throwaway git + DVC copy of the project, for tests that run the real DAG."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COPY = ["Snakefile", "rules", "config", "envs", "params.yaml", "dvc.yaml", "workflow_scripts"]


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

    def append(self, relative: str, text: str) -> None:
        """Append YAML keys to a copied config file (the copy only)."""
        path = self.root / relative
        path.write_text(path.read_text() + text)
        self("git", "commit", "-qam", f"edit {relative}")
