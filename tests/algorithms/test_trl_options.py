"""TRL's GRPOConfig option names, asked of TRL once per installed version and cached."""

from __future__ import annotations

import json

from vlrl.algorithms.trl_options import trl_grpo_options
from vlrl.algorithms.trl_setup import extra_problems
from vlrl.config import GRPOConfig


def test_trl_options_are_asked_of_trl_once_per_version_then_read(tmp_path, monkeypatch) -> None:
    """The first check imports TRL and keeps its option names under the user cache, named by
    the TRL and transformers versions; later checks read them without importing TRL; a
    damaged cache file is asked of TRL again and rewritten."""
    import dataclasses
    import importlib.metadata
    import sys

    from trl import GRPOConfig as TRLGRPOConfig

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    versions = f"{importlib.metadata.version('trl')}-{importlib.metadata.version('transformers')}"
    cached = tmp_path / "vlrl" / "trl" / f"grpo-options-{versions}.json"
    fields = {f.name for f in dataclasses.fields(TRLGRPOConfig)}
    assert trl_grpo_options() == fields and json.loads(cached.read_text()) == sorted(fields)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "trl", None)  # importing TRL now raises
        assert trl_grpo_options() == fields
        cfg = GRPOConfig(extra={"mask_truncated_completions": True, "no_such_option": 1})
        assert extra_problems(cfg) == [
            ("extra.no_such_option", "is not an option of TRL's GRPOConfig")
        ]
    for damaged in ("{not json", '{"a": 1}', "3", "[]", '["a", 1]'):
        cached.write_text(damaged)
        assert trl_grpo_options() == fields, damaged
        assert json.loads(cached.read_text()) == sorted(fields)
    # a cache that cannot be written (a file where its folder would be): TRL answers each time
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert trl_grpo_options() == fields
