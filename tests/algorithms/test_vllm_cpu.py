"""``vlrl.algorithms.vllm_cpu.fit_weight_sync``: only a colocated engine on vLLM's CPU build gets
its weight sync wrapped in vLLM's layerwise reload, which then runs around every sync (even a
failed one). vLLM is not in the main environment: its two modules are stand-ins here that record
the calls (``make engines`` runs the real ones)."""

from __future__ import annotations

import logging
import sys
import types
from types import SimpleNamespace

import pytest

from vlrl.algorithms import vllm_cpu


@pytest.fixture
def vllm(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Stand-ins for ``vllm.platforms`` and ``vllm...reload``: the platform and the calls."""
    state = SimpleNamespace(cpu=True, calls=[])
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = SimpleNamespace(is_cpu=lambda: state.cpu)
    reload = types.ModuleType("vllm.model_executor.model_loader.reload")
    reload.initialize_layerwise_reload = lambda model: state.calls.append(("init", model))
    reload.finalize_layerwise_reload = lambda model, config: state.calls.append(
        ("finalize", model, config)
    )
    modules = {
        "vllm": types.ModuleType("vllm"),
        "vllm.platforms": platforms,
        "vllm.model_executor": types.ModuleType("vllm.model_executor"),
        "vllm.model_executor.model_loader": types.ModuleType("vllm.model_executor.model_loader"),
        "vllm.model_executor.model_loader.reload": reload,
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return state


def _trainer(state: SimpleNamespace, mode: str = "colocate") -> SimpleNamespace:
    def sync_weights(*args, **kwargs):
        """TRL's sync."""
        state.calls.append(("sync", args, kwargs))
        if kwargs.get("fail"):
            raise RuntimeError("sync failed")
        return "synced"

    runner = SimpleNamespace(model="the model", model_config="its config")
    worker = SimpleNamespace(model_runner=runner)
    llm = SimpleNamespace(
        llm_engine=SimpleNamespace(model_executor=SimpleNamespace(driver_worker=worker))
    )
    generation = SimpleNamespace(mode=mode, sync_weights=sync_weights, llm=llm)
    return SimpleNamespace(vllm_generation=generation, state=SimpleNamespace(global_step=4))


def test_engine_on_cpu_asks_vllms_platform(vllm) -> None:
    assert vllm_cpu.engine_on_cpu() is True
    vllm.cpu = False
    assert vllm_cpu.engine_on_cpu() is False


def test_a_colocated_cpu_engine_syncs_through_the_layerwise_reload(vllm, caplog) -> None:
    trainer = _trainer(vllm)
    original = trainer.vllm_generation.sync_weights
    with caplog.at_level(logging.INFO, logger=vllm_cpu.__name__):
        vllm_cpu.fit_weight_sync(trainer)
        wrapped = trainer.vllm_generation.sync_weights
        assert wrapped is not original and wrapped.__name__ == "sync_weights"
        assert vllm.calls == []  # nothing runs before the first sync
        assert wrapped(1, two=2) == "synced"
    assert vllm.calls == [
        ("init", "the model"),
        ("sync", (1,), {"two": 2}),
        ("finalize", "the model", "its config"),
    ]
    assert caplog.messages == [
        "grpo: vLLM CPU build: TRL's colocated weight sync goes through vLLM's reload",
        "grpo: pushed the policy's weights into vLLM (step 4)",
    ]
    vllm.calls.clear()
    with pytest.raises(RuntimeError, match="sync failed"):
        wrapped(fail=True)
    assert [c[0] for c in vllm.calls] == ["init", "sync", "finalize"]  # restored all the same


@pytest.mark.parametrize("case", ["server mode", "gpu build", "no vllm"])
def test_other_engines_keep_trls_sync(vllm, case) -> None:
    trainer = _trainer(vllm, mode="server" if case == "server mode" else "colocate")
    vllm.cpu = case != "gpu build"
    if case == "no vllm":
        trainer.vllm_generation = None
    before = trainer.vllm_generation and trainer.vllm_generation.sync_weights
    vllm_cpu.fit_weight_sync(trainer)
    assert (trainer.vllm_generation and trainer.vllm_generation.sync_weights) is before
    assert vllm.calls == []


def test_a_trainer_without_vllm_generation_is_left_alone(vllm) -> None:
    """TRL builds ``vllm_generation`` only for vLLM rollouts: a trainer without it is fine."""
    trainer = SimpleNamespace(state=SimpleNamespace(global_step=0))
    vllm_cpu.fit_weight_sync(trainer)
    assert vars(trainer) == {"state": SimpleNamespace(global_step=0)} and vllm.calls == []
