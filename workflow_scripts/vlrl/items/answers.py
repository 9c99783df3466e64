"""Answer extraction and comparison shared by rewards and scorers.

Reasoning is stripped before any rule matcher: a number or option letter inside ``<think>``
would be matched otherwise (Math-Verify 0.9 reads ``<think>first 3</think><answer>5</answer>``
as 3).
"""

from __future__ import annotations

import functools
import json
import re

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_BOX = re.compile(
    r"\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]"
)
_LETTER = re.compile(r"^\(?([A-Z])\)?[.:)]?(?:\s|$)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_LATEX = re.compile(r"[\\^{}]")


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


def has_latex(text: str) -> bool:
    """Whether ``text`` holds LaTeX (a backslash, ``^`` or braces): then it is an expression,
    not the single number it may contain.

    >>> has_latex("\\sqrt{3}"), has_latex("2^10"), has_latex("3.5 cm")
    (True, True, False)
    """
    return bool(_LATEX.search(text))


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


@functools.cache
def _rouge():
    # Built on first use: importing rouge_score configures absl's root logging.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def answer_accuracy(
    response: str, answer: str, problem_type: str, box: list[float] | None = None
) -> float:
    """Continuous accuracy of one response's ``<answer>`` against the reference.

    multiple_choice / yes_no: exact letter or word; numerical: equal numbers; grounding: IoU of the
    first box with the reference box; free_form / ocr: ROUGE-L F1 of the normalised texts.

    >>> answer_accuracy("<answer>B</answer>", "B", "multiple_choice")
    1.0
    >>> answer_accuracy("<answer>none</answer>", "blue", "multiple_choice")
    0.0
    >>> answer_accuracy("<answer>[0, 0, 10, 10]</answer>", "", "grounding", [0, 0, 10, 10])
    1.0
    >>> answer_accuracy("<answer>3</answer>", "\\sqrt{3}", "numerical")
    0.0
    """
    extracted = extract_answer(response)
    if extracted is None:
        return 0.0
    if problem_type == "multiple_choice":
        letter = parse_letter(extracted)  # no letter is wrong, even against an unparsable answer
        return float(letter is not None and letter == parse_letter(answer))
    if problem_type == "yes_no":
        return float(normalize_text(extracted) == normalize_text(answer))
    if problem_type == "numerical":
        # A reference in LaTeX ("\\sqrt{3}", "2^{10}") is not the single number it contains.
        gold = None if has_latex(answer) else parse_number(answer)
        pred = parse_number(extracted)
        return float(pred is not None and gold is not None and abs(pred - gold) < 1e-6)
    if problem_type == "grounding":
        pred_box = parse_box(extracted)
        gold_box = box if box is not None else parse_box(answer)
        return box_iou(pred_box, gold_box) if pred_box and gold_box else 0.0
    if problem_type in {"free_form", "ocr"}:
        if not normalize_text(extracted):
            return 0.0
        return _rouge().score(normalize_text(answer), normalize_text(extracted))["rougeL"].fmeasure
    raise ValueError(f"no accuracy rule for problem_type {problem_type!r}")
