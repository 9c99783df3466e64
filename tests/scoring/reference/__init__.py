"""Verbatim-as-possible ports of reference scorers, for differential tests (each file names its
repository, file, commit and licence)."""
