r"""OlympiadBench's rule judge as SATORI-R1's VLMEvalKit fork ran it.

Port of ``MathJudger`` and ``extract_answer`` from github.com/justairr/SATORI-R1
``VLMEvalKit/vlmeval/dataset/utils/olympiadbench.py`` (commit 8857b30f; the same in upstream
VLMEvalKit at c026693a and e8e78f05, itself ported from OpenBMB/OlympiadBench
``inference/code/math_judger.py``), called as ``OlympiadBench.evaluate`` calls it:
``judge(extract_answer(prediction), final_answer)``, the **prediction first** (the judge's
comments call its first argument the ground truth, so a percentage form is read on the
prediction's side).

What it accepts: after taking every ``\boxed{}`` (else the last line's ``$…$`` parts, else the
text), dropping ``$``, ``\left``, ``^\circ``, ``%`` and the like, the two answers are split at
top-level commas, ``\pm`` expanded, and paired in any order; a pair is equal as identical
strings, as intervals, as numbers (``float``; within 1e-8, or a factor 100 apart), as
expressions, or as equations. The fork calls ``self.sympy_sub_pi``, which it comments out, right
after comparing the two parsed expressions structurally, so an expression (or interval end) is
equal only when sympy's LaTeX parser gives the identical tree: ``\frac{2}{4}`` is not
``\frac{1}{2}``, ``1/2`` is not ``\frac{1}{2}``; the AttributeError inside an interval comparison
makes the whole pair unequal. Equations are equal when one side's difference is an integer
multiple of the other's.

Not here: the row's tolerance (``error``; VLMEvalKit passes it as the judge's precision, per
answer): the records do not carry it, so every answer is judged at the default 1e-8.

Needs sympy's ANTLR LaTeX parser (the references' ``parse_latex``), that is
antlr4-python3-runtime 4.11, which vlrl's environment cannot have: omegaconf (under dvc and
hydra-core) requires 4.9.*. It runs in a side environment, ``.venv-latex``
(:mod:`vlrl.scoring.side_latex`); without either the judge raises RuntimeError, as the reference
fails when it builds ``MathJudger``. Its logic is tested against the reference with a stand-in
parser and with sympy's (both judges reading through the side environment). Its 30 s timeout
per comparison uses ``signal.alarm``: call it from the main thread.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.rules import answer_span

#: Replacements before comparing (``MathJudger.special_signal_map``, in its order).
SPECIAL_SIGNALS = {
    "\\left": "",
    "\\right": "",
    "∶": ":",
    "，": ",",
    "$": "",
    "\\approx": "=",
    "\\simeq": "=",
    "\\sim": "=",
    "^\\prime": "'",
    "^{\\prime}": "'",
    "^\\circ": "",
    "%": "",
}
IS_EQUAL_TIMEOUT = 30


class MissingMethodError(AttributeError):
    """The fork's call of its commented-out ``sympy_sub_pi``."""


def sympy_parse_latex() -> Callable:
    """sympy's ``parse_latex`` (ANTLR backend), checked to run: in this process where
    antlr4-python3-runtime 4.11 is installed, else in the side environment ``.venv-latex``
    (:class:`vlrl.scoring.side_latex.SideLatexParser`, one process shared by every judge).

    Raises:
        RuntimeError: neither runs (no antlr4 4.11 here, no side environment).
    """
    from sympy.parsing.latex import parse_latex

    try:
        parse_latex("\\pi")
    except ImportError:
        side = _side_parser()
        try:
            side("\\pi")
        except RuntimeError as error:
            from importlib.metadata import version

            raise RuntimeError(
                "the OlympiadBench judge of SATORI-R1's VLMEvalKit needs sympy's LaTeX parser, "
                "which needs antlr4-python3-runtime 4.11 (installed here: "
                f"{version('antlr4-python3-runtime')}; omegaconf, under dvc and hydra-core, "
                f"needs 4.9.*), and its side environment does not run it: {error}"
            ) from None
        return side
    return parse_latex


@functools.cache
def _side_parser() -> Callable:
    from vlrl.scoring.side_latex import SideLatexParser

    return SideLatexParser()


def _timeout_errors() -> tuple[type[BaseException], ...]:
    from math_verify.errors import TimeoutException

    # the reference's bare excepts also catch its timeout
    return (Exception, TimeoutException)


class MathJudger:
    """``MathJudger`` of the fork; ``parse_latex`` defaults to sympy's (a test may pass another)."""

    def __init__(self, parse_latex: Callable | None = None) -> None:
        from math_verify.utils import timeout

        self.parse_latex = parse_latex or sympy_parse_latex()
        self.precision = 1e-8
        self.is_equal = timeout(IS_EQUAL_TIMEOUT)(self._is_equal)

    @staticmethod
    def split_by_comma(expr: str) -> list[str]:
        """Split at commas outside ``()`` / ``[]``."""
        depth, parts, start = 0, [], 0
        for i, char in enumerate(expr):
            if char in "([":
                depth += 1
            elif char in ")]":
                depth -= 1
            elif char == "," and depth == 0:
                parts.append(expr[start:i].strip())
                start = i + 1
        if start < len(expr):
            parts.append(expr[start:].strip())
        return parts

    @staticmethod
    def trans_plus_minus_sign(exprs: list[str]) -> list[str]:
        out = []
        for expr in exprs:
            if "\\pm" in expr:
                out += [expr.replace("\\pm", "+"), expr.replace("\\pm", "-")]
            else:
                out.append(expr)
        return out

    def judge(self, expression1: str, expression2: str, precision: float | list = 1e-8) -> bool:
        """Whether the answers match (``expression1`` is the prediction in VLMEvalKit's call)."""
        precision = precision if isinstance(precision, list) else [precision]
        try:
            expression1, expression2 = self.preprocess(expression1, expression2)
        except Exception:
            return False
        if expression1 == expression2:
            return True
        expression1 = re.sub(r"[\u4e00-\u9fff]+", "", expression1)
        expression2 = re.sub(r"[\u4e00-\u9fff]+", "", expression2)
        list1 = self.trans_plus_minus_sign(self.split_by_comma(expression1))
        list2 = self.trans_plus_minus_sign(self.split_by_comma(expression2))
        if len(precision) <= 1:
            precision = precision * len(list1)
        if len(list1) != len(list2):
            return False
        # pair every item of list1 with an equal one of list2, in the reference's visiting order
        idx = -1
        while list1:
            idx = (idx + 1) % len(list1)
            item1 = list1[idx]
            self.precision = precision[idx]
            for item2 in list2:
                try:
                    if self.is_equal(item1, item2):
                        list1.remove(item1)
                        list2.remove(item2)
                        precision.remove(self.precision)
                        break
                except _timeout_errors():
                    continue
            else:
                return False
        return True

    @staticmethod
    def is_interval(expr: str) -> bool:
        return expr.startswith(("(", "[")) and expr.endswith((")", "]"))

    def _is_equal(self, expression1: str, expression2: str) -> bool:
        errors = _timeout_errors()
        if expression1 == expression2 and expression1 != "" and expression2 != "":
            return True
        if self.is_interval(expression1) and self.is_interval(expression2):
            try:
                if self.interval_equal(expression1, expression2):
                    return True
            except errors:
                return False
        checks = (
            lambda: self.numerical_equal(expression1, expression2),
            lambda: (
                self.expression_equal(expression1, expression2)
                and not ("=" in expression1 and "=" in expression2)
            ),
            lambda: self.equation_equal(expression1, expression2),
        )
        for check in checks:
            try:
                if check():
                    return True
            except errors:
                pass
        return False

    def numerical_equal(self, expression1: str, expression2: str) -> bool:
        reference, prediction = float(expression1), float(expression2)
        candidates = [reference / 100, reference, reference * 100]
        return any(abs(item - prediction) <= self.precision * 1.01 for item in candidates)

    def expression_equal(self, exp1: str, exp2: str) -> bool:
        from sympy import sympify

        def extract_expression(expression: str) -> str:
            if "=" in expression:
                expression = expression.split("=")[1]
            return expression.strip()

        expr1 = sympify(self.parse_latex(extract_expression(exp1)))
        expr2 = sympify(self.parse_latex(extract_expression(exp2)))
        if expr1 == expr2:
            return True
        # the fork goes on with self.sympy_sub_pi(...), a method it comments out
        raise MissingMethodError("'MathJudger' object has no attribute 'sympy_sub_pi'")

    def equation_equal(self, expression1: str, expression2: str) -> bool:
        from sympy import Eq, simplify

        def simplify_equation(latex_eq: str):
            lhs, rhs = latex_eq.split("=")
            equation = Eq(self.parse_latex(lhs), self.parse_latex(rhs))
            return simplify(equation.lhs - equation.rhs)

        expr1, expr2 = simplify_equation(expression1), simplify_equation(expression2)
        ratio1, ratio2 = simplify(expr1 / expr2), simplify(expr2 / expr1)
        return bool((ratio1.is_Integer and ratio1 != 0) or (ratio2.is_Integer and ratio2 != 0))

    def interval_equal(self, expression1: str, expression2: str) -> bool:
        def compare_two_interval(inter1: str, inter2: str) -> bool:
            if inter1[0] != inter2[0] or inter1[-1] != inter2[-1]:
                return False
            items1, items2 = inter1.strip("[]()").split(","), inter2.strip("[]()").split(",")
            return all(self.expression_equal(a, b) for a, b in zip(items1, items2, strict=False))

        if expression1 == expression2:
            return True
        list1, list2 = expression1.split("\\cup"), expression2.split("\\cup")
        if len(list1) != len(list2):
            return False
        return all(compare_two_interval(a, b) for a, b in zip(list1, list2, strict=True))

    def preprocess(self, expression1: str, expression2: str) -> tuple[str, str]:
        return _replace_signals(_boxed_or_formulas(expression1)), _replace_signals(
            _boxed_or_formulas(expression2)
        )


def _boxed_or_formulas(latex_str: str) -> str:
    r"""Every ``\boxed{}``'s content, each followed by a comma; without one, the ``$…$`` parts of
    the last line, likewise; without those, the text (``preprocess.extract_boxed_content``).

    Raises:
        ValueError: a ``\boxed{`` whose brace is not closed.
    """
    results = ""
    for match in re.finditer(r"\\boxed{", latex_str):
        start = end = match.end()
        depth = 1
        while depth > 0 and end < len(latex_str):
            if latex_str[end] == "{":
                depth += 1
            elif latex_str[end] == "}":
                depth -= 1
            end += 1
        if depth != 0:
            raise ValueError("Mismatched braces in LaTeX string.")
        results += latex_str[start : end - 1] + ","
    if results == "":
        last_line = latex_str.strip().split("\n")[-1]
        answers = re.findall(r"\$(.*?)\$", last_line)
        results = "".join(answer + "," for answer in answers) if answers else latex_str
    return results


def _replace_signals(expression: str) -> str:
    """``preprocess.sepcial_symbol_replace``."""
    if "\\in " in expression:
        expression = expression.split("\\in ")[1]
    for signal, replacement in SPECIAL_SIGNALS.items():
        expression = expression.replace(signal, replacement)
    expression = expression.strip("\n$,.:;^_=+`!@#$%^&*~，。")  # noqa: B005 (a set of chars)
    return re.sub(r"\\(?:mathrm|mathbf)\{~?([^}]*)\}", r"\1", expression)


def extract_final_answer(model_output: str) -> str:
    """``extract_answer``: the text after the last "So the final answer is" (Chinese subsets:
    "所以最终答案是") to the end of its line, else the whole output. The reference picks the
    phrase by the subset's language; here the Chinese phrase is looked for first.

    >>> extract_final_answer("x\\nSo the final answer is $\\\\boxed{3}$.\\nDone")
    '$\\\\boxed{3}$.'
    """
    for phrase in ("所以最终答案是(.*)", "So the final answer is (.*)"):
        matches = re.findall(phrase, model_output)
        if matches:
            return matches[-1].strip()
    return model_output


@functools.cache
def _judge() -> MathJudger:
    return MathJudger()


def olympiad_satori(candidate: Candidate) -> Verdict:
    """OlympiadBench scored by SATORI-R1's VLMEvalKit (see the module docstring): the judge of
    :func:`extract_final_answer` of the answer span (VLMEvalKit's prediction; SATORI's Qwen2-VL
    wrapper passes the first one-line ``<answer>`` content, else a space) against any gold.

    Raises:
        RuntimeError: sympy's LaTeX parser cannot run (:func:`sympy_parse_latex`).
        ValueError: a problem type other than numerical and free_form.
    """
    if candidate.problem_type not in {"numerical", "free_form"}:
        raise ValueError(
            f"item {candidate.item_id!r}: the OlympiadBench judge has no rule for problem_type "
            f"{candidate.problem_type!r}"
        )
    judge = _judge()
    answer = extract_final_answer(answer_span(candidate.response))
    return verdict(answer or None, any(judge.judge(answer, gold) for gold in candidate.golds))
