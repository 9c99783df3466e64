"""How the table commands print (:mod:`vlrl.cli.output`), in the test process: the console
(the terminal's layout in a terminal, unbounded lines into a pipe or file, for stdout or stderr)
and :func:`~vlrl.cli.output.emit` in each ``--format`` (rich table, CSV, JSON, Markdown)."""

from __future__ import annotations

import io
import sys
from datetime import date
from pathlib import Path

import pytest

from vlrl.cli import output
from vlrl.cli.output import UNBOUNDED, Format, console, emit


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _no_forced_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    # rich reads these before asking the stream whether it is a terminal, and its width
    for var in ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS", "LINES"):
        monkeypatch.delenv(var, raising=False)


# --- console -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stderr", [False, True])
def test_off_a_terminal_lines_are_unbounded(stderr: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr" if stderr else "stdout", stream)
    out = console(stderr=stderr)
    assert not out.is_terminal
    assert out.file is stream
    assert out.width == UNBOUNDED == 1_000_000
    assert out.soft_wrap is True


def test_the_default_console_prints_to_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    assert console().file is stream


@pytest.mark.parametrize("stderr", [False, True])
def test_in_a_terminal_the_terminals_layout(stderr: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # only the stream printed to is a terminal: the other one is asked nothing
    monkeypatch.setattr(sys, "stdout", Terminal() if not stderr else io.StringIO())
    monkeypatch.setattr(sys, "stderr", Terminal() if stderr else io.StringIO())
    out = console(stderr=stderr)
    assert out.is_terminal
    assert out.file is (sys.stderr if stderr else sys.stdout)
    assert out.width < UNBOUNDED
    assert out.soft_wrap is False


def test_a_long_line_off_a_terminal_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    line = " ".join(f"word{i}" for i in range(100))  # far over 80 columns
    console().print(line)
    assert stream.getvalue() == line + "\n"


# --- emit ----------------------------------------------------------------------------------------

ROWS = [
    {"name": "a", "n": 1, "p": None},
    {"name": "b", "n": 0, "p": "x"},
    {"name": "c", "n": None, "p": ""},
]


def _table(text: str) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """A rich table's other lines (the title), heading cells and body cells, stripped."""
    other, headings, body = [], [], []
    for line in text.splitlines():
        if line.startswith("┃"):
            headings.append([cell.strip() for cell in line.strip("┃").split("┃")])
        elif line.startswith("│"):
            body.append([cell.strip() for cell in line.strip("│").split("│")])
        elif not line.startswith(("┏", "┡", "└")):
            other.append(line.strip())
    return other, headings, body


def test_a_table_of_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    emit(ROWS, Format.table)
    other, headings, body = _table(capsys.readouterr().out)
    assert other == []
    assert headings == [["name", "n", "p"]]
    # None is "-"; 0 and "" are themselves
    assert body == [["a", "1", "-"], ["b", "0", "x"], ["c", "-", ""]]


def test_a_table_of_the_fields_shown_under_their_headings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    emit(ROWS, Format.table, {"p": "P value", "name": "Name"}, title="things")
    other, headings, body = _table(capsys.readouterr().out)
    assert other == ["things"]
    assert headings == [["P value", "Name"]]
    assert body == [["-", "a"], ["x", "b"], ["", "c"]]


def test_a_table_row_in_a_pipe_is_whole(capsys: pytest.CaptureFixture[str]) -> None:
    long = "-".join(["segment"] * 40)
    emit([{"path": long, "k": 1}], Format.table)
    assert _table(capsys.readouterr().out)[2] == [[long, "1"]]


def test_csv_has_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    emit(ROWS, Format.csv, {"name": "Name"})
    # no index column; ints stay ints beside None (no 1.0)
    assert capsys.readouterr().out == "name,n,p\na,1,\nb,0,x\nc,,\n"


def test_json_is_the_rows(capsys: pytest.CaptureFixture[str]) -> None:
    emit([{"n": 1, "p": None}, {"n": 2, "p": Path("a/b"), "d": date(2025, 5, 1)}], Format.json)
    assert capsys.readouterr().out == (
        "[\n"
        "  {\n"
        '    "n": 1,\n'
        '    "p": null\n'
        "  },\n"
        "  {\n"
        '    "n": 2,\n'
        '    "p": "a/b",\n'
        '    "d": "2025-05-01"\n'
        "  }\n"
        "]\n"
    )


def test_markdown_has_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    emit(ROWS, Format.md, {"name": "Name"}, title="ignored")
    assert capsys.readouterr().out == (
        "| name   |   n | p   |\n"
        "|:-------|----:|:----|\n"
        "| a      |   1 |     |\n"
        "| b      |   0 | x   |\n"
        "| c      |     |     |\n"
    )


def test_a_cell() -> None:
    assert output._cell(None) == "-"
    assert output._cell(0) == "0"
    assert output._cell("") == ""
    assert output._cell(1.5) == "1.5"
