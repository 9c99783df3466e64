"""The helpers behind the stage commands (:mod:`vlrl.cli.commands`), in the test process:
``--version``, the log handler (rich in a terminal, one plain line elsewhere), the warnings and
error lines, running a stage (pinned CPU kernels and threads, a job step of its own, the config
reads it must declare), SIGTERM as an exit with status 143, loading an experiment with its
``--set`` overrides and refusing them on an experiment dvc.yaml tracks."""

from __future__ import annotations

import io
import logging
import signal
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.logging import RichHandler

import vlrl.config
from vlrl import sharing
from vlrl.cli import commands
from vlrl.cli import support as cli_support
from vlrl.cluster import threads
from vlrl.config import reads as config_reads
from vlrl.core.errors import ConfigError, VlrlError


@pytest.fixture()
def err(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the command prints to stderr, through a plain console 40 columns wide."""
    stream = io.StringIO()
    monkeypatch.setattr(commands, "err", Console(file=stream, width=40, color_system=None))
    return stream


# --- --version -----------------------------------------------------------------------------------


def test_version_prints_the_line_after_the_warning(
    err: io.StringIO, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_support, "version_line", lambda: "vlrl 1.0 (/c)")
    monkeypatch.setattr(cli_support, "other_checkout", lambda: "other code")
    with pytest.raises(typer.Exit):
        commands._version(True)
    assert capsys.readouterr().out == "vlrl 1.0 (/c)\n"
    assert err.getvalue() == "warning: other code\n"


def test_no_version_asked_prints_nothing(
    err: io.StringIO, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_support, "other_checkout", lambda: "other code")
    commands._version(False)
    assert capsys.readouterr().out == ""
    assert err.getvalue() == ""


# --- the log handler -----------------------------------------------------------------------------


def _record(message: str = "hello", exc_info=None) -> logging.LogRecord:
    record = logging.LogRecord(
        "vlrl", logging.INFO, "/somewhere/stage_file.py", 7, message, None, exc_info
    )
    record.created = 3723.25  # 01:02:03 UTC
    return record


def test_off_a_terminal_a_log_record_is_one_plain_line(
    err: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    handler = commands._log_handler()
    assert type(handler) is logging.StreamHandler
    assert handler.stream is stream
    handler.formatter.converter = time.gmtime
    handler.handle(_record("a long message " * 10))
    assert stream.getvalue() == "[01:02:03] INFO    " + "a long message " * 10 + "\n"
    assert commands.LOG_FORMAT == "[%(asctime)s] %(levelname)-7s %(message)s"


def test_in_a_terminal_rich_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    terminal = Console(file=stream, width=100, force_terminal=True, color_system=None)
    monkeypatch.setattr(commands, "err", terminal)
    handler = commands._log_handler()
    assert isinstance(handler, RichHandler)
    assert handler.console is terminal
    assert handler.rich_tracebacks is True
    handler.handle(_record("hello there"))
    line = stream.getvalue()
    assert "INFO" in line and "hello there" in line
    assert "stage_file.py" not in line  # no path column
    try:
        raise ValueError("boom")
    except ValueError:
        handler.handle(_record("failed", sys.exc_info()))
    assert "Traceback (most recent call last)" in stream.getvalue()
    assert "╭" in stream.getvalue()  # rich's traceback box, not logging's plain one


# --- warnings and errors -------------------------------------------------------------------------


def test_the_other_checkout_warning_is_one_line(
    err: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    warning = "vlrl runs the code in /a/very/long/path/to/another/checkout/workflow_scripts/vlrl"
    monkeypatch.setattr(cli_support, "other_checkout", lambda: warning)
    commands._warn_other_checkout()
    assert err.getvalue() == f"warning: {warning}\n"  # not wrapped at 40 columns


def test_no_warning_for_this_checkout(err: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_support, "other_checkout", lambda: None)
    commands._warn_other_checkout()
    assert err.getvalue() == ""


@pytest.fixture()
def no_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_support, "root_hint", lambda: "")


def test_fail_prints_one_error_line_and_exits_2(
    err: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_support, "root_hint", lambda: "\nhint: look up")
    with pytest.raises(SystemExit) as info:
        commands.fail(VlrlError("no such thing"))
    assert info.value.code == 2
    assert err.getvalue() == "error: no such thing\nhint: look up\n"


def test_fail_reads_markup_unless_told_to_escape(err: io.StringIO, no_hint: None) -> None:
    with pytest.raises(SystemExit):
        commands.fail(ConfigError("[b]x[/b] in [n, m]"))
    assert err.getvalue() == "error: x in \n"
    err.truncate(0)
    err.seek(0)
    with pytest.raises(SystemExit):
        commands.fail(ConfigError("[b]x[/b] in [n, m]"), escape=True)
    assert err.getvalue() == "error: [b]x[/b] in [n, m]\n"


def test_fail_wraps_unless_told_not_to(err: io.StringIO, no_hint: None) -> None:
    message = "a problem described in many words, more than forty columns"
    with pytest.raises(SystemExit):
        commands.fail(VlrlError(message))
    lines = [line.rstrip() for line in err.getvalue().splitlines()]
    assert lines == ["error: a problem described in many", "words, more than forty columns"]
    err.truncate(0)
    err.seek(0)
    with pytest.raises(SystemExit):
        commands.fail(VlrlError(message), soft_wrap=True)
    assert err.getvalue() == f"error: {message}\n"


def test_run_or_fail_passes_arguments_and_returns_the_result() -> None:
    def fn(*args, **kwargs):
        return args, kwargs

    assert commands.run_or_fail(fn, 1, "b", c=3) == ((1, "b"), {"c": 3})


def test_run_or_fail_turns_a_user_error_into_exit_2(err: io.StringIO, no_hint: None) -> None:
    def fn():
        raise ConfigError("bad key")

    with pytest.raises(SystemExit) as info:
        commands.run_or_fail(fn)
    assert info.value.code == 2
    assert err.getvalue() == "error: bad key\n"


def test_run_or_fail_lets_a_bug_through() -> None:
    def fn():
        raise KeyError("bug")

    with pytest.raises(KeyError):
        commands.run_or_fail(fn)


# --- running a stage -----------------------------------------------------------------------------


class Cfg(BaseModel):
    a: int = 1
    b: int = 2


class Stage:
    """A fake stage module, ``vlrl.stages.fake_stage``: records how it was run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple] = []
        self.pinned: list[tuple] = []
        self.steps: list[tuple] = []
        self.step_status: int | None = None
        self.reads = ("a",)
        module = ModuleType("vlrl.stages.fake_stage")
        module.run = self.run
        self.module = module
        monkeypatch.setitem(sys.modules, "vlrl.stages.fake_stage", module)
        monkeypatch.setattr(commands, "_raise_on_sigterm", lambda: self.pinned.append("sigterm"))
        monkeypatch.setattr(threads, "pin_cpu_kernels", lambda v: self.pinned.append(("k", v)))
        monkeypatch.setattr(threads, "pin_cpu_threads", lambda v: self.pinned.append(("t", v)))
        monkeypatch.setattr(cli_support, "run_in_job_step", self.job_step)
        monkeypatch.setattr(config_reads, "allowed_reads", self.allowed_reads)
        monkeypatch.setattr(sys, "argv", ["vlrl", "fake", "e", "c"])

    def run(self, *args):
        self.calls.append(args)
        cfg = args[1]
        return cfg.a  # a read

    def job_step(self, module, cfg, argv):
        self.steps.append((module, cfg, argv))
        return self.step_status

    def allowed_reads(self, stage: str) -> tuple[str, ...]:
        return {"fake_stage": self.reads}[stage]


@pytest.fixture()
def stage(monkeypatch: pytest.MonkeyPatch) -> Stage:
    return Stage(monkeypatch)


def test_a_stage_runs_with_its_config_and_arguments(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLRL_CHECK_READS", raising=False)
    cfg = SimpleNamespace(cpu_kernels="generic", cpu_threads=3, a=1)
    commands._stage("fake_stage", cfg, "e", "c", "bench")
    # SIGTERM handled, then the kernels and threads pinned, before the stage runs
    assert stage.pinned == ["sigterm", ("k", "generic"), ("t", 3)]
    assert stage.steps == [(stage.module, cfg, ["fake", "e", "c"])]
    assert stage.calls == [("e", cfg, "c", "bench")]


def test_a_config_without_cpu_settings_pins_nothing(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_CHECK_READS", "0")
    cfg = SimpleNamespace(a=1)
    commands._stage("fake_stage", cfg, "e")
    assert stage.pinned == ["sigterm", ("k", None), ("t", None)]
    assert stage.calls == [("e", cfg)]


def test_a_stage_in_a_job_step_exits_with_its_status(stage: Stage) -> None:
    stage.step_status = 7
    with pytest.raises(SystemExit) as info:
        commands._stage("fake_stage", Cfg(), "e")
    assert info.value.code == 7
    assert stage.calls == []  # not here


def test_reads_are_recorded_and_declared_ones_pass(
    stage: Stage, monkeypatch: pytest.MonkeyPatch, err: io.StringIO
) -> None:
    monkeypatch.setenv("VLRL_CHECK_READS", "1")
    cfg = Cfg()
    commands._stage("fake_stage", cfg, "e", "c", "bench")
    ((exp, seen_cfg, *rest),) = stage.calls
    assert (exp, rest) == ("e", ["c", "bench"])
    assert type(seen_cfg).__name__ == "RecordingConfig"
    assert seen_cfg.b == 2 and seen_cfg.model_dump() == cfg.model_dump()  # a view of cfg
    assert err.getvalue() == ""


def test_an_undeclared_read_fails_with_status_3(
    stage: Stage, monkeypatch: pytest.MonkeyPatch, err: io.StringIO
) -> None:
    monkeypatch.setenv("VLRL_CHECK_READS", "1")
    monkeypatch.setattr(commands, "err", Console(file=err, width=200, color_system=None))
    stage.reads = ("b",)
    with pytest.raises(SystemExit) as info:
        commands._stage("fake_stage", Cfg(), "e")
    assert info.value.code == 3
    assert err.getvalue() == (
        "error: stage fake_stage read config keys it does not declare: ['a']; add them to "
        "STAGE_READS['fake_stage'] in vlrl/config/reads.py\n"
    )


def test_sigterm_ends_the_stage_with_status_143() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        commands._raise_on_sigterm()
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler)
        with pytest.raises(SystemExit) as info:
            handler(signal.SIGTERM, None)
        assert info.value.code == 143
        # a second SIGTERM during the cleanup is ignored
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- loading the experiment ----------------------------------------------------------------------


@pytest.fixture()
def loading(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The calls that loading an experiment made, in order."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        commands, "_refuse_tracked_overrides", lambda *a: calls.append(("refuse", *a))
    )
    monkeypatch.setattr(sharing, "use_overrides", lambda *a: calls.append(("use", *a)))

    def load(*a):
        calls.append(("load", *a))
        return "the config"

    monkeypatch.setattr(vlrl.config, "load_experiment", load)
    return calls


def test_an_experiment_loads_with_its_overrides(loading: list[tuple]) -> None:
    assert commands._experiment("e", ["a=1", "b=2"]) == "the config"
    overrides = ["a=1", "b=2"]
    assert loading == [
        ("refuse", "e", overrides),
        ("use", "e", overrides),
        ("load", "e", overrides),
    ]


def test_an_experiment_without_overrides_is_not_checked_for_them(loading: list[tuple]) -> None:
    assert commands._experiment("e", None) == "the config"
    assert loading == [("use", "e", None), ("load", "e", None)]


def test_an_experiment_that_fails_to_load_is_an_error_line(
    monkeypatch: pytest.MonkeyPatch, err: io.StringIO, no_hint: None
) -> None:
    def load(exp, overrides):
        raise ConfigError(f"no such experiment {exp!r}")

    monkeypatch.setattr(sharing, "use_overrides", lambda *a: None)
    monkeypatch.setattr(vlrl.config, "load_experiment", load)
    with pytest.raises(SystemExit) as info:
        commands._experiment("nope", None)
    assert info.value.code == 2
    assert err.getvalue() == "error: no such experiment 'nope'\n"


def test_overrides_are_allowed_without_a_dvc_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    assert commands._refuse_tracked_overrides("e", ["a=1"]) is None


def test_overrides_are_allowed_on_an_untracked_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    (tmp_path / "dvc.yaml").write_text("stages:\n  grpo--other:\n    cmd: vlrl grpo other\n")
    assert commands._refuse_tracked_overrides("e", ["a=1"]) is None


def test_overrides_on_a_tracked_experiment_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    (tmp_path / "dvc.yaml").write_text("stages:\n  grpo--e:\n    cmd: vlrl grpo e\n")
    with pytest.raises(ConfigError) as info:
        commands._refuse_tracked_overrides("e", ["a=1", "b.c=2"])
    assert str(info.value) == (
        "--set would overwrite outputs of experiment e, which dvc.yaml tracks, with a config no "
        "file describes. Run the variant as a DVC experiment (`dvc exp run "
        "-S 'config/experiments/e.yaml:a=1' -S 'config/experiments/e.yaml:b.c=2'`) or copy "
        "config/experiments/e.yaml to a new experiment and edit that"
    )
