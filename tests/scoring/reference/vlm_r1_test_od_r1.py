"""VLM-R1's OVD evaluation, verbatim (the scoring functions and the scoring loop's body; model,
data loading and saving left out).

Source: github.com/om-ai-lab/VLM-R1 ``src/eval/test_od_r1.py`` at commit
90052f478646e38bc67363862f699b7afca6b337 (last changed in ae286208; lines 1-3 and 13-38, and
125-132 of the scoring loop); Apache-2.0; copied for testing only. ``score_one`` wraps that loop
body in a function (a ``def`` and the gold box for lines 121-124, which unpack the same item, and a ``return`` of
the box read and the verdict the loop counts) so a test can call it with one output and its gold
box.
"""

# ruff: noqa
# fmt: off
import re
import os
import json

def extract_bbox_answer(content):
    pattern = r'```json(.*?)```'
    json_match = re.search(pattern, content, re.DOTALL)
    bbox_json = json_match.group(1).strip() if json_match else None

    if bbox_json:
        try:
            bbox = json.loads(bbox_json)[0]['bbox_2d']
            return bbox, False
        except:
            return [0, 0, 0, 0], False
    else:
        return [0, 0, 0, 0], False


def iou(box1, box2):
    inter_x1 = max(box1[0], box2[0])
    inter_y1 = max(box1[1], box2[1])
    inter_x2 = min(box1[2] - 1, box2[2] - 1)
    inter_y2 = min(box1[3] - 1, box2[3] - 1)
    if inter_x1 < inter_x2 and inter_y1 < inter_y2:
        inter = (inter_x2 - inter_x1 + 1) * (inter_y2 - inter_y1 + 1)
    else:
        inter = 0
    union = (box1[2] - box1[0]) * (box1[3] - box1[1]) + (box2[2] - box2[0]) * (box2[3] - box2[1]) - inter
    return float(inter) / union


def score_one(original_output, ground_truth):
            ground_truth_normalized = ground_truth
            model_answer, normalized = extract_bbox_answer(original_output)

            # Count correct answers
            correct = 0
            if model_answer is not None:
                iou_value = iou(model_answer, ground_truth_normalized if normalized else ground_truth)
                if iou_value > 0.5:
                    correct = 1
            return model_answer, correct
