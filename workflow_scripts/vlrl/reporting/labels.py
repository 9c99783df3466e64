"""How the report names and colours the checkpoints of an experiment."""

from __future__ import annotations

from vlrl.core.paths import CHECKPOINTS

COLORS = {"base": "#1f77b4", "sft": "#ff7f0e", "grpo": "#d62728"}
"""One colour per checkpoint, in the accuracy plot and the gallery's boxes alike."""

TRUTH = "#2ca02c"
"""The colour of the reference box in the gallery (no checkpoint has it)."""


def label(checkpoint: str, sft_enabled: bool) -> str:
    """The checkpoint's name in tables: base, SFT, SFT+GRPO (GRPO when SFT is disabled).

    >>> label("grpo", True), label("grpo", False), label("sft", True), label("base", True)
    ('SFT+GRPO', 'GRPO', 'SFT', 'base')
    """
    if checkpoint == "sft":
        return "SFT"
    if checkpoint == "grpo":
        return "SFT+GRPO" if sft_enabled else "GRPO"
    return checkpoint


def ordered(checkpoints: list[str]) -> list[str]:
    """``checkpoints`` in the order they are trained and shown
    (:data:`vlrl.core.paths.CHECKPOINTS`).

    >>> ordered(["grpo", "base"])
    ['base', 'grpo']
    """
    return sorted(checkpoints, key=CHECKPOINTS.index)
