# ruff: noqa
# fmt: off
"""SATORI-R1's released rewards, verbatim: the oracles of ``tests/rewards/test_satori_released.py``.

Source: justairr/SATORI-R1 @ 8923be7 (the commit vlrl's ``vlrl/rewards/satori.py`` cites; HEAD
8857b30 has the same ``plugin.py``, blob 3974217), ``plugin.py`` lines 17-165, unchanged: the
ms-swift ORM classes ``Format`` (17-30), ``CaptionAccuracy`` (32-66), ``BoundingBoxAccuracy``
(68-139), ``VQAAccuracy`` (141-160) and their registration in ``orms`` (162-165). Lines 1-15
(imports, logger) are replaced by the shims below, and a final newline is added; SATORI's ``environment.yaml`` (lines 376-383)
pins nltk 3.9.1, qwen-vl-utils 0.0.10 and shapely 2.0.7.

Shims, not code changes (the libraries are not installed in .venv, or not usable offline):

- ``swift.plugin.orm``: ``ORM`` is an empty base class, ``orms`` a dict (ms-swift's registry);
  ``swift.utils.get_logger`` is ``logging.getLogger``.
- ``qwen_vl_utils.smart_resize``: copied verbatim from qwen-vl-utils 0.0.10 (PyPI wheel,
  ``qwen_vl_utils/vision_process.py`` lines 25-28, the constants, and 44-85); the module
  itself imports torch, torchvision and requests at import time.
- ``shapely`` (``box``, ``unary_union``): not installed. ``box`` and ``unary_union`` return a
  :class:`_Region`, a union of axis-aligned rectangles whose ``intersection``, ``union`` and
  ``area`` are exact: the area sums the cells of the grid of all corner coordinates that lie in
  some rectangle (not vlrl's sweep). Corner order does not matter and zero-area boxes add nothing,
  as in shapely. A non-finite coordinate raises :class:`ShimUnfaithful`: there GEOS returns NaN or
  0.0 depending on the layout (``[[20, 0, inf, 10]]`` against ``[[0, 0, 10, 10]]`` gives NaN in
  shapely 2.0.7), which this shim does not reproduce. Checked against shapely 2.0.7 (GEOS 3.11.4)
  on the generated cases of ``test_satori_released.py`` (its test
  ``test_shapely_shim_agrees_with_shapely`` runs where shapely is installed).
- ``nltk.word_tokenize``: nltk's ``word_tokenize`` (nltk 3.10.4 ``nltk/tokenize/__init__.py``
  lines 148-169) with an untrained ``PunktSentenceTokenizer`` in place of the trained English
  ``punkt_tab`` model, whose data is not installed (NLTK data is not a package). This is what
  vlrl's default ``tokenizer="untrained_punkt"`` declares; the two differ from the trained model
  only around abbreviations and initials.

Not formatted or linted, to stay verbatim.
"""
import ast
import logging
import math
import re
from types import SimpleNamespace
from typing import List

import numpy as np
from nltk.tokenize import NLTKWordTokenizer, PunktSentenceTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer


# --- shim: swift.plugin.orm, swift.utils ---------------------------------------------------------

class ORM:  # shim: swift.plugin.orm.ORM
    pass


orms = {}  # shim: swift.plugin.orm.orms


def get_logger():  # shim: swift.utils.get_logger
    return logging.getLogger("swift")


# --- shim: qwen_vl_utils 0.0.10, vision_process.py lines 25-28 and 44-85 (verbatim) -------------

IMAGE_FACTOR = 28
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
MAX_RATIO = 200


def round_by_factor(number: int, factor: int) -> int:
    """Returns the closest integer to 'number' that is divisible by 'factor'."""
    return round(number / factor) * factor


def ceil_by_factor(number: int, factor: int) -> int:
    """Returns the smallest integer greater than or equal to 'number' that is divisible by 'factor'."""
    return math.ceil(number / factor) * factor


def floor_by_factor(number: int, factor: int) -> int:
    """Returns the largest integer less than or equal to 'number' that is divisible by 'factor'."""
    return math.floor(number / factor) * factor


def smart_resize(
    height: int, width: int, factor: int = IMAGE_FACTOR, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS
) -> tuple[int, int]:
    """
    Rescales the image so that the following conditions are met:

    1. Both dimensions (height and width) are divisible by 'factor'.

    2. The total number of pixels is within the range ['min_pixels', 'max_pixels'].

    3. The aspect ratio of the image is maintained as closely as possible.
    """
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(
            f"absolute aspect ratio must be smaller than {MAX_RATIO}, got {max(height, width) / min(height, width)}"
        )
    h_bar = max(factor, round_by_factor(height, factor))
    w_bar = max(factor, round_by_factor(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = floor_by_factor(height / beta, factor)
        w_bar = floor_by_factor(width / beta, factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = ceil_by_factor(height * beta, factor)
        w_bar = ceil_by_factor(width * beta, factor)
    return h_bar, w_bar


# --- shim: shapely.geometry.box, shapely.ops.unary_union -----------------------------------------

class ShimUnfaithful(Exception):
    """A coordinate where GEOS's result (NaN or 0.0) is not reproduced by this shim."""


class _Region:
    """A union of axis-aligned rectangles ``(minx, miny, maxx, maxy)``, shapely-like."""

    def __init__(self, rects):
        self.rects = [r for r in rects if r[0] < r[2] and r[1] < r[3]]  # zero area adds nothing

    def intersection(self, other):
        return _Region([
            (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
            for a in self.rects for b in other.rects
        ])

    def union(self, other):
        return _Region(self.rects + other.rects)

    @property
    def area(self):
        xs = sorted({v for r in self.rects for v in (r[0], r[2])})
        ys = sorted({v for r in self.rects for v in (r[1], r[3])})
        total = 0.0
        for x0, x1 in zip(xs, xs[1:]):
            for y0, y1 in zip(ys, ys[1:]):
                if any(r[0] <= x0 and x1 <= r[2] and r[1] <= y0 and y1 <= r[3] for r in self.rects):
                    total += (x1 - x0) * (y1 - y0)
        return total


def box(minx, miny, maxx, maxy, ccw=True):  # shim: shapely.geometry.box
    if not all(math.isfinite(v) for v in (minx, miny, maxx, maxy)):
        raise ShimUnfaithful(f"non-finite box {(minx, miny, maxx, maxy)}")
    return _Region([(min(minx, maxx), min(miny, maxy), max(minx, maxx), max(miny, maxy))])


def unary_union(geometries):  # shim: shapely.ops.unary_union
    return _Region([r for g in geometries for r in g.rects])


# --- shim: nltk.word_tokenize (nltk 3.10.4) with an untrained Punkt model -----------------------

_treebank_word_tokenizer = NLTKWordTokenizer()


def _word_tokenize(text, language="english", preserve_line=False):
    sentences = [text] if preserve_line else PunktSentenceTokenizer().tokenize(text)
    return [
        token for sent in sentences for token in _treebank_word_tokenizer.tokenize(sent)
    ]


nltk = SimpleNamespace(word_tokenize=_word_tokenize)

logger = get_logger()


# --- plugin.py lines 17-165 (verbatim) -----------------------------------------------------------

class Format(ORM):
    """
    Reward function to check if the completion has the required format.
    The expected format includes <caption>, <bbox>, and <answer> tags.
    """
    def __call__(self, completions, **kwargs) -> List[float]:
        """Reward function that checks if the completion has the required format."""
        pattern = (
            r'^\s*<caption>.*?</caption>\s*'
            r'<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*'
            r'<answer>.*?</answer>\s*$'
        )
        matches = [re.match(pattern, content, re.DOTALL | re.MULTILINE) for content in completions]
        return [1.0 if match else 0.0 for match in matches]

class CaptionAccuracy(ORM):
    """
    Evaluates the accuracy of a generated caption by comparing it with a ground truth caption
    using a combination of BLEU-4 and ROUGE-L scores.
    """
    def __call__(self, completions: List[str], image_caption: List[str], **kwargs) -> List[float]:
        """Reward function that evaluates the correctness of the generated caption."""
        pattern = r'<caption>(.*?)</caption>'
        scores = []
        
        # Initialize BLEU smoothing
        smooth = SmoothingFunction().method1
        
        for completion, gt_caption in zip(completions, image_caption):
            match = re.search(pattern, completion, re.DOTALL)
            if not match:
                scores.append(0.0)  # No <caption> tag, score is 0
                continue

            pred_caption = match.group(1).strip()

            # Calculate BLEU-4 with smoothing
            reference = nltk.word_tokenize(gt_caption.lower())
            hypothesis = nltk.word_tokenize(pred_caption.lower())
            bleu_score = sentence_bleu([reference], hypothesis, smoothing_function=smooth)
            
            # Calculate ROUGE-L
            scorer = rouge_scorer.RougeScorer(['rougeL'], use_stemmer=True)
            rouge_score = scorer.score(gt_caption, pred_caption)['rougeL'].fmeasure  # Use ROUGE-L F1-score
            
            # Calculate final score as the average of BLEU and ROUGE
            final_score = (bleu_score + rouge_score) / 2
            scores.append(final_score)

        return scores

class BoundingBoxAccuracy(ORM):
    """
    Checks the accuracy of predicted bounding boxes by calculating the Intersection over Union (IoU)
    between the union of predicted boxes and the union of ground truth boxes.
    """
    def __call__(self, completions: List[str], bboxs: List[List[List[float]]], width: List[int], height: List[int],  **kwargs) -> List[float]:
        """Reward function that checks if the completion has the correct bboxs."""
        pattern = r'<bbox>(.*?)</bbox>'
        scores = []
        #print(bboxs)
        for completion, gt_bboxes, w, h in zip(completions, bboxs, width, height):
            match = re.search(pattern, completion, re.DOTALL)
            if not match:
                scores.append(0.0)
                continue
            try:
                pred_bboxes = ast.literal_eval(match.group(1))
                if isinstance(pred_bboxes, list) and all(not isinstance(x, list) for x in pred_bboxes):
                    pred_bboxes = [pred_bboxes]
                if not isinstance(pred_bboxes, list) or any(
                    not (isinstance(bbox, list) and len(bbox) == 4 and all(isinstance(num, (int, float)) for num in bbox))
                    for bbox in pred_bboxes
                ):
                    scores.append(0.0)
                    continue
            except (SyntaxError, ValueError):
                scores.append(0.0)
                continue
            
            input_height,input_width = smart_resize(h, w, min_pixels=200704, max_pixels=401408)

            scale_x = w / input_width
            scale_y = h / input_height

            pred_bboxes = self.resize_bboxes(pred_bboxes, scale_x, scale_y)

            # Convert lists to numpy arrays for easier comparison
            pred_bboxes = np.array(pred_bboxes)
            gt_bboxes = np.array(gt_bboxes)
            
            # if pred_bboxes.shape != gt_bboxes.shape:
            #     scores.append(0.0)
            #     continue
            
            # Compute IoU for each bounding box pair and average
            score = self.union_iou(pred_bboxes, gt_bboxes)
            scores.append(np.mean(score))
            
        return scores
    
    def resize_bboxes(self, bboxes: List[List[float]], scale_x: float, scale_y: float) -> List[List[float]]:
        return [[x1 * scale_x, y1 * scale_y, x2 * scale_x, y2 * scale_y] for x1, y1, x2, y2 in bboxes]

    def union_iou(self, pred_boxes: List[List[float]], gt_boxes: List[List[float]]) -> float:
        """
        Calculates the IoU of the union of all predicted boxes and the union of all ground truth boxes.
        Each box is in the format [x1, y1, x2, y2]. The union may not be a regular rectangle,
        so shapely is used for precise calculation.
        """
        # Convert each bounding box into a shapely box object
        pred_polygons = [box(b[0], b[1], b[2], b[3]) for b in pred_boxes]
        gt_polygons = [box(b[0], b[1], b[2], b[3]) for b in gt_boxes]

        # Calculate the union of each set
        pred_union = unary_union(pred_polygons)
        gt_union = unary_union(gt_polygons)

        # Calculate the area of intersection and union
        intersection_area = pred_union.intersection(gt_union).area
        union_area = pred_union.union(gt_union).area

        return intersection_area / (union_area + 1e-6)

class VQAAccuracy(ORM):
    """
    Reward function to check if the completion contains a correct answer for a VQA task.
    The answer is extracted from an <answer> tag and checked against a list of possible answers.
    """
    def __call__(self, completions: List[str], possible_answers: List[List[str]], **kwargs) -> List[float]:
        """Reward function that checks if the completion contains a possible answer."""
        pattern = r'<answer>(.*?)</answer>'
        scores = []
        
        for completion, _answer in zip(completions, possible_answers):
            match = re.search(pattern, completion, re.DOTALL)
            if not match:
                scores.append(0.0)
                continue
            
            answer_extract = match.group(1).strip()
            scores.append(1.0 if answer_extract in _answer else 0.0)
        
        return scores

orms['external_format'] = Format
orms['external_caption_acc'] = CaptionAccuracy
orms['external_bbox_acc'] = BoundingBoxAccuracy
orms['extern_vqa_acc'] = VQAAccuracy
