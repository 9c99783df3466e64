"""VLMEvalKit's MATH-Vision answer check ``is_equal``, verbatim.

Source: github.com/open-compass/VLMEvalKit ``vlmeval/dataset/utils/mathv.py`` at commit
e8e78f05f3080fe28154f2130321f17951c3be94 (Apache-2.0; copied for testing only), which imports
``latex2sympy2_extended`` (c026693a imported ``latex2sympy2``; the function is otherwise the
same). Its ``@timeout_decorator.timeout(30, use_signals=False)`` is left out (not installed).
It ``eval``s both strings: call it on test inputs only.
"""

# ruff: noqa
# fmt: off
from latex2sympy2_extended import latex2sympy


def is_equal(asw: str, gt_asw: str) -> bool:
    if not isinstance(asw, str) != str or not isinstance(gt_asw, str):
        print('Warning: input is not string')
        print(asw, gt_asw)
    asw = str(asw).lower().strip()
    gt_asw = str(gt_asw).lower().strip()
    if gt_asw == asw:
        return True
    try:
        a = eval(gt_asw)
        b = eval(asw)
        if abs(a - b) < 1e-6:
            return True
    except Exception:
        pass
    try:
        a = latex2sympy(gt_asw)
        b = latex2sympy(asw)
        if abs(eval(str(a)) - eval(str(b))) < 1e-6:
            return True
        if abs(a - b) < 1e-6:
            return True
    except Exception:
        pass
    return False
