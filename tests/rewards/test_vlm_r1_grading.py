r"""Targeted cases for :mod:`vlrl.rewards._vlm_r1_grading`, each checked against the released code.

Oracles: ``released_vlm_r1.py`` (om-ai-lab/VLM-R1 @ 90052f4,
``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py::extract_choice``) and
``reference/released_vlm_r1_math.py`` (the same commit's ``open_r1/utils/math.py``). The seeded
random differential tests (``test_vlm_r1_released.py``, ``test_vlm_r1_math.py``) rarely reach
these corners: each ``extract_choice`` keyword deciding between two letters, the edges of the
±20-character context window, repeated letters, the end-of-text punctuation bonus; two
``\fbox``\es; ``\frac{…}`` followed by another ``\frac``; ``" ."`` / ``"{."`` padding; the
2-character limit of the ``k =`` prefix.
"""

from __future__ import annotations

import pytest
import released_vlm_r1
from released_code import released_module

from vlrl.rewards import _vlm_r1_grading as grading

released_math = released_module("released_vlm_r1_math.py")

KEYWORDS = ["答案", "选择", "正确", "是", "对", "answer", "correct", "choose", "select", "right",
            "认为", "应该", "觉得", "think", "believe", "should"]  # fmt: skip


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_each_keyword_decides(keyword: str) -> None:
    """The keyword near the first letter (+1 for each of its two mentions) lifts it over the
    last letter's end-of-text bonus; with a neutral word in its place the last letter wins."""
    # BELIEVE holds a B, which would move B's first position next to the keyword.
    win, lose = ("C", "A") if "b" in keyword else ("D", "B")
    text = f"{win}. {keyword} it is {win}, not {lose}."
    assert grading.extract_choice(text) == win, text
    assert released_vlm_r1.extract_choice(text) == win, text
    # Each letter's rival: the same text with the keyword replaced by a neutral word.
    neutral = f"{win}. {'x' * len(keyword)} it is {win}, not {lose}."
    assert grading.extract_choice(neutral) == lose == released_vlm_r1.extract_choice(neutral)


EXTRACT_CASES = [
    # (text, expected, why)
    ("是 C; B! C.", "C", "a keyword at index 0 is inside the first letter's context"),
    ("是 no answer D. so is x", "D", "the context starts exactly 20 characters before"),
    ("C; x x A. 觉得 C; no 应该", "A", "the context ends just before pos + 20"),
    ("A, B. 是: B", "B", "every repeat of a letter adds its score again"),
    ("A. A. B", "A", "the last 30% earns +2: a tie with A's 1+1, and the first letter wins ties"),
    ("C; A.", "A", "a letter followed by '.' just before the end earns +1"),
    ("C; AX A", "C", "the letter after the first A is X: no punctuation bonus"),
    ("B", "B", "a single letter"),
    ("no letter here", None, "no candidate"),
]


@pytest.mark.parametrize(("text", "expected", "why"), EXTRACT_CASES)
def test_extract_choice_cases(text: str, expected: str | None, why: str) -> None:
    assert grading.extract_choice(text) == expected, why
    assert released_vlm_r1.extract_choice(text) == expected, why


HELPER_CASES = [
    # (helper, argument, expected, why)
    ("last_boxed_only_string", r"\fbox{1} or \fbox{2}", r"\fbox{2}", "the LAST \\fbox"),
    ("fix_fracs", r"\frac{1}{2}+\frac34", r"\frac{1}{2}+\frac{3}{4}", "braced, then bare"),
    ("fix_fracs", r"\frac{1}{2}+\frac{3}{4}", r"\frac{1}{2}+\frac{3}{4}", "both braced"),
    ("strip_string", "x .5", "x0.5", "' .' gets a 0 before the spaces go"),
    ("strip_string", r"\frac{.5}{2}", r"\frac{0.5}{2}", "'{.' gets a 0"),
    ("strip_string", "ab=5", "5", "a 2-character left-hand side goes"),
    ("strip_string", "abc=5", "abc=5", "a 3-character one stays"),
]


@pytest.mark.parametrize(("helper", "arg", "expected", "why"), HELPER_CASES)
def test_helper_cases(helper: str, arg: str, expected: str, why: str) -> None:
    assert getattr(grading, helper)(arg) == expected, why
    assert getattr(released_math, helper)(arg) == expected, why


def never(pred: str, gold: str) -> bool:
    """Math-Verify stand-in that never matches, so only the Hendrycks step decides."""
    return False


SCORE_CASES = [
    # (solution, ground truth, expected, why)
    (r"\boxed{x .5}", "x0.5", 1.0, "' .' padding"),
    (r"\boxed{\frac{.5}{2}}", r"\frac{0.5}{2}", 1.0, "'{.' padding"),
    (r"\boxed{\frac{1}{2}+\frac{3}{4}}", r"\frac{1}{2}+\frac{1}{4}", 0.0, "second \\frac read"),
    (r"\boxed{abc=5}", "5", 0.0, "a 3-character left-hand side is kept"),
    (r"\boxed{x=5}", "5", 1.0, "a short one goes"),
]


@pytest.mark.parametrize(("solution", "truth", "expected", "why"), SCORE_CASES)
def test_compute_score_hendrycks_step(solution: str, truth: str, expected: float, why) -> None:
    assert grading.compute_score(solution, truth, never) == expected, why
    # The released compute_score runs Math-Verify first; its is_equiv is the same final step.
    boxed = released_math.last_boxed_only_string(solution)
    answer = released_math.remove_boxed(boxed)
    assert float(released_math.is_equiv(answer, truth)) == expected, why
