"""What the ``vlrl`` command does around its subcommands: several ``--set`` assignments after
one ``--set``, the version line, finding the project from a subfolder (and saying so when there
is none), the warning that a ``.venv`` runs another checkout's code, and a resumable stage's
rerun in a Slurm job step of its own."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from typer.core import TyperCommand

from vlrl.core import paths

SET_OPTIONS = ("--set", "-s")
ASSIGNMENT = re.compile(r"[A-Za-z_][\w.-]*=")
"""What a ``KEY=VALUE`` argument starts with (no positional argument of a stage does)."""


def spread_sets(args: list[str]) -> list[str]:
    """``args`` with every ``KEY=VALUE`` that follows a ``--set`` assignment given its own
    ``--set``: ``--set a=1 b=2`` is read as ``--set a=1 --set b=2``. Anything else (a
    positional argument, an option, ``--`` and what follows it) ends the run of assignments.

    >>> spread_sets(["e", "--set", "a=1", "b.c=[1, 2]", "base", "-s", "d=x=y", "--only-set"])
    ['e', '--set', 'a=1', '--set', 'b.c=[1, 2]', 'base', '-s', 'd=x=y', '--only-set']
    >>> spread_sets(["e", "--set=a=1", "b=2", "--", "c=3"])
    ['e', '--set=a=1', '--set', 'b=2', '--', 'c=3']
    """
    out: list[str] = []
    after_set = False
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            out += [arg, *rest]
            break
        if arg in SET_OPTIONS:
            out += [arg, *(v for v in [next(rest, None)] if v is not None)]
            after_set = True
        elif arg.startswith("--set=") or (arg.startswith("-s") and not arg.startswith("--")):
            out.append(arg)
            after_set = True
        elif after_set and ASSIGNMENT.match(arg):
            out += ["--set", arg]
        else:
            out.append(arg)
            after_set = False
    return out


class SetCommand(TyperCommand):
    """A command whose ``--set`` takes one or more ``KEY=VALUE`` (:func:`spread_sets`); click
    options take a fixed number of values, so the assignments are spread before parsing."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spread_sets(list(args)))


def package_dir() -> Path:
    """The folder of the ``vlrl`` package this process imported."""
    import vlrl

    return Path(vlrl.__file__).resolve().parent


def version_line() -> str:
    """``vlrl <version> (<checkout>, commit <sha>)``: the imported package's version, the
    checkout it was imported from and that checkout's commit (left out without git)."""
    import vlrl

    checkout = package_dir().parents[1]
    where = str(checkout)
    try:
        sha = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        where += f", commit {sha}"
    except (OSError, subprocess.SubprocessError):
        pass  # not a git checkout, or no git: the path alone still says which code runs
    return f"vlrl {vlrl.__version__} ({where})"


def other_checkout() -> str | None:
    """A warning when the imported ``vlrl`` is not the one under this project's
    ``workflow_scripts/`` (a copied or moved checkout whose ``.venv`` still holds the original's
    editable install, so the original's code runs), else None."""
    project = paths.root() / "workflow_scripts" / "vlrl"
    running = package_dir()
    if not project.is_dir() or project.resolve() == running:
        return None
    return (
        f"vlrl runs the code in {running}, not this project's {project}: the environment was "
        "made for another checkout (copied or moved?). Recreate it here: "
        "rm -rf .venv .venv-sft .make && make setup"
    )


def enter_root() -> None:
    """Make the project root the current directory when ``vlrl`` runs in a subfolder of it
    (without ``$VLRL_ROOT``): the outputs' paths are relative to the root."""
    if os.environ.get("VLRL_ROOT"):
        return
    found = paths.find_root(Path(".").resolve())
    if found is not None and found != Path(".").resolve():
        os.chdir(found)


def root_hint() -> str:
    """A hint for an error line when the project root has no params.yaml (``vlrl`` ran outside
    the checkout, or ``$VLRL_ROOT`` points elsewhere), else ``""``."""
    here = paths.root()
    if (here / "params.yaml").is_file():
        return ""
    if os.environ.get("VLRL_ROOT"):
        return f"\nhint: VLRL_ROOT={here} holds no params.yaml: point it at the vlrl checkout"
    files = " and ".join(paths.ROOT_MARKERS)
    return (
        f"\nhint: no folder at or above {here} holds {files}: run vlrl inside the vlrl "
        "checkout, or set VLRL_ROOT to it"
    )


def run_in_job_step(module: ModuleType, cfg: Any, argv: list[str]) -> int | None:
    """Run the stage ``vlrl <argv>`` in a job step of its own under the relay, when its
    ``module`` says it needs one (``job_step``: a resumable stage inside a Slurm job; see
    :mod:`vlrl.cluster.relay`), and return that step's exit status; None: run it here."""
    job_step = getattr(module, "job_step", None)
    command = job_step(cfg, argv) if job_step is not None else None
    if command is None:
        return None
    from vlrl.cluster.relay import run_in_step

    return run_in_step(command)


def prose(text: str) -> str:
    """``text`` with each paragraph on one line: typer's rich help keeps a docstring's line
    breaks, which then break lines mid-sentence in the list of commands."""
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
