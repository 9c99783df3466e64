"""Rewards of the vlm_r1 recipe (being written)."""

from __future__ import annotations

from collections.abc import Callable

REWARDS: dict[str, Callable[..., list[float | None]]] = {}
