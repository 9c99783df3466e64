"""Whether the network is off limits (:mod:`vlrl.core.network`): ``VLRL_OFFLINE=1`` or
huggingface_hub's ``HF_HUB_OFFLINE`` (read at import, or set since, in any case) for every
downloader; the hub's snapshots read the hub's switch alone."""

from __future__ import annotations

import pytest

from vlrl.core.network import hf_hub_offline, offline


@pytest.fixture
def no_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """No offline switch set, whatever the caller's environment."""
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "VLRL_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


@pytest.mark.parametrize(
    ("env", "hub_constant", "expected"),
    [
        ({}, False, False),
        ({"VLRL_OFFLINE": "1"}, False, True),
        ({"VLRL_OFFLINE": "yes"}, False, False),
        ({}, True, True),
        ({"HF_HUB_OFFLINE": "1"}, False, True),
        ({"HF_HUB_OFFLINE": "on"}, False, True),
        ({"HF_HUB_OFFLINE": "ON"}, False, True),
        ({"HF_HUB_OFFLINE": "Yes"}, False, True),
        ({"HF_HUB_OFFLINE": "true"}, False, True),
        ({"HF_HUB_OFFLINE": "TRUE"}, False, True),
        ({"HF_HUB_OFFLINE": "0"}, False, False),
        ({"HF_HUB_OFFLINE": "off"}, False, False),
    ],
)
def test_offline_switches(
    no_switch: None, monkeypatch: pytest.MonkeyPatch, env: dict, hub_constant: bool, expected: bool
) -> None:
    from huggingface_hub import constants

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", hub_constant)
    assert offline() is expected


@pytest.mark.parametrize(
    ("env", "hub_constant", "expected"),
    [
        ({}, False, False),
        ({"VLRL_OFFLINE": "1"}, False, False),  # vlrl's own switch is not the hub's
        ({}, True, True),
        ({"HF_HUB_OFFLINE": "yes"}, False, True),
        ({"HF_HUB_OFFLINE": "no"}, False, False),
    ],
)
def test_the_hubs_switch_alone(
    no_switch: None, monkeypatch: pytest.MonkeyPatch, env: dict, hub_constant: bool, expected: bool
) -> None:
    from huggingface_hub import constants

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", hub_constant)
    assert hf_hub_offline() is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("on", True), ("Yes", True), ("TRUE", True), ("0", False), ("", False)],
)
def test_the_environments_offline_switch_in_any_case(value, expected, monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hf_hub_offline() is expected
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert hf_hub_offline() is False
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as read at import
    assert hf_hub_offline() is True
