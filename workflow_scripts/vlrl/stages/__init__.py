"""One module per pipeline stage; ``vlrl <stage>`` runs ``stages/<stage>.py:run``."""
