"""What the ``vlrl`` command does around its subcommands (:mod:`vlrl.cli.support`), in the test
process: spreading several ``--set`` assignments, the version line, the warning that another
checkout's code runs, finding the project root from a subfolder, the hint when there is none,
running a stage in a Slurm job step of its own, and help text as one line per paragraph."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

import vlrl
from vlrl.cli import support
from vlrl.cli.support import SetCommand, spread_sets
from vlrl.core import paths

# --- spread_sets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "spread"),
    [
        # several assignments after one --set (or -s): each gets its own
        (["e", "--set", "a=1", "b.c=[1, 2]"], ["e", "--set", "a=1", "--set", "b.c=[1, 2]"]),
        (["e", "-s", "a=1", "b=2"], ["e", "-s", "a=1", "--set", "b=2"]),
        # --set=KEY=VALUE and -sKEY=VALUE start a run of assignments too
        (["e", "--set=a=1", "b=2"], ["e", "--set=a=1", "--set", "b=2"]),
        (["e", "-sa=1", "b=2"], ["e", "-sa=1", "--set", "b=2"]),
        # an option ends the run, a positional argument too
        (["e", "--set", "a=1", "--only-set", "b=2"], ["e", "--set", "a=1", "--only-set", "b=2"]),
        (["e", "--set", "a=1", "base", "b=2"], ["e", "--set", "a=1", "base", "b=2"]),
        (["e", "--set=a=1", "base", "b=2"], ["e", "--set=a=1", "base", "b=2"]),
        # no --set before: an assignment-like argument is left as it is
        (["e", "a=1"], ["e", "a=1"]),
        (["a=1", "b=2"], ["a=1", "b=2"]),
        (["--set-x", "a=1"], ["--set-x", "a=1"]),
        # everything after -- is passed on untouched, and what came before kept
        (["e", "--set", "a=1", "--", "b=2", "--set"], ["e", "--set", "a=1", "--", "b=2", "--set"]),
        (["--", "-s", "a=1", "b=2"], ["--", "-s", "a=1", "b=2"]),
        # a --set at the end, with no value: left for click to complain about
        (["e", "--set"], ["e", "--set"]),
    ],
)
def test_spread_sets(args: list[str], spread: list[str]) -> None:
    assert spread_sets(args) == spread


def test_the_value_of_a_set_is_taken_whatever_it_looks_like() -> None:
    # the word after --set is its value even when it is no assignment (click then rejects it)
    assert spread_sets(["--set", "base", "a=1"]) == ["--set", "base", "--set", "a=1"]


def test_a_set_command_parses_spread_assignments() -> None:
    app = typer.Typer()
    seen: list[list[str]] = []

    @app.command(cls=SetCommand)
    def one(
        exp: str, set_: Annotated[list[str] | None, typer.Option("--set", "-s")] = None
    ) -> None:
        seen.append([exp, *(set_ or [])])

    @app.command()
    def two() -> None:  # a second command, so typer keeps the command's name
        pass

    result = CliRunner().invoke(app, ["one", "e", "--set", "a=1", "b=2", "-s", "c=3", "d=4"])
    assert result.exit_code == 0, result.output
    assert seen == [["e", "a=1", "b=2", "c=3", "d=4"]]


# --- the version line ----------------------------------------------------------------------------


def test_package_dir_is_the_imported_package() -> None:
    # this module is vlrl/cli/support.py in it
    assert support.package_dir() == Path(support.__file__).resolve().parents[1]


def test_version_line_names_the_checkout_and_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "checkout" / "workflow_scripts" / "vlrl"
    monkeypatch.setattr(support, "package_dir", lambda: package)
    monkeypatch.setattr(vlrl, "__version__", "9.8.7")
    calls = []

    def run(cmd, **kwargs):
        calls.append((cmd, kwargs))
        return SimpleNamespace(stdout="0123456789ab\n")

    monkeypatch.setattr(subprocess, "run", run)
    checkout = tmp_path / "checkout"
    assert support.version_line() == f"vlrl 9.8.7 ({checkout}, commit 0123456789ab)"
    assert calls == [
        (
            ["git", "-C", str(checkout), "rev-parse", "--short=12", "HEAD"],
            {"capture_output": True, "text": True, "timeout": 5, "check": True},
        )
    ]


@pytest.mark.parametrize(
    "error",
    [
        FileNotFoundError("git"),  # no git
        subprocess.CalledProcessError(128, ["git"]),  # not a git checkout
        subprocess.TimeoutExpired(["git"], 5),
    ],
)
def test_version_line_without_a_commit_names_the_checkout(
    error: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(support, "package_dir", lambda: tmp_path / "c" / "workflow_scripts" / "v")
    monkeypatch.setattr(vlrl, "__version__", "1.0")

    def run(cmd, **kwargs):
        raise error

    monkeypatch.setattr(subprocess, "run", run)
    assert support.version_line() == f"vlrl 1.0 ({tmp_path / 'c'})"


# --- another checkout's code ---------------------------------------------------------------------


def _project(root: Path, monkeypatch: pytest.MonkeyPatch, package: Path) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(root))
    monkeypatch.setattr(support, "package_dir", lambda: package)


def test_other_checkout_warns_when_the_code_runs_from_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "copy"
    (here / "workflow_scripts" / "vlrl").mkdir(parents=True)
    running = tmp_path / "original" / "workflow_scripts" / "vlrl"
    _project(here, monkeypatch, running)
    project = here.resolve() / "workflow_scripts" / "vlrl"
    assert support.other_checkout() == (
        f"vlrl runs the code in {running}, not this project's {project}: the environment was "
        "made for another checkout (copied or moved?). Recreate it here: "
        "rm -rf .venv .venv-sft .make && make setup"
    )


def test_other_checkout_is_quiet_for_this_checkouts_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "workflow_scripts" / "vlrl"
    package.mkdir(parents=True)
    _project(tmp_path, monkeypatch, package.resolve())
    assert support.other_checkout() is None


def test_other_checkout_is_quiet_without_a_package_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a project root with no workflow_scripts/vlrl (vlrl run outside the checkout)
    _project(tmp_path, monkeypatch, tmp_path / "elsewhere" / "vlrl")
    assert support.other_checkout() is None


# --- the project root ----------------------------------------------------------------------------


def _checkout(root: Path) -> Path:
    """A folder holding the root markers, with a subfolder; returns the subfolder."""
    for name in paths.ROOT_MARKERS:
        (root / name).write_text("")
    sub = root / "a" / "b"
    sub.mkdir(parents=True)
    return sub


def test_enter_root_goes_up_to_the_root_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_checkout(tmp_path))
    monkeypatch.delenv("VLRL_ROOT", raising=False)
    support.enter_root()
    assert Path.cwd() == tmp_path.resolve()


def test_enter_root_stays_at_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLRL_ROOT", raising=False)
    support.enter_root()
    assert Path.cwd() == tmp_path.resolve()


def test_enter_root_stays_outside_a_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "find_root", lambda start: None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLRL_ROOT", raising=False)
    support.enter_root()
    assert Path.cwd() == tmp_path.resolve()


def test_enter_root_stays_put_under_vlrl_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = _checkout(tmp_path)
    monkeypatch.chdir(sub)
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    support.enter_root()
    assert Path.cwd() == sub.resolve()


def test_no_root_hint_in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "params.yaml").write_text("")
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    assert support.root_hint() == ""


def test_root_hint_when_vlrl_root_points_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    assert support.root_hint() == (
        f"\nhint: VLRL_ROOT={tmp_path.resolve()} holds no params.yaml: point it at the vlrl "
        "checkout"
    )


def test_root_hint_outside_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VLRL_ROOT", raising=False)
    assert support.root_hint() == (
        f"\nhint: no folder at or above {tmp_path.resolve()} holds params.yaml and Snakefile: "
        "run vlrl inside the vlrl checkout, or set VLRL_ROOT to it"
    )


# --- a job step of its own -----------------------------------------------------------------------


@pytest.fixture()
def steps(monkeypatch: pytest.MonkeyPatch) -> list:
    """The commands :func:`vlrl.cluster.relay.run_in_step` was given (it returns 7)."""
    from vlrl.cluster import relay

    ran: list = []

    def run_in_step(command):
        ran.append(command)
        return 7

    monkeypatch.setattr(relay, "run_in_step", run_in_step)
    return ran


def test_a_stage_without_job_step_runs_here(steps: list) -> None:
    assert support.run_in_job_step(ModuleType("stage"), object(), ["infer", "e"]) is None
    assert steps == []


def test_a_stage_whose_job_step_declines_runs_here(steps: list) -> None:
    module = ModuleType("stage")
    asked = []
    module.job_step = lambda cfg, argv: asked.append((cfg, argv))  # returns None
    cfg = object()
    assert support.run_in_job_step(module, cfg, ["grpo", "e"]) is None
    assert asked == [(cfg, ["grpo", "e"])]
    assert steps == []


def test_a_stage_whose_job_step_gives_a_command_runs_there(steps: list) -> None:
    module = ModuleType("stage")
    cfg = object()
    module.job_step = lambda got, argv: ["srun", *argv] if got is cfg else None
    assert support.run_in_job_step(module, cfg, ["grpo", "e"]) == 7
    assert steps == [["srun", "grpo", "e"]]


# --- help text -----------------------------------------------------------------------------------


def test_prose_joins_each_paragraphs_lines() -> None:
    text = """First line
        goes on.

        Second  paragraph,
          indented more.
        """
    assert support.prose(text) == "First line goes on.\n\nSecond  paragraph, indented more."
    assert support.prose("") == ""
