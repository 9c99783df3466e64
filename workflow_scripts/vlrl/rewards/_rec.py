"""REC helpers of the VLM-R1 rewards: the answer's text, one box against the ground truth, the
box's frame.

Everything here follows the released code of om-ai-lab/VLM-R1 (``grpo_jsonl.py`` and
``vlm_modules/qwen_module.py``) at commit 90052f4, quirks included; deviations are
named where they occur. Ground-truth problems raise :class:`GroundTruthError` (the reward adds the
row); anything wrong with a *prediction* scores like the released code (usually 0).
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_REC_BOX = re.compile(r"\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)]")


class GroundTruthError(ValueError):
    """The dataset's answer cannot be read the way the reward needs it."""


def clean_text(text: str) -> str:
    """VLM-R1's ``clean_text``: last ``<answer>`` content (if any), newlines folded, stripped,
    trailing full stops dropped, lower-cased.

    A newline after whitespace is deleted; any other newline becomes a space.

    >>> clean_text("<answer>a</answer><answer> The Cat\\nsat. </answer>")
    'the cat sat'
    """
    found = ANSWER.findall(text)
    if found:
        text = found[-1]
    for char in ("\n", "\r"):
        text = re.sub(r"(?<=\s)" + re.escape(char), "", text)
        text = re.sub(r"(?<!\s)" + re.escape(char), " ", text)
    return text.strip().rstrip(".").lower()


def iou(a: list[float], b: list[float]) -> float:
    """IoU shared by VLM-R1's training and evaluation (``iou_reward``, ``test_rec_r1.py``).

    The intersection runs from ``max(x1)`` to ``min(x2) - 1`` (+1 for the width) and counts only
    when that extent is strictly positive, so overlaps of at most 1 px give 0; the union is the
    plain ``(x2-x1)(y2-y1)`` areas minus the intersection. Raises ZeroDivisionError for an empty
    union (callers turn any exception into 0).

    >>> iou([0, 0, 10, 10], [0, 0, 10, 10]), iou([0, 0, 10, 10], [9, 0, 20, 10])
    (1.0, 0.0)
    """
    ix1, iy1 = max(a[0], b[0]), max(a[1], b[1])
    ix2, iy2 = min(a[2] - 1, b[2] - 1), min(a[3] - 1, b[3] - 1)
    inter = (ix2 - ix1 + 1) * (iy2 - iy1 + 1) if ix1 < ix2 and iy1 < iy2 else 0
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter) / union


def rec_ground_truth(row: int, answer: list[str] | None, boxes: list | None) -> list[float]:
    """The REC target box of ``row``: column ``boxes`` (first box) when the row has one, else
    column ``answer`` as JSON (``[x1, y1, x2, y2]`` or ``{"bbox_2d": [...]}``, tags allowed)."""
    if boxes is not None and boxes[row]:
        return [float(v) for v in boxes[row][0]]
    if answer is None:
        raise ValueError("needs the 'boxes' or the 'answer' column")
    found = ANSWER.findall(answer[row])
    with contextlib.suppress(ValueError, TypeError, KeyError):
        box = json.loads((found[-1] if found else answer[row]).strip())
        box = box["bbox_2d"] if isinstance(box, dict) else box
        if len(box) == 4 and all(isinstance(v, int | float) for v in box):
            return [float(v) for v in box]
    raise ValueError(f"answer {answer[row]!r} is not a JSON box [x1, y1, x2, y2]")


def _pair(value: Any) -> list[float] | None:
    value = value.tolist() if hasattr(value, "tolist") else value
    if not value:
        return None
    return [float(v) for v in (value[0] if isinstance(value[0], list | tuple) else value)]


Size = tuple[float, float]


def input_and_original_size(row: int, columns: dict[str, Any]) -> tuple[Size, Size] | None:
    """``((width, height) of the model-input frame, (width, height) of the original image)``
    of ``row`` (the rescaling of commit 00755a2); None unless both are known.

    Input frame: ``image_grid_thw[row]`` (``[t, h, w]`` patches of 14 px) or else
    ``input_size[row]`` (``[width, height]``). Original: ``image_sizes[row]`` (first ``[width,
    height]``) or else the size of ``images[row][0]`` (a PIL image or a path).

    >>> input_and_original_size(0, {"image_grid_thw": [[1, 8, 10]], "image_sizes": [[[70, 56]]]})
    ((140.0, 112.0), (70.0, 56.0))
    """
    frame = original = None
    if columns.get("image_grid_thw") is not None:
        thw = _pair(columns["image_grid_thw"][row])
        frame = [thw[2] * 14, thw[1] * 14] if thw else None
    elif columns.get("input_size") is not None:
        frame = _pair(columns["input_size"][row])
    if columns.get("image_sizes") is not None:
        original = _pair(columns["image_sizes"][row])
    elif columns.get("images") is not None and columns["images"][row]:
        image = columns["images"][row][0]
        if not hasattr(image, "size"):  # a path, as VLM-R1 reads it
            from PIL import Image

            with Image.open(image) as opened:
                image = opened
        original = [float(v) for v in image.size]
    if not frame or not original:
        return None
    return (frame[0], frame[1]), (original[0], original[1])


def rec_iou(text: str, gt: list[float], sizes: tuple[Size, Size] | None) -> float:
    """IoU of the first integer box in the *first* ``<answer>`` of ``text`` with ``gt``; any
    failure (no answer, no integer box, empty union, overflow) gives 0.

    With ``sizes`` (:func:`input_and_original_size`) the box is first rescaled from the input
    frame to the original image in the order of the released ``qwen_module.py``
    (``Qwen2VLModule.iou_reward.resize_bbox``): ``x / input_width * image_width``, divide first,
    so the floats, and an IoU at a threshold, match it bit for bit.

    >>> rec_iou("<answer>[10, 10, 50, 30]</answer>", [20, 20, 100, 60], ((140, 112), (280, 224)))
    1.0
    >>> 1 / 28 * 50, 1 * (50 / 28)  # the order changes the last bit
    (1.7857142857142856, 1.7857142857142858)
    """
    try:
        found = _REC_BOX.search(ANSWER.search(text).group(1).strip())
        box: list[Any] = [int(v) for v in found.groups()]
        if sizes is not None:
            (in_w, in_h), (img_w, img_h) = sizes
            box = [box[0] / in_w * img_w, box[1] / in_h * img_h,
                   box[2] / in_w * img_w, box[3] / in_h * img_h]  # fmt: skip
        return iou(box, gt)
    except Exception:  # the released iou_reward scores any exception as 0
        return 0.0
