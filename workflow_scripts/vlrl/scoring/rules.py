"""Rule-based scoring of one response: extract the final answer, then compare it by problem type.

The reasoning is stripped before any matcher (a number in ``<think>`` would match otherwise):

1. the content of the last ``<answer>…</answer>`` (:func:`vlrl.items.answers.extract_answer`);
2. if there is no answer tag, the text after the last ``</think>``;
3. if there is neither, the whole response.

The comparison per ``problem_type`` (``correct`` is 0/1, ``score`` is continuous in [0, 1]):

- multiple_choice: the option the answer names (:func:`option_letter`: a lone option letter as
  it is, else the option whose text it is, else its leading letter: ``B``, ``red`` when
  ``options[1] == "red"``, ``(B) red``) is among the reference's (:func:`gold_option_letters`);
  score = correct. VLMEvalKit's and MMMU's readings are in :mod:`vlrl.scoring.choice` and
  :mod:`vlrl.scoring.mmmu`.
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

The per-type matchers are :func:`vlrl.items.answers.answer_accuracy` (the same code the rewards
use); this module adds the fallback span, the option-text match, Math-Verify and the threshold.
"""

from __future__ import annotations

import re

from math_verify import parse, verify

from vlrl.items.answers import (
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


def _lone_letter(text: str, options: list[str]) -> str | None:
    """``text`` when it is one of the options' letters and nothing else (spaces aside)."""
    letter = text.strip()
    return letter if len(letter) == 1 and letter in LETTERS[: len(options)] else None


def _text_letters(text: str, options: list[str]) -> list[str]:
    """The letters of every option whose text is ``text`` (normalised)."""
    norm = normalize_text(text)
    found = zip(LETTERS, options, strict=False)
    return [letter for letter, option in found if norm and norm == normalize_text(option)]


def option_letter(text: str, options: list[str]) -> str | None:
    """The option a response's answer names by vlrl's strict rule: a lone option letter as it
    is; else the (first) option whose text it is, normalised; else its leading letter.

    A lone letter is read as a letter before any option text equal to it: with options
    ``["B", "A"]``, ``"A"`` names option A, as the prompts ask for letters.

    >>> [option_letter(t, ["red", "blue"]) for t in ["B", " (B) blue", "Blue.", "blue sky"]]
    ['B', 'B', 'B', None]
    >>> option_letter("A", ["B", "A"])
    'A'
    """
    letter = _lone_letter(text, options)
    if letter is not None:
        return letter
    by_text = _text_letters(text, options)
    return by_text[0] if by_text else parse_letter(text)


def gold_option_letters(answer: str, options: list[str]) -> frozenset[str]:
    """The option letters a reference answer accepts: a lone option letter as it is (never
    remapped through an option whose text is a letter); else every option whose text it is
    (a choice text may repeat); else its leading letter if that names an option; else none.

    >>> gold_option_letters("A", ["B", "A"]) == {"A"}
    True
    >>> sorted(gold_option_letters("18", ["9", "18", "18"]))
    ['B', 'C']
    >>> gold_option_letters("E", ["x"])
    frozenset()
    """
    letter = _lone_letter(answer, options)
    if letter is not None:
        return frozenset({letter})
    by_text = _text_letters(answer, options)
    if by_text:
        return frozenset(by_text)
    letter = parse_letter(answer)
    return (
        frozenset({letter})
        if letter is not None and letter in LETTERS[: len(options)]
        else frozenset()
    )


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
) -> tuple[str | None, float, int]:
    """Score one response against its reference.

    Returns:
        ``(extracted, score, correct)``: the answer span that was scored (None when it is empty),
        a continuous score in [0, 1] and 0/1 correctness.

    ``box_frames`` (grounding), ``([input width, height], [image width, height])``: the
    predicted box is in the model-input frame and is rescaled to the image's before IoU
    (:func:`rescale_box`).

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
        if problem_type not in TYPES:
            raise ValueError(f"no scoring rule for problem_type {problem_type!r}")
        return None, 0.0, 0
    wrapped = _as_answer(span)

    if problem_type == "multiple_choice":
        correct = int(option_letter(span, options) in gold_option_letters(answer, options))
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
    # The reference passes re.UNICODE (32) as sub's count: at most 32 full stops are removed.
    return _PERIOD_STRIP.sub("", out, count=re.UNICODE)


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


TYPES = frozenset({"multiple_choice", "yes_no", "numerical", "grounding", "free_form", "ocr"})
