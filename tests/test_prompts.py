"""Every prompt format and the format reward of the same name agree."""

from __future__ import annotations

import pytest

from vlrl.prompts import PROMPTS, get_prompt
from vlrl.rewards import REGISTRY

FORMAT_REWARD = {"think_answer": "common.format"}


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_rendered_target_earns_full_format_reward(name: str) -> None:
    fmt = PROMPTS[name]
    target = fmt.render_target("I see two circles.", "2")
    assert fmt.is_well_formed(target)
    assert REGISTRY[FORMAT_REWARD[name]]([target]) == [1.0]


def test_every_prompt_has_a_format_reward() -> None:
    assert set(FORMAT_REWARD) == set(PROMPTS)


def test_unknown_prompt_lists_known() -> None:
    with pytest.raises(KeyError, match="think_answer"):
        get_prompt("nope")
