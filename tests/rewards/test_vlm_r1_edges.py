"""Edge cases of :mod:`vlrl.rewards.vlm_r1` that the case tables leave open: which reward an
unreadable ground truth names, column-length mismatches, the ``weighted_sum`` ≥ 0.7 threshold of
``vlm_r1.cosine_intended`` hit exactly, and the off-main-thread Math-Verify path (the untimed
call itself, the single spawned worker, a timeout scoring 0 and its message).

Source: om-ai-lab/VLM-R1 @ 90052f4, ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py``.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from vlrl.rewards import _math_verify, vlm_r1

R = vlm_r1.REWARDS


def ans(x: str) -> str:
    return f"<think>look</think><answer>{x}</answer>"


def fence(items: list[dict]) -> str:
    return "```json\n" + json.dumps(items) + "\n```"


def box(label: str, x1: int, y1: int, x2: int, y2: int) -> dict:
    return {"bbox_2d": [x1, y1, x2, y2], "label": label}


def in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a fresh non-main thread (where ``signal`` cannot be used); re-raises."""
    got: dict[str, Any] = {}

    def run() -> None:
        try:
            got["value"] = fn()
        except BaseException as exc:  # re-raised on the calling thread
            got["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "timed out"
    if "error" in got:
        raise got["error"]
    return got["value"]


# --- errors name the reward and the row ----------------------------------------------------------

BAD_FENCE = "```json [{'a': 1}```"
NAMED_ERROR_CASES = [
    # (reward, completions, columns)
    ("vlm_r1.rec_iou_binary", [ans("[0, 0, 1, 1]")] * 2, {"answer": ["[0, 0, 1, 1]", "cat"]}),
    ("vlm_r1.ap", [ans(fence([]))] * 2, {"answer": ["None", BAD_FENCE]}),
    ("vlm_r1.ap50", [ans(fence([]))] * 2, {"answer": ["None", BAD_FENCE]}),
    ("vlm_r1.weighted_sum", [ans(fence([]))] * 2, {"answer": ["None", BAD_FENCE]}),
]


@pytest.mark.parametrize(("name", "completions", "columns"), NAMED_ERROR_CASES)
def test_unreadable_ground_truth_names_the_reward_and_row(name, completions, columns) -> None:
    with pytest.raises(ValueError, match=rf"^{name.replace('.', '[.]')}: row 1: "):
        R[name](completions, **columns)


# --- one answer per completion -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["vlm_r1.math", "vlm_r1.accuracy", "vlm_r1.ap", "vlm_r1.ap50", "vlm_r1.odlength",
     "vlm_r1.weighted_sum", "vlm_r1.cosine_intended"],
)  # fmt: skip
@pytest.mark.parametrize("n_answers", [1, 3])
def test_answer_column_length_must_match(name: str, n_answers: int) -> None:
    """A short or long ``answer`` column is an error, not a silently truncated reward list."""
    with pytest.raises(ValueError, match="zip"):
        R[name]([ans("None")] * 2, answer=["None"] * n_answers)


@pytest.mark.parametrize("n_ids", [1, 3])
def test_cosine_intended_completion_ids_length_must_match(n_ids: int) -> None:
    with pytest.raises(ValueError, match="zip"):
        R["vlm_r1.cosine_intended"](
            [ans("None")] * 2, answer=["None"] * 2, completion_ids=[[]] * n_ids
        )


# --- cosine_intended: weighted_sum >= 0.7 picks the "correct" curve ------------------------------


THRESHOLD_CASES = [
    # (ground-truth y2, predicted y2, weighted_sum, cosine at L=0, why)
    (7, 4, 0.7, 1.0, "IoU 4/7: 0.7 * 4/7 + 0.3 == 0.7 exactly, the correct curve"),
    (100, 55, 0.7 * 0.55 + 0.3, -0.5, "IoU 0.55: 0.685, the wrong curve"),
    (100, 60, 0.7 * 0.6 + 0.3, 1.0, "IoU 0.6: 0.72, the correct curve"),
]


@pytest.mark.parametrize(("gt_y2", "pred_y2", "acc", "expected", "why"), THRESHOLD_CASES)
def test_cosine_intended_threshold_is_inclusive(gt_y2, pred_y2, acc, expected, why) -> None:
    completion = ans(fence([box("cat", 0, 0, 100, pred_y2)]))
    truth = fence([box("cat", 0, 0, 100, gt_y2)])
    assert R["vlm_r1.weighted_sum"]([completion], answer=[truth]) == [acc], why
    got = R["vlm_r1.cosine_intended"]([completion], answer=[truth], completion_ids=[[]])
    assert got == [expected], why


# --- Math-Verify off the main thread -------------------------------------------------------------

UNTIMED_CASES = [
    ("\\frac{1}{2}", "0.5", True),
    ("0.5", "\\frac{1}{2}", True),
    ("3", "4", False),
    ("1/2", "0.5", True),
]


@pytest.mark.parametrize(("pred", "gold", "expected"), UNTIMED_CASES)
def test_untimed_math_verify_works_off_the_main_thread(pred: str, gold: str, expected) -> None:
    """No signal-based timeout inside: math-verify's own (5 s by default) raise ValueError off
    the main thread, and in the worker they would cut off at 5 s a check it allows 15 s."""
    assert in_thread(lambda: _math_verify._mv_equal_untimed(pred, gold)) is expected


def test_worker_pool_is_one_spawned_process() -> None:
    """One spawned worker per trainer process (a fork could copy held locks of other threads;
    a pool per CPU would import sympy that many times)."""
    assert in_thread(lambda: _math_verify.math_verify_equal("\\frac{1}{2}", "0.5")) is True
    pool = _math_verify._pool
    assert pool is not None
    # Private Pool attributes: the worker count and the start method it was built with.
    assert pool._processes == 1
    assert pool._ctx.get_start_method() == "spawn"


def test_timeout_off_the_main_thread_scores_false(monkeypatch) -> None:
    """A worker timeout counts as "not equal" (the later checks still run), like an error."""
    calls = []

    def timed_out(fn, args, timeout):
        # Stands in for the worker only: a real hung sympy call would take 15 s to time out.
        calls.append((fn, args, timeout))
        raise TimeoutError(f"{fn.__name__} took over {timeout} s")

    monkeypatch.setattr(_math_verify, "_call_in_worker", timed_out)
    assert in_thread(lambda: _math_verify.math_verify_equal("\\frac{1}{2}", "0.5")) is False
    assert calls == [(_math_verify._mv_equal_untimed, ("\\frac{1}{2}", "0.5"), 15)], "3 x 5 s"


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (time.sleep, "sleep"),
        (functools.partial(time.sleep), "functools.partial(<built-in function sleep>)"),
    ],
)
def test_worker_timeout_message_names_the_function(fn, expected: str) -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        _math_verify._call_in_worker(fn, (60,), 0.25)
    assert str(info.value) == f"{expected} took over 0.25 s"
    assert time.monotonic() - start < 30
    assert _math_verify._call_in_worker(abs, (-3,), 30) == 3, (
        "a fresh worker replaces the killed one"
    )
