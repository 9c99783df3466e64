"""The ``vlrl`` command: one subcommand per pipeline stage, plus the workflow tools.

- :mod:`~vlrl.cli.commands`: the stage commands (``app``), each a thin call into a stage;
- :mod:`~vlrl.cli.tools`: the workflow tools (plan, show, compare, protocols, check, …);
- :mod:`~vlrl.cli.output`: how tables print (terminal, pipe, ``--format``);
- :mod:`~vlrl.cli.support`: what the command does around them (``--set`` lists, the version
  line, finding the project).

May import: every room (the top floor).
"""

from vlrl.cli import tools
from vlrl.cli.commands import app
from vlrl.cli.support import prose

app.info.help = prose(app.info.help or "")
for _info in app.registered_commands:
    _info.help = prose(_info.help or _info.callback.__doc__ or "")

__all__ = ["app", "tools"]
