"""Which config keys a stage really reads, to hold them against what it declares in ``READS``.

A stage's params (what makes both Snakemake and DVC rerun it) are the resolved values of the keys
its module declares (:mod:`vlrl.workflow.stage_deps`). A key read but not declared would be a
silent stale cache: changing it would rerun nothing. :class:`RecordingConfig` wraps a config
and records every key read through it; :func:`undeclared` lists those no declaration covers.
The ``vlrl`` command does this for every stage it runs when ``VLRL_CHECK_READS=1`` (the tests
set it, so every stage the tests run is checked).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

ENV = "VLRL_CHECK_READS"
WHOLE = "<whole config>"


class RecordingConfig:
    """A read-only view of a pydantic config that records the dotted keys read through it.

    Reading a field records its key; a sub-model comes back wrapped, so only the leaves read
    are recorded. Properties are evaluated on the view (``cfg.checkpoints`` records the fields
    it uses); any other attribute (``model_dump``, ...) counts as reading the whole object.

    >>> from vlrl.config import GRPOConfig, InferConfig
    >>> seen = set()
    >>> view = RecordingConfig(InferConfig(), seen)
    >>> view.batch_size, sorted(seen)
    (16, ['batch_size'])
    """

    def __init__(self, target: BaseModel, seen: set[str], prefix: str = "") -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_seen", seen)
        object.__setattr__(self, "_prefix", prefix)

    def _key(self, name: str) -> str:
        return f"{self._prefix}.{name}" if self._prefix else name

    def __getattr__(self, name: str) -> Any:
        target = self._target
        if name.startswith("__"):
            return getattr(target, name)
        declared = getattr(type(target), name, None)
        if isinstance(declared, property):
            return declared.fget(self)
        value = getattr(target, name)
        if name in type(target).model_fields:
            if isinstance(value, BaseModel):
                return RecordingConfig(value, self._seen, self._key(name))
            self._seen.add(self._key(name))
            return value
        self._seen.add(self._prefix or WHOLE)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"config is read-only in a stage (tried to set {self._key(name)})")

    def __repr__(self) -> str:
        return f"RecordingConfig({self._target!r})"


def covered(key: str, declared: Iterable[str]) -> bool:
    """Whether a declaration covers ``key``: the key itself or a section above it.

    >>> covered("sft.enabled", ["sft"]), covered("sft", ["sft.enabled"]), covered("seed", ["seed"])
    (True, False, True)
    """
    return any(key == d or key.startswith(d + ".") for d in declared)


def undeclared(seen: Iterable[str], declared: Iterable[str]) -> list[str]:
    """The keys read that no declaration covers, sorted.

    >>> undeclared({"sft.enabled", "seed", "grpo"}, ["sft", "grpo.beta"])
    ['grpo', 'seed']
    """
    declared = list(declared)
    return sorted(k for k in set(seen) if not covered(k, declared))
