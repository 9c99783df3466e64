"""What a managed server runs and what it is called, known before it starts.

- :func:`serve_command`: ``vllm serve`` when the backend is ``vllm`` (``auto``: when torch sees a
  CUDA device), with the defaults the model's config implies
  (:func:`vlrl.serving.served_models.vllm_defaults`: memory share, context length, images per
  prompt; ``serve.args`` win), else ``transformers serve`` (CPU), on 127.0.0.1;
- :func:`plan`: the backend, the served model name and the endpoint id
  ``serve:<backend>:<model>@<fingerprint>`` (:func:`vlrl.serving.served_models.fingerprint`);
- :func:`unstarted`: an endpoint named as :func:`vlrl.serving.servers.serving` would name it,
  for a consumer that starts no server.

The served model name: ``transformers serve`` is pinned to one model (its positional argument)
and answers only requests naming it, so the name is ``serve.model`` as configured; ``vllm
serve`` gets ``--served-model-name`` (the endpoint's ``model``, else ``serve.model``), so the
name does not depend on where the weights are.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from vlrl.core.errors import ConfigError
from vlrl.serving import served_models

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig, ServeConfig

E = TypeVar("E", bound="EndpointConfig")

HOST = "127.0.0.1"

Backend = Literal["transformers", "vllm"]


def gpu_visible() -> bool:
    """Whether torch sees a CUDA device (False without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_backend(serve_cfg: ServeConfig, gpu: bool) -> Backend:
    """``serve.backend``, with ``auto`` resolved: vllm on a GPU, else transformers.

    >>> from vlrl.config import ServeConfig
    >>> cfg = ServeConfig(model="m")
    >>> resolve_backend(cfg, gpu=False), resolve_backend(cfg, gpu=True)
    ('transformers', 'vllm')
    """
    if serve_cfg.backend != "auto":
        return serve_cfg.backend
    return "vllm" if gpu else "transformers"


def _executable(name: str) -> str:
    """The console script ``name`` of this interpreter's environment, else ``name`` (PATH)."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else name


def serve_command(
    serve_cfg: ServeConfig,
    port: int,
    gpu: bool,
    served_name: str | None = None,
    model_config: dict[str, Any] | None = None,
) -> list[str]:
    """The command that serves ``serve_cfg.model`` on 127.0.0.1:``port`` (see the module
    docstring), ``serve_cfg.args`` last. ``served_name`` (vllm only) defaults to the model;
    ``model_config`` (its ``config.json``; None: unknown) sizes vllm's defaults.

    >>> from vlrl.config import ServeConfig
    >>> cmd = serve_command(ServeConfig(model="resources/models/judge"), 8123, gpu=False)
    >>> Path(cmd[0]).name, cmd[1:]  # doctest: +NORMALIZE_WHITESPACE
    ('transformers', ['serve', 'resources/models/judge', '--device', 'cpu', '--host',
     '127.0.0.1', '--port', '8123'])
    >>> cfg = ServeConfig(model="Qwen/Qwen2.5-7B-Instruct", args=["--max-model-len", "8192"])
    >>> cmd = serve_command(cfg, 8000, gpu=True, served_name="judge")
    >>> Path(cmd[0]).name, cmd[1:]  # doctest: +NORMALIZE_WHITESPACE
    ('vllm', ['serve', 'Qwen/Qwen2.5-7B-Instruct', '--host', '127.0.0.1', '--port', '8000',
     '--served-model-name', 'judge', '--gpu-memory-utilization', '0.9',
     '--max-model-len', '8192'])
    """
    model = serve_cfg.model
    if model is None:
        raise ConfigError("serve.model is not set: name the model to serve")
    if resolve_backend(serve_cfg, gpu) == "vllm":
        cmd = [_executable("vllm"), "serve", model, "--host", HOST, "--port", str(port)]
        cmd += ["--served-model-name", served_name or model]
        cmd += served_models.vllm_defaults(serve_cfg, model_config)
    else:
        device = "cuda" if gpu else "cpu"
        cmd = [_executable("transformers"), "serve", model, "--device", device]
        cmd += ["--host", HOST, "--port", str(port)]
    return cmd + list(serve_cfg.args)


@dataclass(frozen=True)
class ServerPlan:
    """What :func:`serving` will start for an endpoint, known before it starts."""

    backend: Backend
    gpu: bool
    model: str
    """The served model name: what requests name."""
    endpoint_id: str
    """``serve:<backend>:<model>@<fingerprint>``: the endpoint's name in the cache and the scores
    file (:func:`vlrl.serving.served_models.fingerprint`)."""


def plan(endpoint_cfg: EndpointConfig, gpu: bool | None = None) -> ServerPlan:
    """The backend, the served model name and the endpoint id of ``endpoint_cfg.serve``
    (``gpu``: whether a CUDA device is visible; None: ask torch). The id's fingerprint reads
    the weights (hashes a local directory's files, once per file version).

    >>> from vlrl.config import JudgeConfig
    >>> plan(JudgeConfig(serve={"model": "org/big"}, model="judge"), gpu=True).endpoint_id[:17]
    'serve:vllm:judge@'

    Raises:
        ConfigError: ``serve`` or ``serve.model`` is not set, or ``model`` names another model
            than ``transformers serve`` can serve.
    """
    serve = endpoint_cfg.serve
    if serve is None or serve.model is None:
        raise ConfigError("serve.model is not set: name the model to serve")
    if gpu is None:
        gpu = gpu_visible()
    backend = resolve_backend(serve, gpu)
    if backend == "vllm":
        model = endpoint_cfg.model or serve.model
    else:
        model = serve.model
        if endpoint_cfg.model is not None and endpoint_cfg.model != model:
            raise ConfigError(
                f"model is {endpoint_cfg.model!r}, but transformers serve names its model by "
                f"serve.model ({model!r}); leave model unset (or use the vllm backend, which "
                "serves it under that name)"
            )
    digest = served_models.fingerprint(serve, backend)
    return ServerPlan(backend, gpu, model, f"serve:{backend}:{model}@{digest}")


def unstarted(endpoint_cfg: E) -> E:
    """``endpoint_cfg`` named as :func:`serving` would name it (``model``, ``endpoint_id``), for
    a consumer that has nothing to ask and so starts no server; ``base_url`` stays unset, and
    an :class:`vlrl.endpoints.EndpointClient` refuses it. A config without ``serve`` is returned
    as it is."""
    if endpoint_cfg.serve is None:
        return endpoint_cfg
    planned = plan(endpoint_cfg)
    return endpoint_cfg.model_copy(
        update={"model": planned.model, "endpoint_id": planned.endpoint_id}
    )
