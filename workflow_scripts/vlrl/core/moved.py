"""Old import paths of the modules that moved into packages, kept for one release.

vlrl 0.1 grouped its loose top-level modules into rooms (:mod:`vlrl.core`, :mod:`vlrl.items`,
:mod:`vlrl.cluster`, :mod:`vlrl.serving`, :mod:`vlrl.cli`). A module of your own (a reward
family, a benchmark loader) that still imports an old path, ``from vlrl.answers import
extract_choice`` say, keeps working: the old name is a stand-in whose attributes are those of
the new modules, and the first import warns with a :class:`MovedWarning` that names them. The
next release removes the old paths. The package's own code uses the new paths only (a test
checks it).

>>> import sys, warnings
>>> _ = sys.modules.pop("vlrl.errors", None)  # (a first import, whatever ran before)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from vlrl.errors import ConfigError
>>> from vlrl.core import errors
>>> ConfigError is errors.ConfigError, str(caught[0].message)[:48]
(True, 'vlrl.errors moved to vlrl.core.errors: import it')
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings

MOVED: dict[str, tuple[str, ...]] = {
    "vlrl.paths": ("vlrl.core.paths",),
    "vlrl.files": ("vlrl.core.files",),
    "vlrl.errors": ("vlrl.core.errors",),
    "vlrl.volatile": ("vlrl.core.volatile",),
    "vlrl.records": ("vlrl.items.records",),
    "vlrl.predictions": ("vlrl.items.predictions",),
    "vlrl.answers": ("vlrl.items.answers",),
    "vlrl.prompts": ("vlrl.items.prompts", "vlrl.items.prompt_texts"),
    "vlrl.distributed": ("vlrl.cluster.distributed",),
    "vlrl.launch": ("vlrl.cluster.launch",),
    "vlrl.preemption": ("vlrl.cluster.preemption",),
    "vlrl.timelimit": ("vlrl.cluster.timelimit",),
    "vlrl.checkpoints": ("vlrl.cluster.checkpoints",),
    "vlrl.threads": ("vlrl.cluster.threads",),
    "vlrl.servers": ("vlrl.serving.servers", "vlrl.serving.commands", "vlrl.serving.gpus"),
    "vlrl.served_models": ("vlrl.serving.served_models",),
    "vlrl.server_gpus": ("vlrl.serving.gpus",),
    "vlrl.trl_server": ("vlrl.serving.trl_vllm",),
    "vlrl.cli_support": ("vlrl.cli.support",),
}
"""Each old module name → the modules its names now live in (two or three where it was split)."""


class MovedWarning(DeprecationWarning):
    """An old import path was used; shown once per place, unlike other deprecation warnings."""


class _StandIn(types.ModuleType):
    """The old module: every attribute is looked up in the new modules, in order."""

    def __init__(self, name: str, targets: tuple[str, ...]) -> None:
        super().__init__(name, f"Moved to {', '.join(targets)}.")
        self.__targets = targets

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self.__targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} moved to {', '.join(self.__targets)}, "
            f"which define no {attr!r}"
        )


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name, MOVED[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        targets = MOVED[module.__name__]
        where = " and ".join(
            [", ".join(targets[:-1]), targets[-1]] if len(targets) > 1 else targets
        )
        # stacklevel 2: the first frame outside importlib's own, the line that imports
        warnings.warn(
            f"{module.__name__} moved to {where}: import it from there "
            "(the old path goes in the next release)",
            MovedWarning,
            stacklevel=2,
        )


def install() -> None:
    """Make the old paths importable (once per process); :mod:`vlrl` calls it on import."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
        warnings.filterwarnings("default", category=MovedWarning)


def current(module: str) -> tuple[str, ...]:
    """Where the names of ``module`` live now: its new modules if it moved, else itself.

    >>> current("vlrl.threads"), current("vlrl.rewards")
    (('vlrl.cluster.threads',), ('vlrl.rewards',))
    """
    return MOVED.get(module, (module,))
