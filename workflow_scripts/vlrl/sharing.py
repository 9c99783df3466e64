"""Stage outputs shared across experiments: where each output an experiment reads lives.

An experiment that ``extends:`` another (a small diff of a parent, as EasyR1's configs are) reads
its parent's output of a stage whenever it would compute exactly the same thing: the stage's
*identity* — the resolved values of the config keys it reads (its params,
:mod:`vlrl.workflow.resolve`) and the identities of the outputs it reads in turn — is the same
for both. So a child that changes only ``grpo.learning_rate`` trains GRPO and evaluates the new
policy, and reuses its parent's data, SFT model and base and SFT scores: both tools plan those
once, under the parent's name (``results/<parent>/sft``). The report is always the experiment's
own and shows it whole.

Sharing follows the ``extends:`` chain only (a child, its parent, the parent's parent), never
siblings or unrelated experiments: the owner of an output is the oldest ancestor that computes
the same thing, so adding an experiment never moves an existing one's outputs. An ancestor shares
an evaluation (an ``infer`` or ``score`` output) only if it makes that evaluation itself (the
checkpoint and the benchmark are among its own).

Stages read their inputs through the functions at the end of this module (``data_dir(exp)``
rather than ``paths.data_dir(exp)``); a stage still writes its own output under its own name.
The workflow (``rules/common.smk``) asks the same functions, so a child's GRPO job's inputs are
``results/<parent>/data`` and ``results/<parent>/sft`` in both Snakemake and dvc.yaml. Where an
experiment's inputs live is also written into its params files (:func:`shared_inputs`), so that
moving an input from one owner to another reruns the stages that read it, in both tools.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from vlrl.config.keys import select
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.errors import ConfigError

SHARED_STAGES = ("data", "sft", "grpo", "merge", "infer", "score")
"""The stages whose outputs a child may take from an ancestor (not the report: each experiment's
report is its own)."""

_overrides: dict[str, tuple[str, ...]] = {}
_trees: dict[tuple[Any, ...], dict[str, Any] | None] = {}


def use_overrides(exp: str, overrides: list[str] | None) -> None:
    """Compute ``exp``'s identities with these ``--set`` overrides (the CLI runs a stage of an
    experiment as the overrides change it; its ancestors stay as their files say)."""
    _overrides[exp] = tuple(overrides or ())


def _stamp() -> tuple[Any, ...]:
    """What the resolved trees depend on that can change while a process runs (tests edit
    experiment files): the experiment files' times."""
    folder = paths.root() / "config" / "experiments"
    return tuple((p.name, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.yaml")))


def resolved(exp: str) -> dict[str, Any] | None:
    """Every key of experiment ``exp``, defaults filled in, as plain values (the tree its params
    files select from); None when the experiment does not load."""
    from vlrl.config import load_experiment

    overrides = _overrides.get(exp, ())
    key = (str(paths.root()), exp, overrides, _stamp())
    if key not in _trees:
        try:
            cfg = load_experiment(exp, list(overrides) or None)
        except ConfigError:
            _trees[key] = None
        else:
            _trees[key] = cfg.model_dump(mode="json")
    return _trees[key]


def stage_values(stage: str, tree: dict[str, Any]) -> dict[str, Any]:
    """The resolved values of the keys ``stage`` reads (:mod:`vlrl.config.reads`)."""
    return select(tree, declared_reads(stage))


def _inputs(stage: str, tree: dict[str, Any], checkpoint: str | None, bench: str | None):
    """The outputs stage ``stage`` reads: ``[(stage, checkpoint, bench)]``."""
    sft = [("sft", None, None)] if tree["sft"]["enabled"] else []
    if stage == "data":
        return []
    if stage == "sft":
        return [("data", None, None)]
    if stage == "grpo":
        return [("data", None, None), *sft]
    if stage == "merge":
        return [("grpo", None, None), *sft]
    if stage == "infer":
        model = {"base": [], "sft": [("sft", None, None)], "grpo": [("merge", None, None)]}
        # A benchmark may be a split of the experiment's data (loader experiment_split); counted
        # for every benchmark, which at worst shares less, and keeps this module below the
        # benchmark registry (that reads its items through data_dir() here).
        return [*model[checkpoint], ("data", None, None)]
    if stage == "score":
        return [("infer", checkpoint, bench)]
    raise ValueError(f"stage {stage!r} is not one of {SHARED_STAGES}")


def identity(exp: str, stage: str, checkpoint: str | None = None, bench: str | None = None) -> str:
    """What decides the output of ``stage`` for ``exp`` (and checkpoint × benchmark, for an
    evaluation): a hash of the stage's resolved values and of its inputs' identities."""
    tree = resolved(exp)
    if tree is None:
        raise ConfigError(f"experiment {exp!r} does not load; run `vlrl check`")
    parts = [
        stage,
        checkpoint,
        bench,
        stage_values(stage, tree),
        [identity(exp, *inp) for inp in _inputs(stage, tree, checkpoint, bench)],
    ]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _makes(tree: dict[str, Any], stage: str, checkpoint: str | None, bench: str | None) -> bool:
    """Whether an experiment makes this evaluation itself (other outputs: always)."""
    if stage not in ("infer", "score"):
        return True
    enabled = {"base": True, "sft": tree["sft"]["enabled"], "grpo": tree["grpo"]["enabled"]}
    checkpoints = [c for c in tree["infer"]["checkpoints"] if enabled[c]]
    return checkpoint in checkpoints and bench in tree["benchmarks"]


def home(exp: str, stage: str, checkpoint: str | None = None, bench: str | None = None) -> str:
    """The experiment whose ``results/`` hold ``exp``'s output of ``stage``: the oldest ancestor
    that computes the same thing, else ``exp`` itself.

    >>> home("tiny_shapes", "sft")
    'tiny_shapes'
    """
    tree = resolved(exp)
    parent = tree.get("extends") if tree else None
    if parent is None:
        return exp
    parent_tree = resolved(parent)
    if parent_tree is None or not _makes(parent_tree, stage, checkpoint, bench):
        return exp
    if identity(parent, stage, checkpoint, bench) != identity(exp, stage, checkpoint, bench):
        return exp
    return home(parent, stage, checkpoint, bench)


def shared_inputs(exp: str, stage: str) -> dict[str, str]:
    """``{output: path}`` for each output that ``stage`` of ``exp`` reads from an ancestor's
    results (for its params file; empty when it reads only its own)."""
    tree = resolved(exp)
    if tree is None or stage not in (*SHARED_STAGES, "report"):
        return {}
    enabled = {"base": True, "sft": tree["sft"]["enabled"], "grpo": tree["grpo"]["enabled"]}
    evaluations = [
        (c, b) for c in tree["infer"]["checkpoints"] if enabled[c] for b in tree["benchmarks"]
    ]
    if stage == "report":
        wanted = [(s, c, b) for c, b in evaluations for s in ("infer", "score")]
        wanted += [("grpo", None, None)] if tree["grpo"]["enabled"] else []
    elif stage in ("infer", "score"):
        wanted = [inp for c, b in evaluations for inp in _inputs(stage, tree, c, b)]
    else:
        wanted = _inputs(stage, tree, None, None)
    found = {}
    for inp in dict.fromkeys(wanted):
        owner = home(exp, *inp)
        if owner != exp:
            found["/".join(p for p in inp if p)] = owner
    return dict(sorted(found.items()))


# Where a stage reads its inputs (the outputs of the stages before it) --------------------------
def data_dir(exp: str) -> Path:
    return paths.data_dir(home(exp, "data"))


def sft_dir(exp: str) -> Path:
    return paths.sft_dir(home(exp, "sft"))


def grpo_dir(exp: str) -> Path:
    return paths.grpo_dir(home(exp, "grpo"))


def grpo_final_dir(exp: str) -> Path:
    return paths.grpo_final_dir(home(exp, "grpo"))


def grpo_curves_dir(exp: str) -> Path:
    return paths.grpo_curves_dir(home(exp, "grpo"))


def policy_start_dir(exp: str, sft_enabled: bool, base_model: str) -> Path:
    """The model GRPO starts from: the SFT output, or the base model when SFT is disabled."""
    return sft_dir(exp) if sft_enabled else paths.model_resource(base_model)


def checkpoint_model_dir(exp: str, checkpoint: paths.Checkpoint, base_model: str) -> Path:
    """The model directory ``checkpoint`` of experiment ``exp`` stands for."""
    if checkpoint == "sft":
        return sft_dir(exp)
    if checkpoint == "grpo":
        return paths.merged_model_dir(home(exp, "merge"))
    return paths.checkpoint_model_dir(exp, checkpoint, base_model)


def predictions_file(exp: str, checkpoint: str, bench: str) -> Path:
    return paths.predictions_file(home(exp, "infer", checkpoint, bench), checkpoint, bench)


def scores_file(exp: str, checkpoint: str, bench: str) -> Path:
    return paths.scores_file(home(exp, "score", checkpoint, bench), checkpoint, bench)
