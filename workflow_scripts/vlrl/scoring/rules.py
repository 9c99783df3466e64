"""Rule-based scoring of one response: extract the final answer, then compare it by problem type.

The reasoning is stripped before any matcher (a number in ``<think>`` would match otherwise):

1. the content of the last ``<answer>…</answer>`` (:func:`vlrl.answers.extract_answer`);
2. if there is no answer tag, the text after the last ``</think>``;
3. if there is neither, the whole response.

The comparison per ``problem_type`` (``correct`` is 0/1, ``score`` is continuous in [0, 1]):

- multiple_choice: the option letter (``B``, ``(B)``, ``B. red``) or the option's text (``red``
  when ``options[1] == "red"``) names the reference option; score = correct.
- yes_no: VLMEvalKit's ``YOrN_Extraction`` on the answer span (:func:`yes_or_no`: "yes" or
  "no" as a word, not both) equals the normalised reference; score = correct.
- numerical: the single number in the answer equals the reference; if not, Math-Verify
  (``verify(parse(gold), parse(pred))``, gold first) decides, so ``3.0``, ``\\frac{1}{2}``,
  ``1,000`` and ``x = 3`` count. Math-Verify's timeouts use ``signal.alarm``: call
  :func:`score_item` from the main thread (it raises ValueError in other threads).
- grounding: IoU of the first box in the answer with ``boxes[0]``; correct iff IoU ≥ the
  threshold; score = IoU.
- free_form / ocr: correct iff the normalised texts are equal; score = ROUGE-L F1.

A benchmark may set its own protocol: ``iou_strict`` (VLM-R1: correct iff IoU > the threshold)
and ``relaxed_tolerance`` (ChartQA's relaxed accuracy, :func:`relaxed_correctness`, replaces
the numerical / free_form / ocr rules).

The per-type matchers are :func:`vlrl.answers.answer_accuracy` (the same code the rewards
use); this module adds the fallback span, the option-text match, Math-Verify and the threshold.
"""

from __future__ import annotations

import re

from math_verify import parse, verify

from vlrl.answers import (
    answer_accuracy,
    box_iou,
    extract_answer,
    has_latex,
    normalize_text,
    parse_box,
    parse_letter,
)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PLAIN_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_FRACTION = re.compile(r"\s*-?\d+\s*/\s*\d+\s*")


def answer_span(response: str) -> str:
    """The part of a response that holds the final answer (see the module docstring).

    >>> answer_span("<think>first 3</think><answer> 5 </answer>")
    '5'
    >>> answer_span("<think>first 3</think> so 5")
    'so 5'
    >>> answer_span(" 5 ")
    '5'
    """
    extracted = extract_answer(response)
    if extracted is not None:
        return extracted
    if "</think>" in response:
        return response.rsplit("</think>", 1)[1].strip()
    return response.strip()


def _as_answer(span: str) -> str:
    """Wrap a span so :func:`answer_accuracy` (which reads ``<answer>``) scores exactly it."""
    return f"<answer>{span}</answer>"


def _option_letter(text: str, options: list[str]) -> str | None:
    """The letter of the option whose text is ``text`` (normalised), else its leading letter."""
    norm = normalize_text(text)
    for i, option in enumerate(options[: len(LETTERS)]):
        if norm and norm == normalize_text(option):
            return LETTERS[i]
    return parse_letter(text)


def _unambiguous(span: str) -> bool:
    """Whether Math-Verify may read ``span``: LaTeX, a plain fraction, or at most one number.

    Math-Verify takes the last number of prose (``"3 or 4"`` parses to 4); a span that names
    several numbers is not an answer, so it is left to the judge.

    >>> [_unambiguous(s) for s in ["3 or 4", "1,000", "\\\\frac{1}{2}", "3/4", "x = 3"]]
    [False, True, True, True, True]
    """
    return "\\" in span or bool(_FRACTION.fullmatch(span)) or len(_PLAIN_NUMBER.findall(span)) <= 1


def _math(text: str) -> list:
    """Math-Verify's parse; bare LaTeX without delimiters is read between ``$`` signs first
    (alone, Math-Verify reads ``\\sqrt{3}`` as nothing and ``2\\sqrt{3}`` as 2)."""
    if has_latex(text) and "$" not in text:
        parsed = parse(f"${text}$")
        if parsed:
            return parsed
    return parse(text)


def _numbers_equal(span: str, answer: str) -> bool:
    if not _unambiguous(span):
        return False
    gold = _math(answer)
    pred = _math(span)
    return bool(gold and pred and verify(gold, pred))


def score_item(
    response: str,
    answer: str,
    problem_type: str,
    options: list[str] | None = None,
    boxes: list | None = None,
    iou_threshold: float = 0.5,
    iou_strict: bool = False,
    relaxed_tolerance: float | None = None,
    box_frames: tuple[list[float], list[float]] | None = None,
    choice_rule: str = "strict",
) -> tuple[str | None, float, int]:
    """Score one response against its reference.

    Returns:
        ``(extracted, score, correct)``: the answer span that was scored (None when it is empty),
        a continuous score in [0, 1] and 0/1 correctness.

    ``box_frames`` (grounding), ``([input width, height], [image width, height])``: the
    predicted box is in the model-input frame and is rescaled to the image's before IoU
    (:func:`rescale_box`). ``choice_rule`` ``vlmevalkit``: the multiple-choice answer is read by
    VLMEvalKit's ``can_infer`` (:func:`vlmevalkit_choice`) instead of the strict rule.

    Raises:
        ValueError: for a problem type without a rule (``detection``).

    >>> score_item("<think>.</think><answer>(B)</answer>", "B", "multiple_choice", ["red", "blue"])
    ('(B)', 1.0, 1)
    >>> score_item("<answer>blue</answer>", "B", "multiple_choice", ["red", "blue"])
    ('blue', 1.0, 1)
    >>> score_item("<answer>\\\\frac{1}{2}</answer>", "0.5", "numerical")
    ('\\\\frac{1}{2}', 1.0, 1)
    >>> score_item("<answer>[0, 0, 10, 10]</answer>", "[0, 0, 10, 20]", "grounding",
    ...            boxes=[[0, 0, 10, 20]])
    ('[0, 0, 10, 10]', 0.5, 1)
    """
    options = options or []
    span = answer_span(response)
    if not span:
        if problem_type not in _TYPES:
            raise ValueError(f"no scoring rule for problem_type {problem_type!r}")
        return None, 0.0, 0
    wrapped = _as_answer(span)

    if problem_type == "multiple_choice":
        gold = _option_letter(answer, options)
        if choice_rule == "vlmevalkit":
            pred = vlmevalkit_choice(span, options)
        else:
            pred = _option_letter(span, options)
        correct = int(gold is not None and pred == gold)
        return span, float(correct), correct
    if relaxed_tolerance is not None and problem_type in {"numerical", "free_form", "ocr"}:
        correct = int(relaxed_correctness(span, answer, relaxed_tolerance))
        return span, float(correct), correct
    if problem_type == "yes_no":
        pred = yes_or_no(span)
        correct = int(pred is not None and pred == normalize_text(answer))
        return span, float(correct), correct
    if problem_type == "numerical":
        # "\\sqrt{3}" is not the number 3: LaTeX goes to Math-Verify only
        plain = not has_latex(span)
        correct = int(plain and answer_accuracy(wrapped, answer, problem_type) == 1.0)
        if not correct:
            correct = int(_numbers_equal(span, answer))
        return span, float(correct), correct
    if problem_type == "grounding":
        box = boxes[0] if boxes else None
        if box_frames is None:
            iou = answer_accuracy(wrapped, answer, problem_type, box)
        else:
            pred, gold = parse_box(span), box if box is not None else parse_box(answer)
            iou = box_iou(rescale_box(pred, *box_frames), gold) if pred and gold else 0.0
        return span, iou, int(iou > iou_threshold if iou_strict else iou >= iou_threshold)
    if problem_type in {"free_form", "ocr"}:
        score = answer_accuracy(wrapped, answer, problem_type)
        return span, score, int(normalize_text(span) == normalize_text(answer))
    raise ValueError(f"no scoring rule for problem_type {problem_type!r}")


_REFUSALS = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)
_VERBOSE_ANSWER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def vlmevalkit_choice(answer: str, options: list[str]) -> str | None:
    """The option letter VLMEvalKit's rule reads in ``answer``, else None (no option, a refusal,
    or more than one): ``vlmeval/utils/matching_util.py::can_infer`` at e8e78f05, without its
    ``VERBOSE`` quantifier check (off by default there).

    1. ``can_infer_option``: with ``.()[],:;!*#{}`` turned into spaces, exactly one option letter
       is a word and it is among the last five words; else "(correct) answer is X" (A-D);
    2. ``can_infer_text``: the answer is at most twice as long as all option texts together and
       exactly one option's text (lower-cased) is inside it.

    >>> opts = ["red", "blue", "green"]
    >>> [vlmevalkit_choice(a, opts) for a in ["B", "So the answer is (C).", "It is blue."]]
    ['B', 'C', 'B']
    >>> [vlmevalkit_choice(a, opts) for a in ["A or B", "no idea", "Z", "red or blue"]]
    [None, None, None, None]
    """
    letters = LETTERS[: len(options)]
    if "Failed to obtain answer via API" in answer or any(r in answer for r in _REFUSALS):
        return None
    words = answer
    for char in ".()[],:;!*#{}":
        words = words.replace(char, " ")
    splits = [w.strip() for w in words.split()]
    found = [letter for letter in letters if letter in splits]
    if len(found) == 1 and splits.index(found[0]) > len(splits) - 5:
        return found[0]
    if not found and "Z" in splits:  # VLMEvalKit's "none of the options"
        return None
    match = _VERBOSE_ANSWER.search(answer)
    if match and match.group(1).upper() in letters:
        return match.group(1).upper()
    lowered = answer.lower()
    if len(lowered) > 2 * sum(len(o) for o in options):
        return None
    pairs = zip(letters, options, strict=True)
    hits = [letter for letter, text in pairs if text.lower() in lowered]
    return hits[0] if len(hits) == 1 else None


_PUNCT = [";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@",
          "`", ",", "?", "!"]  # fmt: skip
_COMMA_STRIP = re.compile(r"(\d)(,)(\d)")
_PERIOD_STRIP = re.compile(r"(?<!\d)\.(?!\d)")


def _process_punctuation(text: str) -> str:
    """VLMEvalKit ``vlmeval/dataset/utils/yorn.py::process_punctuation`` (from the VQA eval)."""
    out = text
    for p in _PUNCT:
        if (p + " " in text or " " + p in text) or _COMMA_STRIP.search(text) is not None:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return _PERIOD_STRIP.sub("", out)


def yes_or_no(text: str) -> str | None:
    """VLMEvalKit's ``YOrN_Extraction``: "yes" if "yes" is a word of the text and "no" is not,
    "no" for the reverse, else None (Unknown: wrong by the rules, the judge may decide).

    >>> yes_or_no("Yes, it is larger."), yes_or_no("No."), yes_or_no("yes or no?")
    ('yes', 'no', None)
    >>> yes_or_no("The answer: (yes)"), yes_or_no("yesterday")
    ('yes', None)
    """
    words = _process_punctuation(text.lower()).split()
    if "yes" in words and "no" not in words:
        return "yes"
    if "no" in words and "yes" not in words:
        return "no"
    return None


def rescale_box(box: list[float], input_size: list[float], image_size: list[float]) -> list[float]:
    """A box from the model-input frame to the image's, in the order of VLM-R1's
    ``resize_bbox`` (``x / input_width * image_width``: divide first, so IoUs at the threshold
    match it to the last bit).

    >>> rescale_box([14, 28, 28, 56], [28, 56], [100, 200])
    [50.0, 100.0, 100.0, 200.0]
    """
    (in_w, in_h), (img_w, img_h) = input_size, image_size
    return [
        box[0] / in_w * img_w,
        box[1] / in_h * img_h,
        box[2] / in_w * img_w,
        box[3] / in_h * img_h,
    ]


def relaxed_float(text: str) -> float | None:
    """The number lmms-eval's ``relaxed_correctness`` reads in ``text`` (its ``_to_float``): a
    trailing ``%`` divides by 100; anything ``float()`` rejects (``"1,000"``) is None.

    >>> relaxed_float("12%"), relaxed_float("0.57"), relaxed_float("1,000"), relaxed_float("Yes")
    (0.12, 0.57, None, None)
    """
    try:
        if text.endswith("%"):
            return float(text.rstrip("%")) / 100.0
        return float(text)
    except ValueError:
        return None


def relaxed_correctness(prediction: str, target: str, max_relative_change: float = 0.05) -> bool:
    """ChartQA's relaxed accuracy, as lmms-eval ``tasks/chartqa/utils.py`` (from pix2struct):
    numbers (a trailing ``%`` divides by 100) within ``max_relative_change`` of a non-zero
    target are correct; otherwise the texts must be equal, case-insensitive.

    >>> relaxed_correctness("104", "100"), relaxed_correctness("106", "100")
    (True, False)
    >>> relaxed_correctness("12%", "0.12"), relaxed_correctness("Yes", "yes")
    (True, True)
    >>> relaxed_correctness("0", "0"), relaxed_correctness("0.0", "0")
    (True, False)
    """
    pred, gold = relaxed_float(prediction), relaxed_float(target)
    if pred is not None and gold:
        return abs(pred - gold) / abs(gold) <= max_relative_change
    return prediction.lower() == target.lower()


_TYPES = frozenset({"multiple_choice", "yes_no", "numerical", "grounding", "free_form", "ocr"})
