"""Vision-SR1's rule-based evaluation, verbatim.

Source: github.com/zli12321/Vision-SR1 ``Evaluation/utils/math_utils.py::accuracy_reward`` at
commit 4480e0802d67670e01fcb403ff579bdb9b3337f5 (Apache-2.0; copied for testing only).
``Evaluation/eval_result.py`` scores every rule-based row, the MCQ sets (MMMU, MMMU-Pro,
VisNumBench, HallusionBench) included, as ``accuracy_reward(sample["response"], gold)`` (its
``<answer>`` / "Final Answer:" reading is only for the "Vision-R1 (By Huang)" outputs).
"""

# ruff: noqa
# fmt: off
from mathruler.grader import extract_boxed_content, grade_answer


def accuracy_reward(predict: str, ground_truth: str) -> float:
    # answer = extract_answer(predict)
    answer = extract_boxed_content(predict)
    return 1.0 if grade_answer(answer, ground_truth) else 0.0
