"""Rewards of the vision_sr1 recipe (being written)."""

from __future__ import annotations

from collections.abc import Callable

REWARDS: dict[str, Callable[..., list[float | None]]] = {}
