"""Every declared bound of the config models, tested on both sides, and every cross-check of
their validators at its boundary.

tests/test_config.py shows that out-of-range values are rejected, with the key named; this file
pins where each range ends. A bound tightened (``ge`` → ``gt``, ``<=`` → ``<`` in a cross-check)
makes a valid boundary value fail here, and a bound deleted or added makes the declared set differ
from :data:`BOUNDS`.

Each bound is tested on the one model that declares it (``model_validate`` of a minimal valid
instance, :data:`BASES`, with that one field changed), so that the check isolates the bound; where
a boundary value would trip a cross-check of the same model, :data:`COMPANIONS` moves the other
field out of the way.
"""

from __future__ import annotations

import collections.abc
import importlib
import inspect
import math
import pkgutil
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

import vlrl.config
from vlrl.config import DISTRIBUTED_STAGES, SELF_REWARD_READERS, validation_problems

REPO = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------------------
# The table. It is the review point: a bound added to, changed in or deleted from a model in
# vlrl/config fails test_table_lists_every_declared_bound until this table says the same, so the
# change is seen (and its boundary tested below). Inherited bounds are listed on every model that
# has them (the endpoint subclasses), so that a subclass redeclaring a field without its bound is
# caught too. Float bounds are written as floats, int bounds as ints (the type is compared).
# Paths: ``field``, ``field[]`` (each item of a list), ``field[i]`` (a tuple's i-th item).
# ---------------------------------------------------------------------------------------------
BOUNDS: list[tuple[str, str, str, int | float]] = [
    # data.py
    ("ShapesConfig", "image_size", "ge", 28),
    ("ShapesConfig", "min_shapes", "ge", 1),
    ("ShapesConfig", "max_shapes", "ge", 1),
    ("ShapesConfig", "max_shapes", "le", 8),
    ("ShapesConfig", "n_train", "ge", 1),
    ("ShapesConfig", "n_val", "ge", 1),
    ("ShapesConfig", "n_test", "ge", 1),
    ("ShapesTeacher", "miss_rate", "ge", 0.0),
    ("ShapesTeacher", "miss_rate", "le", 1.0),
    ("DataSource", "max_samples", "ge", 1),
    ("AttentionHeads", "text", "gt", 0),
    ("AttentionHeads", "text_kv", "gt", 0),
    ("AttentionHeads", "vision", "gt", 0),
    ("TextShape", "hidden_size", "gt", 0),
    ("TextShape", "num_hidden_layers", "gt", 0),
    ("TextShape", "intermediate_size", "gt", 0),
    ("TextShape", "vocab_size", "gt", 0),
    ("TinyModelConfig", "hidden_size", "gt", 0),
    ("TinyModelConfig", "intermediate_size", "gt", 0),
    ("TinyModelConfig", "num_hidden_layers", "gt", 0),
    ("TinyModelConfig", "num_attention_heads", "gt", 0),
    ("TinyModelConfig", "num_key_value_heads", "gt", 0),
    ("TinyModelConfig", "vision_depth", "gt", 0),
    ("TinyModelConfig", "vision_hidden_size", "gt", 0),
    ("TinyModelConfig", "vocab_size", "ge", 300),
    ("TinyModelConfig", "min_pixels", "gt", 0),
    ("TinyModelConfig", "max_pixels", "gt", 0),
    ("HubModelConfig", "unpinned", "min_length", 1),
    ("ModelConfig", "parameters", "ge", 1),
    ("ModelConfig", "size_bytes", "ge", 0),
    ("DatasetConfig", "unpinned", "min_length", 1),
    ("DatasetConfig", "local", "min_length", 1),
    ("DatasetConfig", "allow_patterns", "min_length", 1),
    ("DatasetConfig", "allow_patterns[]", "min_length", 1),
    ("DatasetConfig", "size_bytes", "ge", 0),
    ("DatasetConfig", "image_size[0]", "gt", 0),
    ("DatasetConfig", "image_size[1]", "gt", 0),
    # endpoints.py
    ("ServeConfig", "port", "ge", 1),
    ("ServeConfig", "port", "le", 65535),
    ("ServeConfig", "startup_timeout_s", "gt", 0.0),
    ("ServeConfig", "gpus", "ge", 0),
    ("ServeConfig", "gpu_memory_utilization", "gt", 0.0),
    ("ServeConfig", "gpu_memory_utilization", "le", 1.0),
    ("ServeConfig", "max_model_len", "gt", 0),
    ("ServeConfig", "images_per_prompt", "gt", 0),
    ("EndpointConfig", "concurrency", "gt", 0),
    ("EndpointConfig", "timeout_s", "gt", 0.0),
    ("EndpointConfig", "max_retries", "ge", 0),
    ("EndpointConfig", "backoff_s", "ge", 0.0),
    ("EndpointConfig", "cache_max_entries", "gt", 0),
    # evaluation.py
    ("OpenAIGenerationConfig", "concurrency", "gt", 0),
    ("OpenAIGenerationConfig", "timeout_s", "gt", 0.0),
    ("OpenAIGenerationConfig", "max_retries", "ge", 0),
    ("OpenAIGenerationConfig", "backoff_s", "ge", 0.0),
    ("OpenAIGenerationConfig", "cache_max_entries", "gt", 0),
    ("InferConfig", "batch_size", "gt", 0),
    ("InferConfig", "workers", "ge", 1),
    ("InferConfig", "max_new_tokens", "gt", 0),
    ("InferConfig", "temperature", "ge", 0.0),
    ("InferConfig", "top_p", "gt", 0.0),
    ("InferConfig", "top_p", "le", 1.0),
    ("InferConfig", "checkpoints", "min_length", 1),
    ("JudgeConfig", "concurrency", "gt", 0),
    ("JudgeConfig", "timeout_s", "gt", 0.0),
    ("JudgeConfig", "max_retries", "ge", 0),
    ("JudgeConfig", "backoff_s", "ge", 0.0),
    ("JudgeConfig", "cache_max_entries", "gt", 0),
    ("JudgeConfig", "temperature", "ge", 0.0),
    ("JudgeConfig", "max_tokens", "gt", 0),
    ("ScoreConfig", "iou_threshold", "gt", 0.0),
    ("ScoreConfig", "iou_threshold", "le", 1.0),
    ("ScoreConfig", "confidence", "gt", 0.0),
    ("ScoreConfig", "confidence", "lt", 1.0),
    ("ScoreConfig", "bootstrap_resamples", "gt", 0),
    ("ReportConfig.Published", "rows", "min_length", 1),
    ("ReportConfig.Combined", "benchmarks", "min_length", 2),
    ("ReportConfig.Gallery", "n", "ge", 0),
    ("ReportConfig.Gallery", "reasoning_chars", "gt", 0),
    ("ReportConfig.Gallery", "thumbnail_px", "ge", 32),
    ("ReportConfig.Gallery", "thumbnail_px", "le", 1024),
    # experiment.py
    ("ImagePixels", "min", "gt", 0),
    ("ImagePixels", "max", "gt", 0),
    ("ExperimentConfig", "seed", "ge", 0),
    ("ExperimentConfig", "seed", "lt", 2**32),
    ("ExperimentConfig", "cpu_threads", "ge", 1),
    ("ExperimentConfig", "benchmarks", "min_length", 1),
    # resources.py
    ("StageResources", "gpus", "ge", 0),
    ("StageResources", "nodes", "gt", 0),
    ("StageResources", "cpus", "gt", 0),
    ("StageResources", "mem_mb", "gt", 0),
    ("StageResources", "runtime", "gt", 0),
    # training.py
    ("SFTConfig", "max_samples", "ge", 1),
    ("SFTConfig", "num_train_epochs", "gt", 0.0),
    ("SFTConfig", "max_steps", "gt", 0),
    ("SFTConfig", "learning_rate", "gt", 0.0),
    ("SFTConfig", "per_device_train_batch_size", "gt", 0),
    ("SFTConfig", "gradient_accumulation_steps", "gt", 0),
    ("SFTConfig", "processes", "gt", 0),
    ("SFTConfig", "warmup_ratio", "ge", 0.0),
    ("SFTConfig", "warmup_ratio", "le", 1.0),
    ("SFTConfig", "weight_decay", "ge", 0.0),
    ("SFTConfig", "max_grad_norm", "ge", 0.0),
    ("SFTConfig", "cutoff_len", "gt", 0),
    ("SFTConfig", "lora_rank", "gt", 0),
    ("SFTConfig", "image_max_pixels", "gt", 0),
    ("SFTConfig", "image_min_pixels", "gt", 0),
    ("ThinkingRewardConfig", "concurrency", "gt", 0),
    ("ThinkingRewardConfig", "timeout_s", "gt", 0.0),
    ("ThinkingRewardConfig", "max_retries", "ge", 0),
    ("ThinkingRewardConfig", "backoff_s", "ge", 0.0),
    ("ThinkingRewardConfig", "cache_max_entries", "gt", 0),
    ("TrustGRPOSettings", "alpha", "ge", 0.0),
    ("TrustGRPOSettings", "T", "gt", 0.0),
    ("TrustGRPOSettings", "query_threshold", "ge", 0.0),
    ("TrustGRPOSettings", "query_threshold", "le", 1.0),
    ("TrustGRPOSettings", "skip_high", "ge", 0.0),
    ("TrustGRPOSettings", "skip_high", "le", 1.0),
    ("TrustGRPOSettings", "skip_low", "ge", 0.0),
    ("TrustGRPOSettings", "skip_low", "le", 1.0),
    ("TrustGRPOSettings", "correct_threshold", "ge", 0.0),
    ("TrustGRPOSettings", "correct_threshold", "le", 1.0),
    ("GRPOConfig", "rewards", "min_length", 1),
    ("GRPOConfig", "max_samples", "ge", 1),
    ("GRPOConfig", "tasks", "min_length", 1),
    ("GRPOConfig", "max_steps", "gt", 0),
    ("GRPOConfig", "schedule_steps", "gt", 0),
    ("GRPOConfig", "schedule_epochs", "gt", 0.0),
    ("GRPOConfig", "learning_rate", "gt", 0.0),
    ("GRPOConfig", "warmup_ratio", "ge", 0.0),
    ("GRPOConfig", "warmup_ratio", "lt", 1.0),
    ("GRPOConfig", "weight_decay", "ge", 0.0),
    ("GRPOConfig", "max_grad_norm", "ge", 0.0),
    ("GRPOConfig", "steps_per_generation", "ge", 1),
    ("GRPOConfig", "entropy_coef", "ge", 0.0),
    ("GRPOConfig", "per_device_train_batch_size", "gt", 0),
    ("GRPOConfig", "gradient_accumulation_steps", "gt", 0),
    ("GRPOConfig", "processes", "gt", 0),
    ("GRPOConfig", "num_generations", "ge", 2),
    ("GRPOConfig", "max_completion_length", "gt", 0),
    ("GRPOConfig", "temperature", "gt", 0.0),
    ("GRPOConfig", "top_p", "gt", 0.0),
    ("GRPOConfig", "top_p", "le", 1.0),
    ("GRPOConfig", "top_k", "ge", 0),
    ("GRPOConfig", "beta", "ge", 0.0),
    ("GRPOConfig", "epsilon", "gt", 0.0),
    ("GRPOConfig", "epsilon_high", "gt", 0.0),
    ("GRPOConfig", "num_iterations", "gt", 0),
    ("GRPOConfig", "lora_rank", "gt", 0),
    ("GRPOConfig", "lora_alpha", "gt", 0),
    ("GRPOConfig", "logging_steps", "gt", 0),
    ("GRPOConfig", "save_steps", "ge", 1),
    ("GRPOConfig", "save_total_limit", "ge", 1),
    ("GRPOConfig", "stop_margin_s", "ge", 0),
    ("GRPOConfig", "max_requeues", "ge", 0),
    ("GRPOConfig", "image_max_pixels", "gt", 0),
    ("GRPOConfig", "image_min_pixels", "gt", 0),
    ("GRPOConfig", "vllm_gpu_memory_utilization", "gt", 0.0),
    ("GRPOConfig", "vllm_gpu_memory_utilization", "le", 1.0),
    ("GRPOConfig", "vllm_tensor_parallel_size", "ge", 1),
    ("GRPOConfig", "vllm_server_gpus", "ge", 0),
]

# ---------------------------------------------------------------------------------------------
# Introspection: what the models declare.
# ---------------------------------------------------------------------------------------------
NUMERIC = ("ge", "gt", "le", "lt")
LENGTH = ("min_length", "max_length")
# Any other constraint pydantic can carry is recorded too, so that one appearing fails the table
# comparison instead of going unseen.
OTHER = ("multiple_of", "max_digits", "decimal_places")


def config_models() -> dict[str, type[BaseModel]]:
    """Every pydantic model of the vlrl.config package by qualified name: the classes of its
    modules, the models their fields hold and the models nested in their bodies."""
    found: dict[str, type[BaseModel]] = {}

    def add(cls: type[BaseModel]) -> None:
        if cls.__qualname__ in found:
            return
        found[cls.__qualname__] = cls
        for field in cls.model_fields.values():
            for tp in _types_in(field.annotation):
                if _is_model(tp):
                    add(tp)
        for value in vars(cls).values():
            if _is_model(value):
                add(value)

    for info in pkgutil.iter_modules(vlrl.config.__path__):
        module = importlib.import_module(f"vlrl.config.{info.name}")
        for _, cls in inspect.getmembers(module, _is_model):
            if cls.__module__.startswith("vlrl.config"):
                add(cls)
    return found


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _types_in(tp: Any) -> collections.abc.Iterator[Any]:
    yield tp
    for arg in typing.get_args(tp):
        if not isinstance(arg, str | int | float | FieldInfo):
            yield from _types_in(arg)


def _scalar(tp: Any) -> Any:
    """The non-None type under ``Annotated`` and ``Optional`` (``int | None`` → int)."""
    if typing.get_origin(tp) is typing.Annotated:
        return _scalar(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [_scalar(a) for a in typing.get_args(tp) if a is not type(None)]
        return members[0] if len(members) == 1 else tp
    return tp


def _constraints(meta: Any) -> list[tuple[str, Any]]:
    """``(kind, value)`` of one metadata object: annotated_types' Ge/Gt/Le/Lt/MinLen/MaxLen,
    Interval and Len (conint, constr), pydantic's general metadata, a nested FieldInfo."""
    if isinstance(meta, FieldInfo):
        return [c for m in meta.metadata for c in _constraints(m)]
    found = []
    for kind in (*NUMERIC, *LENGTH, *OTHER):
        value = getattr(meta, kind, None)
        if value is not None and not (
            kind == "min_length" and value == 0 and hasattr(meta, "max_length")
        ):
            found.append((kind, value))
    return found


def _walk(tp: Any, path: str, metadata: list[Any], out: set[tuple]) -> None:
    """Record the constraints ``metadata`` puts on the value at ``path`` (of type ``tp``), then
    those of the types inside ``tp`` (Annotated, unions, list items, tuple positions, dict
    values); nested models are left to their own entries."""
    base = _scalar(tp)
    for meta in metadata:
        for kind, value in _constraints(meta):
            if kind in NUMERIC and base in (int, float):
                value = base(value)
            out.add((path, kind, type(value).__name__, value))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        _walk(args[0], path, list(args[1:]), out)
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            _walk(arg, path, [], out)
    elif origin in (list, set, frozenset, collections.abc.Sequence) or (
        origin is tuple and args[-1:] == (Ellipsis,)
    ):
        _walk(args[0], f"{path}[]", [], out)
    elif origin is tuple:
        for i, arg in enumerate(args):
            _walk(arg, f"{path}[{i}]", [], out)
    elif origin in (dict, collections.abc.Mapping):
        _walk(args[0], f"{path}{{key}}", [], out)
        _walk(args[1], f"{path}{{}}", [], out)


def declared_bounds() -> set[tuple[str, str, str, str, Any]]:
    """``(model, path, kind, value's type, value)`` of every constraint the models declare."""
    out: set[tuple[str, str, str, str, Any]] = set()
    for name, cls in config_models().items():
        for field_name, field in cls.model_fields.items():
            found: set[tuple] = set()
            _walk(field.annotation, field_name, list(field.metadata), found)
            out |= {(name, *entry) for entry in found}
    return out


MODELS = config_models()


def test_table_lists_every_declared_bound() -> None:
    table = {(m, p, k, type(v).__name__, v) for m, p, k, v in BOUNDS}
    assert len(table) == len(BOUNDS), "a row of BOUNDS is listed twice"
    declared = declared_bounds()
    assert not declared - table, f"declared but not in BOUNDS: {sorted(declared - table)}"
    assert not table - declared, f"in BOUNDS but not declared: {sorted(table - declared)}"


def test_introspection_sees_every_model() -> None:
    """The walk finds the models the table names and the ones only nested (so a model with
    bounds cannot hide from test_table_lists_every_declared_bound)."""
    assert {m for m, *_ in BOUNDS} <= set(MODELS)
    assert {"HubModelConfig", "ImagePixels", "ReportedCompute", "ReportConfig.Gallery"} <= set(
        MODELS
    )


# ---------------------------------------------------------------------------------------------
# Minimal valid instances, and what a probe of one bound needs besides.
# ---------------------------------------------------------------------------------------------
ENDPOINT = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
BASES: dict[str, dict[str, Any]] = {
    "DataSource": {"dataset": "d", "split": "train"},
    "AttentionHeads": {"text": 16, "text_kv": 2},
    "TextShape": {
        "hidden_size": 2048,
        "num_hidden_layers": 36,
        "intermediate_size": 11008,
        "vocab_size": 151936,
    },
    "HubModelConfig": {"repo_id": "o/n", "unpinned": "no public commit"},
    "DatasetConfig": {"repo_id": "o/n", "revision": "0" * 40},
    "EndpointConfig": ENDPOINT,
    "JudgeConfig": ENDPOINT,
    "ThinkingRewardConfig": ENDPOINT,
    "OpenAIGenerationConfig": ENDPOINT,
    "TrustGRPOSettings": {"reward_model": ENDPOINT},
    "ReportConfig.Published": {"reference": "r", "rows": {"base": "row"}},
    "ReportConfig.Combined": {"benchmarks": ["a", "b"]},
    "ReportedCompute": {"hardware": "1x A100", "source": "paper"},
    "ExperimentConfig": {"base_model": "tiny-qwen2.5-vl", "benchmarks": ["shapes_test"]},
}
"""Required keys of each model that has some (every other model validates from ``{}``)."""

COMPANIONS: dict[tuple[str, str], dict[str, Any]] = {
    # unpinned is for a hub dataset without a revision; local for one without repo_id.
    ("DatasetConfig", "unpinned"): {"revision": None},
    ("DatasetConfig", "local"): {"repo_id": None, "revision": None},
    # heads must be a multiple of kv heads (1 of 2 is not); min_pixels <= max_pixels.
    ("TinyModelConfig", "num_attention_heads"): {"num_key_value_heads": 1},
    ("TinyModelConfig", "hidden_size"): {"num_attention_heads": 1, "num_key_value_heads": 1},
    ("TinyModelConfig", "max_pixels"): {"min_pixels": 1},
    ("ImagePixels", "max"): {"min": 1},
    # skip_low <= skip_high; epsilon <= epsilon_high.
    ("TrustGRPOSettings", "skip_low"): {"skip_high": 1.0},
    ("TrustGRPOSettings", "skip_high"): {"skip_low": 0.0},
    ("GRPOConfig", "epsilon_high"): {"epsilon": math.nextafter(0.0, 1.0)},
    # max_steps <= schedule_steps
    ("GRPOConfig", "schedule_steps"): {"max_steps": 1},
}
"""Other keys set while one bound is probed, so that no cross-check of the model decides."""

SHADOWED: dict[tuple[str, str, Any], str] = {
    # hidden_size / num_attention_heads must be even (rotary embedding): 1 passes its own bound
    # (> 0) and is then refused by the cross-check, whatever the heads.
    ("TinyModelConfig", "hidden_size", 1): "odd head size",
}
"""Values a bound accepts that a cross-check of the same model always refuses: the probe checks
that the field's bound lets it through and that the cross-check is what refuses it."""

TUPLES: dict[tuple[str, str], list[Any]] = {("DatasetConfig", "image_size"): [112, 112]}
"""A valid value of each tuple field, whose one item a probe replaces."""

SIZED: dict[tuple[str, str], Any] = {
    ("HubModelConfig", "unpinned"): "why",
    ("DatasetConfig", "unpinned"): "why",
    ("DatasetConfig", "local"): "dir",
    ("DatasetConfig", "allow_patterns"): ["a/*", "b/*", "c/*"],
    ("DatasetConfig", "allow_patterns[]"): "a/*",
    ("InferConfig", "checkpoints"): ["base", "sft", "grpo"],
    ("GRPOConfig", "rewards"): {"common.format": 0.5, "common.accuracy": 1.0, "x.y": 1.0},
    ("GRPOConfig", "tasks"): ["color", "count", "grounding"],
    ("ReportConfig.Published", "rows"): {"base": "a", "sft": "b", "grpo": "c"},
    ("ReportConfig.Combined", "benchmarks"): ["a", "b", "c"],
    ("ExperimentConfig", "benchmarks"): ["shapes_test", "b", "c"],
}
"""Valid items of each length-bounded value: a probe of length n takes the first n."""

OPS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "min_length": ":len>=", "max_length": ":len<="}
ERROR_TYPES = {
    "ge": {"greater_than_equal"},
    "gt": {"greater_than"},
    "le": {"less_than_equal"},
    "lt": {"less_than"},
    "min_length": {"too_short", "string_too_short"},
    "max_length": {"too_long", "string_too_long"},
}


def _step(value: int | float, direction: int) -> int | float:
    """The nearest value above (+1) or below (-1): ±1 for an int, the next float otherwise."""
    if isinstance(value, int):
        return value + direction
    return math.nextafter(value, direction * math.inf)


def _probes(kind: str, bound: int | float) -> list[tuple[int | float, bool]]:
    """``(value, accepted)``: the boundary (accepted where the bound is inclusive), the nearest
    value outside (rejected) and the nearest inside (accepted)."""
    lower = kind in ("ge", "gt", "min_length")
    inclusive = kind in ("ge", "le", "min_length", "max_length")
    outside, inside = (-1, 1) if lower else (1, -1)
    return [(bound, inclusive), (_step(bound, outside), False), (_step(bound, inside), True)]


CASES = [
    pytest.param(
        model,
        path,
        kind,
        bound,
        value,
        accepted,
        id=f"{model}.{path}{OPS[kind]}{bound}@{value}:{'accepted' if accepted else 'rejected'}",
    )
    for model, path, kind, bound in BOUNDS
    for value, accepted in _probes(kind, bound)
]


@pytest.fixture(autouse=True)
def _project_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """ExperimentConfig checks that base_model names a file of config/models (read only)."""
    monkeypatch.setenv("VLRL_ROOT", str(REPO))


def _placed(model: str, path: str, kind: str, value: int | float) -> tuple[str, Any, tuple]:
    """``(field, field value, error location)`` that puts ``value`` at ``path``; a length
    bound's value is the size, and the field holds that many items."""
    field, _, rest = path.partition("[")
    if kind in LENGTH:
        value = _sized(SIZED[(model, path)], int(value))
    if not rest:
        return field, value, (field,)
    if rest == "]":
        return field, [value], (field, 0)
    index = int(rest.rstrip("]"))
    items = list(TUPLES[(model, field)])
    items[index] = value
    return field, items, (field, index)


def _sized(pool: Any, n: int) -> Any:
    assert n <= len(pool), f"SIZED needs at least {n} items: {pool!r}"
    if isinstance(pool, dict):
        return dict(list(pool.items())[:n])
    return pool[:n]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_minimal_instance_is_valid(model: str) -> None:
    """The instances every probe starts from validate: a rejection below is the probed value's
    doing (with its companions, the accepted probes show the same)."""
    MODELS[model].model_validate(BASES.get(model, {}))


@pytest.mark.parametrize(("model", "path", "kind", "bound", "value", "accepted"), CASES)
def test_bound_edges(
    model: str, path: str, kind: str, bound: int | float, value: int | float, accepted: bool
) -> None:
    cls = MODELS[model]
    field, placed, loc = _placed(model, path, kind, value)
    data = {
        **BASES.get(model, {}),
        **COMPANIONS.get((model, path.split("[")[0]), {}),
        field: placed,
    }
    shadowed = SHADOWED.get((model, path, value))
    if accepted and shadowed is None:
        got = cls.model_validate(data)
        stored = getattr(got, field)
        assert stored == placed or list(stored) == placed, (stored, placed)
        return
    with pytest.raises(ValidationError) as err:
        cls.model_validate(data)
    errors = err.value.errors()
    if shadowed is not None:
        assert not [e for e in errors if e["loc"][: len(loc)] == loc], errors
        assert any(shadowed in line for line in validation_problems(err.value, "f")), errors
        return
    at_field = [e for e in errors if e["loc"] == loc]
    assert [e["type"] for e in at_field if e["type"] in ERROR_TYPES[kind]], errors
    assert all(e["ctx"][kind] == bound for e in at_field if e["type"] in ERROR_TYPES[kind])


# ---------------------------------------------------------------------------------------------
# Cross-checks (model and field validators comparing keys): each at its boundary, accepted, and
# the nearest case that breaks it, rejected with the key(s) named.
# ---------------------------------------------------------------------------------------------
SOURCE = {"dataset": "d", "split": "train"}
TRUST = {"reward_model": ENDPOINT}
OK = None
"""``expect`` of an accepted case; a rejected one is ``(dotted key, what the message says)``."""

CROSS: list[Any] = [
    # DataConfig._sources_agree
    ("DataConfig", {"source": "datasets", "train": [SOURCE]}, OK, "datasets with one train"),
    (
        "DataConfig",
        {"source": "datasets", "train": []},
        ("train", "list the train records"),
        "datasets without train",
    ),
    (
        "DataConfig",
        {"source": "datasets", "train": [SOURCE], "sft_train": [SOURCE], "val": [SOURCE]},
        OK,
        "datasets with every split",
    ),
    ("DataConfig", {"source": "shapes"}, OK, "shapes with no split listed"),
    *[
        (
            "DataConfig",
            {"source": "shapes", split: [SOURCE]},
            (split, "read only with data.source: datasets"),
            f"shapes with {split} listed",
        )
        for split in ("train", "sft_train", "val", "test")
    ],
    ("DataConfig", {"shapes": {"min_shapes": 3, "max_shapes": 3}}, OK, "min_shapes==max_shapes"),
    (
        "DataConfig",
        {"shapes": {"min_shapes": 4, "max_shapes": 3}},
        ("shapes.min_shapes", "4 is above max_shapes (3)"),
        "min_shapes==max_shapes+1",
    ),
    ("DataConfig", {"shapes": {"tasks": ["count"]}}, OK, "one shapes task"),
    ("DataConfig", {"shapes": {"tasks": []}}, ("shapes.tasks", "is empty"), "no shapes task"),
    # TinyModelConfig._shapes_agree
    (
        "TinyModelConfig",
        {"hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 4},
        OK,
        "hidden==heads*2,kv==heads",
    ),
    (
        "TinyModelConfig",
        {"hidden_size": 9, "num_attention_heads": 4, "num_key_value_heads": 4},
        ("hidden_size", "9 is not a multiple of num_attention_heads (4)"),
        "hidden==heads*2+1",
    ),
    (
        "TinyModelConfig",
        {"hidden_size": 12, "num_attention_heads": 4, "num_key_value_heads": 4},
        ("hidden_size", "gives an odd head size 3"),
        "head size odd",
    ),
    (
        "TinyModelConfig",
        {"hidden_size": 40, "num_attention_heads": 4, "num_key_value_heads": 5},
        ("num_attention_heads", "4 is not a multiple of num_key_value_heads (5)"),
        "kv==heads+1",
    ),
    ("TinyModelConfig", {"min_pixels": 3136, "max_pixels": 3136}, OK, "min_pixels==max_pixels"),
    (
        "TinyModelConfig",
        {"min_pixels": 3137, "max_pixels": 3136},
        ("min_pixels", "3137 is above max_pixels (3136)"),
        "min_pixels==max_pixels+1",
    ),
    # HubModelConfig._pinned_or_why
    ("HubModelConfig", {"repo_id": "o/n", "revision": "a" * 40}, OK, "revision only"),
    ("HubModelConfig", {"repo_id": "o/n", "unpinned": "why"}, OK, "unpinned only"),
    ("HubModelConfig", {"repo_id": "o/n"}, ("revision", "is missing"), "neither"),
    (
        "HubModelConfig",
        {"repo_id": "o/n", "revision": "a" * 40, "unpinned": "why"},
        ("unpinned", "remove unpinned"),
        "both",
    ),
    # ModelConfig._hf_needs_repo
    ("ModelConfig", {"builder": "tiny"}, OK, "tiny without hf"),
    (
        "ModelConfig",
        {"builder": "hf", "hf": {"repo_id": "o/n", "unpinned": "why"}},
        OK,
        "hf with hf",
    ),
    (
        "ModelConfig",
        {"builder": "hf"},
        ("hf", "base_model.hf (repo_id, revision) is missing"),
        "hf",
    ),
    # DatasetConfig._one_source
    ("DatasetConfig", {"repo_id": "o/n", "revision": "a" * 40}, OK, "hub pinned"),
    ("DatasetConfig", {"repo_id": "o/n", "unpinned": "why"}, OK, "hub unpinned"),
    ("DatasetConfig", {"local": "data/d3"}, OK, "local"),
    (
        "DatasetConfig",
        {"repo_id": "o/n", "revision": "a" * 40, "local": "d"},
        ("repo_id", "set exactly one of repo_id"),
        "hub and local",
    ),
    ("DatasetConfig", {}, ("repo_id", "set exactly one of repo_id"), "neither hub nor local"),
    (
        "DatasetConfig",
        {"local": "d", "revision": "a" * 40},
        ("revision", "is for hub and git datasets"),
        "local with revision",
    ),
    (
        "DatasetConfig",
        {"local": "d", "unpinned": "why"},
        ("unpinned", "is for hub and git datasets"),
        "local with unpinned",
    ),
    ("DatasetConfig", {"repo_id": "o/n"}, ("revision", "is missing"), "hub unpinned without why"),
    ("DatasetConfig", {"git": "https://h/o/n", "revision": "a" * 40}, OK, "git pinned"),
    ("DatasetConfig", {"git": "https://h/o/n", "unpinned": "why"}, OK, "git unpinned"),
    ("DatasetConfig", {"git": "https://h/o/n"}, ("revision", "is missing"), "git without why"),
    (
        "DatasetConfig",
        {"git": "https://h/o/n", "repo_id": "o/n", "revision": "a" * 40},
        ("repo_id", "set exactly one of repo_id"),
        "hub and git",
    ),
    (
        "DatasetConfig",
        {"git": "https://h/o/n", "local": "d"},
        ("git", "git (a git repository) and local (a folder); git and local set"),
        "git and local",
    ),
    (
        "DatasetConfig",
        {"git": "https://h/o/n", "revision": "a" * 40, "unpinned": "why"},
        ("unpinned", "remove unpinned"),
        "git pinned and unpinned",
    ),
    (
        "DatasetConfig",
        {"repo_id": "o/n", "revision": "a" * 40, "unpinned": "why"},
        ("unpinned", "remove unpinned"),
        "hub pinned and unpinned",
    ),
    # ServeConfig._numbers_as_text: YAML numbers are arguments; a bool is not one.
    ("ServeConfig", {"args": ["--max-model-len", 8192, "--x", 0.5]}, OK, "numbers as text"),
    ("ServeConfig", {"args": ["--flag", True]}, ("args.1", "valid string"), "bool argument"),
    # EndpointConfig._one_endpoint (and its subclasses; MODEL_FROM_STAGE only for openai)
    ("EndpointConfig", {"serve": {"model": "m"}}, OK, "serve only"),
    ("EndpointConfig", ENDPOINT, OK, "base_url only"),
    (
        "EndpointConfig",
        {**ENDPOINT, "serve": {"model": "m"}},
        ("serve", "not both"),
        "base_url and serve",
    ),
    ("EndpointConfig", {"model": "m"}, ("base_url", "is not set"), "neither"),
    (
        "EndpointConfig",
        {"serve": {"model": "m"}, "endpoint_id": "e"},
        ("endpoint_id", "leave it unset with serve"),
        "serve with endpoint_id",
    ),
    ("EndpointConfig", {**ENDPOINT, "endpoint_id": "e"}, OK, "base_url with endpoint_id"),
    *[
        (model, {"serve": {}}, ("serve.model", "name the model to serve"), "serve without model")
        for model in ("EndpointConfig", "JudgeConfig", "ThinkingRewardConfig")
    ],
    *[
        (model, {"base_url": ENDPOINT["base_url"]}, ("model", "name the served model"), "no model")
        for model in ("EndpointConfig", "JudgeConfig", "ThinkingRewardConfig")
    ],
    ("OpenAIGenerationConfig", {"serve": {}}, OK, "serve without model"),
    ("OpenAIGenerationConfig", {"base_url": ENDPOINT["base_url"]}, OK, "no model"),
    # InferConfig._openai_needs_endpoint
    ("InferConfig", {"backend": "hf"}, OK, "hf without openai"),
    ("InferConfig", {"backend": "openai", "openai": {"serve": {}}}, OK, "openai with openai"),
    ("InferConfig", {"backend": "openai"}, ("openai", "infer.openai"), "openai without openai"),
    # TrustGRPOSettings._thresholds_ordered
    ("TrustGRPOSettings", {**TRUST, "skip_low": 0.5, "skip_high": 0.5}, OK, "skip_low==skip_high"),
    (
        "TrustGRPOSettings",
        {**TRUST, "skip_low": math.nextafter(0.5, 1), "skip_high": 0.5},
        ("skip_low", "is above skip_high (0.5)"),
        "skip_low==next(skip_high)",
    ),
    # GRPOConfig._algorithm_settings
    ("GRPOConfig", {"algorithm": "trust_grpo", "trust": TRUST}, OK, "trust_grpo with trust"),
    ("GRPOConfig", {"algorithm": "trust_grpo"}, ("trust", "grpo.trust"), "trust_grpo, no trust"),
    *[
        (
            "GRPOConfig",
            {"algorithm": "self_reward", "rewards": {reader: 1.0}},
            OK,
            f"self_reward with {reader}",
        )
        for reader in sorted(SELF_REWARD_READERS)
    ],
    (
        "GRPOConfig",
        {"algorithm": "self_reward", "rewards": {"common.accuracy": 1.0}},
        ("rewards", "has none of"),
        "self_reward without a reader",
    ),
    *[
        (
            "GRPOConfig",
            {"algorithm": "grpo", "rewards": {reader: 1.0}},
            ("rewards", "need the second pass"),
            f"grpo with {reader}",
        )
        for reader in sorted(SELF_REWARD_READERS)
    ],
    ("GRPOConfig", {"epsilon": 0.2, "epsilon_high": 0.2}, OK, "epsilon==epsilon_high"),
    (
        "GRPOConfig",
        {"epsilon": 0.2, "epsilon_high": math.nextafter(0.2, 0)},
        ("epsilon", "is above epsilon_high"),
        "epsilon==next(epsilon_high)",
    ),
    # ImagePixels._ordered
    ("ImagePixels", {"min": 3136, "max": 3136}, OK, "min==max"),
    ("ImagePixels", {"min": 3137, "max": 3136}, ("min", "3137 is above max (3136)"), "min==max+1"),
    # ResourcesConfig._one_node_unless_training
    *[
        ("ResourcesConfig", {stage: {"nodes": 2}}, OK, f"{stage} on 2 nodes")
        for stage in DISTRIBUTED_STAGES
    ],
    *[
        ("ResourcesConfig", {stage: {"nodes": 1}}, OK, f"{stage} on 1 node")
        for stage in ("data", "merge", "infer", "score", "report")
    ],
    *[
        (
            "ResourcesConfig",
            {stage: {"nodes": 2}},
            (f"{stage}.nodes", "runs on one node"),
            f"{stage} on 2 nodes",
        )
        for stage in ("data", "merge", "infer", "score", "report")
    ],
]

EXP = BASES["ExperimentConfig"]
CROSS += [
    # ExperimentConfig._known_model
    ("ExperimentConfig", EXP, OK, "base_model has a config/models file"),
    (
        "ExperimentConfig",
        {**EXP, "base_model": "tiny-qwen2.5-vll"},
        ("base_model", "'tiny-qwen2.5-vll' has no config/models file"),
        "base_model has none",
    ),
    # ExperimentConfig._tasks_are_generated
    (
        "ExperimentConfig",
        {**EXP, "data": {"shapes": {"tasks": ["count", "color"]}}, "grpo": {"tasks": ["color"]}},
        OK,
        "grpo.tasks within data.shapes.tasks",
    ),
    (
        "ExperimentConfig",
        {
            **EXP,
            "data": {"shapes": {"tasks": ["count", "color"]}},
            "grpo": {"tasks": ["count", "color"]},
        },
        OK,
        "grpo.tasks==data.shapes.tasks",
    ),
    (
        "ExperimentConfig",
        {**EXP, "data": {"shapes": {"tasks": ["count"]}}, "grpo": {"tasks": ["count", "color"]}},
        ("grpo.tasks", "'color' is not in data.shapes.tasks"),
        "grpo.tasks one beyond data.shapes.tasks",
    ),
    (
        "ExperimentConfig",
        {**EXP, "grpo": {"tasks": ["cuont"]}},
        ("grpo.tasks", "'cuont' is not a shapes task"),
        "grpo.tasks typo",
    ),
    (
        "ExperimentConfig",
        {**EXP, "data": {"source": "datasets", "train": [SOURCE]}, "grpo": {"tasks": ["rec"]}},
        OK,
        "grpo.tasks free with datasets",
    ),
    # ExperimentConfig._launch_agrees
    *[
        (
            "ExperimentConfig",
            {**EXP, stage: {"processes": 1}, "resources": {stage: {"gpus": 1}}},
            OK,
            f"{stage}.gpus=1,processes=1",
        )
        for stage in DISTRIBUTED_STAGES
    ],
    *[
        (
            "ExperimentConfig",
            {**EXP, stage: {"processes": 2}, "resources": {stage: {"gpus": 1}}},
            (f"resources.{stage}.gpus", f"{stage}.processes (2) sets CPU processes"),
            f"{stage}.gpus=1,processes=2",
        )
        for stage in DISTRIBUTED_STAGES
    ],
    *[
        (
            "ExperimentConfig",
            {**EXP, stage: {"processes": 2}, "resources": {stage: {"gpus": 0}}},
            OK,
            f"{stage}.gpus=0,processes=2",
        )
        for stage in DISTRIBUTED_STAGES
    ],
    ("ExperimentConfig", {**EXP, "resources": {"infer": {"gpus": 1}}}, OK, "hf on 1 GPU"),
    (
        "ExperimentConfig",
        {**EXP, "resources": {"infer": {"gpus": 2}}},
        ("resources.infer.gpus", "the hf backend generates on one GPU, not 2"),
        "hf on 2 GPUs",
    ),
    (
        "ExperimentConfig",
        {**EXP, "infer": {"backend": "vllm"}, "resources": {"infer": {"gpus": 2}}},
        OK,
        "vllm on 2 GPUs",
    ),
    # ExperimentConfig._derived: unknown.<key> names a key
    ("ExperimentConfig", {**EXP, "unknown": {"grpo.beta": "why"}}, OK, "unknown names a key"),
    (
        "ExperimentConfig",
        {**EXP, "grpo": {"extra": {"seed": 1}}, "unknown": {"grpo.extra.seed": "why"}},
        OK,
        "unknown names a mapping entry",
    ),
    (
        "ExperimentConfig",
        {**EXP, "unknown": {"grpo.betaa": "why"}},
        ("unknown.grpo.betaa", "is not a key of the experiment"),
        "unknown names no key",
    ),
]

# ExperimentConfig._derived: a generation batch of per_device x world x steps holds whole groups
# of num_generations (world: GPUs x nodes, or CPU processes; steps: steps_per_generation, else
# gradient_accumulation_steps).
GROUP = ("grpo.per_device_train_batch_size", "multiple of num_generations")
BATCHES: list[tuple[dict[str, Any], dict[str, Any], Any, str]] = [
    ({"per_device_train_batch_size": 4, "num_generations": 4}, {}, OK, "batch==group"),
    ({"per_device_train_batch_size": 5, "num_generations": 4}, {}, GROUP, "batch==group+1"),
    ({"per_device_train_batch_size": 3, "num_generations": 4}, {}, GROUP, "batch==group-1"),
    ({"per_device_train_batch_size": 1, "num_generations": 4, "processes": 4}, {}, OK, "x4 CPU"),
    (
        {"per_device_train_batch_size": 1, "num_generations": 4},
        {"gpus": 2, "nodes": 2},
        OK,
        "x2 GPUs x2 nodes",
    ),
    (
        {"per_device_train_batch_size": 1, "num_generations": 4},
        {"gpus": 2, "nodes": 1},
        GROUP,
        "x2 GPUs x1 node",
    ),
    (
        {"per_device_train_batch_size": 1, "num_generations": 4, "gradient_accumulation_steps": 4},
        {},
        OK,
        "x4 accumulation steps",
    ),
    (
        {"per_device_train_batch_size": 1, "num_generations": 4, "steps_per_generation": 4},
        {},
        OK,
        "x4 steps_per_generation",
    ),
    (
        {
            "per_device_train_batch_size": 1,
            "num_generations": 4,
            "gradient_accumulation_steps": 4,
            "steps_per_generation": 1,
        },
        {},
        GROUP,
        "steps_per_generation wins over accumulation",
    ),
]
CROSS += [
    ("ExperimentConfig", {**EXP, "grpo": grpo, "resources": {"grpo": need}}, expect, f"GRPO {why}")
    for grpo, need, expect, why in BATCHES
]

# ExperimentConfig._derived: each stage's image_min_pixels <= image_max_pixels, once the shared
# budget (image_pixels: 3136..12544 by default) fills the unset one.
for stage in DISTRIBUTED_STAGES:
    CROSS += [
        ("ExperimentConfig", {**EXP, stage: {"image_min_pixels": 12544}}, OK, f"{stage} min==max"),
        (
            "ExperimentConfig",
            {**EXP, stage: {"image_min_pixels": 12545}},
            (f"{stage}.image_min_pixels", "is above image_max_pixels (12544)"),
            f"{stage} min==max+1",
        ),
        ("ExperimentConfig", {**EXP, stage: {"image_max_pixels": 3136}}, OK, f"{stage} max==min"),
        (
            "ExperimentConfig",
            {**EXP, stage: {"image_max_pixels": 3135}},
            (f"{stage}.image_min_pixels", "3136 is above image_max_pixels (3135)"),
            f"{stage} max==min-1",
        ),
    ]


@pytest.mark.parametrize(
    ("model", "data", "expect"),
    [
        pytest.param(m, d, e, id=f"{m}:{why}:{'accepted' if e is None else 'rejected'}")
        for m, d, e, why in CROSS
    ],
)
def test_cross_check_edges(model: str, data: dict[str, Any], expect: Any) -> None:
    cls = MODELS[model]
    if expect is None:
        cls.model_validate(data)
        return
    key, says = expect
    with pytest.raises(ValidationError) as err:
        cls.model_validate(data)
    lines = validation_problems(err.value, "f")
    named = [line for line in lines if line.startswith(f"f: {key}: ")]
    assert named, f"no problem at {key!r} in {lines}"
    assert any(says in line for line in named), named


def test_cross_check_ids_are_unique() -> None:
    """Readable ids double as the list of what is covered: two cases under one id hide one."""
    ids = [(m, why, e is None) for m, _, e, why in CROSS]
    assert len(ids) == len(set(ids))
