"""Box geometry of the SATORI-R1 rewards: the model-input frame (qwen-vl-utils ``smart_resize``),
the boxes of a ``<bbox>`` block as the released ms-swift plugin parses them, and the IoU of two
unions of boxes (``plugin.py`` @8923be7, justairr/SATORI-R1). :mod:`vlrl.rewards.satori` scores
with them.
"""

from __future__ import annotations

import ast
import itertools
import math
import re

_BBOX = re.compile(r"<bbox>(.*?)</bbox>", re.DOTALL)

SATORI_MIN_PIXELS = 200704
SATORI_MAX_PIXELS = 401408


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = SATORI_MIN_PIXELS,
    max_pixels: int = SATORI_MAX_PIXELS,
) -> tuple[int, int]:
    """qwen-vl-utils 0.0.10 ``smart_resize``: the model-input ``(height, width)``.

    >>> smart_resize(480, 640), smart_resize(1080, 1920)
    ((476, 644), (448, 840))
    """
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} is above 200")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def parse_boxes(text: str) -> list[list[float]] | None:
    """Boxes from the first ``<bbox>`` block as ``plugin.py`` parses them; None when it scores 0.

    ``ast.literal_eval``; a flat ``[x1, y1, x2, y2]`` is wrapped; every box must be a list of 4
    numbers. Deviation: the released ``plugin.py::BoundingBoxAccuracy`` catches only SyntaxError
    and ValueError, so it raises where ``literal_eval`` runs out of depth (MemoryError for
    ``------1``, RecursionError for a long ``1+1+…+1``); here that also scores 0.

    >>> parse_boxes("<bbox>[[1, 2, 3, 4], [5, 6, 7, 8]]</bbox>")
    [[1, 2, 3, 4], [5, 6, 7, 8]]
    >>> parse_boxes("<bbox>[1,2,3,4]</bbox>"), parse_boxes("<bbox>[[1,2,3]]</bbox>")
    ([[1, 2, 3, 4]], None)
    >>> parse_boxes("<bbox>" + "-" * 10000 + "1</bbox>") is None
    True
    """
    match = _BBOX.search(text)
    if not match:
        return None
    try:
        boxes = ast.literal_eval(match.group(1))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        # TypeError: an unhashable dict key or set member ({[1]: 2}), where released raises
        return None
    if isinstance(boxes, list) and all(not isinstance(x, list) for x in boxes):
        boxes = [boxes]
    if not isinstance(boxes, list) or any(
        not (isinstance(b, list) and len(b) == 4 and all(isinstance(v, int | float) for v in b))
        for b in boxes
    ):
        return None
    return boxes


Rect = tuple[float, float, float, float]


def _rects(boxes: list[list[float]]) -> list[Rect]:
    # shapely's box() area does not depend on corner order; zero-area boxes add nothing.
    rects = [(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)) for x1, y1, x2, y2 in boxes]
    return [r for r in rects if r[2] > r[0] and r[3] > r[1]]


def _union_area(rects: list[Rect]) -> float:
    """Area of a union of axis-aligned rectangles (coordinate compression along x)."""
    xs = sorted({x for r in rects for x in (r[0], r[2])})
    area = 0.0
    for xa, xb in itertools.pairwise(xs):
        spans = sorted((r[1], r[3]) for r in rects if r[0] <= xa and r[2] >= xb)
        covered, end = 0.0, -math.inf
        for lo, hi in spans:
            if hi > end:
                covered += hi - max(lo, end)
                end = hi
        area += covered * (xb - xa)
    return area


def union_iou(pred: list[list[float]], gold: list[list[float]]) -> float:
    """``plugin.py`` ``union_iou``: area(∪P ∩ ∪G) / (area(∪P ∪ ∪G) + 1e-6), in [0, 1).

    Exact rectangle geometry in place of shapely's ``unary_union``.

    >>> round(union_iou([[0, 0, 10, 10], [10, 0, 20, 10]], [[0, 0, 20, 10]]), 6)
    1.0
    """
    p, g = _rects(pred), _rects(gold)
    inter_rects = [
        (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])) for a in p for b in g
    ]
    inter = _union_area([r for r in inter_rects if r[2] > r[0] and r[3] > r[1]])
    union = _union_area(p) + _union_area(g) - inter
    return inter / (union + 1e-6)
