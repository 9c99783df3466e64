"""How long a GRPO run trains and how long its schedule is planned for: two settings.

The released runs the papers report from were planned for a whole schedule (VLM-R1's REC script:
2 epochs, about 40k steps) and evaluated at an early checkpoint (step 600): the learning rate at
that step is the one of the long schedule (about 0.985e-6 of 1e-6 under the linear decay), not
the end of a 600-step one (0). ``grpo.max_steps`` is where the run stops; ``grpo.schedule_steps``
or ``grpo.schedule_epochs`` is what the trainer's scheduler (and warm-up) is planned for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vlrl.config import GRPOConfig

if TYPE_CHECKING:  # transformers takes seconds to import: the checks read horizon_options only
    from transformers import TrainerCallback


def horizon_options(cfg: GRPOConfig) -> dict[str, Any]:
    """The trainer's options that plan the schedule: ``max_steps`` (steps), or ``max_steps=-1``
    with ``num_train_epochs`` (epochs of the training data, which the trainer turns into steps).

    >>> from vlrl.config import GRPOConfig
    >>> horizon_options(GRPOConfig(max_steps=6))
    {'max_steps': 6}
    >>> horizon_options(GRPOConfig(max_steps=6, schedule_steps=40))
    {'max_steps': 40}
    >>> horizon_options(GRPOConfig(max_steps=6, schedule_epochs=2))
    {'max_steps': -1, 'num_train_epochs': 2.0}
    """
    if cfg.schedule_epochs is not None:
        return {"max_steps": -1, "num_train_epochs": cfg.schedule_epochs}
    return {"max_steps": cfg.schedule_steps or cfg.max_steps}


def plans_beyond_the_stop(cfg: GRPOConfig) -> bool:
    """Whether the schedule is planned apart from ``max_steps`` (the run then stops itself).

    >>> plans_beyond_the_stop(GRPOConfig(max_steps=6)), plans_beyond_the_stop(
    ...     GRPOConfig(max_steps=6, schedule_steps=6))
    (False, True)
    """
    return cfg.schedule_steps is not None or cfg.schedule_epochs is not None


def stop_callbacks(cfg: GRPOConfig) -> list[TrainerCallback]:
    """:class:`StopAtStep` at ``max_steps`` where the schedule is planned apart, else none (the
    trainer stops at the end of its schedule)."""
    from vlrl.cluster.timelimit import StopAtStep

    if not plans_beyond_the_stop(cfg):
        return []
    planned_by = (
        f"grpo.schedule_epochs ({cfg.schedule_epochs})"
        if cfg.schedule_epochs is not None
        else f"grpo.schedule_steps ({cfg.schedule_steps})"
    )
    return [StopAtStep(cfg.max_steps, planned_by, "grpo.max_steps")]
