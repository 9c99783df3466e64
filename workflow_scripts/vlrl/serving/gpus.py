"""Which of a stage's GPUs its managed servers take, and which are left to its training ranks.

A server with ``serve.gpus: n`` (:class:`vlrl.config.ServeConfig`), or the TRL vLLM server of
``grpo.vllm_mode: server`` (:mod:`vlrl.serving.trl_vllm`), takes GPUs of the stage's node for
itself: the LAST ``n`` of the visible ones, so that the training ranks keep the first ones (torchrun
puts local rank ``i`` on the i-th visible GPU, and rank 0 on GPU 0). The visible GPUs are those of
``CUDA_VISIBLE_DEVICES`` when it is set (Slurm sets it to the job's GPUs), else ``0 .. gpus-1``
of the stage's resources. Several servers take consecutive blocks from the end, in the order
given. A server with ``serve.gpus: 0`` shares the stage's GPUs, as before.

Reservations hold on one node only: a managed server runs on 127.0.0.1 of the first node, which
the other nodes' ranks cannot reach, so a reservation on a multi-node stage is a ConfigError.

This module imports only the config types and the errors.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vlrl.core.errors import ConfigError

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig, ServeConfig
    from vlrl.config.resources import StageResources

DEFAULT_GPU_MEMORY = 0.9
"""vLLM's fraction of each of its GPUs when ``serve.gpu_memory_utilization`` is unset (vLLM's
own default, https://docs.vllm.ai/en/latest/cli/serve.html ``--gpu-memory-utilization``)."""


@dataclass(frozen=True)
class DeviceSplit:
    """The visible GPUs of a stage's node, split between its training ranks and its servers."""

    training: tuple[str, ...]
    """The training ranks' GPUs, in order (``CUDA_VISIBLE_DEVICES`` of the ranks)."""
    servers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each reserving server's GPUs by name (servers that share are absent)."""

    @property
    def reserved(self) -> int:
        """How many GPUs the servers take (the ranks per node are the visible GPUs less these)."""
        return sum(len(d) for d in self.servers.values())

    @property
    def training_env(self) -> str:
        """``CUDA_VISIBLE_DEVICES`` for the training ranks: ``"0,1"``."""
        return ",".join(self.training)


def visible_devices(
    count: int | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The GPUs the stage may use (``count``: its ``resources.<stage>.gpus``), as
    ``CUDA_VISIBLE_DEVICES`` names them: its first ``count`` entries when it is set, else
    ``"0" .. str(count-1)`` (``count`` None: every entry, else as many as torch sees).

    >>> visible_devices(2, {})
    ['0', '1']
    >>> visible_devices(8, {"CUDA_VISIBLE_DEVICES": "4, 5,GPU-ab12"})
    ['4', '5', 'GPU-ab12']
    >>> visible_devices(2, {"CUDA_VISIBLE_DEVICES": "0,1,2,3"})  # a workstation's other GPUs
    ['0', '1']
    """
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        devices = [d.strip() for d in listed.split(",") if d.strip()]
        return devices[:count]  # count None: all of them
    if count is None:
        try:
            import torch
        except ImportError:
            return []
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return [str(i) for i in range(count)]


def split_devices(visible: Sequence[str], wants: Mapping[str, int]) -> DeviceSplit:
    """Give each server of ``wants`` (name → GPUs it takes; 0: it shares) its GPUs from the end
    of ``visible``, the first server the last ones; the training ranks keep the rest.

    >>> split = split_devices(["0", "1", "2", "3"], {"judge": 1, "grpo.vllm_server": 2})
    >>> split.training, split.servers, split.reserved
    (('0',), {'judge': ('3',), 'grpo.vllm_server': ('1', '2')}, 3)

    Raises:
        ConfigError: the servers would take every visible GPU (none left for training), or
            more than there are.
    """
    taken = {name: n for name, n in wants.items() if n > 0}
    total = sum(taken.values())
    if total and total >= len(visible):
        asked = ", ".join(f"{name}: {n}" for name, n in taken.items())
        raise ConfigError(
            f"the stage's servers reserve {total} GPUs ({asked}) but it sees {len(visible)} "
            f"({','.join(visible) or 'none'}), which leaves none for training; give the stage "
            "more GPUs (resources.<stage>.gpus) or its servers fewer (serve.gpus)"
        )
    end = len(visible)
    servers: dict[str, tuple[str, ...]] = {}
    for name, n in taken.items():
        servers[name] = tuple(visible[end - n : end])
        end -= n
    return DeviceSplit(tuple(visible[:end]), servers)


def reserved_by(endpoint: EndpointConfig | None) -> int:
    """The GPUs ``endpoint``'s managed server takes for itself (0: none, or no server)."""
    if endpoint is None or endpoint.serve is None:
        return 0
    return endpoint.serve.gpus


def _shares_gpus_with_vllm(value: EndpointConfig | int | None, gpu: bool) -> bool:
    """Whether ``value`` is a vllm server on the stage's GPUs with vLLM's default share."""
    if isinstance(value, int) or value is None or value.serve is None:
        return False
    serve = value.serve
    vllm = serve.backend == "vllm" or (serve.backend == "auto" and gpu)
    return gpu and vllm and serve.gpus == 0 and serve.gpu_memory_utilization is None


def stage_split(
    resources: StageResources,
    servers: Mapping[str, EndpointConfig | int | None],
    environ: Mapping[str, str] | None = None,
) -> DeviceSplit:
    """The GPU split of a training stage (grpo) whose managed servers are ``servers``: config
    key → the endpoint (its ``serve.gpus``), or a GPU count (the TRL vLLM server), or None.

    Raises:
        ConfigError: a server reserves GPUs on a multi-node stage or on a stage without GPUs,
            the servers leave no GPU to training (:func:`split_devices`), or a vllm server
            shares the training GPUs without ``serve.gpu_memory_utilization`` (vLLM would take
            90 % of the GPU that rank 0 trains on).
    """
    wants = {
        key: value if isinstance(value, int) else reserved_by(value)
        for key, value in servers.items()
    }
    asking = [key for key, n in wants.items() if n > 0]
    if asking and resources.nodes > 1:
        raise ConfigError(
            f"{asking[0]}: reserves GPUs for a server, but the stage spans {resources.nodes} "
            "nodes; a managed server runs on 127.0.0.1 of the first node, which the other "
            "nodes' ranks cannot reach: use one node, or give the server's base_url"
        )
    if asking and resources.gpus == 0:
        raise ConfigError(f"{asking[0]}: reserves GPUs for a server, but the stage has no GPU")
    for key, value in servers.items():
        if _shares_gpus_with_vllm(value, resources.gpus > 0):
            raise ConfigError(
                f"{key}.serve: a vllm server sharing the training GPUs takes "
                f"{DEFAULT_GPU_MEMORY:.0%} of GPU 0's memory by default, before rank 0 "
                f"starts there; set {key}.serve.gpus (GPUs of its own) or "
                f"{key}.serve.gpu_memory_utilization (its share of each GPU)"
            )
    return split_devices(visible_devices(resources.gpus, environ), wants)


def server_devices(serve_cfg: ServeConfig, name: str, devices: Sequence[str] | None) -> list[str]:
    """The GPUs a server with ``serve.gpus > 0`` sees: ``devices`` when given (their number
    must be ``serve.gpus``), else the last ``serve.gpus`` visible ones; [] when it shares."""
    if serve_cfg.gpus == 0:
        if devices:
            raise ConfigError(f"{name}: serve.gpus is 0, but GPUs {list(devices)} were given")
        return []
    if devices is None:
        devices = split_devices(visible_devices(), {name: serve_cfg.gpus}).servers[name]
    if len(devices) != serve_cfg.gpus:
        raise ConfigError(
            f"{name}: serve.gpus is {serve_cfg.gpus}, but it was given {len(devices)} GPUs "
            f"({','.join(devices) or 'none'})"
        )
    return list(devices)
