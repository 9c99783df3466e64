"""The vLLM server of ``grpo.vllm_mode: server``: ``trl vllm-serve`` of the policy's start
model on GPUs of its own, started by the grpo stage before training and stopped after it.

TRL's server mode (TRL 1.16, ``trl/trainer/grpo_config.py``: ``vllm_server_base_url``,
``vllm_group_port``) generates the rollouts in a separate server and pushes the policy's weights
into it over NCCL after each optimizer step; nothing in a batch job starts that server, so
:func:`trl_vllm_server` does:

- the command (:func:`trl_serve_command`) is ``trl vllm-serve --model <start model> --host
  127.0.0.1 --port <free> --tensor-parallel-size <n> --gpu-memory-utilization 0.9
  [--max-model-len L] [--limit-mm-per-prompt {"image": 4}]`` (TRL 1.16,
  ``trl/scripts/vllm_serve.py``: its own flags, the rest forwarded to ``vllm serve``), with
  ``n`` = ``grpo.vllm_server_gpus`` and ``L`` the model's ``max_position_embeddings``;
- it sees only the GPUs it is given (``CUDA_VISIBLE_DEVICES``; the split is
  :func:`vlrl.serving.gpus.stage_split`), runs in its own process group, logs to
  ``<log_dir>/grpo.vllm_server.log``, and is ready when ``GET /health`` answers 200 (vLLM's
  health route, which TRL's ``VLLMClient.check_server`` polls too);
- inside the block, ``$VLRL_TRL_VLLM_SERVER`` (:data:`SERVER_ENV`) holds its address and a free
  port for TRL's weight-update group, so that the training ranks, which inherit the stage's
  environment, hand them to TRL (:func:`vlrl.algorithms.trl_setup.trl_kwargs`); the variable is
  restored when the block ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlrl.core.errors import ConfigError
from vlrl.serving import served_models
from vlrl.serving.commands import HOST, gpu_visible
from vlrl.serving.servers import free_port, running, server_env

log = logging.getLogger(__name__)

SERVER_ENV = "VLRL_TRL_VLLM_SERVER"
"""The environment variable carrying the running server to the training ranks (JSON)."""
NAME = "grpo.vllm_server"
"""The server's name: in the GPU split, its log file and its messages."""
GPU_MEMORY_UTILIZATION = 0.9
"""The server's share of each of its GPUs: they are its own (vLLM's default)."""
STARTUP_TIMEOUT_S = 900.0
"""How long the server may take to answer /health (weights load and CUDA graphs included)."""
IMAGES_PER_PROMPT = 4
"""``--limit-mm-per-prompt`` for a vision-language policy (as ``serve.images_per_prompt``)."""


@dataclass(frozen=True)
class TRLServer:
    """A running ``trl vllm-serve``, as TRL's GRPOConfig needs it."""

    host: str
    port: int
    group_port: int
    """TRL's weight-update (NCCL) group port: free, so two jobs on a node do not collide."""

    @property
    def base_url(self) -> str:
        """``http://host:port``: TRL's ``vllm_server_base_url`` (no ``/v1``)."""
        return f"http://{self.host}:{self.port}"

    def to_env(self) -> str:
        """The value of :data:`SERVER_ENV`."""
        return json.dumps({"host": self.host, "port": self.port, "group_port": self.group_port})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TRLServer | None:
        """The server :data:`SERVER_ENV` names, or None when it is unset.

        >>> TRLServer.from_env({SERVER_ENV: TRLServer("127.0.0.1", 8001, 51216).to_env()})
        TRLServer(host='127.0.0.1', port=8001, group_port=51216)
        """
        value = (os.environ if environ is None else environ).get(SERVER_ENV)
        if not value:
            return None
        data = json.loads(value)
        return cls(str(data["host"]), int(data["port"]), int(data["group_port"]))


def server_gpus(grpo_cfg: Any) -> int:
    """GPUs of the vLLM server: ``grpo.vllm_server_gpus`` when the run uses one, else 0."""
    if not (grpo_cfg.use_vllm and grpo_cfg.vllm_mode == "server"):
        return 0
    return grpo_cfg.vllm_server_gpus


def trl_executable() -> str:
    """The ``trl`` console script of this interpreter's environment, else ``trl`` (PATH)."""
    beside = Path(sys.executable).with_name("trl")
    return str(beside) if beside.is_file() else "trl"


def trl_serve_command(
    model_dir: Path | str,
    port: int,
    tensor_parallel_size: int,
    model_config: dict[str, Any] | None = None,
    executable: str | None = None,
) -> list[str]:
    """``trl vllm-serve`` of ``model_dir`` on 127.0.0.1:``port`` (see the module docstring);
    ``model_config`` (its ``config.json``) sets the context length and, for a VLM, the images
    per prompt.

    >>> cmd = trl_serve_command("results/e/sft", 8001, 2, {"max_position_embeddings": 4096})
    >>> cmd[1:]  # doctest: +NORMALIZE_WHITESPACE
    ['vllm-serve', '--model', 'results/e/sft', '--host', '127.0.0.1', '--port', '8001',
     '--tensor-parallel-size', '2', '--gpu-memory-utilization', '0.9', '--max-model-len', '4096']
    """
    cmd = [executable or trl_executable(), "vllm-serve", "--model", str(model_dir)]
    cmd += ["--host", HOST, "--port", str(port)]
    cmd += ["--tensor-parallel-size", str(tensor_parallel_size)]
    cmd += ["--gpu-memory-utilization", str(GPU_MEMORY_UTILIZATION)]
    length = served_models.context_length(model_config, None)
    if length is not None:
        cmd += ["--max-model-len", str(length)]
    if served_models.is_vlm(model_config):
        # Not a flag of trl vllm-serve: forwarded to vllm serve as it is.
        cmd += ["--limit-mm-per-prompt", json.dumps({"image": IMAGES_PER_PROMPT})]
    return cmd


@contextlib.contextmanager
def trl_vllm_server(
    model_dir: Path,
    grpo_cfg: Any,
    log_dir: Path,
    devices: Sequence[str],
    *,
    executable: str | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
) -> Iterator[TRLServer]:
    """``trl vllm-serve`` of ``model_dir`` running on ``devices`` for the block, with
    :data:`SERVER_ENV` set to it (see the module docstring).

    Args:
        model_dir: the policy's start model (what TRL's trainer loads too).
        grpo_cfg: the experiment's grpo section (``vllm_server_gpus``).
        log_dir: where ``grpo.vllm_server.log`` goes.
        devices: its GPUs (``CUDA_VISIBLE_DEVICES`` entries), ``grpo.vllm_server_gpus`` of them.
        executable: the ``trl`` to run (None: :func:`trl_executable`).
        startup_timeout_s: how long it may take to answer /health.

    Raises:
        ConfigError: the number of ``devices`` is not ``grpo.vllm_server_gpus``.
        StageError: it cannot start, exits first or is not ready in time (with its log's tail).
    """
    wanted = grpo_cfg.vllm_server_gpus
    if wanted == 0 and gpu_visible():
        raise ConfigError(
            "grpo.vllm_server_gpus is 0, which runs the server on the CPU (vLLM's CPU build), "
            "but this stage has GPUs: give the server GPUs of its own"
        )
    if len(devices) != wanted:
        raise ConfigError(
            f"grpo.vllm_server_gpus is {wanted}, but the server was given {len(devices)} GPUs "
            f"({','.join(devices) or 'none'})"
        )
    port = free_port()
    group_port = free_port()
    while group_port == port:  # two sockets in a row may get the same free port
        group_port = free_port()
    config = served_models.model_config(str(model_dir))
    cmd = trl_serve_command(model_dir, port, max(1, wanted), config, executable)
    server = TRLServer(HOST, port, group_port)
    log_path = Path(log_dir) / f"{NAME}.log"
    log.info(
        "%s: starting trl vllm-serve at %s on GPUs %s (log %s): %s",
        NAME,
        server.base_url,
        ",".join(devices) or "none (the CPU)",
        log_path,
        shlex.join(cmd),
    )
    env = server_env(devices)
    timeout_key = "the TRL vLLM server's startup timeout"
    with running(cmd, server.base_url, log_path, NAME, startup_timeout_s, env, timeout_key):
        previous = os.environ.get(SERVER_ENV)
        os.environ[SERVER_ENV] = server.to_env()
        try:
            yield server
        finally:
            if previous is None:
                os.environ.pop(SERVER_ENV, None)
            else:
                os.environ[SERVER_ENV] = previous
