"""Each stage's config, resolved: the values of the keys it reads, defaults included, in a file.

A stage's params are the *resolved* values of the keys its module declares (``READS``, see
:mod:`vlrl.workflow.stage_deps`), not the keys its experiment file happens to set: a default
changed in ``vlrl/config/`` reaches exactly the stages that read that key. Those values are
written to one small file per stage (``results/<exp>/params/<stage>.yaml``), which is an input
of the stage's jobs in Snakemake and a dep of its DVC stage. The stages that make shared
resources read the resource's own file instead (:data:`RESOURCE_STAGES`): base_model
``config/models/<model>.yaml``, resolved into ``resources/params/<model>.yaml``; download
``config/datasets/<dataset>.yaml``, into ``resources/params/datasets/<dataset>.yaml``. A file is
rewritten only when its content changes, so both tools see a change exactly when a value the
stage reads changed: Snakemake by the file's time (with no record of its own needed), DVC by
its hash.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vlrl import sharing
from vlrl.core import paths
from vlrl.core.files import atomic_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResourceStage:
    """A stage configured by a resource's file rather than an experiment file."""

    wildcard: str
    """The rule's wildcard that names the resource."""
    folder: str
    """``config/<folder>/<name>.yaml`` holds its config."""
    params_file: Callable[[str], Path]
    load: Callable[[str], Any]


def _load_model(name: str) -> Any:
    from vlrl.config import load_model

    return load_model(name)


def _load_dataset(name: str) -> Any:
    from vlrl.config import load_dataset

    return load_dataset(name)


RESOURCE_STAGES = {
    "base_model": ResourceStage("model", "models", paths.model_params_file, _load_model),
    "download": ResourceStage("dataset", "datasets", paths.dataset_params_file, _load_dataset),
}
"""The stages that build shared resources, by stage name."""

HEADER = (
    "# {source} as stage {stage} reads it, vlrl.config's defaults filled in (vlrl resolve).\n"
    "# Generated; do not edit. The stage reruns when this file changes.\n"
)


def resolved_experiment(name: str) -> dict[str, Any]:
    """Every key of experiment ``name``, defaults included, as plain YAML values."""
    from vlrl.workflow.check import load_checked

    return load_checked(name).model_dump(mode="json")


def resolved_resource(stage: str, name: str) -> dict[str, Any]:
    """Every key of the config of resource ``name`` (a model, a dataset) that resource stage
    ``stage`` makes, defaults included."""
    return RESOURCE_STAGES[stage].load(name).model_dump(mode="json")


def params_file(stage: str, name: str) -> Path:
    """Where stage ``stage`` of experiment (or, for a resource stage, resource) ``name`` keeps
    the values it reads (relative to the project root)."""
    if stage in RESOURCE_STAGES:
        return RESOURCE_STAGES[stage].params_file(name)
    return paths.stage_params_file(name, stage)


def config_file(stage: str, name: str) -> Path:
    """The file stage ``stage`` of experiment (or resource) ``name`` takes its values from."""
    if stage in RESOURCE_STAGES:
        return paths.root() / "config" / RESOURCE_STAGES[stage].folder / f"{name}.yaml"
    return paths.experiment_file(name)


def render(stage: str, name: str, tree: dict[str, Any] | None = None) -> str:
    """The text of :func:`params_file`: the declared keys' resolved values.

    ``tree`` is the resolved config when the caller has it already (see :func:`write_all`).
    """
    if tree is None:
        tree = (
            resolved_resource(stage, name)
            if stage in RESOURCE_STAGES
            else resolved_experiment(name)
        )
    source = config_file(stage, name).relative_to(paths.root()).as_posix()
    body = yaml.safe_dump(
        sharing.stage_values(stage, tree), sort_keys=False, default_flow_style=False, width=1000
    )
    header = HEADER.format(source=source, stage=stage)
    if stage not in RESOURCE_STAGES:
        shared = sharing.shared_inputs(name, stage)
        if shared:
            # In the file, so that an input moving to another owner reruns the stage.
            listed = ", ".join(f"{output} of {owner}" for output, owner in shared.items())
            header += f"# Shared with ancestors (same values, vlrl.sharing): {listed}\n"
    return header + body


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


def datasets_of(tree: dict[str, Any]) -> list[str]:
    """The datasets a resolved experiment needs downloaded: those its benchmarks name."""
    from vlrl.benchmarks import load_benchmark

    found = (load_benchmark(bench).dataset for bench in tree["benchmarks"])
    return list(dict.fromkeys(name for name in found if name is not None))


def lineage(exp: str) -> list[str]:
    """``exp`` and its ``extends:`` ancestors, nearest first (the files its values come from)."""
    found = [exp]
    while (tree := sharing.resolved(found[-1])) and tree.get("extends"):
        if tree["extends"] in found:  # a cycle: loading reports it
            break
        found.append(tree["extends"])
    return found


def with_owners(experiments: list[str]) -> list[str]:
    """These experiments and the ancestors whose outputs they share (:mod:`vlrl.sharing`):
    the ancestors' stages run for them, so their params files are needed too."""
    from vlrl.workflow.stage_deps import stages

    found = list(dict.fromkeys(experiments))
    for exp in found:  # grows while it is walked: an owner's owners are found in turn
        for stage in stages():
            if stage not in RESOURCE_STAGES:
                found += [o for o in sharing.shared_inputs(exp, stage).values() if o not in found]
    return found


def write_all(experiments: list[str]) -> list[str]:
    """Every params file of these experiments' stages and of the resources they use."""
    from vlrl.workflow.stage_deps import stages

    written = []
    resources: dict[tuple[str, str], None] = {}
    for exp in with_owners(experiments):
        tree = resolved_experiment(exp)
        resources[("base_model", tree["base_model"])] = None
        resources.update(dict.fromkeys(("download", name) for name in datasets_of(tree)))
        written += [ensure(stage, exp, tree) for stage in stages() if stage not in RESOURCE_STAGES]
    written += [ensure(stage, name) for stage, name in resources]
    return written


def main() -> None:
    """Write the params files of params.yaml's experiments. (``vlrl resolve`` then fails when
    dvc.yaml is stale: :func:`vlrl.workflow.dvc_export.main`, which depends on this module.)"""
    files = write_all(experiments_listed())
    log.info("resolve: %d params files up to date", len(files))
