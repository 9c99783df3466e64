"""Scoring protocols: the registry, what each benchmark supports, and where they differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference import vlmevalkit_mathv as mathv
from reference import vlmevalkit_vqa_eval as vqa_eval
from reference import vlmevalkit_yorn as yorn

from vlrl.benchmarks import load_benchmark
from vlrl.core.errors import ConfigError
from vlrl.scoring import choice, maths
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.protocols import PROTOCOLS, get_protocol, judge_mode, vlmevalkit
from vlrl.scoring.protocols.vlrl import match as vlrl_match

BENCHMARKS = sorted(p.stem for p in Path("config/benchmarks").glob("*.yaml"))


@pytest.mark.parametrize("bench", BENCHMARKS)
def test_every_benchmark_names_known_protocols(bench: str) -> None:
    cfg = load_benchmark(bench)
    assert all(name in PROTOCOLS for name in cfg.protocols), cfg.protocols


def test_every_protocol_cites_its_source_and_is_used() -> None:
    used = {name for bench in BENCHMARKS for name in load_benchmark(bench).protocols}
    for name, protocol in PROTOCOLS.items():
        assert protocol.source and protocol.title, name
        assert name in used, f"{name} is supported by no benchmark"


def test_an_unknown_protocol_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown scoring protocol 'vlmevalkit'; did you mean"):
        get_protocol("vlmevalkit")


def test_a_rules_only_reference_is_never_judged_unless_asked() -> None:
    """ChartQA, MME, HallusionBench, MATH-Vision, MMBench: their references are rules (an LLM at
    most extracts the letter), so a semantic judge would change the protocol."""
    for bench in ("chartqa", "mme", "hallusionbench", "mathvision_test", "mmbench_en_dev"):
        protocol = get_protocol(load_benchmark(bench).protocol)
        assert judge_mode(protocol, bench, "fallback", {}) is None, bench
        assert judge_mode(protocol, bench, "fallback", {bench: "always"}) == "always"
    mmvet = get_protocol(load_benchmark("mmvet").protocol)
    assert judge_mode(mmvet, "mmvet", "fallback", {}) == "always"
    assert judge_mode(mmvet, "mmvet", None, {}) is None  # no judge: the stage refuses (test_score)


# protocol, candidate, correct
CASES = [
    # MathVista: the authors round a float to the row's precision; VLMEvalKit does not
    ("mathvista_official", Candidate("<answer>1.449</answer>", "1.45", "numerical",
                                     precision=2), 1),
    ("vlmevalkit_2505", Candidate("<answer>1.449</answer>", "1.45", "numerical", precision=2,
                                  family="mathvista"), 0),
    # ChartQA's 5%: of the gold (pix2struct, lmms-eval) or of the prediction (VLMEvalKit 2505)
    ("chartqa_official", Candidate("<answer>95.1</answer>", "100", "numerical",
                                   relaxed_tolerance=0.05), 1),
    ("vlmevalkit_2505", Candidate("<answer>95.1</answer>", "100", "numerical",
                                  relaxed_tolerance=0.05), 0),
    # a letter in prose: the 2025 rule reads it anywhere, the 2026 one only among the last words
    ("vlmevalkit_2505", Candidate("<answer>B is right because the figure shows two red circles "
                                  "on the left</answer>", "B", "multiple_choice",
                                  ("red", "blue", "green")), 1),
    ("vlmevalkit_2608", Candidate("<answer>B is right because the figure shows two red circles "
                                  "on the left</answer>", "B", "multiple_choice",
                                  ("red", "blue", "green")), 0),
    # a gold letter is used as it is, even when an option's text is a letter
    ("vlrl", Candidate("<answer>B</answer>", "B", "multiple_choice", ("B", "A")), 1),
    # a repeated choice text: either letter is right
    ("vlrl", Candidate("<answer>C</answer>", "A", "multiple_choice", ("7", "8", "7"),
                       accepted=("C",)), 1),
    # equivalent LaTeX in free form; prose stays text
    ("vlrl", Candidate("<answer>$2n+1$</answer>", "2 n+1", "free_form"), 1),
    ("vlrl", Candidate("<answer>\\frac{\\sqrt{3}}{2}</answer>", "$\\frac{\\sqrt 3}{2}$",
                       "free_form"), 1),
    ("vlrl", Candidate("<answer>3 blue circles</answer>", "3 red circles", "free_form"), 0),
    # MMMU: every accepted answer of a list gold
    ("mmmu_official", Candidate("<answer>3.429</answer>", "24/7", "free_form",
                                accepted=("3.429",)), 1),
    # VLM-R1: the first <answer>, and IoU > 0.5 strictly
    ("vlm_r1_rec", Candidate('<answer>{"bbox_2d": [0, 0, 10, 5]}</answer><answer>[0, 0, 10, 20]'
                             "</answer>", "", "grounding", boxes=((0, 0, 10, 20),)), 0),
    ("vlrl", Candidate('<answer>{"bbox_2d": [0, 0, 10, 5]}</answer><answer>[0, 0, 10, 20]'
                       "</answer>", "", "grounding", boxes=((0, 0, 10, 20),)), 1),
]  # fmt: skip


@pytest.mark.parametrize(("name", "candidate", "correct"), CASES)
def test_protocols_differ_where_their_references_do(name, candidate, correct) -> None:
    assert get_protocol(name).score(candidate).correct == correct


def test_a_protocol_refuses_a_problem_type_it_has_no_rule_for() -> None:
    with pytest.raises(ValueError, match=r"protocol 'vlm_r1_rec' has no rule for .*numerical"):
        get_protocol("vlm_r1_rec").score(Candidate("<answer>3</answer>", "3", "numerical"))


# ---------------------------------------------------------------------- chartqa_official
@pytest.mark.parametrize("kind", ["numerical", "free_form", "ocr"])
@pytest.mark.parametrize(("prediction", "gold"), [("96", "100"), ("94", "100"), ("12%", "0.12")])
def test_chartqa_official_reads_every_short_answer_by_relaxed_accuracy(kind, prediction, gold):
    """pix2struct's ``relaxed_correctness(target, prediction)`` (VLMEvalKit's verbatim copy), 5%
    of the gold, whatever the answer type and even without the benchmark's tolerance set; vlrl's
    own rule would want the exact value."""
    candidate = Candidate(f"<answer>{prediction}</answer>", gold, kind)
    expected = int(vqa_eval.relaxed_correctness(gold, prediction))
    assert get_protocol("chartqa_official").score(candidate) == (prediction, expected, expected)


def test_chartqa_official_reads_options_and_yes_no_by_vlrls_rules():
    protocol = get_protocol("chartqa_official")
    # an option by its text: relaxed accuracy would compare "blue" with "B" and miss
    by_text = Candidate("<answer>blue</answer>", "B", "multiple_choice", ("red", "blue"))
    assert protocol.score(by_text) == ("blue", 1.0, 1)
    assert protocol.score(Candidate("<answer>Yes, it is.</answer>", "yes", "yes_no")).correct
    assert not protocol.score(Candidate("<answer>No.</answer>", "yes", "yes_no")).correct


# ------------------------------------------------------------------- VLMEvalKit's dispatch
def _tagged(tag: str):
    return lambda candidate: Verdict(tag, 1.0, 1)


def _fresh_matcher():
    """A VLMEvalKit matcher built now, with each injected reader replaced by a tag: the
    registered protocols are built at import, so only a matcher built inside the test sees a
    change to ``_matcher`` (as mutation testing makes)."""
    return vlmevalkit._matcher(_tagged("choice"), _tagged("mathvista"), _tagged("relaxed"))


BOX = ((0, 0, 10, 20),)
# candidate, the reader it goes to (a tag) or the verdict it gets
DISPATCH = [
    # MathVista items: its post_check for every type but yes/no
    (Candidate("<answer>B</answer>", "B", "multiple_choice", ("x", "y"), family="mathvista"),
     "mathvista"),
    (Candidate("<answer>3</answer>", "3", "numerical", family="mathvista",
               relaxed_tolerance=0.05), "mathvista"),
    (Candidate("<answer>x</answer>", "x", "free_form", family="mathvista"), "mathvista"),
    (Candidate("<answer>No</answer>", "yes", "yes_no", family="mathvista"), ("No", 0.0, 0)),
    # other benchmarks: options by can_infer, yes/no by YOrN_Extraction
    (Candidate("<answer>B</answer>", "B", "multiple_choice", ("x", "y")), "choice"),
    (Candidate("<answer>Yes, it is.</answer>", "yes", "yes_no"), ("Yes, it is.", 1.0, 1)),
    (Candidate("<answer>No, it is not.</answer>", "yes", "yes_no"), ("No, it is not.", 0.0, 0)),
    (Candidate("<answer>unsure</answer>", "yes", "yes_no"), ("unsure", 0.0, 0)),
    # ChartQA (a relaxed tolerance): its relaxed accuracy for short answers
    (Candidate("<answer>96</answer>", "100", "numerical", relaxed_tolerance=0.05), "relaxed"),
    (Candidate("<answer>96</answer>", "100", "free_form", relaxed_tolerance=0.05), "relaxed"),
    (Candidate("<answer>96</answer>", "100", "ocr", relaxed_tolerance=0.05), "relaxed"),
    # otherwise equality of value (MATH-Vision's is_equal): 1e3 is 1000, prose all or nothing
    (Candidate("<answer>1e3</answer>", "1000", "numerical"), ("1e3", 1.0, 1)),
    (Candidate("<answer>the red circle</answer>", "red circle", "free_form"),
     ("the red circle", 0.0, 0)),
    (Candidate("<answer>the red circle</answer>", "red circle", "ocr"),
     ("the red circle", 0.0, 0)),
    # boxes by vlrl's IoU rule, a tolerance notwithstanding
    (Candidate('<answer>{"bbox_2d": [0, 0, 10, 15]}</answer>', "", "grounding", boxes=BOX),
     ('{"bbox_2d": [0, 0, 10, 15]}', 0.75, 1)),
    (Candidate('<answer>{"bbox_2d": [0, 0, 10, 15]}</answer>', "", "grounding", boxes=BOX,
               relaxed_tolerance=0.05), ('{"bbox_2d": [0, 0, 10, 15]}', 0.75, 1)),
]  # fmt: skip


@pytest.mark.parametrize(("candidate", "expected"), DISPATCH)
def test_vlmevalkit_dispatches_on_family_and_problem_type(candidate, expected):
    verdict = _fresh_matcher()(candidate)
    if isinstance(expected, str):
        assert verdict == (expected, 1.0, 1)
    else:
        assert verdict == expected


def test_the_dispatch_cases_tell_the_rules_apart():
    """The cases above are chosen where VLMEvalKit's rules and vlrl's differ, so a case sent to
    the wrong rule fails: equality of value is not vlrl's ROUGE-L or its number reading."""
    for candidate, expected in DISPATCH:
        if candidate.problem_type in {"numerical", "free_form", "ocr"} and isinstance(
            expected, tuple
        ):
            assert maths.equivalent_match(candidate) == expected
            assert vlrl_match(candidate) != expected
        if candidate.problem_type == "grounding":
            assert vlrl_match(candidate) == expected
    assert mathv.is_equal("1e3", "1000") and not mathv.is_equal("the red circle", "red circle")


@pytest.mark.parametrize("name", ["vlmevalkit_2505", "vlmevalkit_2608"])
@pytest.mark.parametrize(
    ("response", "gold"),
    [("Yes, it is.", "yes"), ("No.", "yes"), ("no", "No"), ("It may be.", "no"), ("", "yes")],
)
def test_vlmevalkit_yes_no_is_yorn_extraction(name, response, gold):
    """``YOrN_Extraction`` of the answer span (VLMEvalKit's verbatim copy) against the gold; the
    span is the verdict's extracted text."""
    candidate = Candidate(f"<answer>{response}</answer>", gold, "yes_no")
    word = yorn.YOrN_Extraction(response)
    correct = int(word.lower() == gold.lower())
    assert get_protocol(name).score(candidate) == (response or None, correct, correct)
    assert vlmevalkit._yes_no(candidate) == (response or None, correct, correct)


@pytest.mark.parametrize(
    ("name", "reader", "mathvista", "relaxed"),
    [
        ("vlmevalkit_2505", choice.vlmevalkit_2505, maths.mathvista_vlmevalkit,
         maths.relaxed_vlmevalkit),
        ("vlmevalkit_2608", choice.vlmevalkit_2608, maths.mathvista_vlmevalkit_2608,
         maths.relaxed_chartqa),
    ],
)  # fmt: skip
def test_each_vlmevalkit_version_uses_its_own_readers(name, reader, mathvista, relaxed):
    fresh = vlmevalkit._matcher(reader, mathvista, relaxed)
    registered = get_protocol(name)
    for candidate, _ in DISPATCH:
        assert registered.score(candidate) == fresh(candidate), candidate
    # where the versions differ: a letter early in prose, ChartQA's 5% of which number
    prose = Candidate("<answer>B is right because the figure shows two red circles on the left"
                      "</answer>", "B", "multiple_choice", ("red", "blue", "green"))  # fmt: skip
    ninety_five = Candidate("<answer>95.1</answer>", "100", "numerical", relaxed_tolerance=0.05)
    expected = {"vlmevalkit_2505": (1, 0), "vlmevalkit_2608": (0, 1)}[name]
    assert (fresh(prose).correct, fresh(ninety_five).correct) == expected
