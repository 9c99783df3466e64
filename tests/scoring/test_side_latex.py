"""sympy's LaTeX parser in .venv-latex (``make setup`` builds it): the trees it hands over are
the ones sympy builds there, its errors keep their class, and a call cut short (a judge's
timeout) leaves no stale answer behind."""

from __future__ import annotations

import json
import subprocess

import pytest
import sympy
from sympy.parsing.latex.errors import LaTeXParsingError

from vlrl.scoring.side_latex import SideLatexParser, side_python

LATEX = [
    "\\frac{2}{4}+x", "2\\cdot 3", "x^{2}+2x+1", "\\sqrt{8}", "\\frac{1}{2}", "1/2", "\\pi r^2",
    "a=b+c", "\\sin(x)+\\cos(2x)", "3 \\times 10^{5}", "-\\frac{3}{6}", "\\log_{2}{8}",
    "x_1 + x_{2}", "2n+1", "1+2n", "\\frac{\\sqrt{3}}{2}", "y-2x=1", "\\infty",
]  # fmt: skip


@pytest.fixture(scope="module")
def parser():
    assert side_python().is_file(), "`make setup` builds .venv-latex"
    side = SideLatexParser()
    yield side
    side.close()


def test_the_trees_are_the_ones_sympy_builds_there(parser) -> None:
    """srepr shows every node and argument order: unevaluated ``2/4`` stays ``2 * 4**-1``."""
    code = (
        "import json, sys\nfrom sympy import srepr\nfrom sympy.parsing.latex import parse_latex\n"
        "print(json.dumps([srepr(parse_latex(t)) for t in json.loads(sys.argv[1])]))"
    )
    done = subprocess.run(
        [str(parser.python), "-c", code, json.dumps(LATEX)],
        capture_output=True,
        text=True,
        check=True,
    )
    there = json.loads(done.stdout)
    here = [sympy.srepr(parser(text)) for text in LATEX]
    assert here == there
    assert here[0] != sympy.srepr(sympy.sympify("x + 1/2")), "not evaluated on the way"


def test_an_error_keeps_its_class(parser) -> None:
    with pytest.raises(LaTeXParsingError, match="I expected something else here"):
        parser("\\frac{")
    assert parser("x") == sympy.Symbol("x"), "the process answers on after an error"


def test_a_call_cut_short_leaves_no_stale_answer(parser) -> None:
    """A timeout interrupts the read: the process is replaced, so the next call does not read
    the answer meant for the interrupted one."""
    parser("1")
    process = parser._process

    class Interrupted:
        def readline(self):
            raise TimeoutError("the judge's 30 s")

    process.stdout = Interrupted()
    with pytest.raises(TimeoutError):
        parser("2")
    assert parser._process is None and process.poll() is not None
    assert parser("3") == sympy.Integer(3)


def test_a_dead_process_is_started_again(parser) -> None:
    parser("1")
    parser._process.kill()
    parser._process.wait()
    assert parser("4") == sympy.Integer(4)


def test_a_missing_environment_says_how_to_build_it(tmp_path) -> None:
    with pytest.raises(RuntimeError, match=r"`make setup` builds \.venv-latex"):
        SideLatexParser(tmp_path / "python")("1")
