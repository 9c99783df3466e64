"""Math-Verify as VLM-R1's rewards call it, with a timeout on every thread.

math-verify times its parse and verify calls out with ``signal.alarm``, which works only on the
main thread; TRL may call rewards from others. There the comparison runs untimed in a shared
worker process that is killed after 3x the timeout.
"""

from __future__ import annotations

import atexit
import functools
import logging
import multiprocessing
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

MATH_VERIFY_TIMEOUT_S = 5  # per parse / verify call, math-verify's own default
_pool_lock = threading.Lock()
_pool: Any = None


def _mv_equal_untimed(pred: str, gold: str) -> bool:
    """Math-Verify with its signal-based timeouts disabled (runs in the worker process)."""
    from math_verify import parse, verify

    return float(verify(parse(pred, parsing_timeout=None), parse(gold, parsing_timeout=None),
                        timeout_seconds=None)) > 0  # fmt: skip


def _call_in_worker(fn: Callable[..., Any], args: tuple, timeout: float) -> Any:
    """``fn(*args)`` in a shared spawned worker process; TimeoutError after ``timeout`` s.

    A timed-out worker is terminated (a hung sympy call cannot be interrupted otherwise) and a
    fresh one is started by the next call. Used only off the main thread.
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = multiprocessing.get_context("spawn").Pool(processes=1)
            atexit.register(_pool.terminate)
        pool = _pool
    try:
        return pool.apply_async(fn, args).get(timeout)
    except multiprocessing.TimeoutError:
        with _pool_lock:
            if _pool is pool:
                _pool.terminate()
                _pool = None
        raise TimeoutError(f"{getattr(fn, '__name__', fn)} took over {timeout} s") from None


@functools.lru_cache(maxsize=16384)
def _mv_equal_main(pred: str, gold: str) -> bool:
    from math_verify import parse, verify

    return float(verify(parse(pred, parsing_timeout=MATH_VERIFY_TIMEOUT_S),
                        parse(gold, parsing_timeout=MATH_VERIFY_TIMEOUT_S),
                        timeout_seconds=MATH_VERIFY_TIMEOUT_S)) > 0  # fmt: skip


def math_verify_equal(pred: str, gold: str) -> bool:
    """``verify(parse(pred), parse(gold)) > 0`` — VLM-R1's argument order (the prediction is
    verify's *gold* side). On the main thread, math-verify's own ``signal.alarm`` timeouts (5 s
    each, results cached); on any other thread (where ``signal`` raises ValueError), untimed
    inside a worker process killed after 3× the timeout. Errors and timeouts give False.

    >>> math_verify_equal("\\\\frac{1}{2}", "0.5"), math_verify_equal("3", "4")
    (True, False)
    """
    try:
        if threading.current_thread() is threading.main_thread():
            return _mv_equal_main(pred, gold)
        return _call_in_worker(_mv_equal_untimed, (pred, gold), 3 * MATH_VERIFY_TIMEOUT_S)
    except TimeoutError as exc:
        log.warning("math-verify timed out on %r vs %r: %s", pred[:200], gold[:200], exc)
        return False
    except Exception as exc:  # the released code also falls through to the next check
        log.debug("math-verify failed on %r vs %r: %s", pred[:200], gold[:200], exc)
        return False
