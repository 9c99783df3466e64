"""Which config keys each stage reads: its params.

A stage's params are the *resolved* values of the keys declared here (defaults included, see
:mod:`vlrl.workflow.resolve`), so a changed default reruns exactly the stages that read that key.
``"sft"`` names a whole section, ``"sft.enabled"`` one value. ``base_model`` and ``download``
read a model's and a dataset's config, the other stages the experiment's.

Declared in the config package, below every reader: the stages themselves, :mod:`vlrl.sharing`
(what decides a stage's output, to share it between experiments) and
:mod:`vlrl.workflow.stage_deps` (each stage's params in ``dvc.yaml``). The ``vlrl`` command holds
a stage to them: with ``VLRL_CHECK_READS=1`` (the tests set it) reading any other key fails the
stage (:mod:`vlrl.workflow.reads`).
"""

from __future__ import annotations

from vlrl.core.errors import ConfigError

MODEL_RUN = ("seed", "cpu_threads", "cpu_kernels", "prompt", "base_model")
"""What every stage that runs the model under a prompt reads (sft, grpo, infer): the seed, the
CPU threads and kernels (they change the bits), the prompt format and the base model."""

STAGE_READS: dict[str, tuple[str, ...]] = {
    "base_model": ("builder", "tiny", "hf"),
    "data": ("seed", "data"),
    "download": (
        "repo_id",
        "git",
        "revision",
        "local",
        "repo_type",
        "allow_patterns",
        "format",
        "bad_rows",
        "expected_rows",
    ),
    "sft": (
        *MODEL_RUN,
        "sft",
        # They set the process count, which splits every batch (the rest of resources.sft does
        # not change the result).
        "resources.sft.gpus",
        "resources.sft.nodes",
    ),
    "grpo": (
        *MODEL_RUN,
        "sft.enabled",
        "grpo",
        # As for sft: the process count splits every batch.
        "resources.grpo.gpus",
        "resources.grpo.nodes",
    ),
    "merge": ("base_model", "sft.enabled", "cpu_threads", "cpu_kernels"),
    "infer": (
        *MODEL_RUN,
        "infer",
        "sft.enabled",
        "grpo.enabled",
        # the vllm backend's tensor parallelism (its numerics follow the split)
        "resources.infer.gpus",
    ),
    "score": ("score", "infer.checkpoints", "sft.enabled", "grpo.enabled"),
    "report": (
        "description",
        "extends",
        "seed",
        "base_model",
        "benchmarks",
        "score",
        "report",
        "infer.checkpoints",
        "sft.enabled",
        "grpo.enabled",
    ),
}
"""Each stage's keys, in the order its params file lists them."""

LAUNCH_READS: dict[str, tuple[str, ...]] = {
    "sft": ("resources.sft.cpus", "resources.sft.mem_mb"),
    "grpo": ("resources.grpo.cpus", "resources.grpo.mem_mb"),
}
"""Keys read only to size a launch (each node's srun task:
:func:`vlrl.cluster.distributed.srun_per_node`), which cannot change the result: the check
allows them, the params leave them out."""


def declared_reads(stage: str) -> tuple[str, ...]:
    """The config keys ``stage`` reads (its params).

    >>> declared_reads("merge")[:2]
    ('base_model', 'sft.enabled')
    """
    try:
        return STAGE_READS[stage]
    except KeyError:
        raise ConfigError(
            f"stage {stage!r} declares no config keys in vlrl/config/reads.py STAGE_READS "
            f"(stages declared: {', '.join(sorted(STAGE_READS))})"
        ) from None


def allowed_reads(stage: str) -> tuple[str, ...]:
    """What ``stage`` may read: its params and the keys that size its launch.

    >>> allowed_reads("sft")[-1]
    'resources.sft.mem_mb'
    """
    return (*declared_reads(stage), *LAUNCH_READS.get(stage, ()))
