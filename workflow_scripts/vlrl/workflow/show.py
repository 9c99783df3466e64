"""``vlrl show <experiment>``: the resolved config, every value with where it comes from.

Each leaf key of the validated experiment is listed with its value and its origin: the file and
line that set it (the experiment's own file or an ancestor of its ``extends:`` chain, with the
comment written there, which cites the public source by convention), a ``--set`` override, a
value derived from another key (:data:`vlrl.config.experiment.DERIVED`), or the schema's default.
Keys the recipe marks ``unknown`` (the public sources do not give them) say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlrl.core import paths


@dataclass(frozen=True)
class Shown:
    """One leaf of the resolved config."""

    key: str
    value: Any
    origin: str
    """``file:line``, ``--set``, ``derived from <key>`` or ``default``."""
    note: str = ""
    """The comment at the origin (its cited source), or why the value is unknown."""
    unknown: bool = False

    def line(self) -> str:
        flag = "  [UNKNOWN in the sources]" if self.unknown else ""
        note = f"  # {self.note}" if self.note else ""
        return f"{self.key} = {_text(self.value)}  ({self.origin}){flag}{note}"


def _text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def _relative(file: str) -> str:
    """``file`` relative to the project root when it lies under it."""
    from pathlib import Path

    try:
        return Path(file).resolve().relative_to(paths.root()).as_posix()
    except ValueError:
        return file


def _leaves(node: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict) and node:
        found = []
        for key, value in node.items():
            found += _leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return found
    return [(prefix, node)]


def shown(name: str, overrides: list[str] | None = None) -> list[Shown]:
    """Every leaf of experiment ``name`` (its ``extends:`` chain merged, the overrides set),
    with its origin.

    Raises:
        ConfigError: the experiment is missing or invalid (every problem named).
    """
    from vlrl.config import experiment_tree, load_experiment
    from vlrl.config.experiment import DERIVED

    cfg = load_experiment(name, overrides)
    merged = experiment_tree(paths.experiment_file(name), overrides)
    rows = []
    for key, value in _leaves(cfg.model_dump(mode="json"), ""):
        if key.startswith(("unknown.", "deviations.")):
            continue
        origin = merged.origins.get(key)
        unknown = cfg.unknown.get(key)
        if origin is not None:
            where, note = _relative(str(origin)), origin.comment
        elif key in DERIVED:
            where, note = f"derived from {DERIVED[key]}", ""
        else:
            where, note = "default", ""
        if unknown is not None:
            note = f"{unknown}" + (f"; {note}" if note else "")
        rows.append(Shown(key, value, where, note, unknown is not None))
    return rows


def selected(
    name: str, overrides: list[str] | None = None, only_set: bool = False
) -> tuple[Any, list[str], list[Shown]]:
    """The validated config (as ``vlrl check`` validates it: an unknown reward fails here
    too), its ``extends:`` chain, and the rows shown. ``only_set``: for a child, only what its
    own file or a ``--set`` sets (what differs from its parent); for an experiment with no
    parent, every key not at the schema's default."""
    from vlrl.config import experiment_tree
    from vlrl.workflow.check import load_checked

    cfg = load_checked(name, overrides)
    chain = experiment_tree(paths.experiment_file(name), overrides).chain
    rows = shown(name, overrides)
    if only_set and len(chain) > 1:
        own = _relative(chain[0])
        rows = [r for r in rows if r.origin.split(":")[0] in (own, "--set")]
    elif only_set:
        rows = [r for r in rows if r.origin != "default"]
    return cfg, chain, rows


def render(name: str, overrides: list[str] | None = None, only_set: bool = False) -> str:
    """The text ``vlrl show`` prints: the chain, then one line per key (see :func:`selected`),
    then the recipe's declared deviations from its sources."""
    cfg, chain, rows = selected(name, overrides, only_set)
    lines = [
        f"# {name}: {cfg.description}".rstrip(": "),
        f"# files: {' ← '.join(_relative(f) for f in chain)}",
    ]
    if only_set and len(chain) > 1:
        lines.append(f"# only what differs from {cfg.extends} (this file and --set)")
    lines += [row.line() for row in rows]
    lines += ["", *as_trained(cfg)]
    if cfg.deviations:
        lines += ["", "# deviations from the sources:"]
        lines += [f"#   {key}: {why}" for key, why in cfg.deviations.items()]
    return "\n".join(lines)


def as_trained(cfg: Any) -> list[str]:
    """What the lines above add up to, as comment lines: where each training stage starts and
    stops (the schedule's horizon), and the chat the prompt format builds around a question with
    one image (system turn, text and image positions: :func:`vlrl.data.convert.to_conversation`).

    >>> from vlrl.config import load_experiment
    >>> lines = as_trained(load_experiment("vlm_r1_rec"))
    >>> print(lines[1]); print(lines[4][:50])
    #   grpo: from qwen2.5-vl-3b-instruct; stops at step 600 of a schedule of 2.0 epochs
    #   user: '<image>{question} First output the thin
    """
    from vlrl.data.convert import to_conversation
    from vlrl.items.prompts import get_prompt
    from vlrl.items.records import Record

    lines = ["# as trained:"]
    if cfg.sft.enabled:
        horizon = f"a schedule of {cfg.sft.num_train_epochs} epochs"
        if cfg.sft.max_steps is not None:
            horizon = f"stops at step {cfg.sft.max_steps} of {horizon}"
        lines.append(
            f"#   sft: from {cfg.base_model}; {horizon}, boxes in the {cfg.sft.box_frame} frame"
        )
    if cfg.grpo.enabled:
        g = cfg.grpo
        start = f"the sft output of {cfg.base_model}" if cfg.sft.enabled else cfg.base_model
        if g.schedule_epochs is not None:
            planned = f"a schedule of {g.schedule_epochs} epochs"
        else:
            planned = f"a schedule of {g.schedule_steps or g.max_steps} steps"
        lines.append(f"#   grpo: from {start}; stops at step {g.max_steps} of {planned}")
    fmt = get_prompt(cfg.prompt)
    lines.append(f"# prompt {fmt.name}, a question with one image as the model sees it:")
    lines.append(f"#   ({fmt.source})")
    example = Record(
        id="-", images=["-"], problem="{question}", answer="-", problem_type="free_form",
        data_source="-",
    )  # fmt: skip
    for turn in to_conversation(example, fmt):
        text = "".join(p["text"] if p["type"] == "text" else "<image>" for p in turn["content"])
        lines.append(f"#   {turn['role']}: {text!r}")
    return lines


def rows(
    name: str, overrides: list[str] | None = None, only_set: bool = False
) -> list[dict[str, Any]]:
    """The rows of :func:`render` as records (``vlrl show --format csv|json|md``)."""
    return [
        {"key": r.key, "value": r.value, "origin": r.origin, "note": r.note, "unknown": r.unknown}
        for r in selected(name, overrides, only_set)[2]
    ]
