"""The papers' released reward code, kept verbatim under ``tests/rewards/reference/``, loaded by
path: ``tests/scoring/reference`` is a package named ``reference`` too. Each call loads a fresh
module, so a test may patch its copy."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REFERENCE = Path(__file__).parent / "rewards" / "reference"


def released_module(name: str) -> ModuleType:
    """``tests/rewards/reference/<name>`` as a module of its own."""
    path = REFERENCE / name
    spec = importlib.util.spec_from_file_location(f"rewards_reference_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
