r"""VLM-R1's answer-string graders, which need nothing else of :mod:`vlrl.rewards.vlm_r1` (it
re-exports :func:`extract_choice` and calls :func:`compute_score`).

- :func:`extract_choice`: om-ai-lab/VLM-R1 @ 90052f4
  ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py::extract_choice``;
- :func:`compute_score` and its Hendrycks-MATH normalisation: a port of the same commit's
  ``src/open-r1-multimodal/src/open_r1/utils/math.py`` (the reward ``vlm_r1.math``), whose helpers
  (``last_boxed_only_string``, ``remove_boxed``, ``is_equiv``, ``strip_string`` and its ``fix_*``)
  come from lm-evaluation-harness ``lm_eval/tasks/hendrycks_math.py``.

The math helpers are hand-written on purpose: mathruler's ``math_normalize`` has the same helpers
with other results (it strips every ``%``, not only ``\%``, and its ``_fix_a_slash_b`` catches
every error, where this one lets ``int()``'s ValueError reach ``is_equiv``, which then compares
the raw strings). Every step keeps the released one's order and its errors; only the layout is
new.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

log = logging.getLogger(__name__)


def extract_choice(text: str) -> str | None:
    """VLM-R1's ``extract_choice`` heuristic (``grpo_jsonl.py::extract_choice``): the text is
    upper-cased first, so ``b.`` counts as ``B``; then capital letters not preceded by a capital
    and followed by ``.,?!:;`` or the end; with several, the best scored (keywords such as ANSWER
    within 20 characters +1 each, in the last 30% +2, followed by ``。.!！,，`` +1; every
    occurrence in the candidate list scores its letter's first position again).

    >>> extract_choice("B"), extract_choice("I think A. The answer is C."), extract_choice("red")
    ('B', 'C', None)
    >>> extract_choice("the answer is b."), extract_choice("a")  # upper-cased first, as released
    ('B', 'A')
    """
    text = text.upper()  # released: ``text = text.upper()  # Convert to uppercase``
    text = re.sub(r"\s+", " ", text)
    choices = re.findall(r"(?<![A-Z])([A-Z])(?=[\.\,\?\!\:\;]|$)", text)
    if len(choices) <= 1:
        return choices[0] if choices else None
    keywords = ("答案", "选择", "正确", "是", "对", "answer", "correct", "choose", "select",
                "right", "认为", "应该", "觉得", "think", "believe", "should")  # fmt: skip
    scores = dict.fromkeys(choices, 0)
    for choice in choices:
        pos = text.find(choice)
        context = text[max(0, pos - 20) : pos + 20]
        scores[choice] += sum(1 for k in keywords if k.upper() in context)
        scores[choice] += 2 if pos > len(text) * 0.7 else 0
        scores[choice] += 1 if pos < len(text) - 1 and text[pos + 1] in "。.!！,，" else 0
    return max(scores.items(), key=lambda kv: kv[1])[0]


def compute_score(
    solution_str: str, ground_truth: str, verify_equal: Callable[[str, str], bool]
) -> float:
    r"""``compute_score``: 1.0 when ``solution_str`` equals ``ground_truth`` exactly, or
    ``verify_equal(solution_str, ground_truth)`` (Math-Verify in VLM-R1), or the content of its
    last ``\boxed{}`` (else the whole string) is Hendrycks-equivalent (:func:`is_equiv`) to
    ``ground_truth``; else 0.0. An error in the last step scores 0.0, as released.

    >>> never = lambda a, b: False
    >>> compute_score(r"so \boxed{\dfrac12}", r"\frac{1}{2}", never)
    1.0
    >>> compute_score(r"\fbox{2}", "2", never)  # remove_boxed asserts \boxed{: scored 0
    0.0
    """
    if solution_str == ground_truth:
        return 1.0
    if verify_equal(solution_str, ground_truth):
        return 1.0
    try:
        answer = solution_str
        string_in_last_boxed = last_boxed_only_string(solution_str)
        if string_in_last_boxed is not None:
            answer = remove_boxed(string_in_last_boxed)
        if is_equiv(answer, ground_truth):
            return 1.0
    except Exception as exc:  # released: ``print(e)``, then 0
        log.debug("vlm_r1.math: boxed answer of %r unreadable: %r", solution_str[:200], exc)
    return 0.0


def remove_boxed(s: str) -> str:
    r"""The content of ``\boxed{…}`` or ``\boxed …``; AssertionError for anything else.

    >>> remove_boxed(r"\boxed{x+1}"), remove_boxed(r"\boxed 5")
    ('x+1', '5')
    """
    if "\\boxed " in s:
        left = "\\boxed "
        assert s[: len(left)] == left
        return s[len(left) :]
    left = "\\boxed{"
    assert s[: len(left)] == left
    assert s[-1] == "}"
    return s[len(left) : -1]


def last_boxed_only_string(string: str) -> str | None:
    r"""The last ``\boxed{…}`` (else ``\fbox{…}``) with balanced braces; with any ``\boxed ``
    (a space), the text after the last one up to a ``$``. None when there is none or it is
    unclosed.

    >>> last_boxed_only_string(r"a \boxed{1} b \boxed{\frac{1}{2}} c")
    '\\boxed{\\frac{1}{2}}'
    >>> last_boxed_only_string(r"\boxed 5$ and more"), last_boxed_only_string(r"\boxed{1")
    ('\\boxed 5', None)
    """
    idx = string.rfind("\\boxed")
    if "\\boxed " in string:
        return "\\boxed " + string.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        if string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx : i + 1]
    return None


def is_equiv(str1: str | None, str2: str | None) -> bool:
    """Equal after :func:`strip_string`; when that raises, the raw strings must be equal.

    >>> is_equiv("0.5", r"\\frac12"), is_equiv("x / y", "x/y"), is_equiv("50\\\\%", "50")
    (True, False, True)
    """
    if str1 is None and str2 is None:
        return True
    if str1 is None or str2 is None:
        return False
    try:
        return strip_string(str1) == strip_string(str2)
    except Exception:
        return str1 == str2


def fix_fracs(string: str) -> str:
    r"""``\frac12`` → ``\frac{1}{2}``, ``\frac1{72}`` → ``\frac{1}{72}``; IndexError on a
    trailing ``\frac``."""
    substrs = string.split("\\frac")
    new_str = substrs[0]
    for substr in substrs[1:]:
        new_str += "\\frac"
        if substr[0] == "{":
            new_str += substr
            continue
        if len(substr) < 2:
            return string
        a, b, post_substr = substr[0], substr[1], substr[2:]
        new_str += (
            "{" + a + "}{" + b + "}" + post_substr if b != "{" else "{" + a + "}" + b + post_substr
        )
    return new_str


def fix_a_slash_b(string: str) -> str:
    r"""``a/b`` of two integers → ``\frac{a}{b}``; ValueError when a side is no integer."""
    if len(string.split("/")) != 2:
        return string
    a, b = string.split("/")
    a_int, b_int = int(a), int(b)  # ValueError propagates, as released
    if string != f"{a_int}/{b_int}":
        return string
    return "\\frac{" + str(a_int) + "}{" + str(b_int) + "}"


def remove_right_units(string: str) -> str:
    r"""What precedes ``\text{ `` (units); AssertionError when it occurs twice."""
    if "\\text{ " in string:
        splits = string.split("\\text{ ")
        assert len(splits) == 2
        return splits[0]
    return string


def fix_sqrt(string: str) -> str:
    r"""``\sqrt3`` → ``\sqrt{3}``; IndexError on a trailing ``\sqrt``."""
    if "\\sqrt" not in string:
        return string
    splits = string.split("\\sqrt")
    new_string = splits[0]
    for split in splits[1:]:
        if split[0] != "{":
            new_string += "\\sqrt{" + split[0] + "}" + split[1:]
        else:
            new_string += "\\sqrt" + split
    return new_string


def strip_string(string: str) -> str:
    r"""Hendrycks' normalisation: drop line breaks, ``\!``, ``\left``/``\right``, degrees,
    ``\$``, right units, ``\%``; ``tfrac``/``dfrac`` → ``frac``; a leading ``.`` gets a ``0``;
    a short ``k =`` prefix goes; spaces go; ``\sqrt``, ``\frac`` and ``a/b`` are normalised;
    ``0.5`` → ``\frac{1}{2}``.

    >>> strip_string(r"k = \dfrac{1}{2}"), strip_string(r".25\text{ cm}"), strip_string("3/4")
    ('\\frac{1}{2}', '0.25', '\\frac{3}{4}')
    """
    for old, new in [
        ("\n", ""),
        ("\\!", ""),
        ("\\\\", "\\"),
        ("tfrac", "frac"),
        ("dfrac", "frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\$", ""),
    ]:
        string = string.replace(old, new)
    string = remove_right_units(string)
    # Released: ``.replace("\\%", "")`` then ``.replace("\%", "")``: the same two characters,
    # removed twice (the first pass can join a backslash and a percent sign into a new pair).
    string = string.replace("\\%", "").replace("\\%", "")
    string = string.replace(" .", " 0.").replace("{.", "{0.")
    if len(string) == 0:
        return string
    if string[0] == ".":
        string = "0" + string
    if len(string.split("=")) == 2 and len(string.split("=")[0]) <= 2:
        string = string.split("=")[1]
    string = fix_sqrt(string)
    string = string.replace(" ", "")
    string = fix_fracs(string)
    if string == "0.5":
        string = "\\frac{1}{2}"
    return fix_a_slash_b(string)
