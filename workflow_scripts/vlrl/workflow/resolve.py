"""Each stage's config, resolved: the values of the keys it reads, defaults included, in a file.

A stage's params are the *resolved* values of the keys its module declares (``READS``, see
:mod:`vlrl.workflow.stage_deps`), not the keys its experiment file happens to set: a default
changed in ``vlrl/config.py`` reaches exactly the stages that read that key. Those values are
written to one small file per stage (``results/<exp>/params/<stage>.yaml``;
``resources/params/<model>.yaml`` for base_model), which is an input of the stage's jobs
in Snakemake and a dep of its DVC stage. A file is rewritten only when its content changes, so
both tools see a change exactly when a value the stage reads changed: Snakemake by the file's
time (with no record of its own needed), DVC by its hash.

Who writes them:

- Snakemake, while it builds the DAG (the rules' input functions, ``rules/common.smk``), so
  ``snakemake -n`` right after an edit already plans the stages it affects;
- DVC's first stage, ``resolve`` (``vlrl resolve``, generated beside the DAG's stages by
  ``vlrl dvc-yaml``), for every experiment of params.yaml. ``vlrl resolve`` also stops the run,
  saying what to run, when dvc.yaml no longer matches the Snakemake DAG (a new experiment in
  params.yaml, a new benchmark, a new import in a stage), so DVC never silently skips what
  Snakemake would build.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from vlrl import paths
from vlrl.errors import ConfigError
from vlrl.files import atomic_file

log = logging.getLogger(__name__)

MODEL_STAGE = "base_model"
"""The one stage configured by a model file rather than an experiment file."""
HEADER = (
    "# {source} as stage {stage} reads it, vlrl/config.py's defaults filled in (vlrl resolve).\n"
    "# Generated; do not edit. The stage reruns when this file changes.\n"
)


def resolved_experiment(name: str) -> dict[str, Any]:
    """Every key of experiment ``name``, defaults included, as plain YAML values."""
    from vlrl.workflow.check import load_checked

    return load_checked(name).model_dump(mode="json")


def resolved_model(name: str) -> dict[str, Any]:
    """Every key of base model ``name``, defaults included."""
    from vlrl.config import load_model

    return load_model(name).model_dump(mode="json")


def lookup(tree: dict[str, Any], key: str) -> Any:
    """The value of a dotted key.

    >>> lookup({"sft": {"enabled": True}}, "sft.enabled")
    True
    """
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"no config key {key!r} (stopped at {part!r})")
        node = node[part]
    return node


def select(tree: dict[str, Any], keys: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``{key: value}`` for each dotted key, in the given order.

    >>> select({"seed": 0, "sft": {"enabled": True, "lr": 1}}, ["seed", "sft.enabled"])
    {'seed': 0, 'sft.enabled': True}
    """
    return {key: lookup(tree, key) for key in keys}


def params_file(stage: str, name: str) -> Path:
    """Where stage ``stage`` of experiment (or, for base_model, model) ``name`` keeps the values
    it reads (relative to the project root)."""
    if stage == MODEL_STAGE:
        return paths.model_params_file(name)
    return paths.stage_params_file(name, stage)


def render(stage: str, name: str, tree: dict[str, Any] | None = None) -> str:
    """The text of :func:`params_file`: the declared keys' resolved values.

    ``tree`` is the resolved config when the caller has it already (see :func:`write_all`).
    """
    from vlrl.workflow.stage_deps import declared_reads

    if tree is None:
        tree = resolved_model(name) if stage == MODEL_STAGE else resolved_experiment(name)
    kind = "models" if stage == MODEL_STAGE else "experiments"
    body = yaml.safe_dump(
        select(tree, declared_reads(stage)), sort_keys=False, default_flow_style=False, width=1000
    )
    return HEADER.format(source=f"config/{kind}/{name}.yaml", stage=stage) + body


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically unless it already holds exactly that (its time
    then stays as it was, which is what tells Snakemake nothing changed)."""
    if path.is_file() and path.read_text() == text:
        return False
    with atomic_file(path) as fh:
        fh.write(text)
    path.chmod(0o644)
    return True


def ensure(stage: str, name: str, tree: dict[str, Any] | None = None) -> str:
    """Bring one stage's params file up to date; return its path (relative, as a string)."""
    path = params_file(stage, name)
    if write_if_changed(paths.root() / path, render(stage, name, tree)):
        log.info("resolve: wrote %s", path)
    return str(path)


def experiments_listed() -> list[str]:
    """The experiments params.yaml runs."""
    params = yaml.safe_load((paths.root() / "params.yaml").read_text()) or {}
    return list(params.get("experiments") or [])


def write_all(experiments: list[str]) -> list[str]:
    """Every params file of these experiments' stages and of their base models."""
    from vlrl.workflow.stage_deps import stages

    written = []
    models: dict[str, None] = {}
    for exp in experiments:
        tree = resolved_experiment(exp)
        models[tree["base_model"]] = None
        written += [ensure(stage, exp, tree) for stage in stages() if stage != MODEL_STAGE]
    written += [ensure(MODEL_STAGE, model) for model in models]
    return written


def main(check_dvc_yaml: bool = True) -> None:
    """Write the params files of params.yaml's experiments; then, with ``check_dvc_yaml``, fail
    when dvc.yaml is stale (naming the command that regenerates it)."""
    files = write_all(experiments_listed())
    log.info("resolve: %d params files up to date", len(files))
    if check_dvc_yaml:
        from vlrl.workflow import dvc_export

        dvc_export.main(check_only=True)
