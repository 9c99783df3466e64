"""Why each planned stage runs, in the user's terms (``vlrl plan``'s stage list).

Snakemake's dry run decides *which* jobs run (:func:`vlrl.workflow.dag.planned_jobs`; ``dvc
repro`` runs the same stages, except where the tools part, below); this module says *why*, for
each of them:

- ``config <key>: <old> → <new>``: a value the stage reads changed (its params file,
  :mod:`vlrl.workflow.resolve`), old being what the stage last ran with;
- ``code <file> changed`` (or new to the stage, or no longer read): against dvc.lock's hashes;
- ``input <path> changed``, or ``input <path>: rebuilt by <stage>`` when a job that runs first
  writes it (another experiment's job too: a child experiment may read its parent's outputs);
- ``output missing``; and, when none of these explains Snakemake's decision, Snakemake's reason.

Where the two tools part, it says so (:class:`Preview`): Snakemake decides by file times, DVC by
content, so a file rewritten with the same content (a checkout, an undone edit) makes Snakemake
run a stage, and those after it, that ``dvc repro`` skips.

**The baseline** is what the stage last ran with. Both tools record each run in dvc.lock (DVC
when it runs a stage; Snakemake through its ``onsuccess`` handover), but of the params file
only its hash, and the file itself is generated, git-ignored and not in DVC's cache. The values
behind that hash are looked for in, in this order:

1. the params file as it was before this preview's DAG build rewrote it (:func:`snapshot`);
2. the params file rendered from the values of the experiment (model, dataset) file that
   dvc.lock's ``resolve`` stage recorded at the last run, with today's defaults;
3. the same from the committed dvc.lock (``git show HEAD:dvc.lock``),

and a candidate counts only when its hash is the recorded one. So after consecutive edits
(edit, ``snakemake -n`` or ``vlrl plan``, which rewrite the params file, then edit again) the
old value shown is the one the stage ran with, not the previous edit's. When no candidate has
the hash (a default changed in ``vlrl/config/``, or ``dvc repro`` stopped after ``resolve`` with
the run uncommitted, and in either case the params file rewritten since), the preview says so
and compares with the params file as last written, marked as such; without a dvc.lock record
(Snakemake with ``--no-hooks``, an experiment DVC does not track) that is the only comparison
there is.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from vlrl.core import paths
from vlrl.workflow.dag import Planned

UNSET = "(unset)"


def params_files() -> list[Path]:
    """Every params file there is now, relative to the project root."""
    root = paths.root()
    patterns = (
        paths.stage_params_file("*", "*"),
        paths.model_params_file("*"),
        paths.dataset_params_file("*"),
    )
    return sorted({p.relative_to(root) for pat in patterns for p in root.glob(str(pat))})


def snapshot() -> dict[str, str]:
    """``{path: text}`` of every params file, read before a DAG build rewrites them."""
    return {str(p): (paths.root() / p).read_text() for p in params_files()}


def _md5(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.md5(data).hexdigest()  # DVC's ``hash: md5`` of a file: its bytes' md5


@cache
def _file_md5(path: Path) -> str | None:
    return _md5(path.read_bytes()) if path.is_file() else None


def _lock(text: str | None) -> dict[str, Any]:
    """The stages of a dvc.lock (or dvc.yaml) text ({} when there is none)."""
    if not text:
        return {}
    return (yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}).get(
        "stages"
    ) or {}


def stale(planned: list[Planned]) -> list[str]:
    """The jobs whose DVC stage dvc.yaml lacks or gives other deps (a new import, a new
    benchmark): ``dvc repro`` then stops at its ``resolve`` stage until ``vlrl dvc-yaml``."""
    from vlrl.workflow.dvc_export import name_for

    text = _read(paths.root() / "dvc.yaml")
    if text is None:  # no DVC here
        return []
    stages = _lock(text)
    found = []
    for item in planned:
        name = name_for(item.job.rule, item.job.wildcards.values())
        spec = stages.get(name)
        if item.job.shellcmd and (spec is None or set(spec.get("deps", [])) != set(item.job.input)):
            found.append(name)
    return found


def _committed_lock() -> dict[str, Any]:
    out = subprocess.run(
        ["git", "show", "HEAD:./dvc.lock"], cwd=paths.root(), capture_output=True, text=True
    )
    return _lock(out.stdout if out.returncode == 0 else None)


def flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a params file's values (a section's keys one by one).

    >>> flat({"seed": 0, "grpo": {"beta": 0.04, "rewards": {"common.format": 0.5}}})
    {'seed': 0, 'grpo.beta': 0.04, 'grpo.rewards.common.format': 0.5}
    """
    if not isinstance(tree, dict) or not tree:
        return {prefix: tree} if prefix else {}
    found: dict[str, Any] = {}
    for key, value in tree.items():
        found.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return found


def key_changes(old_text: str, new_text: str) -> list[str]:
    """``key: old → new`` for every value that differs between two params files.

    >>> key_changes("grpo:\\n  beta: 0.04\\n  lr: 1\\n", "grpo:\\n  beta: 0.1\\n  lr: 1\\n")
    ['grpo.beta: 0.04 → 0.1']
    """
    old, new = flat(yaml.safe_load(old_text) or {}), flat(yaml.safe_load(new_text) or {})
    return [
        f"{key}: {_show(old, key)} → {_show(new, key)}"
        for key in [*old, *(k for k in new if k not in old)]
        if old.get(key, UNSET) != new.get(key, UNSET)
    ]


def _show(values: dict[str, Any], key: str) -> str:
    return json.dumps(values[key], ensure_ascii=False) if key in values else UNSET


class Baselines:
    """The params file text a stage last ran with (see the module's docstring)."""

    def __init__(self, lock: dict[str, Any], before: dict[str, str]) -> None:
        self.before = before
        self.sources = [lambda: lock, _committed_lock]
        self.locks: dict[int, dict[str, Any]] = {}
        self.rendered: dict[tuple[str, str, int], str | None] = {}

    def find(self, stage: str, name: str, path: str, recorded: str) -> str | None:
        """The text whose md5 is ``recorded``, or None when none of the candidates has it."""
        prior = self.before.get(path)
        if prior is not None and _md5(prior) == recorded:
            return prior
        for index, source in enumerate(self.sources):
            key = (stage, name, index)
            if key not in self.rendered:
                if index not in self.locks:
                    self.locks[index] = source()  # the committed one only when needed: git
                resolved = self.locks[index].get("resolve") or {}
                self.rendered[key] = _render(stage, name, resolved.get("params") or {})
            text = self.rendered[key]
            if text is not None and _md5(text) == recorded:
                return text
        return None


def _render(stage: str, name: str, recorded: dict[str, Any]) -> str | None:
    """Stage ``stage``'s params file as the config values dvc.lock recorded make it (today's
    defaults filled in); None when those values are not there or no longer valid."""
    from vlrl.config import load_experiment_file, load_yaml_model
    from vlrl.core.errors import VlrlError
    from vlrl.workflow import resolve

    source = resolve.config_file(stage, name).relative_to(paths.root()).as_posix()
    values = recorded.get(source)
    if not isinstance(values, dict):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / Path(source).name
        file.write_text(yaml.safe_dump(values, sort_keys=False))
        try:
            if stage in resolve.RESOURCE_STAGES:
                cfg = load_yaml_model(file, type(resolve.RESOURCE_STAGES[stage].load(name)))
            else:
                cfg = load_experiment_file(file)  # its extends: are today's parent files
            return resolve.render(stage, name, cfg.model_dump(mode="json"))
        except VlrlError:
            return None


@dataclass
class Preview:
    """The reasons behind each stage Snakemake would run, and which of them ``dvc repro`` runs."""

    why: dict[str, list[str]] = field(default_factory=dict)
    """``{DVC stage name: reasons}`` of every job Snakemake would run."""
    snakemake_only: list[str] = field(default_factory=list)
    """Run by Snakemake for file times alone: their config, code and files are as dvc.lock
    records, so ``dvc repro`` skips them (``snakemake --touch`` marks them current)."""
    unknown: list[str] = field(default_factory=list)
    """Run by Snakemake for a folder input newer than their outputs; folders are not compared
    with dvc.lock here, so whether ``dvc repro`` runs them is not known."""


def explain(planned: list[Planned], before: dict[str, str]) -> Preview:
    """The reasons behind each job Snakemake would run (see the module's docstring);
    ``before`` is the :func:`snapshot` taken before the DAG build."""
    from vlrl.workflow.dvc_export import name_for

    _file_md5.cache_clear()
    lock = _lock(_read(paths.root() / "dvc.lock"))
    baselines = Baselines(lock, before)
    runs = {name_for(p.job.rule, p.job.wildcards.values()): p for p in planned}
    runs = {name: p for name, p in runs.items() if p.needed and p.job.shellcmd}
    made_by = {out: name for name, p in runs.items() for out in p.job.output}
    found, state = Preview(), {}
    for name, item in runs.items():
        reasons, state[name] = _reasons(item, lock.get(name), made_by, baselines)
        rebuilt: dict[str, list[str]] = {}
        for path in item.job.input:
            if made_by.get(path, name) != name:
                rebuilt.setdefault(made_by[path], []).append(path)
        reasons += [f"input {', '.join(ins)}: rebuilt by {up}" for up, ins in rebuilt.items()]
        found.why[name] = reasons or [f"Snakemake: {item.reason} (no change against dvc.lock)"]
    # A stage DVC runs makes DVC run those after it; the first of the three states wins.
    changed = True
    while changed:
        changed = False
        for name, item in runs.items():
            ups = {state[made_by[i]] for i in item.job.input if made_by.get(i, name) != name}
            best = min({state[name], *ups}, key=("dvc", "unknown", "snakemake").index)
            changed |= best != state[name]
            state[name] = best
    found.snakemake_only = [name for name in runs if state[name] == "snakemake"]
    found.unknown = [name for name in runs if state[name] == "unknown"]
    return found


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def _kind(path: str) -> str:
    from vlrl.workflow.stage_deps import SOURCE_DIR

    return "code" if Path(path).parts[:1] == SOURCE_DIR.parts else "input"


def _params_path(item: Planned) -> tuple[str, str] | None:
    """(the job's params file, the experiment or resource it belongs to)."""
    from vlrl.workflow import resolve

    resource = resolve.RESOURCE_STAGES.get(item.job.rule)
    name = item.job.wildcards.get(resource.wildcard if resource else "exp")
    return None if name is None else (str(resolve.params_file(item.job.rule, name)), name)


def _reasons(
    item: Planned,
    entry: dict[str, Any] | None,
    made_by: dict[str, str],
    baselines: Baselines,
) -> tuple[list[str], str]:
    """The job's own reasons to run (not its inputs rebuilt first), and whether they make
    ``dvc repro`` run it: ``dvc``, ``snakemake`` (file times alone) or ``unknown``."""
    root = paths.root()
    job = item.job
    reasons = []
    missing = [out for out in job.output if not (root / out).exists()]
    if missing:
        reasons.append(f"output missing: {', '.join(missing)}")
    params = _params_path(item)
    recorded = {d["path"]: d.get("md5") for d in (entry or {}).get("deps", [])}
    if params is not None and params[0] in job.input:
        reasons += _config(item.job.rule, params[1], params[0], recorded.get(params[0]), baselines)
    if entry is None:
        if not missing:
            reasons.append(f"Snakemake: {item.reason} (dvc.lock has no record of a run of it)")
        return reasons, "dvc"
    folders = []
    for path in job.input:
        if path in made_by or (params is not None and path == params[0]):
            continue
        if path not in recorded:
            reasons.append(f"{_kind(path)} {path}: new to the stage")
        elif str(recorded[path]).endswith(".dir"):  # not hashed here (DVC's folder hash)
            folders += [path] if path in item.updated else []
        elif _file_md5(root / path) != recorded[path]:
            reasons.append(f"{_kind(path)} {path} changed")
    reasons += [f"{_kind(p)} {p}: no longer read" for p in recorded if p not in job.input]
    if reasons:
        return reasons, "dvc"
    if folders:
        shown = ", ".join(folders)
        return [f"input {shown}: newer than the outputs (folders not compared here)"], "unknown"
    return [], "snakemake"


def _config(
    stage: str, name: str, path: str, recorded: str | None, baselines: Baselines
) -> list[str]:
    """The changed values of the stage's params file (see the module's docstring)."""
    now = _read(paths.root() / path)
    if now is None or (recorded is not None and _md5(now) == recorded):
        return []
    old = baselines.find(stage, name, path, recorded) if recorded is not None else None
    if old is not None:
        return [f"config {change}" for change in key_changes(old, now)] or [
            f"config: {path} changed"
        ]
    prior = baselines.before.get(path)
    unverified = (
        "the values of its last run are not on record (dvc.lock keeps their hash)"
        if recorded is not None
        else "dvc.lock has no record of its last run"
    )
    if prior is not None and prior != now:
        return [
            f"config {change} (since {path} was last written; {unverified})"
            for change in key_changes(prior, now)
        ]
    if recorded is None:
        return []
    return [f"config: {path} differs from what the stage last ran with; {unverified}"]
