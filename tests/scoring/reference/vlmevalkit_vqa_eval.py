"""VLMEvalKit's ChartQA rule (relaxed accuracy), verbatim.

Source: github.com/open-compass/VLMEvalKit ``vlmeval/dataset/utils/vqa_eval.py``
(Apache-2.0; copied for testing only): ``relaxed_correctness`` (from pix2struct) and the
``relaxed_accuracy`` branch of ``process_line`` at commit c026693a (2025-08-04), which passes
``(prediction, gold)`` to a function whose parameters are ``(target, prediction)``; and as
``process_line_relaxed_e8e78f05`` the branch at e8e78f05f3080fe28154f2130321f17951c3be94
(2026-08), which passes ``(gold, prediction)``. ChartQA's hit is the max over the golds
(``hit_calculate``).
"""

# ruff: noqa
# fmt: off
from typing import Optional


# https://github.com/google-research/pix2struct/blob/main/pix2struct/metrics.py#L81
def relaxed_correctness(target: str,
                        prediction: str,
                        max_relative_change: float = 0.05) -> bool:
    def _to_float(text: str) -> Optional[float]:
        try:
            if text.endswith('%'):
                # Convert percentages to floats.
                return float(text.rstrip('%')) / 100.0
            else:
                return float(text)
        except ValueError:
            return None
    prediction = str(prediction)
    target = str(target)
    prediction_float = _to_float(prediction)
    target_float = _to_float(target)
    if prediction_float is not None and target_float:
        relative_change = abs(prediction_float - target_float) / abs(target_float)
        return relative_change <= max_relative_change
    else:
        return prediction.lower() == target.lower()


def process_line_relaxed(line):
    """``process_line(line, method='relaxed_accuracy')`` @ c026693a (list golds as a list)."""
    ret = {}
    answers = line['answer'] if isinstance(line['answer'], list) else [line['answer']]
    ret['gt'] = answers
    ret['pred'] = line['prediction'].strip()
    ret['match'] = [relaxed_correctness(ret['pred'], x) for x in ret['gt']]
    return ret


def process_line_relaxed_e8e78f05(line):
    """The same branch @ e8e78f05."""
    ret = {}
    answers = line['answer'] if isinstance(line['answer'], list) else [line['answer']]
    ret['gt'] = answers
    ret['pred'] = line['prediction'].strip()
    ret['match'] = [relaxed_correctness(x, ret['pred']) for x in ret['gt']]
    return ret


def hit(ret):
    """``hit_calculate`` for ChartQA: ``np.max(x['match'])``."""
    return max(ret['match'])
