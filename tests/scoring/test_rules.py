"""Rule-based scoring: one row per behaviour, each with the reason it must hold."""

from __future__ import annotations

import random
import threading

import pytest
from reference.vlmevalkit_yorn import YOrN_Extraction

from vlrl.scoring.rules import answer_span, score_item, yes_or_no

OPTS = ["red", "blue", "green", "yellow"]
BOX = [[10, 10, 30, 30]]

# (reason, response, answer, problem_type, options, boxes, expected (extracted, score, correct))
# fmt: off
CASES = [
    ("reasoning numbers are ignored: only <answer> counts",
     "<think>first 3</think><answer>5</answer>", "5", "numerical", [], [], ("5", 1.0, 1)),
    ("the last <answer> wins",
     "<answer>3</answer> wait <answer>5</answer>", "5", "numerical", [], [], ("5", 1.0, 1)),
    ("no answer tag: the text after </think> is scored",
     "<think>maybe 3</think> 5", "5", "numerical", [], [], ("5", 1.0, 1)),
    ("no tags at all: the whole response is scored",
     "5", "5", "numerical", [], [], ("5", 1.0, 1)),
    ("an empty answer is wrong and extracts nothing",
     "<think>hmm</think><answer> </answer>", "5", "numerical", [], [], (None, 0.0, 0)),
    ("a bare letter names the option",
     "<answer>B</answer>", "B", "multiple_choice", OPTS, [], ("B", 1.0, 1)),
    ("a bracketed letter with its text names the option",
     "<answer>(B) blue</answer>", "B", "multiple_choice", OPTS, [], ("(B) blue", 1.0, 1)),
    ("the option's text names the option",
     "<answer>Blue.</answer>", "B", "multiple_choice", OPTS, [], ("Blue.", 1.0, 1)),
    ("another option's letter is wrong",
     "<answer>C</answer>", "B", "multiple_choice", OPTS, [], ("C", 0.0, 0)),
    ("another option's text is wrong",
     "<answer>green</answer>", "B", "multiple_choice", OPTS, [], ("green", 0.0, 0)),
    ("prose without a letter or an option text is wrong (left to the judge)",
     "<answer>The answer is B</answer>", "B", "multiple_choice", OPTS, [],
     ("The answer is B", 0.0, 0)),
    ("a reference given as option text is matched too",
     "<answer>B</answer>", "blue", "multiple_choice", OPTS, [], ("B", 1.0, 1)),
    ("equal integers",
     "<answer>7</answer>", "7", "numerical", [], [], ("7", 1.0, 1)),
    ("a different number is wrong",
     "<answer>8</answer>", "7", "numerical", [], [], ("8", 0.0, 0)),
    ("3.0 equals 3 (Math-Verify fallback not even needed)",
     "<answer>3.0</answer>", "3", "numerical", [], [], ("3.0", 1.0, 1)),
    ("a LaTeX fraction equals its decimal (Math-Verify)",
     "<answer>\\frac{1}{2}</answer>", "0.5", "numerical", [], [], ("\\frac{1}{2}", 1.0, 1)),
    ("a thousands separator is read as one number (Math-Verify)",
     "<answer>1,000</answer>", "1000", "numerical", [], [], ("1,000", 1.0, 1)),
    ("a plain fraction equals its decimal (Math-Verify)",
     "<answer>1/2</answer>", "0.5", "numerical", [], [], ("1/2", 1.0, 1)),
    ("two numbers are ambiguous and wrong, though Math-Verify would take the last",
     "<answer>3 or 4</answer>", "4", "numerical", [], [], ("3 or 4", 0.0, 0)),
    ("a number word is not a number for the rules",
     "<answer>seven</answer>", "7", "numerical", [], [], ("seven", 0.0, 0)),
    ("an identical box is correct with IoU 1",
     "<answer>[10, 10, 30, 30]</answer>", "[10, 10, 30, 30]", "grounding", [], BOX,
     ("[10, 10, 30, 30]", 1.0, 1)),
    ("IoU exactly at the threshold counts as correct",
     "<answer>[10, 10, 30, 50]</answer>", "[10, 10, 30, 30]", "grounding", [], BOX,
     ("[10, 10, 30, 50]", 0.5, 1)),
    ("IoU below the threshold is wrong but keeps its continuous score",
     "<answer>{\"bbox_2d\": [20, 10, 40, 30]}</answer>", "[10, 10, 30, 30]", "grounding", [], BOX,
     ("{\"bbox_2d\": [20, 10, 40, 30]}", 1 / 3, 0)),
    ("no box in the answer scores 0",
     "<answer>top left</answer>", "[10, 10, 30, 30]", "grounding", [], BOX, ("top left", 0.0, 0)),
    ("normalised equality is correct (case, spaces, final full stop)",
     "<answer>A red  circle.</answer>", "a red circle", "free_form", [], [],
     ("A red  circle.", 1.0, 1)),
    ("partial overlap is wrong but earns its ROUGE-L F1",
     "<answer>a red square</answer>", "a red circle", "free_form", [], [],
     ("a red square", 2 / 3, 0)),
    ("yes matches Yes",
     "<answer>Yes</answer>", "yes", "yes_no", [], [], ("Yes", 1.0, 1)),
    ("no does not match yes",
     "<answer>no</answer>", "yes", "yes_no", [], [], ("no", 0.0, 0)),
]
# fmt: on


@pytest.mark.parametrize(
    ("response", "answer", "problem_type", "options", "boxes", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_score_item(response, answer, problem_type, options, boxes, expected):
    extracted, score, correct = score_item(response, answer, problem_type, options, boxes, 0.5)
    assert (extracted, correct) == (expected[0], expected[2])
    assert score == pytest.approx(expected[1])
    assert correct in (0, 1) and 0.0 <= score <= 1.0


def test_iou_threshold_is_respected():
    # IoU 1/3: correct at threshold 0.3, wrong at the default 0.5.
    response = "<answer>[20, 10, 40, 30]</answer>"
    assert score_item(response, "[10, 10, 30, 30]", "grounding", [], BOX, 0.3)[2] == 1
    assert score_item(response, "[10, 10, 30, 30]", "grounding", [], BOX, 0.5)[2] == 0


def test_unknown_problem_type_is_an_error():
    with pytest.raises(ValueError, match="detection"):
        score_item("<answer>x</answer>", "x", "detection", [], [], 0.5)
    with pytest.raises(ValueError, match="detection"):
        score_item("", "x", "detection", [], [], 0.5)


def test_answer_span_keeps_raw_text_without_tags():
    assert answer_span("<think>a</think>\n b ") == "b"
    assert answer_span("plain answer") == "plain answer"


def test_math_verify_refuses_threads_loudly():
    # Math-Verify's timeouts need the main thread; off it, scoring must fail, not mis-score.
    errors = []

    def work():
        try:
            score_item("<answer>\\frac{1}{2}</answer>", "0.5", "numerical", [], [], 0.5)
        except ValueError as exc:
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert errors and "thread" in str(errors[0]).lower()


def test_boxes_in_the_model_input_frame_are_rescaled_first():
    # The model saw a 56x28 resize of a 112x56 image and answered in its pixels.
    response = "<answer>[14, 7, 28, 14]</answer>"
    gold = [[28, 14, 56, 28]]

    as_is = score_item(response, "", "grounding", boxes=gold)
    rescaled = score_item(response, "", "grounding", boxes=gold, box_frames=([56, 28], [112, 56]))

    assert as_is[2] == 0 and rescaled[1:] == (1.0, 1)


def test_strict_iou_needs_more_than_the_threshold():
    response = "<answer>[0, 0, 10, 10]</answer>"  # IoU 0.5 with [0, 0, 10, 20]
    assert score_item(response, "", "grounding", boxes=[[0, 0, 10, 20]])[2] == 1
    assert score_item(response, "", "grounding", boxes=[[0, 0, 10, 20]], iou_strict=True)[2] == 0


@pytest.mark.parametrize(
    ("response", "answer", "correct"),
    [
        ("<answer>104</answer>", "100", 1),
        ("<answer>106</answer>", "100", 0),
        ("<answer>Democrats</answer>", "democrats", 1),
        ("<answer>1,000</answer>", "1000", 0),  # float() refuses the comma: a string compare
    ],
)
def test_relaxed_accuracy_replaces_the_number_rules(response, answer, correct):
    problem_type = "numerical" if answer[0].isdigit() else "free_form"
    assert score_item(response, answer, problem_type, relaxed_tolerance=0.05)[2] == correct


@pytest.mark.parametrize(
    ("response", "correct"),
    [
        ("<answer>Yes, the left one is larger.</answer>", 1),
        ("<answer>yes or no?</answer>", 0),
        ("<answer>No.</answer>", 0),
        ("<answer>yesterday</answer>", 0),
    ],
)
def test_yes_no_is_vlmevalkits_word_rule(response, correct):
    assert score_item(response, "yes", "yes_no")[2] == correct


OPTIONS = ["red", "blue", "green", "dark red"]


@pytest.mark.parametrize(
    ("answer", "strict", "why"),
    [
        ("B", "B", "a bare letter"),
        ("(C) green", "C", "a letter that leads"),
        ("blue", "B", "an option's exact text"),
        ("The answer is C.", None, "prose (VLMEvalKit's rule reads it: vlrl.scoring.choice)"),
        ("I would pick option B here", None, "a letter inside prose"),
        ("A or B", "A", "a leading letter"),
        ("It is blue.", None, "an option's text inside the answer"),
        ("dark red", "D", "exact text, though 'red' is inside it"),
        ("Cannot determine the answer", None, "a refusal is no option"),
        ("Z", None, "a letter beyond the options"),
    ],
)
def test_strict_choice_rule(answer, strict, why):
    letters = [
        letter
        for letter in "ABCD"
        if score_item(f"<answer>{answer}</answer>", letter, "multiple_choice", OPTIONS)[2]
    ]
    assert letters == ([strict] if strict else []), why


@pytest.mark.parametrize(
    ("response", "answer", "options", "correct", "why"),
    [
        ("(A)", "A", ["B", "A"], 1, "a gold letter is not remapped through a letter option text"),
        ("A", "A", ["B", "A"], 1, "nor is a lone predicted letter"),
        ("B", "A", ["B", "A"], 0, "the other letter stays wrong"),
        ("A", "C", ["A", "B", "C"], 0, "a lone letter is a letter before it is a text"),
        ("18", "18", ["9", "18", "18"], 1, "a gold text names each option that has it"),
        ("C", "18", ["9", "18", "18"], 1, "… so either letter is right"),
    ],
)
def test_gold_option_letters_are_not_remapped(response, answer, options, correct, why):
    assert score_item(f"<answer>{response}</answer>", answer, "multiple_choice", options)[2] == (
        correct
    ), why


@pytest.mark.parametrize(
    ("span", "answer", "correct", "why"),
    [
        ("3", "\\sqrt{3}", 0, "a LaTeX reference is not the number inside it"),
        ("\\sqrt{3}", "3", 0, "nor is a LaTeX answer"),
        ("\\sqrt{3}", "\\sqrt{3}", 1, "bare LaTeX is read as math, not as nothing"),
        ("2\\sqrt{3}", "\\sqrt{12}", 1, "equal expressions, not the leading 2"),
        ("\\frac{6}{2}", "3", 1, "a fraction equal to the number"),
        ("1.732", "\\sqrt{3}", 0, "a rounded value is not the exact one"),
        ("3.0", "3", 1, "the same number"),
    ],
)
def test_numbers_and_latex(span, answer, correct, why):
    assert score_item(f"<answer>{span}</answer>", answer, "numerical")[2] == correct, why


def _yes_no_answers(n: int, seed: int = 0) -> list[str]:
    """Answers as models write them: yes/no in several cases and wrappings, both or neither,
    punctuation the reference turns into spaces or drops, numbers with commas, long prose
    with more than 32 full stops (the reference strips at most 32: ``sub(..., re.UNICODE)``)."""
    rng = random.Random(seed)
    words = ["yes", "Yes", "YES", "no", "No", "NO", "not", "none", "yesterday", "nothing",
             "answer", "the", "is", "1,000", "3.5", "x", "(yes)", "[no]", "yes.", "no,", "no-go",
             "yes/no", '"yes"', "well", "so", "e.g.", "i.e."]  # fmt: skip
    marks = [".", ",", "!", "?", ";", ":", "-", "_", "/", "(", ")", " .", ". ", "..."]
    out = []
    for _ in range(n):
        parts = [rng.choice(words) for _ in range(rng.randint(0, 12))]
        text = " ".join(p + (rng.choice(marks) if rng.random() < 0.3 else "") for p in parts)
        if rng.random() < 0.05:
            text = "word. " * rng.randint(30, 40) + text
        out.append(text)
    return out


def test_yes_or_no_is_vlmevalkits_yorn_extraction() -> None:
    answers = _yes_no_answers(3000)
    expected = {"Yes": "yes", "No": "no", "Unknown": None}
    diff = [a for a in answers if yes_or_no(a) != expected[YOrN_Extraction(a)]]
    assert not diff, diff[:5]
    assert {yes_or_no(a) for a in answers} == {"yes", "no", None}
