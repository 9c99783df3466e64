"""LogicVista's judge step (vlrl.scoring.judge_prompts: the letter extractor, its parser and
the comparison with the answer) against a verbatim copy of VLMEvalKit's ``LogicVista_auxeval``
(tests/scoring/reference/vlmevalkit_logicvista.py) on generated replies and answers."""

from __future__ import annotations

import random

import pytest
from reference import vlmevalkit_logicvista as released

from vlrl.scoring.judge import judge_request
from vlrl.scoring.judge_prompts import (
    PROMPTS,
    logicvista_hit,
    logicvista_query,
    parse_logicvista_letters,
)

LETTERS = "ABCDEFGHIZ"
PIECES = ["", " ", "\n", ",", ", ", ".", "1", "a", "b", "z", "(", ")", "Answer: ", "é", "ß", "Ⅳ"]


class Replying:
    """A judge that gives the same reply at every temperature, recording what it was asked."""

    def __init__(self, reply: str):
        self.reply = reply
        self.prompts: list[str] = []

    def generate(self, prompt: str, **kwargs) -> str:
        self.prompts.append(prompt)
        return self.reply


def _reply(rng: random.Random, answer: str) -> str:
    if rng.random() < 0.4:  # the answer's letters, in any order, maybe one repeated
        letters = [part.strip() for part in answer.split(",")]
        letters += rng.sample(letters, rng.randint(0, 1))
        letters = "".join(rng.sample(letters, len(letters)))
    else:
        letters = "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.5:
        return letters
    # break it, or not, with a piece before, inside or after (whitespace around is stripped)
    piece = rng.choice(PIECES)
    at = rng.randint(0, len(letters))
    return letters[:at] + piece + letters[at:]


def _answer(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return str(rng.randint(1, 5))  # LogicVista's few numbered answers ("Select from 1-5")
    chosen = rng.sample("ABCDE", rng.randint(1, 3))
    return ", ".join(chosen)


def test_the_judge_step_agrees_with_the_released_one_on_generated_replies(capsys) -> None:
    rng = random.Random(20261201)
    hits = failures = 0
    for _ in range(3000):
        answer = _answer(rng)
        reply = _reply(rng, answer)
        question, prediction = (
            "Which box comes next? Select from A-E",
            rng.choice(["B", "It is C."]),
        )
        judge = Replying(reply)
        theirs = released.LogicVista_auxeval(
            judge, {"question": question, "prediction": prediction, "answer": answer}
        )
        assert judge.prompts[0] == logicvista_query(question, answer, prediction)
        # VLMEvalKit's API wrapper strips the content before LogicVista_auxeval sees it
        stripped = reply.strip()
        theirs = released.LogicVista_auxeval(
            Replying(stripped), {"question": question, "prediction": prediction, "answer": answer}
        )
        if theirs["res"] == "":  # every try failed to parse: the item scores 0 there
            with pytest.raises(ValueError, match="upper-case letters"):
                parse_logicvista_letters(reply)
            failures += 1
            continue
        letters = parse_logicvista_letters(reply)
        assert letters == theirs["res"]
        assert PROMPTS["logicvista"].score(letters, answer) == theirs["hit"], (reply, answer)
        hits += theirs["hit"]
    capsys.readouterr()  # the released step prints every prompt
    assert hits > 100 and failures > 100  # both outcomes were exercised


@pytest.mark.parametrize(
    "letters, answer, hit",
    [
        ("A", "A", 1.0),
        ("CA", "A, C", 1.0),
        ("AC", "C, A", 1.0),
        ("AAC", "A, C", 0.0),  # a repeated letter is another answer
        ("A", "A, C", 0.0),
        ("AC", "A,C", 0.0),  # the answer is split on ", " only, as released
        ("Z", "Z", 1.0),
        ("Z", "B", 0.0),  # the extractor's "no choice"
        ("C", "3", 0.0),  # a numbered answer never matches a letter
    ],
)
def test_hit_compares_the_sorted_lower_case_letters(letters: str, answer: str, hit: float) -> None:
    assert logicvista_hit(letters, answer) == hit


def test_the_request_shows_the_raw_question_and_the_candidate() -> None:
    request = judge_request(
        "v1_1",
        "Which choices (A-D) belong?",
        "A, C",
        "multiple_choice",
        ["x"],
        "A and C",
        "logicvista",
    )
    assert (request.question, request.reference, request.candidate) == (
        "Which choices (A-D) belong?",
        "A, C",
        "A and C",
    )
    text = request.prompt.render(request.question, request.reference, request.candidate)
    assert text.endswith(
        "Question: <start>\nWhich choices (A-D) belong?\n<end>\n"
        "Answer: <start>\nA and C\n<end>\nYour output: "
    )
    assert "A, C" not in text.split("Example 5")[1]  # the reference is never shown
    assert (request.prompt.version, request.prompt.max_tokens) == ("logicvista-v1", 128)
