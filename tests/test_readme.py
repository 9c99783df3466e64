"""Every command the README shows runs as written in a fresh clone, and none touches a tracked file.

Commands are taken from the README's code blocks and from table cells in backticks that start
with a known tool. The cheap ones run in a scratch git + DVC copy of the project (as a clone has
it: the committed dvc.lock and results/<exp>/{params.yaml,metrics.json}); the expensive ones
(training, whole runs, installs) are listed in EXPENSIVE, so a new README command is either run
here or classified on purpose.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "pipeline"))
from scratch_project import Project

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("make", "vlrl", "dvc", "snakemake", "pytest", "source", "git")
EXPENSIVE = (
    "make run",
    "make test",
    "make pipeline",
    "make reproduce",
    "make smoke",
    "make engines",
    "make recipes",
    "make setup-gpu",
    "make check-locks",
    "make run-snakemake",
    "make resume",
    "make setup",
    "make lock",
    "make format",
    "dvc repro",
    "dvc exp run",
    "vlrl rescore",  # reads the predictions `make run` writes: tests/stages/test_score.py
    "vlrl compare",  # needs the child's run: tests/pipeline/test_sharing_pipeline.py
    "vlrl pin",  # asks the hub (tests/workflow/test_pin.py, against a local stand-in)
    "snakemake --profile",
    "snakemake --cores",
    "snakemake --touch",
    "snakemake results/",
    "pytest",
    "source ",
    "dvc commit",
    "dvc plots show",
    "git clone",
)
"""Commands that train or run whole pipelines (tested elsewhere: tests/pipeline) or set up."""


def readme_commands() -> list[str]:
    """Commands in code blocks (indented or fenced lines starting with a tool, comments
    dropped) and in backticked table cells."""
    text = (ROOT / "README.md").read_text()
    found: list[str] = []
    fenced = "\n".join(re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.DOTALL))
    indented = "\n".join(line[4:] for line in text.splitlines() if line.startswith("    "))
    for line in f"{fenced}\n{indented}".splitlines():
        line = re.split(r"\s+#", line)[0].strip()
        if line.split(" ")[0] in TOOLS:
            found.append(line)
    for line in text.splitlines():
        if line.startswith("|"):
            for span in re.findall(r"`([^`]+)`", line):
                if span.split(" ")[0] in TOOLS and " " in span:
                    found.append(span)
    return list(dict.fromkeys(found))


COMMANDS = readme_commands()
CHEAP = [c for c in COMMANDS if not c.startswith(EXPENSIVE)]


def test_the_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 10, COMMANDS
    assert "make run" in COMMANDS and "make test" in COMMANDS
    assert len(CHEAP) >= 5, CHEAP


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return Project(tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("command", CHEAP)
def test_cheap_command_runs_and_changes_no_tracked_file(clone: Project, command: str) -> None:
    clone(*shlex.split(command))  # raises, with the output, on a non-zero exit
    status = clone("git", "status", "--porcelain", "--untracked-files=no")
    assert status.strip() == "", f"`{command}` changed tracked files:\n{status}"


def markdown_row(text: str, first: str) -> dict[str, str]:
    """The row of a Markdown table (``--md``) whose first cell is ``first``, by column: whole
    cells, which the test would see cut (``…``) if the command fitted them to a terminal."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not set(line) <= set("|-: ")
    ]
    header = rows[0]
    row = next(r for r in rows[1:] if r[0] == first)
    assert "…" not in "".join(row)
    return dict(zip(header, row, strict=True))


def test_the_comparison_shows_the_headline_metrics_in_a_fresh_clone(clone: Project) -> None:
    """The README's `dvc exp show` prints, for the committed workspace, each checkpoint's
    accuracy on each benchmark as results/<exp>/metrics.json has it, and no other column (it
    printed an empty table while its --keep matched no column: DVC matches from the start)."""
    command = next(c for c in COMMANDS if c.startswith("dvc exp show"))
    shown = markdown_row(clone(*shlex.split(command)), "workspace")
    header = list(shown)
    assert header[:2] == ["Experiment", "Created"], header
    shown = {name: value for name, value in shown.items() if name not in header[:2]}
    committed = {
        f"{bench}.{checkpoint}.accuracy": values["accuracy"]
        for path in sorted(clone.root.glob("results/*/metrics.json"))
        for bench, checkpoints in json.loads(path.read_text()).items()
        for checkpoint, values in checkpoints.items()
    }
    assert committed, "no metrics.json committed"
    assert set(shown) == set(committed), f"`{command}` showed {header}"
    for name, value in committed.items():
        assert float(shown[name]) == pytest.approx(value, rel=1e-4), name
