r"""Box answers matched as VLM-R1's REC evaluation matches them.

Port of github.com/om-ai-lab/VLM-R1 ``src/eval/test_rec_r1.py`` (commit 90052f47):
``extract_bbox_answer``, ``resize_bbox`` and ``iou``, correct iff IoU > 0.5. Stricter than
vlrl's own rule (:func:`vlrl.scoring.rules.score_item`): only the **first** ``<answer>…</answer>``
is read, the box must sit in braces (``{"bbox_2d": [x1, y1, x2, y2]}``, the greedy pattern taking
the last box of several) with non-negative integers, and a reply without one scores the box
``[0, 0, 0, 0]``.

:func:`vlm_r1_rec_baseline` ports the repository's other script, ``src/eval/test_rec_baseline.py``
(same commit), which scored its SFT and base models (answers without ``<answer>`` tags): the
**first** ``[a, b, c, d]`` anywhere in the output, signed decimals allowed, else ``[0, 0, 0,
0]``; the same ``resize_bbox`` and ``iou``, correct iff IoU > 0.5.

:func:`vlm_r1_od` ports the OVD evaluation script, ``src/eval/test_od_r1.py`` (same commit): the
first ```` ```json ``` ```` block's ``[0]["bbox_2d"]``, else ``[0, 0, 0, 0]``; no rescale; the
same ``iou``, correct iff IoU > 0.5.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from vlrl.items.answers import parse_box
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.rules import rescale_box

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
# test_od_r1.py's ``pattern``, with its flag (``re.search``, DOTALL)
_OD_JSON_BLOCK = re.compile(r"```json(.*?)```", re.DOTALL)
_BOX = re.compile(r"\{.*\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)]\s*.*\}", re.DOTALL)
# test_rec_baseline.py's ``bbox_pattern``, character for character (``re.search``, no flags)
_NUMBER = r"(\s*-?\d*\.?\d+\s*)"
_BASELINE_BOX = re.compile(rf"\[{_NUMBER},\s*{_NUMBER},\s*{_NUMBER},\s*{_NUMBER}\]")


def extract_bbox(content: str) -> list[int] | None:
    """The box VLM-R1 reads (``extract_bbox_answer``), None where it falls back to ``[0, 0, 0,
    0]``.

    >>> extract_bbox('<answer>{"bbox_2d": [1, 2, 30, 40]}</answer><answer>{[5, 5, 9, 9]}</answer>')
    [1, 2, 30, 40]
    >>> [extract_bbox(s) for s in ["<answer>[1, 2, 30, 40]</answer>", "{[1, 2, 30, 40]}",
    ...                            "<answer>{[1.5, 2, 30, 40]}</answer>"]]
    [None, None, None]
    """
    answer = _ANSWER.search(content)
    if answer is None:
        return None
    box = _BOX.search(answer.group(1).strip())
    return [int(v) for v in box.groups()] if box else None


def vlm_r1_iou(box1: list[float], box2: list[float]) -> float:
    """VLM-R1's ``iou``: the intersection counts only where the boxes overlap by more than one
    unit in each direction (``min(x2) - 1 > max(x1)``), areas have no +1; 0 where the reference
    divides by a zero union.

    >>> vlm_r1_iou([0, 0, 10, 10], [5, 0, 15, 10]), vlm_r1_iou([0, 0, 10, 10], [9, 0, 19, 10])
    (0.3333333333333333, 0.0)
    """
    inter_x1, inter_y1 = max(box1[0], box2[0]), max(box1[1], box2[1])
    inter_x2, inter_y2 = min(box1[2] - 1, box2[2] - 1), min(box1[3] - 1, box2[3] - 1)
    if inter_x1 < inter_x2 and inter_y1 < inter_y2:
        inter = (inter_x2 - inter_x1 + 1) * (inter_y2 - inter_y1 + 1)
    else:
        inter = 0
    union = (
        (box1[2] - box1[0]) * (box1[3] - box1[1])
        + (box2[2] - box2[0]) * (box2[3] - box2[1])
        - inter
    )
    return float(inter) / union if union else 0.0


def vlm_r1_rec(candidate: Candidate) -> Verdict:
    """VLM-R1's REC verdict: the box of :func:`extract_bbox` (``[0, 0, 0, 0]`` without one),
    rescaled from the model-input frame to the image's when ``candidate.box_frames`` is set
    (``resize_bbox``), against the first gold box (``candidate.boxes[0]``, else the box in the
    answer); score = IoU (:func:`vlm_r1_iou`, floored at 0), correct iff IoU > the threshold.

    >>> gold = Candidate('<answer>{"bbox_2d": [0, 0, 10, 10]}</answer>', "", "grounding",
    ...                  boxes=((0, 0, 10, 20),))
    >>> vlm_r1_rec(gold)
    Verdict(extracted='[0, 0, 10, 10]', score=0.5, correct=0)

    Raises:
        ValueError: the candidate is not grounding, or has no gold box.
    """
    return _rec_verdict(candidate, extract_bbox, "VLM-R1's REC rule")


def extract_bbox_od(content: str) -> list[float] | None:
    r"""The box VLM-R1's OVD evaluation reads (``test_od_r1.py`` ``extract_bbox_answer``), None
    where it falls back to ``[0, 0, 0, 0]``: the first ```` ```json … ``` ```` block anywhere in
    the output, parsed as JSON, its first element's ``bbox_2d``.

    Where the script would stop with an error instead (a ``bbox_2d`` that is not four or more
    numbers: its ``iou`` then fails), or would compute with a value no IoU can take (NaN,
    infinity), this gives None too: the item scores 0, as it does in the script when the IoU is
    NaN. JSON's ``true``/``false`` count as 1 and 0 and a longer list's first four are read, as
    the script's arithmetic reads them.

    >>> extract_bbox_od('<think>x</think><answer>```json [{"bbox_2d": [1, 2, 30, 40], '
    ...                 '"label": "cup"}, {"bbox_2d": [5, 5, 9, 9]}] ```</answer>')
    [1.0, 2.0, 30.0, 40.0]
    >>> [extract_bbox_od(s) for s in ['<answer>{"bbox_2d": [1, 2, 30, 40]}</answer>',
    ...  '```json {"bbox_2d": [1, 2, 3, 4]} ```', '```json [{"bbox_2d": [1, 2, 3]}] ```']]
    [None, None, None]
    """
    block = _OD_JSON_BLOCK.search(content)
    if block is None or not block.group(1).strip():
        return None
    try:
        box = json.loads(block.group(1).strip())[0]["bbox_2d"]
    except Exception:  # the script's bare ``except``: any failure reads [0, 0, 0, 0]
        return None
    if not isinstance(box, list) or len(box) < 4:
        return None
    if not all(isinstance(v, int | float) for v in box[:4]):
        return None
    values = [float(v) for v in box[:4]]
    return values if all(math.isfinite(v) for v in values) else None


def vlm_r1_od(candidate: Candidate) -> Verdict:
    """VLM-R1's OVD evaluation verdict (``test_od_r1.py``): the box of :func:`extract_bbox_od`
    (``[0, 0, 0, 0]`` without one), never rescaled (the script's ``normalized`` is always
    False), IoU (:func:`vlm_r1_iou`, floored at 0) against the first gold box, correct iff IoU
    > the threshold.

    >>> vlm_r1_od(Candidate('```json [{"bbox_2d": [0, 0, 10, 10]}] ```', "", "grounding",
    ...                     boxes=((0, 0, 10, 20),), box_frames=((5, 10), (10, 20))))
    Verdict(extracted='[0.0, 0.0, 10.0, 10.0]', score=0.5, correct=0)

    Raises:
        ValueError: the candidate is not grounding, or has no gold box.
    """
    return _rec_verdict(candidate, extract_bbox_od, "VLM-R1's OVD rule", rescale=False)


def _rec_verdict(
    candidate: Candidate,
    extract: Callable[[str], list[float] | None],
    rule: str,
    rescale: bool = True,
) -> Verdict:
    """What VLM-R1's REC and OVD scripts share once a box is read: ``[0, 0, 0, 0]`` without
    one, the rescale from the model-input frame (``rescale``, where the candidate has frames),
    IoU floored at 0 against the first gold box, correct iff IoU > the threshold."""
    if candidate.problem_type != "grounding":
        raise ValueError(
            f"item {candidate.item_id!r}: {rule} has no rule for problem_type "
            f"{candidate.problem_type!r}"
        )
    gold = list(candidate.boxes[0]) if candidate.boxes else parse_box(candidate.answer)
    if gold is None:
        raise ValueError(f"item {candidate.item_id!r}: no gold box (boxes empty, answer has none)")
    read = extract(candidate.response)
    box: list[float] = list(read) if read is not None else [0, 0, 0, 0]
    if rescale and candidate.box_frames is not None:
        input_size, image_size = candidate.box_frames
        box = rescale_box(box, list(input_size), list(image_size))
    iou = max(vlm_r1_iou(box, gold), 0.0)
    extracted = json.dumps(read) if read is not None else None
    return Verdict(extracted, iou, int(iou > candidate.iou_threshold))


def extract_bbox_baseline(content: str) -> list[float] | None:
    r"""The box VLM-R1's baseline script reads (``test_rec_baseline.py`` ``extract_bbox_answer``),
    None where it falls back to ``[0, 0, 0, 0]``: the leftmost ``[a, b, c, d]`` of four signed
    decimals (``-3``, ``.5``, ``10.25``; not ``1e3``, ``+3`` or ``10.``) anywhere in the
    output, tags or not, as floats.

    >>> extract_bbox_baseline('```json\n[{"bbox_2d": [1, 2.5, 30, 40]}, {"bbox_2d": [5, 5, 9, 9]}]'
    ...                       "\n```")
    [1.0, 2.5, 30.0, 40.0]
    >>> [extract_bbox_baseline(s) for s in ["[ -1 ,.5,3, 4 ]", "[1, 2, 3]", "[1, 2, 3, 4, 5]"]]
    [[-1.0, 0.5, 3.0, 4.0], None, None]
    """
    box = _BASELINE_BOX.search(content)
    # float() strips the whitespace the groups capture, as the script's does
    return [float(v) for v in box.groups()] if box else None


def vlm_r1_rec_baseline(candidate: Candidate) -> Verdict:
    """VLM-R1's baseline REC verdict (``test_rec_baseline.py``): the box of
    :func:`extract_bbox_baseline` (``[0, 0, 0, 0]`` without one), otherwise as
    :func:`vlm_r1_rec`: rescaled when ``candidate.box_frames`` is set, IoU (:func:`vlm_r1_iou`,
    floored at 0) against the first gold box, correct iff IoU > the threshold.

    >>> vlm_r1_rec_baseline(Candidate('The box is [0, 0, 10.0, 10]', "", "grounding",
    ...                               boxes=((0, 0, 10, 20),)))
    Verdict(extracted='[0.0, 0.0, 10.0, 10.0]', score=0.5, correct=0)

    Raises:
        ValueError: the candidate is not grounding, or has no gold box.
    """
    return _rec_verdict(candidate, extract_bbox_baseline, "VLM-R1's baseline REC rule")
