"""Servers a recipe needs, started for the stage that needs them and stopped after it.

An endpoint (:class:`vlrl.config.EndpointConfig`: the judge, the thinking reward model, the
``openai`` generation backend) names either a running server (``base_url``) or one to start
(``serve``). :func:`serving` turns the second into the first for the length of a ``with``
block:

- the command is :func:`vlrl.serving.commands.serve_command` (``vllm serve`` on a GPU, else
  ``transformers serve``), on 127.0.0.1 at ``serve.port`` or a free port, run from the project root
  (so a relative model directory is found) in its own process group, with ``HF_HUB_OFFLINE=1``
  (unless the environment sets it) and ``HF_HUB_DISABLE_UPDATE_CHECK=1``, its output in
  ``<log_dir>/<name>.log``;
- with ``serve.gpus: n`` it sees only its own GPUs (``CUDA_VISIBLE_DEVICES``): those the caller
  passes (a stage that trains beside it, :func:`vlrl.serving.gpus.stage_split`), else the last
  ``n`` visible ones (:func:`vlrl.serving.gpus.server_devices`);
- it is ready when ``GET /health`` answers 200; a server that exits first, or is not ready
  within ``serve.startup_timeout_s``, is a :class:`~vlrl.core.errors.StageError` naming the command
  and ending with its log's last lines;
- the block gets a copy of the endpoint with ``base_url`` set to the server, ``serve`` unset,
  ``model`` the served model name and ``endpoint_id`` ``serve:<backend>:<model>@<fingerprint>``
  (:func:`vlrl.serving.served_models.fingerprint`: the weights' content or hub commit, and the
  arguments that change replies): the reply cache (:class:`vlrl.endpoints.EndpointCache`) and
  the scores file name the server by that, never by its port, so a rerun finds the replies of
  the last run, and other weights under the same name never do;
- leaving the block, normally or by any exception (a failed stage, Ctrl-C, SIGTERM turned into
  SystemExit by the CLI), stops the whole process group (:func:`vlrl.cluster.launch.stop_group`).

This module sits below its users (stages, scoring, rewards, generation): it imports only the
config types, the errors, paths, the launcher and the rest of :mod:`vlrl.serving`.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import shlex
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlrl.cluster.launch import stop_group
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.serving import served_models
from vlrl.serving.commands import HOST, E, plan, serve_command
from vlrl.serving.gpus import server_devices

log = logging.getLogger(__name__)

POLL_S = 0.25
"""Between two health checks."""
TAIL_LINES = 25
"""Lines of the server's log quoted in an error."""


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
            from :func:`vlrl.serving.gpus.stage_split`); None: the last ``serve.gpus`` visible.

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
