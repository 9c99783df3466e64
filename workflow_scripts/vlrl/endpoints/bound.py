"""One bound on the requests in flight at each endpoint, shared by every client in the process.

``concurrency`` bounds what an endpoint is asked at once, not what one caller asks: the judge's
clients (one per prompt version), the thinking reward model and the ``openai`` generation backend
all take a slot from :func:`endpoint_bound` of the endpoint they call, so however many of them
talk to one server, at most ``concurrency`` of their requests are in flight there. An
``asyncio.Semaphore`` would not do: it belongs to one event loop, and the callers of one endpoint
may run in several (``asyncio.run`` per judged batch, TRL's reward loop in its own thread), so
:class:`InFlightBound` counts under a thread lock and wakes each waiter on its own loop.

The bound is per process: data-parallel ranks or spawned workers each have their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vlrl.endpoints.replies import redact_url

if TYPE_CHECKING:
    from vlrl.config import EndpointConfig


@dataclass(eq=False)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    limit: int
    future: asyncio.Future[None] = field(init=False)

    def __post_init__(self) -> None:
        self.future = self.loop.create_future()


class InFlightBound:
    """Slots for requests in flight, taken from any event loop in any thread, first come first
    served.

    Each :meth:`slot` names its own limit: it waits while ``limit`` or more slots are held,
    whoever holds them. Clients of one endpoint share one config in practice; where two name
    different ``concurrency``, each one's requests start only while fewer than its own limit are
    in flight.

    >>> import asyncio
    >>> bound = InFlightBound()
    >>> async def use(peak: list[int]) -> None:
    ...     async with bound.slot(2):
    ...         peak.append(bound.held)
    ...         await asyncio.sleep(0.01)
    >>> async def many() -> int:
    ...     peak: list[int] = []
    ...     await asyncio.gather(*(use(peak) for _ in range(6)))
    ...     return max(peak)
    >>> asyncio.run(many()), bound.held
    (2, 0)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def held(self) -> int:
        """Slots held now."""
        return self._held

    @contextlib.asynccontextmanager
    async def slot(self, limit: int) -> AsyncIterator[None]:
        """Hold one slot for the ``async with`` body, once fewer than ``limit`` are held."""
        if limit < 1:
            raise ValueError(f"InFlightBound: limit must be at least 1, not {limit}")
        await self._acquire(limit)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, limit: int) -> None:
        with self._lock:
            if not self._waiters and self._held < limit:
                self._held += 1
                return
            waiter = _Waiter(asyncio.get_running_loop(), limit)
            self._waiters.append(waiter)
        try:
            await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            # Granted just as it was cancelled: the slot is ours to pass on. (A future cancelled
            # before its grant ran is passed on by _grant.)
            if not queued and waiter.future.done() and not waiter.future.cancelled():
                self._release()
            raise

    def _release(self) -> None:
        granted = []
        with self._lock:
            self._held -= 1
            while self._waiters and self._held < self._waiters[0].limit:
                granted.append(self._waiters.popleft())
                self._held += 1
        for waiter in granted:
            try:
                waiter.loop.call_soon_threadsafe(self._grant, waiter)
            except RuntimeError:  # its loop is closed: nobody will take the slot
                self._release()

    def _grant(self, waiter: _Waiter) -> None:
        """On the waiter's loop: hand it the slot counted for it, or pass the slot on when it
        was cancelled meanwhile."""
        if waiter.future.done():
            self._release()
        else:
            waiter.future.set_result(None)


_BOUNDS: dict[tuple[str, str | None], InFlightBound] = {}
_BOUNDS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    """A forked child starts with no request in flight (and with an unheld lock)."""
    global _BOUNDS_LOCK
    _BOUNDS.clear()
    _BOUNDS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def endpoint_bound(cfg: EndpointConfig) -> InFlightBound:
    """The process's bound on requests to ``cfg``'s endpoint: its ``base_url`` (without
    credentials, query or trailing slash) and model.

    >>> from vlrl.config import EndpointConfig
    >>> a = EndpointConfig(base_url="http://u:pw@h:8000/v1/", model="m", concurrency=2)
    >>> b = EndpointConfig(base_url="http://h:8000/v1", model="m", concurrency=5)
    >>> endpoint_bound(a) is endpoint_bound(b)
    True
    >>> endpoint_bound(a) is endpoint_bound(EndpointConfig(base_url="http://h:8000/v1", model="n"))
    False
    """
    if cfg.base_url is None:
        raise ValueError("endpoint_bound: the endpoint has no base_url (its server is not started)")
    key = (redact_url(cfg.base_url).rstrip("/"), cfg.model)
    with _BOUNDS_LOCK:
        return _BOUNDS.setdefault(key, InFlightBound())
