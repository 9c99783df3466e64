"""Servers a recipe needs, started for the stage that needs them and stopped after it.

An endpoint (:class:`vlrl.config.EndpointConfig`: the judge, the thinking reward model, the
``openai`` generation backend) names either a running server (``base_url``) or one to start
(``serve``). :func:`serving` turns the second into the first for the length of a ``with``
block:

- the command is :func:`serve_command`: ``vllm serve`` when the backend is ``vllm`` (``auto``:
  when torch sees a CUDA device), with the defaults the model's config implies
  (:func:`vlrl.served_models.vllm_defaults`: memory share, context length, images per prompt;
  ``serve.args`` win), else ``transformers serve`` (CPU), on 127.0.0.1 at ``serve.port`` or a
  free port, run from the project root (so a relative model directory is found) in its own
  process group, with ``HF_HUB_OFFLINE=1`` (unless the environment sets it) and
  ``HF_HUB_DISABLE_UPDATE_CHECK=1``, its output in ``<log_dir>/<name>.log``;
- with ``serve.gpus: n`` it sees only its own GPUs (``CUDA_VISIBLE_DEVICES``): those the caller
  passes (a stage that trains beside it, :func:`vlrl.server_gpus.stage_split`), else the last
  ``n`` visible ones;
- it is ready when ``GET /health`` answers 200; a server that exits first, or is not ready
  within ``serve.startup_timeout_s``, is a :class:`~vlrl.errors.StageError` naming the command
  and ending with its log's last lines;
- the block gets a copy of the endpoint with ``base_url`` set to the server, ``serve`` unset,
  ``model`` the served model name and ``endpoint_id`` ``serve:<backend>:<model>@<fingerprint>``
  (:func:`vlrl.served_models.fingerprint`: the weights' content or hub commit, and the
  arguments that change replies): the reply cache (:class:`vlrl.endpoints.EndpointCache`) and
  the scores file name the server by that, never by its port, so a rerun finds the replies of
  the last run, and other weights under the same name never do;
- leaving the block, normally or by any exception (a failed stage, Ctrl-C, SIGTERM turned into
  SystemExit by the CLI), stops the whole process group (:func:`vlrl.launch.stop_group`).

The served model name: ``transformers serve`` is pinned to one model (its positional argument)
and answers only requests naming it, so the name is ``serve.model`` as configured; ``vllm
serve`` gets ``--served-model-name`` (the endpoint's ``model``, else ``serve.model``), so the
name does not depend on where the weights are.

This module sits below its users (stages, scoring, rewards, generation): it imports only the
config types, the errors, paths, the launcher and its two helpers (:mod:`vlrl.served_models`,
:mod:`vlrl.server_gpus`), which import no more.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from vlrl import paths, served_models
from vlrl.errors import ConfigError, StageError
from vlrl.launch import stop_group
from vlrl.server_gpus import split_devices, visible_devices

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig, ServeConfig

log = logging.getLogger(__name__)

E = TypeVar("E", bound="EndpointConfig")

HOST = "127.0.0.1"
POLL_S = 0.25
"""Between two health checks."""
TAIL_LINES = 25
"""Lines of the server's log quoted in an error."""

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
    file (:func:`vlrl.served_models.fingerprint`)."""


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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _check_port_free(port: int, name: str) -> None:
    """A server already on the configured port would answer our health checks. (A port that
    a stopped server left in TIME_WAIT is free: the servers bind with SO_REUSEADDR too.)"""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise StageError(
                f"{name}: serve.port {port} on {HOST} is in use ({exc.strerror}); stop what "
                "listens there, or leave serve.port unset for a free port"
            ) from None


def server_env(devices: Sequence[str] | None = None) -> dict[str, str]:
    """The server's environment: this process's, offline by default, without the hub's
    update check (which delays start-up by about a minute offline); ``devices``: the only GPUs
    it sees (``CUDA_VISIBLE_DEVICES``), None: this process's."""
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["HF_HUB_DISABLE_UPDATE_CHECK"] = "1"
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    return env


def _healthy(url: str) -> bool:
    # No proxy: the server is on this machine, whatever HTTP_PROXY says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException, ValueError):  # URLError is an OSError
        return False


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path`` ("" when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _wait_ready(
    proc: subprocess.Popen,
    url: str,
    timeout_s: float,
    cmd: list[str],
    log_path: Path,
    name: str,
    timeout_key: str,
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        returncode = proc.poll()
        if returncode is not None:
            why = f"exited with status {returncode} before it answered {url}/health"
        elif _healthy(url):
            return
        elif time.monotonic() > deadline:
            why = f"did not answer {url}/health within {timeout_s:g} s ({timeout_key})"
        else:
            time.sleep(POLL_S)
            continue
        tail = log_tail(log_path)
        raise StageError(
            f"{name}: the server {why}: {shlex.join(cmd)}\n"
            f"last lines of {log_path}:\n{tail or '(empty)'}"
        )


@contextlib.contextmanager
def running(
    cmd: list[str],
    url: str,
    log_path: Path,
    name: str,
    timeout_s: float,
    env: Mapping[str, str],
    timeout_key: str = "serve.startup_timeout_s",
) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` (a server answering ``GET <url>/health``) from the project root in its own
    process group, its output in ``log_path``; yield it once healthy; stop its group after.

    Raises:
        StageError: it cannot start, exits before it is healthy, or is not healthy within
            ``timeout_s`` (``timeout_key`` names the setting), naming the command and ending
            with the log's last lines.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("w") as out:
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=paths.root(),
                process_group=0,
            )
        except OSError as exc:
            raise StageError(
                f"{name}: cannot start the server ({exc}): {shlex.join(cmd)}; is "
                f"{Path(cmd[0]).name} installed in this environment?"
            ) from None
    try:
        _wait_ready(proc, url, timeout_s, cmd, log_path, name, timeout_key)
        log.info(
            "%s: ready at %s after %.1f s (process group %d)",
            name,
            url,
            time.monotonic() - started,
            proc.pid,
        )
        yield proc
    finally:
        stop_group(proc)
        log.info("%s: stopped the server at %s (process group %d)", name, url, proc.pid)


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


@contextlib.contextmanager
def serving(
    endpoint_cfg: E,
    log_dir: Path,
    name: str = "server",
    devices: Sequence[str] | None = None,
) -> Iterator[E]:
    """``endpoint_cfg`` with its server running (see the module docstring); a config without
    ``serve`` (``base_url`` set) comes back unchanged and nothing is started.

    Args:
        endpoint_cfg: the endpoint (any :class:`vlrl.config.EndpointConfig`).
        log_dir: where the server's output goes, as ``<name>.log`` (rewritten at each start).
        name: names the server in log lines, errors and its log file (e.g. ``judge``).
        devices: the GPUs it takes when ``serve.gpus > 0`` (``CUDA_VISIBLE_DEVICES`` entries,
            from :func:`vlrl.server_gpus.stage_split`); None: the last ``serve.gpus`` visible.

    Raises:
        StageError: the server could not be started, exited before it was ready or was not
            ready in time (naming the command, with the log's last lines).
        ConfigError: ``serve`` is incomplete (see :func:`plan`), or ``devices`` does not
            match ``serve.gpus``, or there are not enough GPUs.
    """
    serve = endpoint_cfg.serve
    if serve is None:
        yield endpoint_cfg
        return
    planned = plan(endpoint_cfg)
    own = server_devices(serve, name, devices)
    if serve.port is None:
        port = free_port()
    else:
        port = serve.port
        _check_port_free(port, name)
    config = served_models.model_config(
        serve.model, served_models.flag_value(serve.args, "revision")
    )
    cmd = serve_command(serve, port, planned.gpu, served_name=planned.model, model_config=config)
    url = f"http://{HOST}:{port}"
    log_path = Path(log_dir) / f"{name}.log"
    log.info(
        "%s: starting %s serve at %s/v1 (model %s, GPUs %s; log %s): %s",
        name,
        planned.backend,
        url,
        planned.model,
        ",".join(own) if own else "shared",
        log_path,
        shlex.join(cmd),
    )
    env = server_env(own if own else None)
    with running(cmd, url, log_path, name, serve.startup_timeout_s, env):
        served: dict[str, Any] = {
            "base_url": f"{url}/v1",
            "serve": None,
            "model": planned.model,
            "endpoint_id": planned.endpoint_id,
        }
        yield endpoint_cfg.model_copy(update=served)
