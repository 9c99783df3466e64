"""The jobs of the Snakemake DAG, read with Snakemake's Python API.

Snakemake 9 has no public call that returns the DAG's jobs (``DAGApi`` only prints them), so
:func:`dag_jobs` goes one level down, to the ``Workflow`` object the API builds: the same
``_prepare_dag`` / ``_build_dag`` calls ``snakemake --dag`` makes, with ``forceall`` so that the
result does not depend on which outputs already exist. Nothing runs, nothing is locked.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlrl.core import paths
from vlrl.core.errors import ConfigError


@dataclass(frozen=True)
class Job:
    """One job of the DAG, with everything formatted for its wildcards.

    ``params`` keeps the values of the rule's ``params:`` (the ``config`` param is
    ``{file: {section: value}}``, see ``rules/common.smk``).
    """

    rule: str
    wildcards: dict[str, str]
    input: list[str]
    output: list[str]
    log: list[str]
    params: dict[str, Any]
    shellcmd: str
    directories: frozenset[str]
    resources: dict[str, Any] = field(default_factory=dict)
    """What the job asks the scheduler for (Snakemake's resources, e.g. ``nodes``, ``gres``,
    ``mem_mb``, ``runtime``; ``_cores`` is its threads)."""
    benchmark: str | None = None
    """Where Snakemake writes the job's measured time (the rule's ``benchmark:``), if it does."""


@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    """Keep Snakemake's "Building DAG of jobs..." chatter out of the vlrl command's output."""
    logger = logging.getLogger("snakemake")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.ERROR)
    logger.propagate = False
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)
        logger.propagate = propagate


@dataclass(frozen=True)
class Planned:
    """A job of the DAG and whether Snakemake would run it now, and why (its words)."""

    job: Job
    needed: bool
    reason: str
    updated: frozenset[str] = frozenset()
    """The inputs Snakemake found newer than the outputs (by file time, not content)."""


def planned_jobs(
    targets: Sequence[str], config: Mapping[str, Any] | None = None, root: Path | None = None
) -> list[Planned]:
    """Every job needed for ``targets`` with what Snakemake would do about it now (its dry run's
    decision: outputs present and newer than inputs are cached), in :func:`dag_jobs` order.

    Raises:
        ConfigError: when Snakemake cannot build the DAG.
    """
    return _jobs(targets, config, root, forceall=False)


def dag_jobs(
    targets: Sequence[str] = ("all",),
    config: Mapping[str, Any] | None = None,
    root: Path | None = None,
    cores: int | None = 1,
) -> list[Job]:
    """Every job needed for ``targets`` (default: ``rule all``).

    Jobs come in the order their rules are defined (data, base_model, sft, ...); within a rule,
    by their first wildcard (the experiment or model), then in topological order (so infer
    base, sft, grpo), ties broken by wildcard values.

    Args:
        targets: rule names or files, as on the ``snakemake`` command line.
        config: overrides of the Snakemake config (``--config``), e.g. ``{"experiments": [...]}``.
        root: the project root (the Snakefile's directory); default: :func:`vlrl.core.paths.root`.
        cores: ``--cores``; None as on a Slurm run, which sets none.

    Raises:
        ConfigError: when Snakemake cannot build the DAG (the message is Snakemake's).
    """
    return [planned.job for planned in _jobs(targets, config, root, forceall=True, cores=cores)]


def _jobs(
    targets: Sequence[str],
    config: Mapping[str, Any] | None,
    root: Path | None,
    forceall: bool,
    cores: int | None = 1,
) -> list[Planned]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import RerunTrigger
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        Quietness,
        ResourceSettings,
    )

    root = Path(root or paths.root()).resolve()
    snakefile = root / "Snakefile"
    if not snakefile.is_file():
        raise ConfigError(f"{snakefile}: no Snakefile; run from the project root or set VLRL_ROOT")
    cwd = Path.cwd()
    # SnakemakeApi registers its log handlers on the "snakemake" logger and removes them on exit.
    try:
        with (
            _quiet_logging(),
            SnakemakeApi(OutputSettings(quiet={Quietness.ALL}, enable_file_logging=False)) as api,
        ):
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=cores, nodes=1),
                config_settings=ConfigSettings(config=dict(config or {})),
                snakefile=snakefile,
                workdir=root,
            )
            workflow_api.dag(
                DAGSettings(
                    targets=frozenset(targets),
                    forceall=forceall,
                    # as profiles/default/config.yaml, which Snakemake's API does not read
                    rerun_triggers=frozenset({RerunTrigger.MTIME}),
                )
            )
            workflow = workflow_api._workflow
            workflow._prepare_dag(
                forceall=forceall, ignore_incomplete=True, lock_warn_only=True, nolock=True
            )
            workflow._build_dag()
            dag = workflow.dag
            order = {rule.name: i for i, rule in enumerate(workflow.rules)}
            topo = [job for level in dag.toposorted() for job in _by_wildcards(level)]
            ranked = sorted(
                enumerate(topo), key=lambda it: (order[it[1].rule.name], _first(it[1]), it[0])
            )
            return [
                Planned(
                    _job(job),
                    bool(dag.needrun(job)),
                    str(dag.reason(job)),
                    frozenset(str(f) for f in dag.reason(job).updated_input),
                )
                for _, job in ranked
            ]
    except ConfigError:
        raise
    except Exception as exc:  # Snakemake raises many kinds; all mean "no DAG"
        raise ConfigError(f"Snakemake could not build the DAG for {list(targets)}: {exc}") from exc
    finally:
        os.chdir(cwd)


def _first(job: Any) -> str:
    return str(next(iter(job.wildcards_dict.values()), ""))


def _by_wildcards(level: Any) -> list[Any]:
    """``toposorted`` yields levels (sets of jobs); order each level by rule and wildcards."""
    return sorted(level, key=lambda job: (job.rule.name, sorted(job.wildcards_dict.items())))


def _job(job: Any) -> Job:
    return Job(
        rule=job.rule.name,
        wildcards={k: str(v) for k, v in job.wildcards_dict.items()},
        input=[str(f) for f in job.input],
        output=[str(f) for f in job.output],
        log=[str(f) for f in job.log],
        params=dict(job.params.items()),
        shellcmd=job.shellcmd or "",
        directories=frozenset(str(f) for f in job.output if f.is_directory),
        resources=dict(job.resources.items()),
        benchmark=str(job.benchmark) if job.benchmark else None,
    )
