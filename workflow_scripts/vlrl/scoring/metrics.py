"""Benchmark metrics from per-item verdicts: accuracy and the metrics a benchmark declares.

The kinds (declared in ``config/benchmarks/<name>.yaml``, :class:`vlrl.benchmarks.MetricSpec`):

- ``all_correct``: a group (the items with the same ``groups[group]``) counts when every item in
  it is correct; the value is the share of such groups. HallusionBench's fAcc (per figure) and
  qAcc (per question over its figures), MMBench's CircularEval (per question over its rotated
  copies), MME's acc+ (both questions of one image);
- ``macro_mean``: the mean over the values of ``groups[by]`` (or the tasks) of their accuracy;
- ``mean_of``: the mean of other metrics (HallusionBench "overall" = mean of aAcc, fAcc, qAcc);
- ``mean_score``: the mean of the items' continuous scores (MM-Vet: the grader's 0-1 grades);
- ``task_sum``: ``scale`` × Σ over tasks of the per-task values of other metrics (MME's
  perception / cognition score = 100 × Σ (acc + acc+));
- ``wemath_four_dimensional``: one of We-Math's four-dimensional metrics over its composite
  problems (the items sharing ``groups[group]``, one per sub-question and one for the multi-step
  question, told apart by ``groups[step]``): the strict / loose score, IK, IG, CM, RM
  (:func:`wemath_four_dimensional`).
- ``coco_ap``: COCO AP@[.5:.95] over the detection items of ``tasks`` (default: all), every
  predicted box scored 1; with ``nms``, OVDEval's NMS-AP (:func:`vlrl.scoring.detection_ap.
  coco_ap`);
- ``greedy_precision`` / ``greedy_recall``: VLM-R1's greedy precision / recall at IoU 0.5,
  pooled over the boxes of the detection items of ``tasks`` (default: all)
  (:func:`vlrl.scoring.detection_ap.greedy_precision_recall`).

Each item is a dict with ``correct`` (0/1), ``task`` and ``groups`` (the score stage's items;
a detection item also ``detections``, its boxes).
Values are fractions (``task_sum`` excepted: it is on the benchmark's own scale). Proportions
(accuracy, all_correct, over items or groups; We-Math's IK, IG, CM, RM) carry a Wilson interval;
the others carry none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from vlrl.core.errors import StageError
from vlrl.scoring.measures import WEMATH_MEASURES
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
    step: str | None
    measure: str | None
    nms: bool


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
    """``(groups all correct, groups)`` over the items' ``groups[key]``, counting only complete
    groups: a group with an unscored member (``correct`` None) is left out, since its verdict
    is unknown (:func:`incomplete_groups` counts them).

    >>> items = [{"correct": 1, "groups": {"q": "a"}}, {"correct": 0, "groups": {"q": "a"}},
    ...          {"correct": 1, "groups": {"q": "b"}}, {"correct": None, "groups": {"q": "c"}}]
    >>> all_correct(items, "q")
    (1, 2)
    """
    verdicts: dict[str, bool | None] = {}
    for item in items:
        group = group_key(item, key)
        previous = verdicts.get(group, True)
        verdicts[group] = (
            None if previous is None or item["correct"] is None else previous and item["correct"]
        )
    complete = [v for v in verdicts.values() if v is not None]
    return sum(map(bool, complete)), len(complete)


def incomplete_groups(items: Sequence[dict[str, Any]], key: str) -> int:
    """How many groups of ``groups[key]`` have an unscored member (left out of group metrics).

    >>> incomplete_groups([{"correct": None, "groups": {"q": "a"}},
    ...                    {"correct": 1, "groups": {"q": "a"}}], "q")
    1
    """
    return len({group_key(item, key) for item in items if item["correct"] is None})


#: A We-Math step key: sub-question ``i`` of an ``n``-step problem, or its multi-step question.
_WEMATH_STEP = re.compile(r"([23])steps_([1-3]|multi)")


def wemath_counts(
    items: Sequence[dict[str, Any]], problem_key: str, step_key: str
) -> dict[str, int]:
    """Count We-Math's composite problems by how their sub-questions and multi-step question fared.

    Ported from VLMEvalKit ``vlmeval/dataset/utils/wemath.py`` (commit e8e78f05, unchanged in
    substance since 21453dca; the same code as SATORI-R1's fork, 8857b30f, and as lmms-eval
    ``tasks/wemath/wemath_utils.py``, 75571cfe): ``evaluate_calculate_metrics`` /
    ``evaluate_compute_final_scores`` merge the rows of one ``ID`` (``groups[problem_key]``)
    by their ``key`` (``groups[step_key]``: ``2steps_1``, ``2steps_2``, ``2steps_multi``, or
    ``3steps_1`` … ``3steps_multi``) and, with ``joker`` = the row's verdict, count a problem as

    - IK (insufficient knowledge): a sub-question wrong and the multi-step question wrong;
    - IG (inadequate generalization): every sub-question right, the multi-step question wrong;
    - CM_strict / CM_loose (complete mastery): the multi-step question right and every / at
      least one sub-question right;
    - RM_strict / RM_loose (rote memorization): the multi-step question right and at least one /
      every sub-question wrong.

    A problem whose items are not exactly its steps (a subset of the benchmark, an item left
    unscored, a repeated key) is an error: the reference's merge (left, on the ``_1`` rows) would
    drop or misfile it (a missing verdict compares unequal to both True and False, a repeated
    one multiplies rows), while still dividing by all 525 problems.

    Returns:
        ``{"problems", "IK", "IG", "CM_strict", "CM_loose", "RM_strict", "RM_loose"}``.

    Raises:
        StageError: an item without the groups keys, a malformed step key, or a problem whose
            steps are incomplete, repeated or of two kinds.

    >>> rows = [("p", "2steps_1", 1), ("p", "2steps_2", 0), ("p", "2steps_multi", 1),
    ...         ("q", "2steps_1", 1), ("q", "2steps_2", 1), ("q", "2steps_multi", 0)]
    >>> items = [{"id": f"{p}{s}", "correct": c, "groups": {"problem": p, "step": s}}
    ...          for p, s, c in rows]
    >>> wemath_counts(items, "problem", "step")
    {'problems': 2, 'IK': 0, 'IG': 1, 'CM_strict': 0, 'CM_loose': 1, 'RM_strict': 1, 'RM_loose': 0}
    """
    problems: dict[str, dict[str, bool]] = {}
    for item in items:
        problem = group_key(item, problem_key)
        step = group_key(item, step_key)
        if not _WEMATH_STEP.fullmatch(step):
            raise StageError(
                f"item {item.get('id')!r}: groups[{step_key!r}] is {step!r}, not a We-Math step "
                "key (2steps_1, 2steps_2, 2steps_multi, 3steps_1 … 3steps_multi)"
            )
        steps = problems.setdefault(problem, {})
        if step in steps:
            raise StageError(f"item {item.get('id')!r}: problem {problem!r} has {step!r} twice")
        steps[step] = bool(item["correct"])

    counts = dict.fromkeys(("IK", "IG", "CM_strict", "CM_loose", "RM_strict", "RM_loose"), 0)
    for problem, steps in problems.items():
        n = next(iter(steps))[0]  # "2" or "3": the problem's number of sub-questions
        subs = [f"{n}steps_{i}" for i in range(1, int(n) + 1)]
        expected = {*subs, f"{n}steps_multi"}
        if set(steps) != expected:
            raise StageError(
                f"We-Math problem {problem!r} has the steps {sorted(steps)}, not "
                f"{sorted(expected)}: the four dimensions need a verdict on every question of a "
                "problem (a subset of the benchmark, or items left unscored?)"
            )
        all_right = all(steps[s] for s in subs)
        any_right = any(steps[s] for s in subs)
        if steps[f"{n}steps_multi"]:
            counts["CM_strict"] += all_right
            counts["CM_loose"] += any_right
            counts["RM_strict"] += not all_right
            counts["RM_loose"] += not any_right
        else:
            counts["IG"] += all_right
            counts["IK"] += not all_right
    return {"problems": len(problems), **counts}


def wemath_four_dimensional(
    items: Sequence[dict[str, Any]],
    problem_key: str,
    step_key: str,
    measure: str,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """One of We-Math's four-dimensional metrics (``measure``, one of
    :data:`vlrl.scoring.measures.WEMATH_MEASURES`).

    From the counts of :func:`wemath_counts` over N composite problems, as VLMEvalKit
    ``wemath.py::evaluate_compute_final_scores`` / ``evaluate_update_main_results_df`` report
    them (there as percentages):

    - ``score_strict`` / ``score_loose`` = (N − 0.5 × IG − RM − IK) / N, with the strict / loose
      RM ("Score (Strict)", "Score (Loose)");
    - ``IK``, ``IG``, ``CM_*`` = count / N;
    - ``RM_*`` = RM / (CM + RM) of the same setting: the share of the solved multi-step questions
      whose sub-questions were not (all) solved.

    N is the number of problems among the items; the reference hard-codes 525, the number of
    composite problems in We-Math testmini (360 two-step + 165 three-step, its 1,740 rows), so
    the two agree on the full benchmark. When no multi-step question is solved (CM + RM = 0) the
    reference divides by zero; RM is 0.0 here (nothing was memorised).

    >>> rows = [("p", "2steps_1", 1), ("p", "2steps_2", 0), ("p", "2steps_multi", 1),
    ...         ("q", "3steps_1", 1), ("q", "3steps_2", 1), ("q", "3steps_3", 1),
    ...         ("q", "3steps_multi", 0)]
    >>> items = [{"id": f"{p}{s}", "correct": c, "groups": {"problem": p, "step": s}}
    ...          for p, s, c in rows]
    >>> {m: wemath_four_dimensional(items, "problem", "step", m)["value"]
    ...  for m in ("score_strict", "score_loose", "IG", "RM_strict", "RM_loose")}
    {'score_strict': 0.25, 'score_loose': 0.75, 'IG': 0.5, 'RM_strict': 1.0, 'RM_loose': 0.0}
    """
    if measure not in WEMATH_MEASURES:
        raise StageError(f"no We-Math measure {measure!r}; known: {list(WEMATH_MEASURES)}")
    unknown = {group_key(item, problem_key) for item in items if item["correct"] is None}
    complete = [item for item in items if group_key(item, problem_key) not in unknown]
    counts = wemath_counts(complete, problem_key, step_key)
    n = counts["problems"]
    if not n:
        raise StageError("no We-Math problem has a verdict on every question")
    if measure.startswith("score_"):
        rm = counts["RM_" + measure.removeprefix("score_")]
        return _value((n - 0.5 * counts["IG"] - rm - counts["IK"]) / n)
    if measure.startswith("RM_"):
        solved = counts[measure] + counts["CM_" + measure.removeprefix("RM_")]
        return _proportion(counts[measure], solved, confidence) if solved else _value(0.0)
    return _proportion(counts[measure], n, confidence)


def mean_score(items: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """The mean of the items' continuous ``score`` (a graded judge's 0-1 grades: MM-Vet), with
    a normal-approximation interval, mean ± z·sd/√n, clipped to [0, 1].

    >>> r = mean_score([{"score": 1.0}, {"score": 0.5}, {"score": 0.0}, {"score": 0.5}])
    >>> r["value"], r["n"], round(r["ci_low"], 3), round(r["ci_high"], 3)
    (0.5, 4, 0.1, 0.9)
    """
    from scipy.stats import norm

    scores = [float(item["score"]) for item in items]
    n = len(scores)
    mean = sum(scores) / n
    sd = (sum((x - mean) ** 2 for x in scores) / (n - 1)) ** 0.5 if n > 1 else 0.0
    half = float(norm.ppf(0.5 + confidence / 2)) * sd / n**0.5
    low, high = max(0.0, mean - half), min(1.0, mean + half)
    return {"value": mean, "n": n, "ci_low": low, "ci_high": high}


def _accuracy(items: Sequence[dict[str, Any]]) -> tuple[int, int]:
    scored = [item for item in items if item["correct"] is not None]
    return sum(int(item["correct"]) for item in scored), len(scored)


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
        if n:
            values[task] = k / n
    return values


def compute(
    items: Sequence[dict[str, Any]], specs: Sequence[Spec], confidence: float = 0.95
) -> dict[str, dict[str, Any]]:
    """``{name: {"value", "n", "ci_low", "ci_high"}}``: ``accuracy`` then each declared metric
    (``n`` counts the items or groups of a proportion; None otherwise).

    ``items`` include the unscored ones (``correct`` None): every metric is computed over the
    scored items, a group metric over its complete groups only, and such a metric's
    ``left_out`` says how many groups (We-Math: problems) it left out for an unscored member.

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
    if not any(item["correct"] is not None for item in items):
        raise StageError("no scored items to compute metrics on")
    scored = [item for item in items if item["correct"] is not None]
    results: dict[str, dict[str, Any]] = {"accuracy": _proportion(*_accuracy(items), confidence)}
    specs_by_name: dict[str, Spec | None] = {"accuracy": None}
    for spec in specs:
        if spec.kind == "all_correct":
            k, n = all_correct(items, spec.group or "")
            if not n:
                raise StageError(f"metric {spec.name}: no group has every member scored")
            results[spec.name] = {
                **_proportion(k, n, confidence),
                "left_out": incomplete_groups(items, spec.group or ""),
            }
        elif spec.kind == "macro_mean":
            subsets = _subsets(scored, spec.by).values()
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
        elif spec.kind == "task_accuracy":
            counted = [item for item in items if item["task"] in set(spec.tasks or ())]
            k, n = _accuracy(counted)
            if not n:
                raise StageError(
                    f"metric {spec.name}: no scored items of tasks {list(spec.tasks or ())} "
                    "(a subset of the benchmark?)"
                )
            results[spec.name] = _proportion(k, n, confidence)
        elif spec.kind == "mean_score":
            results[spec.name] = mean_score(scored, confidence)
        elif spec.kind in DETECTION_KINDS:
            results[spec.name] = _detection_metric(items, spec, confidence)
        elif spec.kind == "wemath_four_dimensional":
            results[spec.name] = {
                **wemath_four_dimensional(
                    items, spec.group or "", spec.step or "", spec.measure or "", confidence
                ),
                "left_out": incomplete_groups(items, spec.group or ""),
            }
        else:
            raise StageError(f"metric {spec.name}: unknown kind {spec.kind!r}")
        specs_by_name[spec.name] = spec
    return results


DETECTION_KINDS = frozenset({"coco_ap", "greedy_precision", "greedy_recall"})
"""The metric kinds computed from the detection items' boxes over the whole set."""


def _detection_metric(
    items: Sequence[dict[str, Any]], spec: Spec, confidence: float
) -> dict[str, Any]:
    """A ``coco_ap`` / ``greedy_precision`` / ``greedy_recall`` metric over the items of
    ``spec.tasks`` (all items when None): :mod:`vlrl.scoring.detection_ap`. A precision with
    nothing predicted is 0 (nothing right)."""
    from vlrl.scoring.detection_ap import coco_ap, greedy_precision_recall

    counted = [i for i in items if spec.tasks is None or i["task"] in set(spec.tasks)]
    if not counted:
        raise StageError(
            f"metric {spec.name}: no items of tasks {list(spec.tasks or ())} (a subset of the "
            "benchmark?)"
        )
    if spec.kind == "coco_ap":
        return _value(coco_ap(counted, nms=spec.nms))
    right, predicted, gold = greedy_precision_recall(counted)
    n = predicted if spec.kind == "greedy_precision" else gold
    return _proportion(right, n, confidence) if n else _value(0.0)
