"""vlrl.scoring.dynamath against VLMEvalKit's DynaMath rule (a verbatim copy in
reference/vlmevalkit_dynamath.py) on generated predictions, with a judge that gives no answer
(VLMEvalKit's exact-matching reading: vlrl asks no judge)."""

from __future__ import annotations

import json
import random

import pytest
from reference import vlmevalkit_dynamath as released

from vlrl.scoring.candidate import Candidate
from vlrl.scoring.dynamath import ANSWER_TYPES, dynamath_vlmevalkit, parse_answer, preprocess
from vlrl.scoring.protocols import get_protocol
from vlrl.scoring.rules import answer_span

FAIL_MSG = "Failed to obtain answer via API."


class SilentJudge:
    """VLMEvalKit's judge wrapper when every call fails: it returns its failure message."""

    def generate(self, prompt: str, **kwargs) -> str:
        return FAIL_MSG


FLOATS = ["2.0944", "-9", "0", "13", "4.75", "6.2832", "0.0833", "108.0"]
TEXTS = ["May", "5:0", "x^2+1", "Yes", "AB"]
PIECES = [
    "2.094", "2.0944", "2.095", "2.0955", "2", "2π", "π", "-9", "−9", "1e3", "nan", "inf",
    "13 cm", "13cm", "4.75.", "  4.75", "²", "1_3", "A", "b", "(C)", "D.", "E) x", "A or B",
    "ABCDE", "None", "", "may", "MAY", "5:0", "x^2", "The answer is B", "YES", "\\frac{1}{2}",
    "{", "}", "{}", "\\n", "sin", "π/2",
]  # fmt: skip
KEYS = ["short answer", "short_answer", "solution", "answer"]


def _json(rng: random.Random) -> str:
    value = rng.choice(
        [rng.choice(PIECES), rng.choice(PIECES), rng.randint(-3, 20), 2.5, None, ["A"], {"a": 1}]
    )
    body = {rng.choice(KEYS): value}
    if rng.random() < 0.5:
        body = {"solution": "step " + rng.choice(PIECES), **body}
    text = json.dumps(body, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 4]))
    if rng.random() < 0.3:
        text = text.replace('"', '\\"', 1)  # a stray escape the release strips
    return text


def _near(rng: random.Random, gold: str) -> str:
    """An answer made from the gold: itself, a part, another case, a unit, a number nearby."""
    variants = [gold, gold.lower(), gold[: max(1, len(gold) // 2)], f"{gold} cm", f"({gold})"]
    try:
        number = float(gold)
        variants += [f"{number + rng.choice([-0.002, -0.0009, 0.0005, 0.001, 0.0011]):.4f}"]
    except ValueError:
        pass
    text = rng.choice(variants)
    if rng.random() < 0.4:
        text = json.dumps({"solution": "so", "short answer": text})
    return text


def _prediction(rng: random.Random, gold: str) -> str:
    kind = rng.random()
    if kind < 0.35:
        text = _near(rng, gold)
    elif kind < 0.6:
        text = _json(rng)
    elif kind < 0.9:
        text = " ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3)))
    else:
        text = rng.choice(PIECES)
    before = rng.choice(["", "", "Here: ", "```json\n", "{x} "])
    after = rng.choice(["", "", "\n```", " done", " {y}"])
    return before + text + after


def _gold(rng: random.Random, problem_type: str) -> str:
    if problem_type == "multiple_choice":
        return rng.choice("ABCDE")
    if problem_type == "numerical":
        return rng.choice(FLOATS)
    return rng.choice(TEXTS)


def _released(prediction: str, gold: str, problem_type: str) -> tuple[object, bool] | None:
    """The release's ``(extracted, correct)`` on the answer span (what an R1 model's VLMEvalKit
    wrapper returns as its prediction), or None where it raises."""
    line = {
        "prediction": answer_span(prediction),
        "answer": gold,
        "answer_type": ANSWER_TYPES[problem_type],
    }
    try:
        result = released.DynaMath_auxeval(SilentJudge(), line)
    except Exception:  # the item fails in VLMEvalKit
        return None
    return result["extracted"], bool(result["correct"])


def test_the_rule_agrees_with_the_released_one_on_generated_predictions() -> None:
    rng = random.Random(20261201)
    raised = 0
    for _ in range(3000):
        problem_type = rng.choice(sorted(ANSWER_TYPES))
        gold = _gold(rng, problem_type)
        prediction = _prediction(rng, gold)
        ours = dynamath_vlmevalkit(Candidate(prediction, gold, problem_type))
        expected = _released(prediction, gold, problem_type)
        case = (prediction, gold, problem_type)
        if expected is None:
            raised += 1
            assert ours.correct == 0 and ours.extracted is None, case
            continue
        extracted, correct = expected
        assert ours.correct == int(correct), case
        assert ours.extracted == (None if extracted is None else str(extracted)), case
    assert 0 < raised < 300, "the generator reaches the release's failures, rarely"


@pytest.mark.parametrize(
    ("prediction", "gold", "problem_type", "correct"),
    [
        pytest.param('{"solution": "..", "short answer": "2.094"}', "2.0944", "numerical", 1,
                     id="json-float-within-0.001"),
        pytest.param('{"short answer": "2.096"}', "2.0944", "numerical", 0, id="json-float-off"),
        pytest.param("2π", "6.2832", "numerical", 1, id="pi-multiple"),
        pytest.param("13 cm", "13", "numerical", 1, id="first-word-number"),
        pytest.param("about 13", "13", "numerical", 0, id="number-not-first"),
        pytest.param('{"short answer": "(b)"}', "B", "multiple_choice", 1, id="json-letter"),
        pytest.param("A or B", "A", "multiple_choice", 1, id="unparsed-letter-in-first-three"),
        pytest.param("So A or B", "A", "multiple_choice", 0, id="unparsed-letter-later"),
        pytest.param("may", "May", "free_form", 1, id="text-case-aside"),
        pytest.param("Ma", "May", "free_form", 1, id="text-contained-in-gold"),
        pytest.param("", "May", "free_form", 1, id="empty-text-is-contained"),
        pytest.param('{"short answer": 5}', "5", "free_form", 0, id="non-text-json-raises"),
        pytest.param("<think>2</think><answer>3</answer>", "3", "numerical", 1, id="answer-span"),
    ],
)  # fmt: skip
def test_cases(prediction: str, gold: str, problem_type: str, correct: int) -> None:
    assert dynamath_vlmevalkit(Candidate(prediction, gold, problem_type)).correct == correct


def test_preprocess_and_parse_answer_edges() -> None:
    assert preprocess("}{") == "}{", "a } before the { is not JSON"
    assert preprocess("a {b} c {d} e") == "{b} c {d}", "the outermost braces"
    assert parse_answer("7", "float") == (True, 7.0)
    assert parse_answer("a)", "multiple choice") == (True, "A")
    assert parse_answer("ab", "multiple choice") == (False, None), "two letters name none"
    assert parse_answer("x", "multiple choice") == (True, "X"), "any one character"


def test_other_problem_types_are_not_dynamaths() -> None:
    with pytest.raises(ValueError, match="'q1': DynaMath's rule reads"):
        dynamath_vlmevalkit(Candidate("A", "A", "yes_no", item_id="q1"))


@pytest.mark.parametrize("name", ["vlmevalkit_2505", "vlmevalkit_2608"])
def test_vlmevalkit_protocols_apply_it_to_the_dynamath_family(name: str) -> None:
    protocol = get_protocol(name)
    free = Candidate("Ma", "May", "free_form", family="dynamath")
    assert protocol.match(free).correct == 1, "contained in the gold: DynaMath's text rule"
    assert protocol.match(Candidate("Ma", "May", "free_form")).correct == 0, "elsewhere: equality"
