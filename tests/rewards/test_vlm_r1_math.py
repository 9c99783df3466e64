r"""``vlm_r1.math``: VLM-R1's ``accu_reward_method == "math"`` accuracy.

Differential tests against the released code, kept verbatim in
``reference/released_vlm_r1_math.py`` (om-ai-lab/VLM-R1 @ 90052f4: ``utils/math.py`` whole, and
``grpo_jsonl.py``'s ``math_reward`` and ``clean_text``): the Hendrycks helpers one by one on
generated strings (errors compared by type), then the reward on seeded well-formed responses and
edge cases (Hendrycks quirks, ``\fbox``, ``\boxed 5$``, several ``<answer>`` tags, tag soup).
"""

from __future__ import annotations

import contextlib
import io
import random

import pytest
from released_code import released_module

from vlrl.rewards import REGISTRY, _math_verify, _vlm_r1_grading, vlm_r1

released = released_module("released_vlm_r1_math.py")


def outcome(fn, *args):
    """``fn(*args)``, or the type of the exception it raises (the released prints muted)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(*args)
    except Exception as exc:  # compared by type
        return type(exc)


def math(completion: str, answer: str) -> float:
    (value,) = vlm_r1.math_reward([[{"role": "assistant", "content": completion}]], answer=[answer])
    return value


# --- the Hendrycks helpers, one by one -----------------------------------------------------------

PIECES = [
    "1", "2", "12", "0", ".", "5", "/", "=", " ", "\n", "x", "k", "-", "+", "{", "}", "\\", "$",
    "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\left(", "\\right)", "\\!", "\\\\", "^\\circ",
    "^{\\circ}", "\\$", "\\%", "%", "\\text{ ", "\\text{", "cm", "\\boxed{", "\\boxed ", "\\fbox{",
    "\\boxed", "0.5", "3_0", "é", "٣",
]  # fmt: skip
HELPERS = [
    "strip_string", "is_equiv", "last_boxed_only_string", "remove_boxed", "fix_fracs",
    "fix_a_slash_b", "fix_sqrt", "remove_right_units",
]  # fmt: skip


TARGETED = {
    "fix_a_slash_b": ["/", "/", "1", "12", "-3", "3_0", " 4", "x"],
    "fix_fracs": ["\\frac", "\\frac", "1", "12", "{", "}"],
    "fix_sqrt": ["\\sqrt", "\\sqrt", "3", "{", "}"],
    "remove_right_units": ["\\text{ ", "cm}", "3"],
    "last_boxed_only_string": ["\\boxed{", "\\boxed ", "\\fbox{", "}", "}", "$"],
}
"""Extra pieces that reach each helper's branches (mixed in for half of the strings)."""


def piece_string(rng: random.Random, name: str = "") -> str:
    pieces = PIECES + TARGETED.get(name, []) * 6 if rng.random() < 0.5 else PIECES
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(9)))


@pytest.mark.parametrize("name", HELPERS)
@pytest.mark.parametrize("seed", range(100))
def test_helper_matches_released(name: str, seed: int) -> None:
    rng = random.Random(seed)
    args = [piece_string(rng, name) for _ in range(2 if name == "is_equiv" else 1)]
    if name == "remove_boxed" and rng.random() < 0.7:  # mostly what last_boxed_only_string gives
        args = [outcome(released.last_boxed_only_string, args[0] + "\\boxed{" + piece_string(rng))]
        args = args if isinstance(args[0], str) else ["\\boxed{1}"]
    ours, theirs = getattr(_vlm_r1_grading, name), getattr(released, name)
    assert outcome(ours, *args) == outcome(theirs, *args), args


HENDRYCKS_CASES = [
    ("50\\%", "50", True, "\\% removed"),
    ("50%", "50", False, "a bare % stays (mathruler would strip it)"),
    ("\\\\\\\\%%", "", True, "\\% removed twice: the first pass makes a new pair"),
    ("x / y", "x/y", False, "int('x') raises: the raw strings are compared"),
    ("3/4", "\\frac{3}{4}", True, "a/b of integers → \\frac"),
    ("3_0/4", "\\frac{30}{4}", False, "int() accepts 3_0 but the string check fails"),
    ("k = 3", "3", True, "a short left-hand side goes"),
    ("abc = 3", "3", False, "a long one stays"),
    ("3\\text{ cm}", "3", True, "units on the right"),
    ("3\\text{ a}\\text{ b}", "3", False, "two units: AssertionError, raw strings compared"),
    ("\\sqrt", "\\sqrt", True, "IndexError on a trailing \\sqrt: raw strings equal"),
    ("\\frac", "\\frac", True, "IndexError on a trailing \\frac: raw strings equal"),
    (".5", "\\frac12", True, "leading . gets a 0; 0.5 → \\frac{1}{2}"),
    ("90^\\circ", "90", True, "degrees"),
    (None, None, True, "both None"),
    ("1", None, False, "one None"),
]


@pytest.mark.parametrize(("a", "b", "expected", "why"), HENDRYCKS_CASES)
def test_is_equiv_cases(a, b, expected, why) -> None:
    assert _vlm_r1_grading.is_equiv(a, b) is expected, why
    assert outcome(released.is_equiv, a, b) is expected, why


# --- the reward ----------------------------------------------------------------------------------

ANSWERS = [
    "2", "3", "0.5", "1/2", "\\frac{1}{2}", "\\dfrac12", "\\frac12", "50\\%", "50%", "k = 3",
    "x = 2", "3\\text{ cm}", "\\sqrt{2}", "\\sqrt2", "2\\sqrt{3}", "90^\\circ", "(1, 2)",
    "\\left(1, 2\\right)", "x^2 + 1", "A", "B", "yes", "\\infty", "-1", "1e3", "1,000", "x/y",
    "\\pi", "\\{1, 2\\}", "3.0", "\\$5", "Cat.",
]  # fmt: skip
WRAPS = [
    "{}", "\\boxed{{{}}}", "$\\boxed{{{}}}$", "the answer is \\boxed{{{}}}.", "\\boxed {}$ ok",
    "\\fbox{{{}}}", "\\boxed{{1}} then \\boxed{{{}}}", "{}\n",
]  # fmt: skip


def response(rng: random.Random, pred: str) -> str:
    inner = rng.choice(WRAPS).format(pred)
    return rng.choice([
        "<think>t</think><answer>{}</answer>", "<think>t</think>\n<answer> {} </answer>",
        "<answer>{}</answer>", "<think>t</think><answer>0</answer><answer>{}</answer>",
    ]).format(inner)  # fmt: skip


def _pair(rng: random.Random) -> tuple[str, str]:
    """(prediction, ground truth): the same one a third of the time."""
    truth = rng.choice(ANSWERS)
    return (truth if rng.random() < 1 / 3 else rng.choice(ANSWERS)), truth


@pytest.mark.parametrize("seed", range(150))
def test_well_formed_matches_released(seed: int) -> None:
    rng = random.Random(seed)
    pred, truth = _pair(rng)
    content = response(rng, pred)
    expected = outcome(released.math_reward, content, released.released_solution(truth))
    assert math(content, truth) == expected, (content, truth)


SOUP = [
    "<answer>", "</answer>", "<think>", "</think>", "\\boxed{", "\\boxed ", "\\fbox{", "}", "{",
    "$", " ", "\n", "\r", ".", "2", "1/2", "\\frac", "\\%", "=", "x", "A", "\\text{ ", "\\sqrt",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(250))
def test_edge_cases_match_released(seed: int) -> None:
    rng = random.Random(50_000 + seed)
    pred, truth = _pair(rng)
    content = response(rng, pred)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(content) + 1)
        content = content[:at] + rng.choice(SOUP) + content[at:]
    if rng.random() < 0.3:
        content = "".join(rng.choice(SOUP) for _ in range(rng.randrange(10)))
    truth = rng.choice([truth, f"<answer>{truth}</answer>", f" {truth} "])
    expected = outcome(released.math_reward, content, released.released_solution(truth))
    assert math(content, truth) == expected, (content, truth)


REWARD_CASES = [
    ("<answer>\\boxed{\\frac{1}{2}}</answer>", "0.5", 1.0, "Math-Verify"),
    ("<answer>50\\%</answer>", "50", 1.0, "Hendrycks: \\% removed"),
    ("<answer>The Cat.</answer>", "the cat", 1.0, "clean_text lower-cases, drops the full stop"),
    ("<answer>\\fbox{2}</answer>", "3", 0.0, "remove_boxed asserts on \\fbox: 0"),
    ("<answer>1</answer><answer>2</answer>", "2", 1.0, "the last <answer>"),
    ("no tags, just 2", "2", 1.0, "no <answer>: the whole text (Math-Verify finds the 2)"),
    ("<answer>3</answer>", "4", 0.0, "wrong"),
    ("", "4", 0.0, "empty"),
]


@pytest.mark.parametrize(("content", "answer", "expected", "why"), REWARD_CASES)
def test_reward_cases(content: str, answer: str, expected: float, why: str) -> None:
    assert math(content, answer) == expected, why
    assert released.math_reward(content, released.released_solution(answer)) == expected, why


def test_math_verify_failure_still_reaches_the_boxed_step(monkeypatch) -> None:
    # Released: an exception in verify() escapes compute_score; here it counts as "not equal".
    def boom(pred: str, gold: str) -> bool:
        raise RuntimeError("sympy")

    monkeypatch.setattr(_math_verify, "_mv_equal_main", boom)
    assert math("<answer>\\boxed{\\dfrac12}</answer>", "\\frac{1}{2}") == 1.0


def test_registered() -> None:
    assert REGISTRY["vlm_r1.math"] is vlm_r1.math_reward
    assert vlm_r1.REWARDS["vlm_r1.math"] is vlm_r1.math_reward
    assert vlm_r1.extract_choice is _vlm_r1_grading.extract_choice  # moved, re-exported
