"""OVDEval's NMS-AP evaluation, verbatim: ``calculate_iou``, ``nms_threaded`` and ``cal_map``,
and the body of its ``__main__`` from the per-image grouping on, wrapped in a function.

Source: github.com/om-ai-lab/OVDEval ``eval.py`` at commit
2ba0aa95bf71988207599d7b78cf0005ea6c9e19 (last changed in 40c12fe8); lines 1-75 below as they
are. ``nms_ap`` is lines 109-135 of its ``__main__`` with the file reading and writing, the
prints and ``num_threads`` left out, and ``cal_map``'s body at the end (its own lines 68-74,
given the annotations as a ``COCO`` object instead of a path) returning ``stats[0]``, the AP
the summary prints first. MIT licence (the repository's LICENSE); copied for testing only.
"""

# ruff: noqa
# fmt: off
import json, argparse, os
import numpy as np
import collections
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

def calculate_iou(box1, boxes2):
    """
    Calculate the intersection ratio (IoU)
    """
    x1, y1, w1, h1 = box1
    x2 = boxes2[:, 0]
    y2 = boxes2[:, 1]
    w2 = boxes2[:, 2]
    h2 = boxes2[:, 3]

    xmin = np.maximum(x1, x2)
    ymin = np.maximum(y1, y2)
    xmax = np.minimum(x1 + w1, x2 + w2)
    ymax = np.minimum(y1 + h1, y2 + h2)

    intersection = np.maximum(0, xmax - xmin) * np.maximum(0, ymax - ymin)
    union = w1 * h1 + w2 * h2 - intersection

    # Handle cases where the denominator is zero
    iou = np.where(union == 0, 0, intersection / union)

    return iou

def nms_threaded(gt, prediction, iou_threshold, num_threads):
    gt_boxes = np.array([box['bbox'] for box in gt])

    boxes = np.array([box['bbox'] for box in prediction])
    scores = np.array([box['score'] for box in prediction])

    keep_list = []
    remove_list = []
    for idx, i in enumerate(gt):
        gt_box = gt_boxes[idx]
        iou = calculate_iou(gt_box, boxes)
        indices =  np.where(iou > iou_threshold)[0].tolist()
        if indices:
            match_scores = scores[indices]
            sorted_indices = np.argsort(match_scores)[::-1]

            final_indices = []
            for sort_idx in sorted_indices.tolist():
                final_indices.append(indices[sort_idx])

            if final_indices:
                keep_list.append(final_indices[0])
                remove_list += final_indices[1:]

    final_remove_list = []
    for i in remove_list:
        if i not in keep_list:
            final_remove_list.append(i)

    selected_boxes = []
    for idx, i in enumerate(prediction):
        if idx not in final_remove_list:
            selected_boxes.append(i)

    return selected_boxes

def cal_map(gt_data, pred_data):
    
    anno = COCO(gt_data)
    pred = anno.loadRes(pred_data)
    eval = COCOeval(anno, pred, 'bbox')

    eval.evaluate()
    eval.accumulate()
    eval.summarize()
    

def nms_ap(gt_data, before_nms_results, iou_threshold):
    gt_data_ann = gt_data['annotations']

    image_dict = collections.defaultdict(list)
    gt_dict = collections.defaultdict(list)

    for i in before_nms_results:
        image_dict[i["image_id"]].append(i)

    for i in gt_data_ann:
        gt_dict[i["image_id"]].append(i)

    after_nms_results = []
    # Call multithreaded parallelized NMS functions
    for img, preds in image_dict.items():
        gts = gt_dict[img]
        selected_boxes = nms_threaded(gts, preds, iou_threshold, 16)
        after_nms_results += selected_boxes

    anno = COCO()
    anno.dataset = gt_data
    anno.createIndex()
    pred = anno.loadRes(after_nms_results)
    eval = COCOeval(anno, pred, 'bbox')

    eval.evaluate()
    eval.accumulate()
    eval.summarize()
    return eval.stats[0]
