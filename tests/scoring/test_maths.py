"""vlrl.scoring.maths and vlrl.scoring.olympiad against verbatim copies of the scorers they port
(tests/scoring/reference/): odd cases with a reason each, then a few hundred seeded random
inputs on which vlrl and the reference must agree."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from reference import mathvista_calculate_score as official
from reference import vision_sr1_eval
from reference import vlmevalkit_c026693a_matching as ref_2505
from reference import vlmevalkit_e8e78f05_matching as ref_2608
from reference import vlmevalkit_mathv as mathv
from reference import vlmevalkit_mathvista as vk_mathvista
from reference import vlmevalkit_olympiadbench as vk_olympiad
from reference import vlmevalkit_vqa_eval as vk_vqa

from vlrl.scoring import maths, olympiad
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.rules import LETTERS, answer_span

SEED = 20
N = 300


def _envelope(rng: random.Random, span: str) -> str:
    """A response whose answer span is ``span``."""
    return rng.choice(
        [
            f"<answer>{span}</answer>",
            f"<think>first 3, then (A)</think><answer> {span} </answer>",
            f"<answer>7</answer> revised: <answer>{span}</answer>",
            f"<think>so 4</think>{span}",
        ]
    )


# ---- MathVista: the authors' calculate_score.py ---------------------------------------------

MC_POOL = ["3/11", "8/11", "6/11", "3/5", "red", "blue", "145°", "35°", "18", "9", "Yes", "No"]


def _mathvista_item(rng: random.Random) -> tuple[Candidate, dict]:
    """A random MathVista-shaped candidate and the reference's view of it (``question_type``,
    ``answer_type``, ``choices``, ``precision``, ``answer`` as the hub has them)."""
    kind = rng.choice(["multi_choice", "integer", "float", "list"])
    if kind == "multi_choice":
        options = [rng.choice(MC_POOL) for _ in range(rng.randint(2, 5))]
        gold = rng.randrange(len(options))
        letter = LETTERS[gold]
        others = tuple(
            LETTERS[i] for i, o in enumerate(options) if o == options[gold] and i != gold
        )
        span = rng.choice(
            [letter, f"({letter.lower()})", options[gold], f"{options[gold]} degrees", "",
             rng.choice(LETTERS[:6]), letter.lower(), f"The answer is ({rng.choice('ABCDE')}) "
             f"{rng.choice(options)}", rng.choice(MC_POOL), "B or C"]
        )  # fmt: skip
        candidate = Candidate(
            _envelope(rng, span), letter, "multiple_choice", tuple(options), accepted=others
        )
        return candidate, {"question_type": kind, "answer_type": "text", "choices": options,
                           "precision": None, "answer": options[gold]}  # fmt: skip
    if kind == "list":
        gold = f"[{rng.randint(1990, 2020)}, {rng.randint(1990, 2020)}]"
        span = rng.choice([gold, gold.replace(" ", ""), gold[1:-1], "None", "", "[1, 2]"])
        return Candidate(_envelope(rng, span), gold, "free_form"), {
            "question_type": "free_form", "answer_type": "list", "choices": None,
            "precision": None, "answer": gold}  # fmt: skip
    if kind == "integer":
        value = rng.randint(-100, 3000)
        gold, precision = str(value), None
        near = [str(value + rng.choice([-1, 1])), f"{value}.{rng.randint(0, 9)}"]
    else:
        precision = rng.choice([1, 2])
        value = round(rng.uniform(-50, 200), precision + rng.choice([0, 0, 1, 2]))
        gold = rng.choice([str(round(value, precision)), f"{value:.{precision}f}"])
        near = [f"{value + rng.choice([-1, 1]) * 10 ** -(precision + 1) * rng.randint(1, 9):.6f}",
                f"{value:.{precision + 2}f}", f"{value:.{precision}f}5"]  # fmt: skip
    span = rng.choice(
        [gold, *near, f"{value:,}", f"{gold}%", f"{gold} years", f"-{gold}", f" {gold} ", "1e3",
         "nan", "inf", "", "abc", f"x = {gold}"]
    )  # fmt: skip
    candidate = Candidate(_envelope(rng, span), gold, "numerical", precision=precision)
    return candidate, {"question_type": "free_form", "answer_type": kind, "choices": None,
                       "precision": precision, "answer": gold}  # fmt: skip


def _official(candidate: Candidate, row: dict) -> bool:
    prediction = official.normalize_extracted_answer(
        answer_span(candidate.response), row["choices"], row["question_type"],
        row["answer_type"], row["precision"],
    )  # fmt: skip
    return official.safe_equal(prediction, row["answer"])


@pytest.mark.parametrize(
    ("span", "answer", "precision", "correct", "why"),
    [
        ("1.449", "1.45", 2, 1, "rounded to two places"),
        ("1.449", "1.4", 1, 1, "rounded to one place"),
        ("1.45", "1.5", 1, 0, "round(1.45, 1) is 1.4 in binary floating point"),
        ("1.20", "1.2", 1, 1, "compared after str(round(...))"),
        ("1.2", "1.20", 2, 0, "a gold with a trailing zero never matches str(round(...))"),
        ("-3.14", "-3.14", 2, 1, "negative"),
        ("3.14%", "3.14", 2, 0, "float() refuses a percent sign"),
        ("14.9", "14", None, 1, "int(float(x)) truncates"),
        ("14", "14", None, 1, "integer"),
        ("1,000", "1000", None, 0, "float() refuses the thousands separator"),
        ("14 years", "14", None, 0, "float() refuses a unit"),
        ("1e3", "1000", None, 1, "float() reads an exponent"),
    ],
)
def test_mathvista_official_numbers(
    span: str, answer: str, precision: int | None, correct: int, why: str
) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", answer, "numerical", precision=precision)
    assert maths.mathvista_official(candidate).correct == correct, why


@pytest.mark.parametrize(
    ("span", "correct", "why"),
    [
        ("B", 1, "the letter names the option"),
        ("(b) 8/11", 1, "a parenthesised letter anywhere, upper-cased"),
        ("b", 0, "a bare lower-case letter is not a letter: the nearest option text is 3/11"),
        ("8/12", 1, "the nearest option by edit distance"),
        ("E", 0, "no option E: the nearest text"),
        ("", 0, "empty: the nearest (shortest) option, 3/11"),
    ],
)
def test_mathvista_official_choices(span: str, correct: int, why: str) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", "B", "multiple_choice", ("3/11", "8/11"))
    assert maths.mathvista_official(candidate).correct == correct, why


def test_mathvista_official_repeated_choice_and_lists() -> None:
    options = ("9", "12", "18", "18")
    for letter in "CD":  # the reference compares texts: both letters of "18" are right
        response = f"<answer>{letter}</answer>"
        assert maths.mathvista_official(
            Candidate(response, "C", "multiple_choice", options, accepted=("D",))
        ).correct
    gold = "[2014, 2016]"
    assert maths.mathvista_official(Candidate(f"<answer>{gold}</answer>", gold, "free_form"))[2]
    assert not maths.mathvista_official(
        Candidate("<answer>[2014,2016]</answer>", gold, "free_form")
    )[2]
    with pytest.raises(ValueError, match=r"item 'q7'.*grounding"):
        maths.mathvista_official(Candidate("x", "y", "grounding", item_id="q7"))


def test_mathvista_official_agrees_with_the_reference() -> None:
    rng = random.Random(SEED)
    hits = 0
    for _ in range(N):
        candidate, row = _mathvista_item(rng)
        expected = _official(candidate, row)
        assert maths.mathvista_official(candidate).correct == expected, (candidate, row)
        hits += expected
    assert N // 5 < hits < N * 4 // 5  # both verdicts are exercised


# ---- MathVista: VLMEvalKit --------------------------------------------------------------------


def _vlmevalkit(candidate: Candidate, row: dict, can_infer) -> bool:
    """VLMEvalKit's MathVista pipeline: the prefetch on the prediction, else GPT's extraction
    (the answer span stands in for it), then ``post_check`` of what was kept."""
    line = {
        "question_type": row["question_type"],
        "answer_type": row["answer_type"],
        "answer": row["answer"],
        "answer_option": candidate.answer,
        "choices": repr(row["choices"]),
        "prediction": answer_span(candidate.response),
    }
    prefetch = vk_mathvista.post_check(line, prefetch=True, can_infer=can_infer)
    line["res"] = prefetch if prefetch else line["prediction"]
    return bool(vk_mathvista.post_check(line, prefetch=False, can_infer=can_infer))


@pytest.mark.parametrize(
    ("span", "answer", "precision", "correct", "why"),
    [
        ("1.449", "1.45", 2, 0, "no rounding"),
        ("1.450", "1.45", 2, 1, "float equality"),
        ("14", "14", None, 1, "int equality"),
        ("14.0", "14", None, 0, "int('14.0') raises"),
        ("0", "0", None, 1, "a falsy prefetch goes to the extraction, which is right"),
        ("1,000", "1000", None, 0, "int() refuses the thousands separator"),
        ("-7", "-7", None, 1, "negative"),
        ("7 cm", "7", None, 0, "int() refuses a unit"),
    ],
)
def test_mathvista_vlmevalkit_numbers(
    span: str, answer: str, precision: int | None, correct: int, why: str
) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", answer, "numerical", precision=precision)
    assert maths.mathvista_vlmevalkit(candidate).correct == correct, why
    assert maths.mathvista_vlmevalkit_2608(candidate).correct == correct, why


def test_mathvista_vlmevalkit_never_scores_a_list() -> None:
    gold = "[2014, 2016]"
    assert not maths.mathvista_vlmevalkit(Candidate(f"<answer>{gold}</answer>", gold, "free_form"))[
        2
    ]


@pytest.mark.parametrize(
    ("span", "c026693a", "e8e78f05"),
    [
        ("B", 1, 1),
        ("B. Because the angle is the largest one shown in the figure", 1, 0),
        ("The answer is B", 1, 1),
        ("8/11", 1, 1),
        ("A or B", 0, 0),
    ],
)
def test_mathvista_vlmevalkit_option_reader_by_commit(
    span: str, c026693a: int, e8e78f05: int
) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", "B", "multiple_choice", ("3/11", "8/11"))
    assert maths.mathvista_vlmevalkit(candidate).correct == c026693a
    assert maths.mathvista_vlmevalkit_2608(candidate).correct == e8e78f05


@pytest.mark.parametrize(
    ("matcher", "can_infer"),
    [
        (maths.mathvista_vlmevalkit, ref_2505.can_infer),
        (maths.mathvista_vlmevalkit_2608, ref_2608.can_infer),
    ],
)
def test_mathvista_vlmevalkit_agrees_with_the_reference(
    matcher, can_infer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERBOSE", raising=False)
    rng = random.Random(SEED + 1)
    hits = 0
    for _ in range(N):
        candidate, row = _mathvista_item(rng)
        candidate = Candidate(  # VLMEvalKit's TSV holds one answer letter
            candidate.response, candidate.answer, candidate.problem_type, candidate.options,
            precision=candidate.precision,
        )  # fmt: skip
        expected = _vlmevalkit(candidate, row, can_infer)
        assert matcher(candidate).correct == expected, (candidate, row)
        hits += expected
    assert N // 10 < hits < N * 4 // 5


# ---- ChartQA: relaxed accuracy ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("span", "gold", "vlmevalkit", "chartqa", "why"),
    [
        ("95", "100", 0, 1, "5/95 > 5% of the prediction; 5/100 = 5% of the gold"),
        ("105", "100", 1, 1, "5/105 and 5/100"),
        ("105.3", "100", 0, 0, "over 5% both ways"),
        ("0", "0", 1, 1, "zero is compared as text"),
        ("0.0", "0", 0, 0, "'0.0' is not '0' as text"),
        ("12%", "0.12", 1, 1, "a percent sign divides by 100"),
        ("1,000", "1000", 0, 0, "float() refuses the separator; texts differ"),
        ("Yes", "yes", 1, 1, "text, case-insensitive"),
    ],
)
def test_relaxed_direction(span: str, gold: str, vlmevalkit: int, chartqa: int, why: str) -> None:
    candidate = Candidate(f"<answer>{span}</answer>", gold, "numerical")
    assert maths.relaxed_vlmevalkit(candidate).correct == vlmevalkit, why
    assert maths.relaxed_chartqa(candidate).correct == chartqa, why


def test_relaxed_agrees_with_the_reference() -> None:
    rng = random.Random(SEED + 2)
    hits = {"vlmevalkit": 0, "chartqa": 0}
    for _ in range(N):
        golds = [
            rng.choice([str(rng.randint(0, 500)), f"{rng.uniform(-5, 90):.2f}", "0", "Yes", "No",
                        f"{rng.randint(1, 99)}%", "Asia"])
            for _ in range(rng.choice([1, 1, 2]))
        ]  # fmt: skip
        base = rng.choice(golds)
        try:
            number = float(base.rstrip("%"))
            factor = rng.choice([0.94, 0.95, 0.951, 1, 1.049, 1.05, 1.06])
            span = rng.choice([f"{number * factor:g}", f"{number:g}%", "0", "0.0", base])
        except ValueError:
            span = rng.choice([base, base.upper(), f"{base}.", "0"])
        candidate = Candidate(
            _envelope(rng, span), golds[0], "numerical", accepted=tuple(golds[1:])
        )
        line = {"answer": list(candidate.golds), "prediction": answer_span(candidate.response)}
        for name, matcher, reference in [
            ("vlmevalkit", maths.relaxed_vlmevalkit, vk_vqa.process_line_relaxed),
            ("chartqa", maths.relaxed_chartqa, vk_vqa.process_line_relaxed_e8e78f05),
        ]:
            expected = vk_vqa.hit(reference(line))
            assert matcher(candidate).correct == expected, (name, span, golds)
            hits[name] += expected
    assert all(N // 5 < n < N * 4 // 5 for n in hits.values()), hits


# ---- Vision-SR1 -------------------------------------------------------------------------------

SR1_POOL = ["3", "0.5", "\\frac{1}{2}", "1/2", "1,000", "1000", "B", "(B)", "b", "yes", "Yes",
            "x=3", "10 \\text{ cm}", "\\sqrt{2}", "2^{10}", "[1, 2]", "(1,2)", "None"]  # fmt: skip


@pytest.mark.parametrize(
    ("response", "gold", "correct", "why"),
    [
        ("<think>\\boxed{7}</think>\\boxed{3}", "3", 1, "the last box of the whole response"),
        ("<think>\\boxed{3}</think><answer>7</answer>", "3", 1, "a box in the reasoning counts"),
        ("<answer>3</answer>", "3", 0, "no box: 'None'"),
        ("\\boxed{\\frac{1}{2}}", "0.5", 1, "sympy"),
        ("\\boxed{2/4}", "1/2", 0, "unreduced fractions must match exactly"),
        ("\\boxed{B}", "B", 1, "multiple choice by the same grader"),
        ("\\boxed{1,000}", "1000", 1, "thousands separator"),
    ],
)
def test_vision_sr1_cases(response: str, gold: str, correct: int, why: str) -> None:
    assert maths.vision_sr1(Candidate(response, gold, "numerical")).correct == correct, why


def test_vision_sr1_agrees_with_the_reference() -> None:
    rng = random.Random(SEED + 3)
    hits = 0
    for _ in range(N):
        golds = [rng.choice(SR1_POOL) for _ in range(rng.choice([1, 1, 2]))]
        boxed = rng.choice(SR1_POOL)
        response = rng.choice(
            [f"<think>..</think>\\boxed{{{boxed}}}", f"\\boxed{{{rng.choice(SR1_POOL)}}} then "
             f"\\boxed{{{boxed}}}", f"<answer>{boxed}</answer>", f"\\boxed{{{boxed}"]
        )  # fmt: skip
        kind = rng.choice(["numerical", "free_form", "multiple_choice", "yes_no"])
        candidate = Candidate(response, golds[0], kind, ("p", "q"), accepted=tuple(golds[1:]))
        expected = max(vision_sr1_eval.accuracy_reward(response, g) for g in candidate.golds)
        assert maths.vision_sr1(candidate).correct == expected, (response, golds)
        hits += expected
    assert N // 10 < hits < N * 4 // 5


# ---- equivalence ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "same", "why"),
    [
        ("$2 n+1$", "2 n+1", True, "OlympiadBench: the record's gold has lost its $ signs"),
        ("2n+1", "$2 n+1$", True, "and the other way round"),
        ("$x=1$, $x=2$", "x=1, x=2", True, "several equations"),
        ("x=2, x=1", "x=1, x=2", True, "in any order"),
        ("(1,8,19), (2,7,13)", "(2,7,13), (1,8,19)", True, "a set of tuples"),
        ("[2, 5)", "[2,5)", True, "an interval"),
        ("(2, 5)", "[2,5)", False, "another interval"),
        ("\\{1, 2\\}", "\\{2, 1\\}", True, "a set"),
        ("y=1+2x", "y=2 x+1", True, "an equation"),
        ("(x-1)(x+1)", "x^2-1", True, "an expression"),
        ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}", True, "radicals"),
        ("28.0000001", "28", True, "within 1e-6, as MATH-Vision's is_equal"),
        ("5e-07", "0", True, "an exponent"),
        ("28.00001", "28", False, "not within 1e-6"),
        ("3 or 4", "4", False, "two answers are not one"),
        ("\\sqrt{3}", "3", False, "a radical is not its radicand"),
        ("god", "dog", False, "words are text, not products of symbols"),
        ("Paris", "paris", True, "text, case-insensitive"),
        ("x", "y", False, "single letters as text"),
        ("", "0", False, "nothing"),
    ],
)
def test_equivalent(prediction: str, gold: str, same: bool, why: str) -> None:
    assert maths.equivalent(prediction, gold) is same, why


def _number(rng: random.Random) -> str:
    a, b = rng.randint(-50, 50), rng.randint(1, 12)
    return rng.choice([str(a), f"{a / b:.{rng.randint(0, 7)}f}", f"{a}/{b}",
                       f"\\frac{{{a}}}{{{b}}}", f"{a}.0", f"\\sqrt{{{b}}}", f"{b}^{{2}}",
                       repr(a / b + rng.choice([0, 1e-7, 5e-7, 2e-6]))])  # fmt: skip


def test_equivalent_accepts_what_mathvision_is_equal_accepts() -> None:
    """VLMEvalKit's MATH-Vision ``is_equal`` is the documented reference: on numbers and LaTeX
    numbers, everything it accepts is equivalent (the converse does not hold: see
    test_equivalent)."""
    rng = random.Random(SEED + 4)
    accepted = 0
    for _ in range(N):
        gold = _number(rng)
        prediction = gold if rng.random() < 0.2 else _number(rng)
        if rng.random() < 0.3 and "\\" not in gold and "^" not in gold:
            prediction = repr(eval(gold) + rng.choice([0, 1e-7, 5e-7, 2e-6]))
        if mathv.is_equal(prediction, gold):
            accepted += 1
            assert maths.equivalent(prediction, gold), (prediction, gold)
    assert accepted > 50


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("2n+1", "2 n+1"),
        ("x=1", "1"),
        ("\\frac12", "0.5"),
        ("(1,2)", "(1, 2)"),
        ("\\pi", "3.14159265"),
    ],
)
def test_equivalent_beyond_is_equal(prediction: str, gold: str) -> None:
    assert not mathv.is_equal(prediction, gold)
    assert maths.equivalent(prediction, gold)


# ---- OlympiadBench: SATORI-R1's VLMEvalKit MathJudger -----------------------------------------

#: Answers in groups of forms of one value (as the judge may or may not see them).
OLYMPIAD_GROUPS = [
    ["3", "$3$", "3^\\circ", "\\mathrm{3}"],
    ["12", "0.12", "1200", "12\\%"],
    ["\\frac{1}{2}", "0.5", "1/2", "\\frac{2}{4}", "50"],
    ["2 n+1", "2n+1", "1+2n"],
    ["(1,2]", "(1, 2]", "\\left(1,2\\right]", "x \\in (1,2]", "(\\frac{2}{2},2]"],
    ["(-\\infty, 1]", "(-\\infty,1]", "(-\\infty,1)"],
    ["x=1, x=2", "x=2,x=1", "$x=1$, $x=2$", "1,2"],
    ["y=2x+1", "2x+1=y", "y-2x=1", "2y=4x+2"],
    ["\\pm 2", "2,-2", "-2, 2"],
    ["(1,8,19), (2,7,13)", "(2,7,13), (1,8,19)"],
    ["\\sqrt{3}", "3^{1/2}", "1.7320508"],
]
OLYMPIAD_POOL = [form for group in OLYMPIAD_GROUPS for form in group]


def _olympiad_pair(rng: random.Random) -> tuple[str, bool, str]:
    """A response span (Chinese or not) and a gold, often of the same group."""
    group = rng.choice(OLYMPIAD_GROUPS)
    gold = rng.choice(group)
    answer = rng.choice(group if rng.random() < 0.6 else OLYMPIAD_POOL)
    chinese = rng.random() < 0.1
    phrase = "所以最终答案是" if chinese else "So the final answer is "
    span = rng.choice(
        [answer, f"{phrase}$\\boxed{{{answer}}}$.", f"work\n{phrase}{answer}",
         f"\\boxed{{{answer}}}", f"\\boxed{{{answer}}} and \\boxed{{{rng.choice(OLYMPIAD_POOL)}}}",
         f"so ${answer}$", f"\\boxed{{{answer}", ""]
    )  # fmt: skip
    return span, chinese, gold


def _stand_in_parser():
    from latex2sympy2_extended import latex2sympy

    return latex2sympy


def _judges_agree(port: olympiad.MathJudger, reference, rng: random.Random) -> None:
    hits = 0
    for _ in range(N):
        span, chinese, gold = _olympiad_pair(rng)
        expected = reference.judge(vk_olympiad.extract_answer(chinese, span), gold)
        assert port.judge(olympiad.extract_final_answer(span), gold) == expected, (span, gold)
        hits += expected
    assert N // 10 < hits < N * 4 // 5


def test_olympiad_judge_agrees_with_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both judges read LaTeX with the same stand-in parser (latex2sympy2_extended): this checks
    the port's logic on every path (boxes, splitting, ±, pairing, intervals, numbers, the
    missing ``sympy_sub_pi``, equations) whatever the installed antlr4."""
    parser = _stand_in_parser()
    monkeypatch.setattr(vk_olympiad, "parse_latex", parser)
    _judges_agree(olympiad.MathJudger(parser), vk_olympiad.MathJudger(), random.Random(SEED + 5))


def test_olympiad_judge_agrees_with_the_reference_on_sympy_latex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both judges read LaTeX with sympy's own parser (antlr4 4.11, in .venv-latex here)."""
    parser = olympiad.sympy_parse_latex()
    monkeypatch.setattr(vk_olympiad, "parse_latex", parser)
    _judges_agree(olympiad.MathJudger(), vk_olympiad.MathJudger(), random.Random(SEED + 6))


@pytest.mark.parametrize(
    ("span", "gold", "correct", "why"),
    [
        ("So the final answer is $\\boxed{12}$.", "$12$", 1, "the boxed answer"),
        ("\\boxed{\\frac{2}{4}}", "$\\frac{1}{2}$", 0, "only identical parse trees count"),
        ("\\boxed{1+2n}", "2 n+1", 0, "sympy's parse keeps the order"),
        ("\\boxed{x=2}, \\boxed{x=1}", "x=1, x=2", 1, "answers paired in any order"),
        ("\\boxed{0.12}", "$12$", 1, "a factor 100 apart (a percentage)"),
    ],
)
def test_olympiad_satori_cases(span: str, gold: str, correct: int, why: str) -> None:
    kind = "numerical" if "$" in gold else "free_form"
    assert maths.olympiad_satori(Candidate(f"<answer>{span}</answer>", gold, kind)).correct == (
        correct
    ), why


def test_olympiad_satori_with_a_stand_in_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring: the answer span, its final-answer phrase, the prediction first, any gold."""
    monkeypatch.setattr(olympiad, "sympy_parse_latex", _stand_in_parser)
    olympiad._judge.cache_clear()
    try:
        response = "<think>3</think><answer>So the final answer is $\\boxed{0.12}$.</answer>"
        verdict = maths.olympiad_satori(Candidate(response, "7", "numerical", accepted=("$12$",)))
        assert verdict == ("$\\boxed{0.12}$.", 1.0, 1)
        judge = olympiad.MathJudger(_stand_in_parser())
        with pytest.raises(olympiad.MissingMethodError):  # the fork's commented-out method
            judge.expression_equal("x", "y")
        assert judge.expression_equal("x=2", "y=2")  # only the right-hand sides are compared
    finally:
        olympiad._judge.cache_clear()


def test_olympiad_satori_names_the_missing_parser(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without antlr4 4.11 here (this environment's 4.9) and without the side environment."""
    from vlrl.scoring import side_latex

    monkeypatch.setenv(side_latex.PYTHON_ENV, str(tmp_path / "no-venv" / "python"))
    olympiad._judge.cache_clear()
    olympiad._side_parser.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"antlr4-python3-runtime 4\.11.*make setup"):
            maths.olympiad_satori(Candidate("<answer>3</answer>", "$3$", "numerical"))
    finally:
        olympiad._judge.cache_clear()
        olympiad._side_parser.cache_clear()


def test_olympiad_satori_refuses_other_types() -> None:
    with pytest.raises(ValueError, match=r"item 'o1'.*multiple_choice"):
        maths.olympiad_satori(Candidate("B", "B", "multiple_choice", ("x", "y"), item_id="o1"))
