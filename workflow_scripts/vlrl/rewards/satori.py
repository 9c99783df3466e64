"""Rewards of the SATORI-R1 recipe: caption → bbox → answer.

Follows the released ms-swift plugin of justairr/SATORI-R1 (``plugin.py`` @8923be7, ``prompt.txt``
@8857b30). ms-swift sums the four rewards with its default weight 1 each (maximum 4).
The prompt format ``caption_bbox_answer`` and its texts
(``CAPTION_BBOX_ANSWER_SYSTEM_PROMPT``, ``SATORI_FORMAT_PATTERN``, ``CAPTION_BBOX_ANSWER_PATTERN``,
re-exported here) are declared in :mod:`vlrl.items.prompts`.

Columns read (vlrl canonical name first, SATORI's name accepted as well):

- ``boxes`` — reference boxes, xyxy in original-image pixels (SATORI ``bboxs``);
- ``image_sizes`` — ``[[width, height], …]``, the first image is used (SATORI ``width``/``height``);
- ``possible_answers`` — the accepted answers (list[str]); absent → ``[answer]``;
- ``caption`` — the reference caption (SATORI ``image_caption``).

SATORI with a thinking stage (paper v2 "SATORI" rows; Fig. 3 of the project page
``docs/index.html``: caption → bbox → think → answer) has no released prompt or format reward.
``caption_bbox_think_answer`` and ``satori.format_think`` are vlrl's construction from the
released ones (``prompt.txt`` with a think step, ``external_format`` with a ``<think>`` block; texts
in :mod:`vlrl.items.prompts`, re-exported here); the other three rewards are the released ones.

Deviations from ``plugin.py`` (tested against a verbatim copy in
``tests/rewards/test_satori_released.py``): a reward never raises, so a box the released code
cannot parse (too deep, an integer beyond float range, an unhashable literal such as ``{[1]: 2}``)
or an infinite coordinate (released: NaN) scores 0; a row without reference boxes or caption
scores None (released: 0.0, or AttributeError for the caption); ``possible_answers`` given as a
bare string is one answer matched exactly (released: a substring test), and absent or empty it
falls back to ``[answer]`` (released: TypeError or 0.0).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from vlrl.items.prompt_texts import CAPTION_BBOX_ANSWER_PATTERN as CAPTION_BBOX_ANSWER_PATTERN
from vlrl.items.prompt_texts import (
    CAPTION_BBOX_ANSWER_SYSTEM_PROMPT as CAPTION_BBOX_ANSWER_SYSTEM_PROMPT,
)
from vlrl.items.prompt_texts import (
    CAPTION_BBOX_THINK_ANSWER_PATTERN as CAPTION_BBOX_THINK_ANSWER_PATTERN,
)
from vlrl.items.prompt_texts import (
    CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT as CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT,
)
from vlrl.items.prompt_texts import SATORI_FORMAT_PATTERN as SATORI_FORMAT_PATTERN
from vlrl.items.prompt_texts import SATORI_FORMAT_THINK_PATTERN as SATORI_FORMAT_THINK_PATTERN
from vlrl.rewards._satori_boxes import (
    SATORI_MAX_PIXELS as SATORI_MAX_PIXELS,
)
from vlrl.rewards._satori_boxes import (
    SATORI_MIN_PIXELS as SATORI_MIN_PIXELS,
)
from vlrl.rewards._satori_boxes import parse_boxes as parse_boxes
from vlrl.rewards._satori_boxes import smart_resize as smart_resize
from vlrl.rewards._satori_boxes import union_iou as union_iou
from vlrl.rewards.common import completion_text

_FORMAT = re.compile(SATORI_FORMAT_PATTERN, re.DOTALL | re.MULTILINE)
_FORMAT_THINK = re.compile(SATORI_FORMAT_THINK_PATTERN, re.DOTALL | re.MULTILINE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_CAPTION = re.compile(r"<caption>(.*?)</caption>", re.DOTALL)


def format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """``satori.format`` (``external_format``): caption → bbox ``[[…]]`` → answer, 1.0 or 0.0.

    Reads no columns.

    >>> format_reward(["<caption>c</caption><bbox>[[1,2,3,4]]</bbox><answer>a</answer>",
    ...                "<bbox>[[1,2,3,4]]</bbox><caption>c</caption><answer>a</answer>"])
    [1.0, 0.0]
    """
    return [1.0 if _FORMAT.match(completion_text(c)) else 0.0 for c in completions]


def format_think_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """``satori.format_think``: caption → bbox ``[[…]]`` → think → answer, 1.0 or 0.0.

    vlrl's construction (not released): ``external_format``'s regex with ``\\s*<think>.*?</think>``
    after ``</bbox>``, same ``re.match`` and flags. Reads no columns.

    >>> format_think_reward(["<caption>c</caption><bbox>[[1,2,3,4]]</bbox><think>t</think>"
    ...                      "<answer>a</answer>",
    ...                      "<caption>c</caption><bbox>[[1,2,3,4]]</bbox><answer>a</answer>"])
    [1.0, 0.0]
    """
    return [1.0 if _FORMAT_THINK.match(completion_text(c)) else 0.0 for c in completions]


# --- bbox ----------------------------------------------------------------------------------------


class BBoxIoUReward:
    """``satori.bbox_iou`` (``external_bbox_acc``): union IoU of the predicted boxes, rescaled
    from the model-input frame to original pixels, against the reference boxes.

    Reads ``boxes`` (SATORI ``bboxs``) and ``image_sizes`` (or SATORI's ``width``/``height``).
    Range [0, 1); 0.0 when the ``<bbox>`` block is missing or malformed; None for a row without
    reference boxes. ``prediction_frame="input"`` rescales by original/``smart_resize`` size (the
    released behaviour; set ``min_pixels``/``max_pixels`` to the processor's limits),
    ``"original"`` takes predictions as original-image pixels.
    """

    def __init__(
        self,
        min_pixels: int = SATORI_MIN_PIXELS,
        max_pixels: int = SATORI_MAX_PIXELS,
        factor: int = 28,
        prediction_frame: str = "input",
    ) -> None:
        if prediction_frame not in {"input", "original"}:
            raise ValueError(
                f"prediction_frame must be 'input' or 'original', not {prediction_frame!r}"
            )
        if not 0 < min_pixels <= max_pixels:
            raise ValueError(f"need 0 < min_pixels <= max_pixels, got {min_pixels}, {max_pixels}")
        self.min_pixels, self.max_pixels, self.factor = min_pixels, max_pixels, factor
        self.prediction_frame = prediction_frame
        self.__name__ = "satori.bbox_iou"

    def score(self, text: str, gold: list[list[float]], width: int, height: int) -> float:
        """One completion's score.

        Deviation: an integer coordinate beyond float range makes the released code raise
        OverflowError (in ``resize_bboxes``); here it scores 0.

        >>> reward = BBoxIoUReward()  # 640x480 is fed to the model as 644x476
        >>> round(reward.score("<bbox>[[0, 0, 644, 476]]</bbox>", [[0, 0, 640, 480]], 640, 480), 6)
        1.0
        >>> reward.score(f"<bbox>[[0, 0, {10**400}, 10]]</bbox>", [[0, 0, 640, 480]], 640, 480)
        0.0
        """
        pred = parse_boxes(text)
        if pred is None:
            return 0.0
        scale = None
        if self.prediction_frame == "input":
            in_h, in_w = smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
            scale = width / in_w, height / in_h
        try:
            if scale is not None:
                sx, sy = scale
                pred = [[x1 * sx, y1 * sy, x2 * sx, y2 * sy] for x1, y1, x2, y2 in pred]
            return float(union_iou(pred, gold))
        except OverflowError:  # an integer coordinate beyond float range
            return 0.0

    def __call__(
        self,
        completions: list[Any],
        boxes: list[list[list[float]]] | None = None,
        image_sizes: list[list[list[int]]] | None = None,
        width: list[int] | None = None,
        height: list[int] | None = None,
        bboxs: list[list[list[float]]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """Score a batch (TRL contract).

        >>> scores = BBoxIoUReward(prediction_frame="original")(
        ...     ["<bbox>[[0, 0, 5, 10]]</bbox>", "<bbox>[[0, 0, 5, 10]]</bbox>"],
        ...     boxes=[[[0, 0, 10, 10]], []], image_sizes=[[[20, 20]], [[20, 20]]])
        >>> round(scores[0], 6), scores[1]
        (0.5, None)
        """
        gold_boxes = boxes if boxes is not None else bboxs
        if gold_boxes is None:
            return [None] * len(completions)
        scores: list[float | None] = []
        for i, (completion, gold) in enumerate(zip(completions, gold_boxes, strict=True)):
            if not gold:
                scores.append(None)
                continue
            if width is not None and height is not None:
                w, h = width[i], height[i]
            elif image_sizes is not None and image_sizes[i]:
                w, h = image_sizes[i][0]
            else:
                raise ValueError(f"satori.bbox_iou: row {i} has boxes but no image size column")
            scores.append(self.score(completion_text(completion), gold, int(w), int(h)))
        return scores


# --- vqa -----------------------------------------------------------------------------------------


def vqa_reward(
    completions: list[Any],
    answer: list[str] | None = None,
    possible_answers: list[list[str] | None] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """``satori.vqa`` (``extern_vqa_acc``): 1.0 when the first ``<answer>``, stripped, is an
    exact member of the accepted answers (no case, punctuation or article normalisation).

    Reads ``possible_answers`` (list[str] per row; a bare string counts as one answer); when the
    column or a row's list is missing, ``[answer]``. Missing tag: 0.0.

    >>> vqa_reward(["<answer> two </answer>", "<answer>Two</answer>"],
    ...            possible_answers=[["2", "two"], ["2", "two"]])
    [1.0, 0.0]
    """
    scores: list[float | None] = []
    for i, completion in enumerate(completions):
        accepted = possible_answers[i] if possible_answers is not None else None
        if not accepted:
            if answer is None:
                raise ValueError(f"satori.vqa: row {i} has neither possible_answers nor answer")
            accepted = [answer[i]]
        elif isinstance(accepted, str):
            accepted = [accepted]
        match = _ANSWER.search(completion_text(completion))
        scores.append(1.0 if match and match.group(1).strip() in list(accepted) else 0.0)
    return scores


# --- caption -------------------------------------------------------------------------------------


@functools.cache
def _rouge_l():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


@functools.cache
def _tokenizer(kind: str):
    if kind == "punkt":  # nltk.word_tokenize: needs the punkt_tab data
        import nltk

        try:
            nltk.data.find("tokenizers/punkt_tab/english/")
        except LookupError:
            raise LookupError(
                "satori caption tokenizer 'punkt' needs NLTK's punkt_tab data "
                "(python -m nltk.downloader punkt_tab); use tokenizer='untrained_punkt'"
            ) from None
        return nltk.word_tokenize
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    sentences, words = PunktSentenceTokenizer(), NLTKWordTokenizer()
    return lambda text: [t for s in sentences.tokenize(text) for t in words.tokenize(s)]


class CaptionReward:
    """``satori.caption`` (``external_caption_acc``): ½·(BLEU-4 + ROUGE-L F1) of the first
    ``<caption>`` (stripped) against the reference caption, in [0, 1].

    BLEU: nltk ``sentence_bleu``, default 4-gram weights, ``SmoothingFunction().method1``, on
    lower-cased word tokens. ROUGE-L: rouge-score F-measure with stemmer on the raw strings.
    Missing tag: 0.0. Reads ``caption`` (SATORI ``image_caption``); a row without one gives None.

    ``tokenizer="punkt"`` is the released ``nltk.word_tokenize`` (needs NLTK's punkt_tab data,
    not installed here). The default ``"untrained_punkt"`` needs no data: the same word tokenizer
    after an untrained Punkt sentence splitter; tokens differ only around abbreviations and
    initials ("mr.", "e.g.") that the trained English model knows.
    """

    def __init__(self, tokenizer: str = "untrained_punkt") -> None:
        if tokenizer not in {"punkt", "untrained_punkt"}:
            raise ValueError(f"tokenizer must be 'punkt' or 'untrained_punkt', not {tokenizer!r}")
        self.tokenizer = tokenizer
        self.__name__ = "satori.caption"

    def score(self, text: str, reference: str) -> float:
        """One completion's score.

        >>> CaptionReward().score("<caption>a dog on grass</caption>", "a dog on grass")
        1.0
        """
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        match = _CAPTION.search(text)
        if not match:
            return 0.0
        pred = match.group(1).strip()
        tokenize = _tokenizer(self.tokenizer)
        bleu = sentence_bleu(
            [tokenize(reference.lower())],
            tokenize(pred.lower()),
            smoothing_function=SmoothingFunction().method1,
        )
        rouge = _rouge_l().score(reference, pred)["rougeL"].fmeasure
        return float((bleu + rouge) / 2)

    def __call__(
        self,
        completions: list[Any],
        caption: list[str | None] | None = None,
        image_caption: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """Score a batch (TRL contract).

        >>> scores = CaptionReward()(["<caption>a cat</caption>", "x"], caption=["a cat", "a cat"])
        >>> [round(s, 4) for s in scores]  # short captions: smoothed 3-/4-gram precisions
        [0.6581, 0.0]
        """
        references = caption if caption is not None else image_caption
        if references is None:
            return [None] * len(completions)
        return [
            None if ref is None else self.score(completion_text(c), str(ref))
            for c, ref in zip(completions, references, strict=True)
        ]


def get_bbox_iou_reward(**options: Any) -> BBoxIoUReward:
    """A configured ``satori.bbox_iou`` (see :class:`BBoxIoUReward`); validates eagerly."""
    return BBoxIoUReward(**options)


def get_caption_reward(**options: Any) -> CaptionReward:
    """A configured ``satori.caption`` (see :class:`CaptionReward`); validates eagerly."""
    return CaptionReward(**options)


REWARDS = {
    "satori.format": format_reward,
    "satori.format_think": format_think_reward,
    "satori.bbox_iou": BBoxIoUReward(),
    "satori.vqa": vqa_reward,
    "satori.caption": CaptionReward(),
}
