"""``vlrl plan``'s text: a one-screen summary first (stages by rule, downloads, disk, servers,
compute and memory with the hardware assumed), then the details (each stage with a reason of its
own, routine ones grouped; downloads; disk; servers; the estimate); and its rows for
``--format csv|json|md``."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from vlrl.workflow.dag import Planned
from vlrl.workflow.dvc_export import stage_name

if TYPE_CHECKING:
    from vlrl.workflow.plan import Plan

GB = 1e9


def _size(value: int | None) -> str:
    return "size unknown" if value is None else f"{value / GB:,.2f} GB"


def _agreement(plan: Plan) -> list[str]:
    """Whether ``dvc repro`` runs what Snakemake would (:mod:`vlrl.workflow.preview`)."""
    if not plan.tracked:
        return [
            "  not in params.yaml, so not in dvc.yaml: run it with "
            f"`snakemake --cores 2 --config 'experiments=[{plan.experiment}]'`"
        ]
    if plan.stale:
        return [
            f"  dvc.yaml is stale for {', '.join(plan.stale)}: `dvc repro` stops at its `resolve` "
            "stage until `vlrl dvc-yaml`"
        ]
    found = plan.preview
    if found is None or not (found.snakemake_only or found.unknown):
        return [
            "  `dvc repro` runs the same stages, after its `resolve` stage (which writes the "
            "params files); old values are what a stage last ran with"
        ]
    lines = []
    if found.snakemake_only:
        lines.append(
            f"  `dvc repro` skips {', '.join(found.snakemake_only)}: Snakemake runs them for "
            "file times alone (content as dvc.lock records it); `snakemake --touch --cores 1` "
            "marks them current"
        )
    if found.unknown:
        lines.append(
            f"  whether `dvc repro` runs {', '.join(found.unknown)} is not known: a folder input "
            "is newer than their outputs (folders are not compared with dvc.lock here)"
        )
    return lines


def _job_name(item: Planned) -> str:
    return stage_name(item.job)


ROUTINE = ("output missing", "input ")
"""Reasons a stage runs that follow from the run itself (a first run, an upstream stage
rebuilt): the stage list groups jobs that have only these, and lists the others one by one."""


def summary(plan: Plan) -> list[str]:
    """The plan on one screen: stages to run by rule, downloads, disk, servers, compute (GPU-hours
    and wall time with the hardware assumed, or that the run is on CPUs), peak memory, and what
    the source reports."""
    todo, cached = plan.to_run, [p for p in plan.jobs if not p.needed]
    rules = Counter(item.job.rule for item in todo)
    by_rule = ", ".join(f"{n} {rule}" for rule, n in rules.items())
    lines = [f"  stages: {len(todo)} to run" + (f" ({by_rule})" if todo else "")
             + f", {len(cached)} cached"]  # fmt: skip
    fetch = [d for d in plan.downloads if d.state not in ("present", "built locally")]
    blocked = [d for d in plan.downloads if d.blocked]
    sizes = [d.size_bytes for d in fetch if d.size_bytes is not None]
    known = f", {sum(sizes) / GB:,.2f} GB stated" if sizes else ""
    unknown = len(fetch) - len(sizes)
    line = f"  downloads: {len(fetch)} to fetch{known}"
    line += f" ({unknown} of unstated size)" if unknown and sizes else ""
    if blocked:
        line += f"; BLOCKED: {', '.join(d.name for d in blocked)} (see Downloads)"
    lines.append(line)
    total = sum(size or 0.0 for _, size, _ in plan.disk)
    lines.append(f"  disk: at least {total / GB:,.2f} GB")
    if plan.servers:
        lines.append(f"  servers: {', '.join(s.key for s in plan.servers)} (see Servers)")
    if plan.estimate is not None:
        lines += [f"  {line}" for line in plan.estimate.summary()]
    lines.append(f"  {measured_line(plan)}")
    if plan.reported is not None:
        r = plan.reported
        lines.append(f"  reported by the source: {r.hardware}, {r.time} ({r.source})")
    return lines


def measured_line(plan: Plan) -> str:
    """The time the jobs to run (all of them, when none is to run) took when Snakemake last ran
    them here (``logs/timings/``), per rule; what no run has timed yet is said, not guessed."""
    jobs = plan.to_run or plan.jobs
    names = [_job_name(item) for item in jobs]
    timed = [(item.job.rule, plan.measured[n]) for item, n in zip(jobs, names, strict=True)
             if n in plan.measured]  # fmt: skip
    if not timed:
        return (
            "time: not measured here yet (a Snakemake run times each training and inference "
            "job into logs/timings/)"
        )
    by_rule: dict[str, list[float]] = {}
    for rule, seconds in timed:
        by_rule.setdefault(rule, []).append(seconds)
    parts = ", ".join(
        f"{rule}{f' x {len(times)}' if len(times) > 1 else ''} {sum(times) / 60:,.1f}"
        for rule, times in by_rule.items()
    )
    which = "to run" if plan.to_run else "of the last run"
    return (
        f"time: {sum(s for _, s in timed) / 60:,.1f} min one after another, as last measured "
        f"here for {len(timed)} of the {len(jobs)} jobs {which} ({parts} min; logs/timings/)"
    )


GROUPED = 4
"""A rule with at least this many jobs that run for routine reasons only has them on one line."""


def stage_lines(plan: Plan) -> list[str]:
    """One line per job, with its reasons (a config value and its old and new value, a code
    file, an input rebuilt by another job); the jobs of a rule with :data:`GROUPED` or more
    jobs that run only because their output is missing or an input is rebuilt, on one line
    (24 infer jobs of a first run say nothing one by one)."""
    why = plan.preview.why if plan.preview is not None else {}
    reasons_of = {}
    for item in plan.jobs:
        if item.needed:
            name = _job_name(item)
            reasons_of[name] = why.get(name) or (
                [f"Snakemake: {item.reason}"] if item.reason else []
            )
    routine = Counter(
        item.job.rule
        for item in plan.jobs
        if item.needed and all(r.startswith(ROUTINE) for r in reasons_of[_job_name(item)])
    )
    grouped = {rule for rule, n in routine.items() if n >= GROUPED}
    lines: list[str] = []
    folded: dict[str, list[str]] = {}
    for item in plan.jobs:
        name = _job_name(item)
        if not item.needed:
            lines.append(f"  cached {name}")
        elif item.job.rule in grouped and all(r.startswith(ROUTINE) for r in reasons_of[name]):
            folded.setdefault(item.job.rule, []).append(name)
        else:
            lines.append(f"  run    {name}")
            lines += [f"           {reason}" for reason in _shortened(reasons_of[name])]
    for rule, names in folded.items():
        lines.append(f"  run    {rule} x {len(names)}: {', '.join(names)}")
        lines.append("           output missing or an input rebuilt (each)")
    return lines


SHOWN_INPUTS = 3
"""A job's rebuilt inputs listed one by one, up to this many; more are counted."""


def _shortened(reasons: list[str]) -> list[str]:
    """``reasons`` with a long run of rebuilt inputs (a report reads 48 scores files) cut to
    the first few and a count.

    >>> _shortened(["output missing: r"] + [f"input {i}: rebuilt by s{i}" for i in range(5)])
    ['output missing: r', 'input 0: rebuilt by s0', 'input 1: rebuilt by s1', \
'input 2: rebuilt by s2', '… and 2 more inputs rebuilt']
    """
    inputs = [r for r in reasons if r.startswith("input ") and ": rebuilt by " in r]
    if len(inputs) <= SHOWN_INPUTS + 1:
        return reasons
    hidden = set(inputs[SHOWN_INPUTS:])
    kept = [r for r in reasons if r not in hidden]
    return [*kept, f"… and {len(hidden)} more inputs rebuilt"]


def render(plan: Plan) -> str:
    """The plan as text (markdown-ish, for a terminal): the summary first, details after."""
    lines = [f"# Plan: {plan.experiment}", "", "## Summary", *summary(plan), ""]
    todo, cached = plan.to_run, [p for p in plan.jobs if not p.needed]
    lines.append(f"## Stages: {len(todo)} to run, {len(cached)} cached (Snakemake's dry run)")
    lines += _agreement(plan)
    lines += stage_lines(plan)
    lines += ["", "## Downloads"]
    for d in plan.downloads:
        lines.append(f"  {d.kind} {d.name}: {d.source}, {_size(d.size_bytes)}: {d.state}")
    blocked = [d for d in plan.downloads if d.blocked]
    if blocked:
        lines.append(f"  BLOCKED: {len(blocked)} download(s) cannot run as configured (above)")
    lines += ["", "## Disk"]
    total = 0.0
    for what, size, basis in plan.disk:
        total += size or 0.0
        lines.append(f"  {what}: {_size(None if size is None else int(size))} ({basis})")
    lines.append(f"  at least {total / GB:,.2f} GB")
    lines += ["", "## Servers"]
    lines += [f"  {s.key}: {s.how}" for s in plan.servers] or ["  none"]
    lines += ["", "## Compute and memory (estimate)"]
    if plan.estimate is not None:
        lines += [f"  {line}" for line in plan.estimate.lines()]
    if plan.reported is not None:
        r = plan.reported
        lines += ["", f"## Reported by the source: {r.hardware}, {r.time} ({r.source})"]
    if plan.unknown:
        lines += ["", "## Unknown in the public sources (the values set are stated guesses)"]
        lines += [f"  {key}: {why}" for key, why in plan.unknown.items()]
    if plan.deviations:
        lines += ["", "## Deviations from the sources"]
        lines += [f"  {key}: {why}" for key, why in plan.deviations.items()]
    return "\n".join(lines)


def rows(plan: Plan) -> list[dict[str, Any]]:
    """The plan as rows (``vlrl plan --format csv|json|md``): one per job, with whether it runs,
    why, and its estimate's GPU-hours, wall-clock hours and memory per device where it has one."""
    from vlrl.workflow.cost_model import GPU_HOURS, MEMORY, WALL_HOURS

    why = plan.preview.why if plan.preview is not None else {}
    estimates = {}
    if plan.estimate is not None:
        for stage in plan.estimate.stages:
            # "infer sft x mmmu_val" is the job infer--<exp>--sft--mmmu_val
            parts = stage.label.replace(" x ", " ").split()
            estimates["--".join([parts[0], plan.experiment, *parts[1:]])] = stage
    found = []
    for item in plan.jobs:
        name = _job_name(item)
        estimate = estimates.get(name)
        figures = {f.name: f.value for f in estimate.figures} if estimate else {}
        found.append(
            {
                "job": name,
                "rule": item.job.rule,
                "runs": item.needed,
                "why": "; ".join(why.get(name) or ([item.reason] if item.reason else [])),
                "gpu_hours": figures.get(GPU_HOURS),
                "wall_hours": figures.get(WALL_HOURS),
                "memory_gib": None if figures.get(MEMORY) is None else figures[MEMORY] / 2**30,
                "devices": estimate.devices if estimate else None,
                "on_gpu": estimate.on_gpu if estimate else None,
            }
        )
    return found
