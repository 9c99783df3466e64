"""The reply cache of every endpoint: one JSON file per request, least recently used pruned."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from vlrl.endpoints.replies import redact_url

log = logging.getLogger(__name__)


def _touch(path: Path) -> None:
    """Set ``path``'s times from the fine clock: the kernel stamps files from a coarse one
    (milliseconds), which would leave entries written together unordered for pruning."""
    now = time.time_ns()
    os.utime(path, ns=(now, now))


class EndpointCache:
    """Replies on disk, one JSON file per key (``<dir>/<key[:2]>/<key>.json``), at most
    ``max_entries`` of them.

    Keys (:meth:`key`) hash the endpoint (its ``endpoint_id``, else its redacted URL), the model,
    the caller's prompt version and the whole request body, so another server, model, prompt or
    decoding setting never sees another's reply. Only usable replies are stored; failures never
    are.

    Writes are atomic (a uniquely named temporary file renamed into place), so concurrent jobs
    sharing the directory never see a half-written entry; an unreadable entry is a miss. A hit
    refreshes the file's modification time, and when a write takes the number of entries above
    ``max_entries`` the least recently used are deleted down to 90 % of it (so the directory is
    scanned once per tenth of the cache, not at every write). Repeated runs therefore never grow
    the cache beyond ``max_entries`` (give or take what other processes wrote since this one last
    counted), and entries no run asks for any more (an old prompt version) are the first to go.

    >>> import tempfile
    >>> cache = EndpointCache(Path(tempfile.mkdtemp()) / "cache", max_entries=2)
    >>> keys = [EndpointCache.key("http://h/v1", "m", "v1", {"n": i}) for i in range(3)]
    >>> cache.get(keys[0]) is None
    True
    >>> for k in keys:
    ...     cache.put(k, {"reply": k[:4]})
    >>> len(cache), cache.get(keys[0]) is None, cache.get(keys[2])["reply"] == keys[2][:4]
    (2, True, True)
    """

    STALE_PART_S = 3600.0
    """A temporary file this old belongs to a killed writer: pruning removes it."""

    def __init__(self, path: Path | str, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ValueError(f"EndpointCache: max_entries must be at least 1, not {max_entries}")
        self.path = Path(path)
        self.max_entries = max_entries
        self._count: int | None = None  # entries on disk as this process last counted them

    @staticmethod
    def key(
        base_url: str,
        model: str,
        prompt_version: str,
        body: dict[str, Any],
        endpoint_id: str | None = None,
    ) -> str:
        """sha256 of the endpoint (``endpoint_id``, else the redacted ``base_url``), model,
        prompt version and request body (never the API key).

        >>> body = {"model": "m", "messages": []}
        >>> a = EndpointCache.key("http://127.0.0.1:4001/v1", "m", "v1", body, "serve:vllm:m@01")
        >>> a == EndpointCache.key("http://127.0.0.1:4002/v1", "m", "v1", body, "serve:vllm:m@01")
        True
        >>> a == EndpointCache.key("http://127.0.0.1:4001/v1", "m", "v1", body, "serve:vllm:m@02")
        False
        """
        blob = json.dumps(
            {
                "endpoint": endpoint_id or redact_url(base_url).rstrip("/"),
                "model": model,
                "prompt_version": prompt_version,
                "body": body,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def _file(self, key: str) -> Path:
        return self.path / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry (its use is recorded), or None when absent or unreadable."""
        path = self._file(key)
        try:
            entry = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("endpoint cache: ignoring unreadable %s: %s", path, exc)
            return None
        if not isinstance(entry, dict):
            return None
        with contextlib.suppress(OSError):  # pruned meanwhile by another process: still a hit
            _touch(path)
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` under ``key`` (atomically), then keep the cache within its bound."""
        path = self._file(key)
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump({"key": key, **entry}, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
            os.replace(tmp, path)
            _touch(path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if self._count is None:
            self._count = len(self)
        elif not existed:
            self._count += 1
        if self._count > self.max_entries:
            self.prune()

    def _entries(self) -> list[os.DirEntry]:
        found = []
        if not self.path.is_dir():
            return found
        for shard in os.scandir(self.path):
            if shard.is_dir():
                found += [e for e in os.scandir(shard.path) if e.name.endswith(".json")]
        return found

    def __len__(self) -> int:
        return len(self._entries())

    def prune(self, keep: int | None = None) -> int:
        """Delete the least recently used entries beyond ``keep`` (default: 90 % of
        ``max_entries``) and stale temporary files; the number of entries deleted."""
        if keep is None:
            keep = self.max_entries - self.max_entries // 10
        entries = []
        for entry in self._entries():
            with contextlib.suppress(FileNotFoundError):  # another process pruned it
                entries.append((entry.stat().st_mtime_ns, entry.path))
        entries.sort(reverse=True)
        removed = 0
        for _, path in entries[keep:]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
        now = time.time()
        for part in self.path.glob("*/.*.part"):
            with contextlib.suppress(FileNotFoundError):
                if now - part.stat().st_mtime > self.STALE_PART_S:
                    part.unlink()
        self._count = min(len(entries), keep)
        if removed:
            log.info("endpoint cache %s: removed %d least recently used", self.path, removed)
        return removed
