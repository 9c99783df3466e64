"""Benchmark metrics from per-item verdicts: accuracy and the metrics a benchmark declares.

The kinds (declared in ``config/benchmarks/<name>.yaml``, :class:`vlrl.benchmarks.MetricSpec`):

- ``all_correct``: a group (the items with the same ``groups[group]``) counts when every item in
  it is correct; the value is the share of such groups. HallusionBench's fAcc (per figure) and
  qAcc (per question over its figures), MMBench's CircularEval (per question over its rotated
  copies), MME's acc+ (both questions of one image);
- ``macro_mean``: the mean over the values of ``groups[by]`` (or the tasks) of their accuracy;
- ``mean_of``: the mean of other metrics (HallusionBench "overall" = mean of aAcc, fAcc, qAcc);
- ``task_sum``: ``scale`` × Σ over tasks of the per-task values of other metrics (MME's
  perception / cognition score = 100 × Σ (acc + acc+)).

Each item is a dict with ``correct`` (0/1), ``task`` and ``groups`` (the score stage's items).
Values are fractions (``task_sum`` excepted: it is on the benchmark's own scale). Proportions
(accuracy, all_correct, over items or groups) carry a Wilson interval; the others carry none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from vlrl.errors import StageError
from vlrl.scoring.stats import proportion_ci


class Spec(Protocol):
    """What a metric declaration provides (:class:`vlrl.benchmarks.MetricSpec`)."""

    name: str
    kind: str
    group: str | None
    by: str | None
    of: list[str]
    tasks: list[str] | None
    scale: float


def _proportion(k: int, n: int, confidence: float) -> dict[str, Any]:
    low, high = proportion_ci(k, n, confidence)
    return {"value": k / n, "n": n, "ci_low": low, "ci_high": high}


def _value(value: float) -> dict[str, Any]:
    return {"value": value, "n": None, "ci_low": None, "ci_high": None}


def group_key(item: dict[str, Any], key: str) -> str:
    """The item's ``groups[key]``; an item without it is an error naming the item."""
    groups = item.get("groups") or {}
    if key not in groups:
        raise StageError(
            f"item {item.get('id')!r} has no groups[{key!r}] (its groups: {sorted(groups)}); "
            "the benchmark's metric needs it: check the dataset's format"
        )
    return groups[key]


def all_correct(items: Sequence[dict[str, Any]], key: str) -> tuple[int, int]:
    """``(groups all correct, groups)`` over the items' ``groups[key]``.

    >>> items = [{"correct": 1, "groups": {"q": "a"}}, {"correct": 0, "groups": {"q": "a"}},
    ...          {"correct": 1, "groups": {"q": "b"}}]
    >>> all_correct(items, "q")
    (1, 2)
    """
    verdicts: dict[str, bool] = {}
    for item in items:
        group = group_key(item, key)
        verdicts[group] = verdicts.get(group, True) and bool(item["correct"])
    return sum(verdicts.values()), len(verdicts)


def _accuracy(items: Sequence[dict[str, Any]]) -> tuple[int, int]:
    return sum(int(item["correct"]) for item in items), len(items)


def _subsets(items: Sequence[dict[str, Any]], key: str | None) -> dict[str, list[dict]]:
    subsets: dict[str, list[dict]] = {}
    for item in items:
        value = item["task"] if key is None else group_key(item, key)
        subsets.setdefault(value, []).append(item)
    return subsets


def _per_task(items: Sequence[dict[str, Any]], spec: Spec | None) -> dict[str, float]:
    """Per-task values of ``accuracy`` (spec None) or an ``all_correct`` metric."""
    values = {}
    for task, subset in _subsets(items, None).items():
        k, n = _accuracy(subset) if spec is None else all_correct(subset, spec.group or "")
        values[task] = k / n
    return values


def compute(
    items: Sequence[dict[str, Any]], specs: Sequence[Spec], confidence: float = 0.95
) -> dict[str, dict[str, Any]]:
    """``{name: {"value", "n", "ci_low", "ci_high"}}``: ``accuracy`` then each declared metric
    (``n`` counts the items or groups of a proportion; None otherwise).

    >>> items = [{"id": "1", "correct": 1, "task": "t", "groups": {"fig": "f1"}},
    ...          {"id": "2", "correct": 0, "task": "t", "groups": {"fig": "f1"}},
    ...          {"id": "3", "correct": 1, "task": "u", "groups": {"fig": "f2"}}]
    >>> class S:
    ...     def __init__(self, **kw):
    ...         self.__dict__.update(dict(group=None, by=None, of=[], tasks=None, scale=1.0), **kw)
    >>> out = compute(items, [S(name="fAcc", kind="all_correct", group="fig"),
    ...                       S(name="overall", kind="mean_of", of=["accuracy", "fAcc"]),
    ...                       S(name="score", kind="task_sum", of=["accuracy"], scale=100)])
    >>> {k: round(v["value"], 3) for k, v in out.items()}
    {'accuracy': 0.667, 'fAcc': 0.5, 'overall': 0.583, 'score': 150.0}
    """
    if not items:
        raise StageError("no items to compute metrics on")
    results: dict[str, dict[str, Any]] = {"accuracy": _proportion(*_accuracy(items), confidence)}
    specs_by_name: dict[str, Spec | None] = {"accuracy": None}
    for spec in specs:
        if spec.kind == "all_correct":
            results[spec.name] = _proportion(*all_correct(items, spec.group or ""), confidence)
        elif spec.kind == "macro_mean":
            subsets = _subsets(items, spec.by).values()
            means = [_accuracy(s)[0] / len(s) for s in subsets]
            results[spec.name] = _value(sum(means) / len(means))
        elif spec.kind == "mean_of":
            results[spec.name] = _value(sum(results[m]["value"] for m in spec.of) / len(spec.of))
        elif spec.kind == "task_sum":
            total = 0.0
            for name in spec.of:
                source = specs_by_name[name]
                if source is not None and source.kind != "all_correct":
                    raise StageError(f"metric {spec.name}: {name} has no per-task values")
                per_task = _per_task(items, source)
                missing = sorted(set(spec.tasks or ()) - set(per_task))
                if missing:
                    raise StageError(
                        f"metric {spec.name}: no items of tasks {missing}, so the sum over its "
                        "tasks would be too small (a subset of the benchmark?)"
                    )
                total += sum(
                    v for t, v in per_task.items() if spec.tasks is None or t in spec.tasks
                )
            results[spec.name] = _value(spec.scale * total)
        else:
            raise StageError(f"metric {spec.name}: unknown kind {spec.kind!r}")
        specs_by_name[spec.name] = spec
    return results
