"""How the command prints: a rich table in a terminal; full rows, never wrapped or cut, when
stdout is a pipe or a file; or CSV, JSON or Markdown on request (``--format``).

Rich lays text and tables out to the terminal's width and, when the stream is no terminal (a
pipe, a file, a log written by ``dvc repro`` or Snakemake), to 80 columns: table cells were cut
to ``…`` (``vlrl protocols | grep standard10`` found nothing) and long lines split mid-path. Off
a terminal, :func:`console` is as wide as the widest line.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

UNBOUNDED = 1_000_000
"""The width of a console that prints to a pipe or file: no line is ever wrapped or cut."""


def console(stderr: bool = False) -> Console:
    """A console for stdout (or stderr): the terminal's layout in a terminal, else unbounded
    lines."""
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return probe
    return Console(stderr=stderr, width=UNBOUNDED, soft_wrap=True)


class Format(enum.StrEnum):
    """What a table command prints."""

    table = "table"
    csv = "csv"
    json = "json"
    md = "md"


FormatOption = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        help="table (rich in a terminal; full rows in a pipe or file), csv, json or md.",
    ),
]
"""The ``--format`` option of the table commands."""


def emit(
    rows: list[dict[str, Any]],
    fmt: Format,
    shown: dict[str, str] | None = None,
    title: str | None = None,
) -> None:
    """Print ``rows``: as CSV, JSON (a list of objects) or Markdown with every field, or as a
    rich table of the ``shown`` fields (``{field: heading}``, all fields when None)."""
    frame = pd.DataFrame(rows, dtype=object)  # ints stay ints beside None
    if fmt is Format.csv:
        frame.to_csv(sys.stdout, index=False)
    elif fmt is Format.json:
        print(json.dumps(rows, indent=2, default=str))
    elif fmt is Format.md:
        print(frame.to_markdown(index=False))
    else:
        shown = shown or {column: column for column in frame.columns}
        table = Table(title=title)
        for heading in shown.values():
            table.add_column(heading)
        for row in rows:
            table.add_row(*(_cell(row.get(field)) for field in shown))
        console().print(table)


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)
