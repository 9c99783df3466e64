"""Answer extraction and comparison shared by rewards and scorers.

Reasoning is stripped before any rule matcher (reference/evaluation.md §0.1).
"""

from __future__ import annotations

import json
import re

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_BOX = re.compile(
    r"\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]"
)
_LETTER = re.compile(r"^\(?([A-Z])\)?[.:)]?(?:\s|$)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def extract_answer(text: str) -> str | None:
    r"""The content of the last ``<answer>…</answer>``, stripped; without one, the last
    ``\boxed{…}`` (Vision-SR1's answer, mathruler's brace matching); None when there is neither.

    >>> extract_answer("<think>first 3</think><answer> 5 </answer>")
    '5'
    >>> extract_answer(r"<think>so {2}</think>\boxed{ \frac{1}{2} }")
    '\\frac{1}{2}'
    >>> extract_answer("no tags") is None
    True
    """
    matches = _ANSWER.findall(text)
    if matches:
        return matches[-1].strip()
    if "\\boxed{" in text:
        from mathruler.grader import extract_boxed_content

        return extract_boxed_content(text).strip()
    return None


def normalize_text(text: str) -> str:
    """Lower-case, collapse whitespace, drop a trailing full stop.

    >>> normalize_text("  A red  Circle. ")
    'a red circle'
    """
    return " ".join(text.lower().split()).rstrip(".").strip()


def parse_letter(text: str) -> str | None:
    """An option letter at the start of ``text`` (``B``, ``(B)``, ``B.``, ``B) red``).

    >>> parse_letter("(C) blue"), parse_letter("blue")
    ('C', None)
    """
    match = _LETTER.match(text.strip())
    return match.group(1) if match else None


def parse_number(text: str) -> float | None:
    """The single number in ``text``; None if there is none or more than one.

    >>> parse_number("7"), parse_number("3 and 4"), parse_number("seven")
    (7.0, None, None)
    """
    found = _NUMBER.findall(text)
    return float(found[0]) if len(found) == 1 else None


def parse_box(text: str) -> list[float] | None:
    """The first ``[x1, y1, x2, y2]`` in ``text`` (inside JSON or bare).

    >>> parse_box('{"bbox_2d": [10, 20, 30, 40]}')
    [10.0, 20.0, 30.0, 40.0]
    """
    match = _BOX.search(text)
    return [float(v) for v in match.groups()] if match else None


def box_iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two xyxy boxes (0 for degenerate boxes).

    >>> box_iou([0, 0, 10, 10], [5, 0, 15, 10])
    0.3333333333333333
    """
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area_a = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])
    area_b = max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])
    union = area_a + area_b - inter
    return inter / union if union > 0 else 0.0


def dumps_box(box: list[float]) -> str:
    """Render a box as integers the way targets write it.

    >>> dumps_box([1.0, 2.4, 30.6, 40.0])
    '[1, 2, 31, 40]'
    """
    return json.dumps([round(v) for v in box])
