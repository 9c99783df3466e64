"""The ``vlrl`` command: one subcommand per pipeline stage, plus the workflow tools.

- :mod:`~vlrl.cli.commands`: the commands (``app``), each a thin call into a stage or a tool;
- :mod:`~vlrl.cli.support`: what the command does around them (``--set`` lists, the version
  line, finding the project).

May import: every room (the top floor).
"""

from vlrl.cli.commands import app

__all__ = ["app"]
