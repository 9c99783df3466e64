"""What a managed server serves (:mod:`vlrl.serving.servers`): the model's ``config.json``, the vLLM
arguments it implies, and a fingerprint of the weights and of the arguments that change replies.

The model of ``serve.model`` is a local directory (relative to the project root, or absolute)
when one exists there, else a hub id read from the local hub cache (``HF_HUB_CACHE``, else
``HF_HOME/hub``, else ``~/.cache/huggingface/hub``, as huggingface_hub resolves it).

Weights (:func:`weights_id`): a local directory is named by the sha256 of its files' bytes (every
file but hidden ones and ``*.md``: weights, config, tokenizer, chat template), each file's hash
remembered by (path, size, mtime_ns) in ``$VLRL_HASH_CACHE`` (default
``$XDG_CACHE_HOME/vlrl``, else ``~/.cache/vlrl``) so a rerun reads no weights; a hub id by the
commit its cached ``refs/<revision>`` points to (``--revision`` in ``serve.args``, else
``main``). A model found in neither place is named ``unresolved:<model>``: the server will not
start offline anyway.

vLLM defaults (:func:`vllm_defaults`), each left out when ``serve.args`` sets the flag (in any
spelling: ``--max-model-len``, ``--max_model_len=…``, ``--limit-mm-per-prompt.image``); flags
as documented at https://docs.vllm.ai/en/latest/cli/serve.html:

- ``--gpu-memory-utilization``: ``serve.gpu_memory_utilization``, else 0.9 (vLLM's default);
- ``--tensor-parallel-size``: ``serve.gpus`` when the server has more than one GPU of its own;
- ``--max-model-len``: the model's ``max_position_embeddings`` (of ``text_config`` for a VLM)
  capped by ``serve.max_model_len``, for a vision-language model or when the cap is set;
- ``--limit-mm-per-prompt '{"image": N}'`` (vLLM's JSON form, ``MultiModalConfig.limit_per_prompt``,
  https://docs.vllm.ai/en/v0.11.0/api/vllm/config/multimodal.html) with N =
  ``serve.images_per_prompt``, for a vision-language model (its config has ``vision_config``).

This module imports only paths, :mod:`vlrl.hub` (a file's hash), :mod:`vlrl.serving.gpus` and
the config types.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlrl.core import paths
from vlrl.core.files import sha256_file
from vlrl.serving.gpus import DEFAULT_GPU_MEMORY

if TYPE_CHECKING:
    from vlrl.config import ServeConfig

log = logging.getLogger(__name__)

FINGERPRINT_HEX = 12
"""Hex digits of the fingerprint in an endpoint id (``serve:vllm:judge@<12 hex>``)."""
REPLY_NEUTRAL = frozenset(
    {"host", "port", "gpu-memory-utilization", "tensor-parallel-size", "uvicorn-log-level"}
)
"""Server flags (with a value) that never change a reply: left out of the fingerprint."""
_SHA = re.compile(r"[0-9a-f]{40}")


# ------------------------------------------------------------------------------- flags
def flag_name(arg: str) -> str | None:
    """The flag ``arg`` sets, in vLLM's dashed spelling, or None for a value.

    >>> flag_name("--max_model_len=8192"), flag_name("--limit-mm-per-prompt.image"), flag_name("8")
    ('max-model-len', 'limit-mm-per-prompt', None)
    """
    if not arg.startswith("--"):
        return None
    return arg[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-")


def flag_value(args: Sequence[str], flag: str) -> str | None:
    """The value ``args`` give ``flag`` (the last one), or None."""
    found = None
    for i, arg in enumerate(args):
        if flag_name(arg) == flag:
            if "=" in arg:
                found = arg.split("=", 1)[1]
            elif i + 1 < len(args) and flag_name(args[i + 1]) is None:
                found = args[i + 1]
    return found


def reply_args(args: Sequence[str]) -> list[str]:
    """``args`` without the :data:`REPLY_NEUTRAL` flags and their values.

    >>> reply_args(["--port", "8001", "--dtype", "bfloat16", "--gpu_memory_utilization=0.5"])
    ['--dtype', 'bfloat16']
    """
    kept: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value and flag_name(arg) is None:
            skip_value = False
            continue
        skip_value = False
        if flag_name(arg) in REPLY_NEUTRAL:
            skip_value = "=" not in arg
            continue
        kept.append(arg)
    return kept


# ------------------------------------------------------------------------------- models
def local_dir(model: str) -> Path | None:
    """``model`` as a directory (absolute, or relative to the project root), if it is one."""
    path = Path(model)
    if not path.is_absolute():
        path = paths.root() / path
    return path if path.is_dir() else None


def hub_cache() -> Path:
    """The hub cache huggingface_hub reads, resolved now (not at import)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def hub_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit the cached hub repo's ``refs/<revision>`` (default ``main``) names; a full
    commit sha is its own answer; None when the cache does not have it."""
    if revision is not None and _SHA.fullmatch(revision):
        return revision
    folder = hub_cache() / ("models--" + repo_id.replace("/", "--"))
    try:
        commit = (folder / "refs" / (revision or "main")).read_text().strip()
    except OSError:
        return None
    return commit if _SHA.fullmatch(commit) else None


def model_config(model: str, revision: str | None = None) -> dict[str, Any] | None:
    """The model's ``config.json`` (local directory, else the hub cache), or None."""
    directory = local_dir(model)
    if directory is None:
        commit = hub_commit(model, revision)
        if commit is None:
            return None
        directory = hub_cache() / ("models--" + model.replace("/", "--")) / "snapshots" / commit
    try:
        config = json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def is_vlm(config: dict[str, Any] | None) -> bool:
    """Whether the config is a vision-language model's (it has a ``vision_config``)."""
    return bool(config) and isinstance(config.get("vision_config"), dict)


def context_length(config: dict[str, Any] | None, cap: int | None) -> int | None:
    """``max_position_embeddings`` (top level, else ``text_config``'s) capped by ``cap``.

    >>> context_length({"text_config": {"max_position_embeddings": 128000}}, 8192)
    8192
    >>> context_length({"max_position_embeddings": 4096}, None), context_length(None, 512)
    (4096, 512)
    """
    config = config or {}
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    length = config.get("max_position_embeddings") or text.get("max_position_embeddings")
    if not isinstance(length, int) or length <= 0:
        return cap
    return length if cap is None else min(length, cap)


def vllm_defaults(serve_cfg: ServeConfig, config: dict[str, Any] | None) -> list[str]:
    """The default ``vllm serve`` arguments of ``serve_cfg`` for a model with ``config`` (see
    the module docstring), none of them a flag ``serve_cfg.args`` sets."""
    given = {flag_name(a) for a in serve_cfg.args} - {None}
    out: list[str] = []

    def add(flag: str, value: object) -> None:
        if flag not in given:
            out.extend([f"--{flag}", str(value)])

    add("gpu-memory-utilization", serve_cfg.gpu_memory_utilization or DEFAULT_GPU_MEMORY)
    if serve_cfg.gpus > 1:
        add("tensor-parallel-size", serve_cfg.gpus)
    vlm = is_vlm(config)
    if vlm or serve_cfg.max_model_len is not None:
        length = context_length(config, serve_cfg.max_model_len)
        if length is not None:
            add("max-model-len", length)
    if vlm:
        add("limit-mm-per-prompt", json.dumps({"image": serve_cfg.images_per_prompt}))
    return out


# ------------------------------------------------------------------------------- weights
def _memo_file(directory: Path) -> Path:
    base = os.environ.get("VLRL_HASH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vlrl"
    )
    key = hashlib.sha256(str(directory).encode()).hexdigest()[:24]
    return Path(base) / "file-sha256" / f"{key}.json"


def _files(directory: Path) -> list[Path]:
    return sorted(
        p
        for p in directory.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(directory).parts)
        and p.suffix != ".md"
    )


def directory_digest(directory: Path) -> str:
    """sha256 over the directory's files (relative name and sha256 of the bytes, see the module
    docstring); each file's hash is reused while its size and mtime_ns stay the same."""
    directory = directory.resolve()
    memo_path = _memo_file(directory)
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if not isinstance(memo, dict):
        memo = {}
    entries, fresh = [], {}
    for path in _files(directory):
        rel = path.relative_to(directory).as_posix()
        stat = path.stat()
        seen = memo.get(rel)
        if isinstance(seen, list) and seen[:2] == [stat.st_size, stat.st_mtime_ns]:
            sha = seen[2]
        else:
            sha = sha256_file(path)
        fresh[rel] = [stat.st_size, stat.st_mtime_ns, sha]
        entries.append([rel, sha])
    if fresh != memo:
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}")
            tmp.write_text(json.dumps(fresh))
            os.replace(tmp, memo_path)
        except OSError as exc:  # a read-only cache only costs the next run a re-read
            log.debug("cannot remember the hashes of %s: %s", directory, exc)
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()


@functools.lru_cache(maxsize=64)
def _warn_unresolved(model: str) -> None:
    log.warning(
        "serve.model %s is neither a directory nor a hub repo in the local cache (%s): its "
        "replies are cached under its name alone",
        model,
        hub_cache(),
    )


def weights_id(model: str, revision: str | None = None) -> str:
    """What the weights of ``model`` are (see the module docstring): ``sha256:<hex>`` for a
    directory, ``hub:<repo>@<commit>`` for a cached hub repo, else ``unresolved:<model>``."""
    directory = local_dir(model)
    if directory is not None:
        return f"sha256:{directory_digest(directory)}"
    commit = hub_commit(model, revision)
    if commit is not None:
        return f"hub:{model}@{commit}"
    _warn_unresolved(model)
    return f"unresolved:{model}"


def fingerprint(serve_cfg: ServeConfig, backend: str) -> str:
    """:data:`FINGERPRINT_HEX` hex digits naming the weights of ``serve_cfg.model`` and the
    server settings that change replies: the backend, ``serve.args`` less the
    :data:`REPLY_NEUTRAL` flags, ``serve.max_model_len``; not the port, host, GPUs or timeout."""
    model = serve_cfg.model
    if model is None:
        raise ValueError("fingerprint: serve.model is not set")
    payload = {
        "weights": weights_id(model, flag_value(serve_cfg.args, "revision")),
        "backend": backend,
        "args": reply_args(serve_cfg.args),
        "max_model_len": serve_cfg.max_model_len,
    }
    blob = json.dumps(payload, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:FINGERPRINT_HEX]
