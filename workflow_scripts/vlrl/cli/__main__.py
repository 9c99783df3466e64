"""``python -m vlrl.cli``: the ``vlrl`` command."""

from vlrl.cli import app

app()
