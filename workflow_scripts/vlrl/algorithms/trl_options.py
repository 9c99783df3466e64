"""The option names of TRL's GRPOConfig, which ``grpo.extra`` may set
(:func:`vlrl.algorithms.trl_setup.extra_problems` checks them)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json

from vlrl.core import paths
from vlrl.core.files import write_json


def trl_grpo_options() -> frozenset[str]:
    """The option names of TRL's GRPOConfig (its fields and TrainingArguments'), as installed.

    Importing TRL's config imports transformers' TrainingArguments and torch (about 14 s on a
    small CPU); Snakemake checks every experiment at each start, so the names are kept in
    :func:`vlrl.core.paths.user_cache`, one file per installed TRL and transformers version.
    """
    versions = "-".join(importlib.metadata.version(n) for n in ("trl", "transformers"))
    cached = paths.user_cache() / "trl" / f"grpo-options-{versions}.json"
    try:
        names = json.loads(cached.read_text())
    except (OSError, ValueError):  # none yet, or unreadable: ask TRL
        names = None
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return frozenset(names)
    from trl import GRPOConfig as TRLGRPOConfig

    options = sorted(f.name for f in dataclasses.fields(TRLGRPOConfig))
    with contextlib.suppress(OSError):  # a read-only home: ask TRL again next time
        write_json(cached, options)
    return frozenset(options)
