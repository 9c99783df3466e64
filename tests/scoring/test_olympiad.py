"""vlrl.scoring.olympiad's ``MathJudger`` against the verbatim reference
(``reference/vlmevalkit_olympiadbench.py``: justairr/SATORI-R1 @ 8857b30,
``VLMEvalKit/vlmeval/dataset/utils/olympiadbench.py``) on targeted inputs, method by method:
splitting at commas, ``\\pm``, intervals, the numeric tolerance on both sides of its threshold,
the order in which answers are paired, equations, preprocessing, and the judge's wiring (its
30 s timeout, the error naming the missing LaTeX parser, the problem types it scores).

Both judges read LaTeX with the same stand-in parser (latex2sympy2_extended): sympy's own needs
antlr4 4.11, which this environment cannot have (see the module docstring of the port); the
random differential test with sympy's parser is in test_maths.py.
"""

from __future__ import annotations

import functools
import threading
import time
from importlib.metadata import version

import pytest
import sympy
import sympy.parsing.latex
from latex2sympy2_extended import latex2sympy
from reference import vlmevalkit_olympiadbench as vk

from vlrl.scoring import olympiad
from vlrl.scoring.candidate import Candidate


@pytest.fixture
def judges(monkeypatch: pytest.MonkeyPatch) -> tuple[olympiad.MathJudger, vk.MathJudger]:
    """The port and the reference, both on the stand-in parser."""
    monkeypatch.setattr(vk, "parse_latex", latex2sympy)
    return olympiad.MathJudger(latex2sympy), vk.MathJudger()


def outcome(fn, *args, **kwargs):
    """The value, or the exception's type name and message (so the two sides compare)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # recorded and compared
        # the port's MissingMethodError stands for the reference's AttributeError
        kind = AttributeError if isinstance(exc, olympiad.MissingMethodError) else type(exc)
        return kind.__name__, str(exc)


def agree(judges, method: str, *args, **kwargs):
    """``method`` of both judges on the same arguments, each on copies of the lists (``judge``
    consumes its precision list, and a test's parameters must outlive a run: mutmut runs the
    suite twice in one process); their common outcome."""
    port, reference = judges

    def fresh():
        return (
            [list(a) if isinstance(a, list) else a for a in args],
            {k: list(v) if isinstance(v, list) else v for k, v in kwargs.items()},
        )

    (ours_args, ours_kwargs), (copy, kwcopy) = fresh(), fresh()
    ours = outcome(getattr(port, method), *ours_args, **ours_kwargs)
    theirs = outcome(getattr(reference, method), *copy, **kwcopy)
    assert ours == theirs, (method, args, kwargs)
    return ours


@pytest.mark.parametrize(
    ("expr", "parts"),
    [
        ("((1,2),3),4", ["((1,2),3)", "4"]),  # depth counts nested brackets
        ("[1,(2,3)],x", ["[1,(2,3)]", "x"]),
        ("X,1", ["X", "1"]),
        ("1,2,", ["1", "2"]),  # nothing after a trailing comma
        ("", []),
        ("a , b", ["a", "b"]),
    ],
)
def test_split_by_comma(judges, expr: str, parts: list[str]) -> None:
    assert agree(judges, "split_by_comma", expr) == parts


def test_plus_minus_expands_in_place(judges) -> None:
    assert agree(judges, "trans_plus_minus_sign", ["1", "\\pm 2", "3"]) == [
        "1",
        "+ 2",
        "- 2",
        "3",
    ]


@pytest.mark.parametrize(
    ("expr", "interval"),
    [
        ("(1,2)", True),
        ("[1,2]", True),
        ("(1,2]", True),
        ("[1,2)", True),
        ("(1", False),
        ("1)", False),
        ("[a", False),
        ("b]", False),
        ("x", False),
    ],
)
def test_is_interval(judges, expr: str, interval: bool) -> None:
    assert agree(judges, "is_interval", expr) is interval


@pytest.mark.parametrize(
    ("prediction", "gold", "correct", "why"),
    [
        ("X,Y", "Y,X", True, "capital letters are no brackets when splitting"),
        ("3个", "3", True, "Chinese characters dropped from the prediction"),
        ("3", "3个", True, "and from the gold"),
        ("中文", "", True, "nothing left on either side: nothing to pair"),
        ("1,\\pm 2", "1,2,-2", True, "\\pm expanded beside other answers"),
        ("a,\\frac{", "\\frac{,a", True, "identical unparsable parts pair"),
        ("1,,2", "2,,1", False, "two empty parts never pair"),
        ("X", "", False, "one answer against none"),
        ("x=1", "y=1", False, "equal right-hand sides of two equations are not enough"),
        ("x=1", "x=2", False, "equations whose quotient is no integer"),
        ("y=2x+1", "2y=4x+2", True, "an integer multiple of the equation"),
        ("(1,2)", "(1,2", False, "an interval against an unclosed one"),
        ("(1,2)", "(1, 2)", True, "interval ends compared one by one"),
        ("(1,2)\\cup(3,4)", "(1, 2)\\cup(3,4)", True, "unions compared interval by interval"),
        ("work $1$\nso $2$", "2", True, "the formulas of the last line only"),
        ("\\boxed{3", "3", False, "an unclosed box"),
        ("3;", "3", True, "trailing punctuation stripped"),
        ("X", "X.", True, "a letter kept when stripping"),
        # the reference visits the items in the order 0, 2, 1 and pairs greedily, so it fails
        # here although a pairing exists; any other order finds it
        ("1,100,100", "1,0.01,100", False, "greedy pairing in the reference's order"),
        ("1,1,100", "1,100,0.01", True, "greedy pairing in the reference's order"),
        ("1,1,100", "1,0.01,10000", True, "greedy pairing in the reference's order"),
        ("1,100,1", "1,100,0.01", False, "greedy pairing in the reference's order"),
        ("1,10000,100", "100,1,0.01", False, "greedy pairing in the reference's order"),
    ],
)
def test_judge_cases(judges, prediction: str, gold: str, correct: bool, why: str) -> None:
    assert agree(judges, "judge", prediction, gold) is correct, why


@pytest.mark.parametrize(
    ("prediction", "gold", "precision", "correct"),
    [
        ("0", "1.01", 1.0, True),  # exactly at the threshold, precision * 1.01
        ("0", "1.005", 1.0, True),
        ("0", "1.02", 1.0, False),
        ("0", "1.5", 1.0, False),
        ("1.001", "1", [0.01], True),  # a list gives each answer's precision
        ("1.001", "1", 0.01, True),
        ("1.001", "1", [0.0001], False),
        ("1,2.1", "2,1", [0.01, 0.2], True),  # each answer's own precision
        ("1,2.1", "2,1", [0.2, 0.01], False),
        ("1.1,2", "2,1", [0.2, 0.01], True),
        ("0", "1.01e-8", 1e-8, True),  # the default precision, both sides
        ("0", "1.02e-8", 1e-8, False),
    ],
)
def test_judge_precision(judges, prediction: str, gold: str, precision, correct: bool) -> None:
    assert agree(judges, "judge", prediction, gold, precision) is correct


def test_a_short_precision_list_fails_as_the_reference_does(judges) -> None:
    """Two precisions for three answers: the reference indexes past the list's end."""
    assert agree(judges, "judge", "1,2,3", "3,2,1", [0.1, 0.1]) == (
        "IndexError",
        "list index out of range",
    )


@pytest.mark.parametrize(
    ("reference", "prediction", "equal"),
    [
        ("1", "1.5", False),
        ("0", "1.01e-8", True),  # the default 1e-8, times 1.01
        ("0", "1.02e-8", False),
        ("12", "0.12", True),  # a percentage either way
        ("12", "1200", True),
        ("12", "120", False),
    ],
)
def test_numerical_equal_on_a_fresh_judge(judges, reference: str, prediction: str, equal) -> None:
    """Before any ``judge`` call sets it, the precision is the default 1e-8."""
    assert agree(judges, "numerical_equal", reference, prediction) is equal


@pytest.mark.parametrize(
    ("first", "second", "equal"),
    [
        ("(1,2)", "(1,2)", True),
        ("(1,2)", "(1, 2)", True),
        ("[1,2]", "[1, 2]", True),
        ("(1,2)", "(1,2]", False),
        ("[1,2)", "(1,2)", False),
        ("(X,1)", "(X, 1)", True),
        ("(1,2)", "(1,2,3)", True),  # ends zipped: the extra one is not looked at
        ("(1,2)\\cup(3,4)", "(1, 2)\\cup(3,4)", True),
        ("(1,2)\\cup(3,4)", "(1,2)", False),
        ("(1,2)", "(1,2)\\cup(3,4)", False),
        ("(1,2)\\cup(3,4)", "(1,2)\\cup[3,4)", False),
    ],
)
def test_interval_equal(judges, first: str, second: str, equal: bool) -> None:
    assert agree(judges, "interval_equal", first, second) is equal


def test_interval_ends_that_differ_raise(judges) -> None:
    """Past a structural comparison the fork calls its commented-out ``sympy_sub_pi``."""
    message = "'MathJudger' object has no attribute 'sympy_sub_pi'"
    assert agree(judges, "interval_equal", "(1,2)", "(1,3)") == ("AttributeError", message)
    assert agree(judges, "expression_equal", "x", "y") == ("AttributeError", message)
    assert agree(judges, "expression_equal", "x=2", "y=2") is True


@pytest.mark.parametrize(
    ("first", "second", "equal"),
    [
        ("x", "x", True),
        ("", "", False),
        ("(x)", "x", True),
        ("(1,2)", "(1,3)", False),  # an interval rule that raises is final when both are ones
        # only one is an interval (a trailing space): the unions compared as sets, in any order
        ("(2,3)\\cup(0,1)", "(0,1)\\cup(2,3) ", True),
        ("(0,1)\\cup(2,3) ", "(2,3)\\cup(0,1)", True),
    ],
)
def test_is_equal(judges, first: str, second: str, equal: bool) -> None:
    assert agree(judges, "is_equal", first, second) is equal


@pytest.mark.parametrize(
    ("first", "second", "equal"),
    [
        ("y=2x+1", "2y=4x+2", True),
        ("y=2x+1", "2x+1=y", True),  # a factor -1
        ("x=1", "x=1", True),
        ("x=1", "x=2", False),
        ("y=x", "y=2x", False),
        # an identity has difference 0: a zero quotient one way, complex infinity the other
        ("(x+1)^2=x^2+2x+1", "y=1", False),
        ("y=1", "(x+1)^2=x^2+2x+1", False),
    ],
)
def test_equation_equal(judges, first: str, second: str, equal: bool) -> None:
    assert agree(judges, "equation_equal", first, second) is equal


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("x=3.", "X", ("x=3", "X")),
        ("3;", "X.", ("3", "X")),
        ("\\boxed{1}, \\boxed{2}", "$x \\in (1,2]$", ("1,2", "(1,2]")),
        (
            "a $1$\nb $2$ and $3$",
            "\\mathrm{~cm} 5\\%",
            ("2,3", "cm 5\\"),
        ),  # "\\%" keeps its backslash
        ("\\left(1,2\\right)", "90^\\circ", ("(1,2)", "90")),
    ],
)
def test_preprocess(judges, first: str, second: str, expected: tuple[str, str]) -> None:
    assert agree(judges, "preprocess", first, second) == expected


def test_an_unclosed_box_is_an_error(judges) -> None:
    assert agree(judges, "preprocess", "\\boxed{1", "1") == (
        "ValueError",
        "Mismatched braces in LaTeX string.",
    )


def _antlr_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_latex: str):
        raise ImportError("LaTeX parsing requires the antlr4 Python package")

    monkeypatch.setattr(sympy.parsing.latex, "parse_latex", broken)
    # a side parser of this test's own: the module's shared one stays as it was
    fresh = functools.cache(olympiad._side_parser.__wrapped__)
    monkeypatch.setattr(olympiad, "_side_parser", fresh)


def test_without_antlr_here_the_side_environment_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """antlr4 4.9 in this environment (omegaconf's): sympy's parser runs in .venv-latex."""
    from vlrl.scoring.side_latex import SideLatexParser

    _antlr_missing(monkeypatch)
    parser = olympiad.sympy_parse_latex()
    assert isinstance(parser, SideLatexParser)
    assert parser is olympiad.sympy_parse_latex(), "one side process for every judge"
    assert sympy.srepr(parser("\\frac{2}{4}")) == (
        "Mul(Integer(2), Pow(Integer(4), Integer(-1)))"
    ), "unevaluated, as parsed"


def test_the_missing_parser_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from vlrl.scoring import side_latex

    _antlr_missing(monkeypatch)
    monkeypatch.setenv(side_latex.PYTHON_ENV, str(tmp_path / "python"))
    with pytest.raises(RuntimeError) as error:
        olympiad.sympy_parse_latex()
    assert str(error.value) == (
        "the OlympiadBench judge of SATORI-R1's VLMEvalKit needs sympy's LaTeX parser, which "
        f"needs antlr4-python3-runtime 4.11 (installed here: {version('antlr4-python3-runtime')}; "
        "omegaconf, under dvc and hydra-core, needs 4.9.*), and its side environment does not "
        f"run it: sympy's LaTeX parser runs in {tmp_path / 'python'}, which does not exist: "
        "`make setup` builds .venv-latex (envs/latex.txt)"
    )
    assert error.value.__suppress_context__


def test_a_working_parser_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check parses valid LaTeX: the stand-in, which rejects an unknown command such as
    ``\\pI``, passes it (sympy's own reads any ``\\word`` as a symbol)."""
    monkeypatch.setattr(sympy.parsing.latex, "parse_latex", latex2sympy)
    assert olympiad.sympy_parse_latex() is latex2sympy


def test_a_comparison_is_cut_at_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's ``@timeout_decorator.timeout(30)`` on ``is_equal`` (SATORI-R1 @ 8857b30,
    olympiadbench.py line 207); a check cut short counts as failed. Tried with 1 s here."""
    assert olympiad.IS_EQUAL_TIMEOUT == 30

    def slow(latex: str):
        if latex == "slow":
            time.sleep(4)
        return sympy.Integer(1)

    monkeypatch.setattr(olympiad, "IS_EQUAL_TIMEOUT", 1)
    judge = olympiad.MathJudger(slow)
    start = time.monotonic()
    assert judge.is_equal("slow", "one") is False  # without the cut: 1 == 1 after 4 s
    assert time.monotonic() - start < 3


def test_off_the_main_thread_the_judge_fails_without_hanging() -> None:
    """The timeout's signal cannot be set there: every comparison raises and counts as unequal
    (as the reference's signal-based timeout_decorator), and the judge moves on."""
    judge = olympiad.MathJudger(latex2sympy)
    results = []
    worker = threading.Thread(
        target=lambda: results.extend([judge.judge("1", "1.0"), judge.judge("2", "2")]),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert results == [False, True]  # identical answers need no comparison
    assert judge.judge("1", "1.0")


@pytest.mark.parametrize("kind", ["numerical", "free_form"])
def test_olympiad_satori_scores_both_answer_types(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(olympiad, "sympy_parse_latex", lambda: latex2sympy)
    olympiad._judge.cache_clear()
    try:
        right = olympiad.olympiad_satori(Candidate("<answer>\\boxed{x=2}</answer>", "x=2", kind))
        wrong = olympiad.olympiad_satori(Candidate("<answer>3</answer>", "2", kind))
    finally:
        olympiad._judge.cache_clear()
    assert right == ("\\boxed{x=2}", 1.0, 1)
    assert wrong == ("3", 0.0, 0)
