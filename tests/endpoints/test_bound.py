"""One bound on requests in flight per endpoint (``vlrl.endpoints.bound``): it holds across the
clients of every prompt version and caller, across event loops and threads, and gives back every
slot whatever happens to a waiter. The fake server (``tests/fake_openai_server.py``) counts the
requests it has in flight at once."""

from __future__ import annotations

import asyncio
import threading

import pytest
from endpoint_cases import OPTIONS

from vlrl.config import EndpointConfig
from vlrl.endpoints import Answer, EndpointClient, InFlightBound, endpoint_bound


def body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0.0}


def cfg(base_url: str, concurrency: int = 2, model: str = "m") -> EndpointConfig:
    return EndpointConfig(base_url=base_url, model=model, **{**OPTIONS, "concurrency": concurrency})


# --------------------------------------------------------------------- against a real server
def test_clients_of_several_prompt_versions_share_the_bound(endpoint):
    """Before: each client's batch had its own semaphore, so 3 prompt versions had 6 in flight."""
    endpoint.state.latency_s = 0.05
    clients = [EndpointClient(cfg(endpoint.base_url), f"v{i}", label=f"c{i}") for i in range(3)]

    async def everyone():
        batches = [c.acomplete([body(f"{i}-{j}") for j in range(4)]) for i, c in enumerate(clients)]
        return await asyncio.gather(*batches)

    results = asyncio.run(everyone())
    assert all(isinstance(r, Answer) for batch in results for r in batch)
    assert endpoint.state.requests == 12
    assert endpoint.state.max_in_flight == 2


def test_callers_in_other_threads_and_event_loops_share_the_bound(endpoint):
    """TRL's reward loop runs in its own thread beside the caller's loop: still one bound."""
    endpoint.state.latency_s = 0.05
    spelled = [
        endpoint.base_url,
        endpoint.base_url + "/",
        endpoint.base_url.replace("//", "//u:pw@"),
    ]
    results: list = []

    def run(url: str) -> None:
        results.extend(
            EndpointClient(cfg(url), "v1").complete([body(url + str(j)) for j in range(4)])
        )

    threads = [threading.Thread(target=run, args=(url,)) for url in spelled]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 12 and all(isinstance(r, Answer) for r in results)
    assert endpoint.state.max_in_flight == 2


def test_the_bound_is_the_endpoints_url_and_model():
    a = endpoint_bound(cfg("http://h:8000/v1"))
    assert endpoint_bound(cfg("http://u:secret@h:8000/v1/?k=1", concurrency=5)) is a
    assert endpoint_bound(cfg("http://h:8001/v1")) is not a
    assert endpoint_bound(cfg("http://h:8000/v1", model="other")) is not a
    with pytest.raises(ValueError, match="no base_url"):
        endpoint_bound(EndpointConfig(serve={"model": "x"}))


# ------------------------------------------------------------------------------ the bound
async def _hold(bound: InFlightBound, limit: int, peak: list[int], seconds: float) -> None:
    async with bound.slot(limit):
        peak.append(bound.held)
        await asyncio.sleep(seconds)


def test_many_loops_in_many_threads_never_exceed_the_limit():
    bound, peak = InFlightBound(), []

    def run() -> None:
        async def many():
            await asyncio.gather(*(_hold(bound, 3, peak, 0.002) for _ in range(30)))

        asyncio.run(many())

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(peak) == 120 and max(peak) == 3 and bound.held == 0


def test_cancelled_waiters_give_their_turn_back():
    async def scenario():
        bound, peak = InFlightBound(), []
        holder = asyncio.create_task(_hold(bound, 1, peak, 0.05))
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(_hold(bound, 1, peak, 0.0)) for _ in range(3)]
        await asyncio.sleep(0.01)
        waiters[0].cancel()
        waiters[1].cancel()
        await asyncio.gather(holder, *waiters, return_exceptions=True)
        return bound, peak, [w.cancelled() for w in waiters]

    bound, peak, cancelled = asyncio.run(scenario())
    assert cancelled == [True, True, False] and peak == [1, 1] and bound.held == 0


def test_a_waiter_cancelled_as_its_turn_comes_passes_the_slot_on():
    """The slot is counted for the waiter when it is released to it, and the waiter is told on
    its loop's next turn; cancelled in between, it must not keep the slot."""

    async def scenario():
        bound, peak = InFlightBound(), []
        gate = asyncio.Event()

        async def holder():
            async with bound.slot(1):
                await gate.wait()

        first = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(_hold(bound, 1, peak, 0.0))
        await asyncio.sleep(0)
        gate.set()
        await asyncio.sleep(0)  # first releases: the slot is granted to waiter, not yet told
        waiter.cancel()
        await asyncio.gather(first, waiter, return_exceptions=True)
        await asyncio.sleep(0)
        after = asyncio.create_task(_hold(bound, 1, peak, 0.0))
        await asyncio.wait_for(after, 1.0)  # the slot is free again
        return bound, peak, waiter.cancelled()

    bound, peak, cancelled = asyncio.run(scenario())
    assert cancelled and peak == [1] and bound.held == 0


def test_each_caller_keeps_its_own_limit_first_come_first_served():
    """A caller with concurrency 1 starts only once nothing is in flight; one with 3 that came
    after it waits its turn rather than overtaking it."""

    async def scenario():
        bound, started, ended = InFlightBound(), [], []

        async def use(name: str, limit: int) -> None:
            async with bound.slot(limit):
                started.append((name, sorted(ended)))
                await asyncio.sleep(0.01)
            ended.append(name)

        wide = [asyncio.create_task(use(f"w{i}", 3)) for i in range(2)]
        await asyncio.sleep(0)
        narrow = asyncio.create_task(use("n", 1))
        await asyncio.sleep(0)
        later = asyncio.create_task(use("w2", 3))
        await asyncio.gather(*wide, narrow, later)
        return started, bound.held

    started, held = asyncio.run(scenario())
    assert started == [("w0", []), ("w1", []), ("n", ["w0", "w1"]), ("w2", ["w0", "w1"])]
    assert held == 0


def test_a_limit_below_one_is_refused():
    async def scenario():
        async with InFlightBound().slot(0):
            pass

    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(scenario())


def test_a_waiter_granted_its_slot_and_cancelled_before_it_resumed_gives_it_back():
    """The grant ran (the slot is the waiter's, its future has its result), then the task was
    cancelled before it resumed: it must release the slot it was given."""

    async def scenario():
        bound = InFlightBound()
        async with bound.slot(1):
            waiter = asyncio.create_task(bound._acquire(1))
            await asyncio.sleep(0)  # queued
        await asyncio.sleep(0)  # the release's grant runs: the waiter holds the slot, not yet told
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return bound.held

    assert asyncio.run(scenario()) == 0


def test_a_cancelled_waiter_leaves_the_queue_at_once():
    """Cancelled while queued, it takes no slot when the holder releases: the slot is free at
    once, not counted for it until its loop's next turn."""

    async def scenario():
        bound = InFlightBound()
        async with bound.slot(1):
            waiter = asyncio.create_task(bound._acquire(1))
            await asyncio.sleep(0)  # queued
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        return bound.held  # right after the release, before any other turn

    assert asyncio.run(scenario()) == 0


def test_an_endpoint_without_a_url_says_its_server_is_not_started():
    with pytest.raises(ValueError) as err:
        endpoint_bound(EndpointConfig(serve={"model": "x"}))
    assert str(err.value) == (
        "endpoint_bound: the endpoint has no base_url (its server is not started)"
    )
    assert endpoint_bound(cfg("http://h:8000/v1//")) is endpoint_bound(cfg("http://h:8000/v1"))


def test_a_forked_child_starts_with_no_request_in_flight():
    from vlrl.endpoints import bound as bound_module

    endpoint_bound(cfg("http://h:8000/v1"))
    with bound_module._BOUNDS_LOCK:  # held at the fork
        bound_module._forget_after_fork()
    assert bound_module._BOUNDS == {}
    assert bound_module._BOUNDS_LOCK.acquire(blocking=False)  # a lock of its own, free
    bound_module._BOUNDS_LOCK.release()


def test_only_the_trailing_slash_is_taken_off_a_bounds_url():
    assert endpoint_bound(cfg("http://h:8000/apiX/")) is not endpoint_bound(
        cfg("http://h:8000/api")
    )
