"""One module per pipeline stage; ``vlrl <stage>`` runs ``stages/<stage>.py:run``.

The config keys each stage reads (its params) are declared in :mod:`vlrl.config.reads`. A stage
imports no other stage; the orchestration above them (:mod:`vlrl.workflow`, :mod:`vlrl.cli`) calls
them.

May import: every room below the stages (not :mod:`vlrl.workflow` or :mod:`vlrl.cli`).
"""
