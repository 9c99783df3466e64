"""A pytest plugin for mutation runs: every vlrl function cache is emptied before each test.

mutmut runs the clean tests in the process its mutant workers are forked from, so a cache filled
there (``functools.lru_cache`` on a scorer) answers for the mutant without running the mutated
code, and the mutant survives unseen. ``mutation/run.py`` loads this plugin (``-p``).
"""

from __future__ import annotations

import sys


def pytest_runtest_setup(item) -> None:
    for name, module in list(sys.modules.items()):
        if name == "vlrl" or name.startswith("vlrl."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and getattr(value, "__module__", None) == name:
                    clear()
