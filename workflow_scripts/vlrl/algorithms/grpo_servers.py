"""The servers a GRPO run starts beside its training ranks, and the GPUs each gets.

- the reward models it calls, when they set ``serve``: ``grpo.reward_model`` (the
  ``sophiavl.thinking`` reward), ``grpo.trust.reward_model`` under ``trust_grpo``
  (:func:`vlrl.serving.servers.serving`);
- TRL's vLLM server under ``grpo.use_vllm`` with ``vllm_mode: server`` (``trl vllm-serve`` of the
  start model, :mod:`vlrl.serving.trl_vllm`).

A server with GPUs of its own (``serve.gpus``, ``grpo.vllm_server_gpus``: together
``grpo.server_gpus``) takes the last visible GPUs of the node and the training ranks keep the
first ones, rank 0 on the first (:func:`gpu_split`, :mod:`vlrl.serving.gpus`); ``vlrl check``
counts the ranks the same way (GPUs less ``grpo.server_gpus``). The servers run in the stage's
care for the whole training, their logs in ``logs/grpo/<exp>/``; the ranks get the reward
models' addresses in their config file and TRL's server in ``$VLRL_TRL_VLLM_SERVER``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl.config import EndpointConfig, ExperimentConfig, GRPOConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.rewards import configured_settings
from vlrl.serving import trl_vllm
from vlrl.serving.gpus import DeviceSplit, stage_split
from vlrl.serving.servers import serving

log = logging.getLogger(__name__)


def _reward_models(grpo: GRPOConfig) -> dict[str, EndpointConfig | None]:
    """The reward-model endpoints the run may start, by config key (as ``server_gpus`` counts
    them)."""
    trust = grpo.trust.reward_model if grpo.algorithm == "trust_grpo" and grpo.trust else None
    return {"grpo.reward_model": grpo.reward_model, "grpo.trust.reward_model": trust}


def gpu_split(cfg: ExperimentConfig) -> DeviceSplit:
    """The node's visible GPUs split between the servers that take some and the training ranks
    (none on CPU).

    Raises:
        ConfigError: see :func:`vlrl.serving.gpus.stage_split`.
    """
    wants: dict[str, Any] = _reward_models(cfg.grpo)
    wants[trl_vllm.NAME] = trl_vllm.server_gpus(cfg.grpo)
    return stage_split(cfg.resources.grpo, wants)


class _WithGRPO:
    """``cfg`` with its grpo section replaced; every other key is read from ``cfg`` (so a
    recording view, :mod:`vlrl.workflow.reads`, still records it)."""

    def __init__(self, cfg: ExperimentConfig, grpo: GRPOConfig) -> None:
        self._cfg, self.grpo = cfg, grpo

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cfg, name)


@contextlib.contextmanager
def served(
    exp: str, cfg: ExperimentConfig, start: Path, split: DeviceSplit | None = None
) -> Iterator[ExperimentConfig]:
    """``cfg`` with the run's servers started (see the module docstring), on their GPUs of
    ``split``; stopped when the block ends, also on failure."""
    grpo = cfg.grpo
    served_keys = [k for k in configured_settings(grpo.rewards) if getattr(grpo, k).serve]
    trust_rm = _reward_models(grpo)["grpo.trust.reward_model"]
    trust_rm = trust_rm if trust_rm is not None and trust_rm.serve is not None else None
    # vllm_server_gpus may be 0: the server then runs on the CPU (vLLM's CPU build)
    trl_server = grpo.use_vllm and grpo.vllm_mode == "server"
    if not (served_keys or trust_rm or trl_server):
        yield cfg
        return
    if cfg.resources.grpo.nodes > 1:
        raise StageError(
            "grpo: a server the run starts (serve:, vllm_mode: server) runs on 127.0.0.1 of the "
            "first node, which the other nodes' ranks cannot reach; with resources.grpo.nodes > "
            "1 give a base_url"
        )
    devices = split.servers if split is not None else {}
    log_dir = paths.server_log_dir("grpo", exp)
    with contextlib.ExitStack() as stack:
        update: dict[str, Any] = {
            key: stack.enter_context(
                serving(getattr(grpo, key), log_dir, key, devices.get(f"grpo.{key}"))
            )
            for key in served_keys
        }
        if trust_rm is not None:
            rm = serving(
                trust_rm, log_dir, "trust.reward_model", devices.get("grpo.trust.reward_model")
            )
            update["trust"] = grpo.trust.model_copy(
                update={"reward_model": stack.enter_context(rm)}
            )
        if trl_server:
            gpus = devices.get(trl_vllm.NAME, ())
            stack.enter_context(trl_vllm.trl_vllm_server(start, grpo, log_dir, gpus))
        yield _WithGRPO(cfg, grpo.model_copy(update=update))  # type: ignore[misc]
