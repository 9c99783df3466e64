"""What each stage's job needs: GPUs, nodes, CPUs, memory, time limit."""

from __future__ import annotations

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from vlrl.config.base import KeyProblems, Section


class StageResources(Section):
    """What one job of a stage needs. On Slurm these become the job's sbatch request (the
    profile adds only partition and account); run locally, ``gpus`` and ``nodes`` drive the
    launch all the same: one training process per GPU, under torchrun.
    """

    gpus: NonNegativeInt = Field(
        0,
        description="GPUs per node (Slurm: --gres=gpu:N). Training runs one process per GPU; "
        "0: CPU (sft.processes / grpo.processes set the CPU processes).",
    )
    nodes: PositiveInt = Field(
        1,
        description="Nodes of the job (sft and grpo only): more than one launches one torchrun "
        "per node through srun, with the rendezvous on the first node.",
    )
    cpus: PositiveInt | None = Field(
        None, description="CPUs per node (Slurm: --cpus-per-task). None: the job's threads."
    )
    mem_mb: PositiveInt = Field(4000, description="Memory per node in MB (Slurm: --mem).")
    runtime: PositiveInt = Field(
        60,
        description="Time limit in minutes (Slurm: --time). GRPO stops before it, leaving a "
        "checkpoint that the requeued job (or the rerun) resumes.",
    )


DISTRIBUTED_STAGES = ("sft", "grpo")
"""The stages that may span GPUs and nodes (data-parallel training)."""


class ResourcesConfig(Section):
    """Resources per stage of the experiment (the shared base_model and download jobs take
    the profile's defaults). The results depend on ``gpus`` and ``nodes`` of the training
    stages (they set the process count), not on the rest."""

    data: StageResources = Field(default_factory=StageResources)
    sft: StageResources = Field(default_factory=StageResources)
    grpo: StageResources = Field(default_factory=StageResources)
    merge: StageResources = Field(default_factory=StageResources)
    infer: StageResources = Field(default_factory=StageResources)
    score: StageResources = Field(default_factory=StageResources)
    report: StageResources = Field(default_factory=StageResources)

    @model_validator(mode="after")
    def _one_node_unless_training(self) -> ResourcesConfig:
        problems = [
            (f"{stage}.nodes", f"{stage} runs on one node; only {DISTRIBUTED_STAGES} span nodes")
            for stage in type(self).model_fields
            if stage not in DISTRIBUTED_STAGES and getattr(self, stage).nodes > 1
        ]
        if problems:
            raise KeyProblems(*problems)
        return self
