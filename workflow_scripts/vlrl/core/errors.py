"""Errors that name the file, row or key at fault. The CLI prints them without a traceback."""


class VlrlError(Exception):
    """Base class: a problem the user can fix, stated in one line."""


class ConfigError(VlrlError):
    """An experiment, benchmark or params file is invalid."""


class DataError(VlrlError):
    """A dataset row is invalid (missing image, box outside its image, ...)."""


class StageError(VlrlError):
    """A stage could not run (missing input, external tool failed)."""
