"""Whether the network is off limits: one answer for every downloader (the hub's snapshots, git
datasets, ``vlrl pin``)."""

from __future__ import annotations

import os

TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
"""The values huggingface_hub reads as true in ``HF_HUB_OFFLINE`` (any case)."""


def hf_hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub read it at import, or as the environment says now
    (a test or a caller may set it after huggingface_hub was imported)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or (
        os.environ.get("HF_HUB_OFFLINE", "").upper() in TRUE_VALUES
    )


def offline() -> bool:
    """Whether vlrl may not reach any network: ``VLRL_OFFLINE=1`` (the Makefile's runs), or
    :func:`hf_hub_offline`."""
    return os.environ.get("VLRL_OFFLINE") == "1" or hf_hub_offline()
