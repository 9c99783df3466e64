"""The ``vlrl`` protocol's matcher (:mod:`vlrl.scoring.protocols.vlrl`) and the protocol registry.

The matcher hands every scoring constant of the candidate to
:func:`vlrl.scoring.rules.score_item` (IoU threshold, relaxed tolerance, box frames), keeps the
best verdict over the accepted answers and, for a free-form maths answer, first tries equality
of value against the maths golds only. Each test below fails if one constant is dropped,
shifted or replaced, with expected values worked out by hand (IoU of integer boxes, relative
changes of integers).
"""

from __future__ import annotations

import pytest

from vlrl.core.errors import ConfigError
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.protocols import PROTOCOLS, _registry, get_protocol
from vlrl.scoring.protocols.vlrl import is_maths, match


def answered(text: str) -> str:
    """A response whose answer span is ``text``."""
    return f"<think>.</think><answer>{text}</answer>"


# ------------------------------------------------------------------------------ registry
NAMES = [
    "chartqa_official",
    "mathvista_official",
    "mmmu_official",
    "mmvet_official",
    "olympiadbench_satori",
    "vision_sr1",
    "vlm_r1_od",
    "vlm_r1_ovd",
    "vlm_r1_rec",
    "vlm_r1_rec_baseline",
    "vlmevalkit_2505",
    "vlmevalkit_2608",
    "vlmevalkit_logicvista",
    "vlrl",
]


def test_the_registry_holds_every_protocol_under_its_own_name():
    rebuilt = _registry()
    assert sorted(rebuilt) == NAMES
    assert rebuilt == PROTOCOLS
    assert all(protocol.name == name for name, protocol in rebuilt.items())


def test_an_unknown_protocol_suggests_or_points_to_the_list():
    with pytest.raises(ConfigError) as raised:
        get_protocol("vlmeval")
    assert str(raised.value) == (
        f"unknown scoring protocol 'vlmeval'; {len(NAMES)} known, in `vlrl protocols`"
    )
    with pytest.raises(ConfigError) as raised:
        get_protocol("vlmevalkit_2506")
    assert str(raised.value).endswith("did you mean 'vlmevalkit_2505' or 'vlmevalkit_2608'?")


# ------------------------------------------------------------------------------ is_maths
@pytest.mark.parametrize(
    ("text", "maths"),
    [
        ("2 n+1", True),  # no word of three letters
        ("$x=1$", True),
        ("\\frac{1}{2}", True),  # LaTeX, though "frac" is a word
        ("\\sqrt{abc}", True),
        ("$area = 12$", True),  # dollars, though "area" is a word
        ("10 km", True),
        ("3 red circles", False),  # prose
        ("two apples", False),
        ("x-ray", False),
    ],
)
def test_is_maths(text, maths):
    assert is_maths(text) is maths


# ---------------------------------------------------------------- constants passed through
BOX = (20.0, 40.0, 80.0, 100.0)


def grounding(pred: str, **kwargs) -> Candidate:
    """A grounding candidate with gold box :data:`BOX`."""
    return Candidate(answered(pred), "[20, 40, 80, 100]", "grounding", boxes=(BOX,), **kwargs)


@pytest.mark.parametrize(
    ("pred", "threshold", "iou", "correct"),
    [
        # [20, 40, 80, 70]: half the gold's height: IoU 1800 / 3600 = 0.5 exactly
        ("[20, 40, 80, 70]", 0.5, 0.5, 1),  # at the threshold counts (>=, not >)
        ("[20, 40, 80, 70]", 0.6, 0.5, 0),
        # [20, 40, 80, 85]: IoU 2700 / 3600 = 0.75
        ("[20, 40, 80, 85]", 0.7, 0.75, 1),
        ("[20, 40, 80, 85]", 0.8, 0.75, 0),
        ("[100, 100, 120, 120]", 0.5, 0.0, 0),  # no overlap is wrong at any threshold
        ("[100, 100, 120, 120]", 0.01, 0.0, 0),
    ],
)
def test_grounding_uses_the_candidates_iou_threshold(pred, threshold, iou, correct):
    got = match(grounding(pred, iou_threshold=threshold))
    assert got == Verdict(pred, pytest.approx(iou, abs=1e-12), correct)


def test_grounding_rescales_from_the_model_input_frame():
    # [10, 20, 40, 50] in a 50 x 80 input of a 100 x 160 image is [20, 40, 80, 100]: the gold.
    framed = grounding("[10, 20, 40, 50]", box_frames=((50.0, 80.0), (100.0, 160.0)))
    assert match(framed) == Verdict("[10, 20, 40, 50]", 1.0, 1)
    # Unscaled it would overlap the gold on 20 x 10 = 200 of 900 + 3600 - 200: wrong.
    unscaled = match(grounding("[10, 20, 40, 50]"))
    assert unscaled == Verdict("[10, 20, 40, 50]", pytest.approx(200 / 4300), 0)


@pytest.mark.parametrize(
    ("kind", "pred", "tolerance", "correct"),
    [
        ("numerical", "104", 0.05, 1),  # 4 % off 100
        ("numerical", "104", 0.03, 0),
        ("numerical", "105", 0.05, 1),  # exactly 5 %: within
        ("numerical", "106", 0.05, 0),
        ("numerical", "104", None, 0),  # no tolerance: numbers must be equal
        ("numerical", "100", None, 1),
        ("ocr", "104", 0.05, 1),
        ("free_form", "96", 0.05, 1),
    ],
)
def test_relaxed_tolerance_reaches_the_rule(kind, pred, tolerance, correct):
    got = match(Candidate(answered(pred), "100", kind, relaxed_tolerance=tolerance))
    assert (got.extracted, got.correct) == (pred, correct)


# ----------------------------------------------------------------- the best accepted answer
def test_the_first_accepted_answer_that_ties_and_is_correct_wins():
    # "x ray" against "x-ray": ROUGE-L 1.0 (its tokenizer splits on "-"), yet not the same
    # normalized text: a tie in score with a wrong verdict, after the right one.
    got = match(Candidate(answered("x ray"), "x ray", "free_form", accepted=("x-ray",)))
    assert got == Verdict("x ray", 1.0, 1)


def test_an_accepted_answer_equal_to_the_response_is_correct_after_a_tie():
    got = match(Candidate(answered("x ray"), "x-ray", "free_form", accepted=("x ray",)))
    assert got == Verdict("x ray", 1.0, 1)


def test_a_later_accepted_answer_with_a_higher_score_wins():
    got = match(Candidate(answered("blue"), "red", "free_form", accepted=("dark blue", "blue")))
    assert got == Verdict("blue", 1.0, 1)


# ------------------------------------------------------------------------- maths answers
@pytest.mark.parametrize(
    ("answer", "accepted", "pred", "expected"),
    [
        # the maths gold is an accepted answer, the record's answer is prose
        ("one half", ("\\frac{1}{2}",), "0.5", Verdict("0.5", 1.0, 1)),
        # the second maths gold is the one equal in value
        ("x+1", ("\\frac{1}{2}",), "0.5", Verdict("0.5", 1.0, 1)),
        ("x+1", ("y", "\\frac{1}{2}"), "0.5", Verdict("0.5", 1.0, 1)),
        # prose golds are compared as text, not by value: "2" is not "2 apples"
        ("x+1", ("2 apples",), "2", Verdict("2", pytest.approx(2 / 3), 0)),
        # maths says no: the text rules decide, with their ROUGE-L score
        ("x + 1", (), "x + 2", Verdict("x + 2", pytest.approx(0.5), 0)),
        # maths says no (units differ in case), the normalized texts agree: right
        ("10 km", (), "10 KM", Verdict("10 KM", 1.0, 1)),
    ],
)
def test_free_form_maths_is_equality_of_value_else_text(answer, accepted, pred, expected):
    assert match(Candidate(answered(pred), answer, "free_form", accepted=accepted)) == expected
