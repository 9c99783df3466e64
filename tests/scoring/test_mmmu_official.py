"""MMMU's own scorer (vlrl.scoring.mmmu) against a verbatim port of MMMU's
``mmmu/utils/eval_utils.py``, on hand-picked and on generated answers."""

from __future__ import annotations

import random

import pytest
from reference import mmmu_eval_utils as ref

from vlrl.scoring import mmmu
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.rules import answer_span

OPTIONS = ["red", "blue", "green", "dark red"]


def ref_choice(response: str, options: list[str], item_id: str) -> str:
    """The released MC parse, its global ``random`` swapped for vlrl's per-item generator."""
    index2ans, all_choices = ref.get_multi_choice_info(options)
    original = ref.random
    ref.random = random.Random(item_id)
    try:
        return ref.parse_multi_choice_response(response, all_choices, index2ans)
    finally:
        ref.random = original


def ours_choice(response: str, options: list[str], item_id: str) -> str:
    index2ans, all_choices = mmmu.get_multi_choice_info(options)
    rng = random.Random(item_id)
    return mmmu.parse_multi_choice_response(response, all_choices, index2ans, rng)


def same_items(ours: list, theirs: list) -> bool:
    """Equal as multisets (both come from ``list(set(...))``; nan compared by its repr)."""
    return sorted(map(repr, ours)) == sorted(map(repr, theirs))


@pytest.mark.parametrize(
    ("response", "letter", "why"),
    [
        ("(B)", "B", "a bracketed letter"),
        ("B", "B", "a bare letter"),
        ("B.", "B", "trailing punctuation is stripped"),
        ("The answer is (C), not (A).", "A", "of bracketed letters, the last"),
        ("A or C", "C", "of bare letters, the last"),
        ("I believe that the colour is blue here", "B", "an option text in a long answer"),
        ("it is blue", "C", "a short answer's text is not read: a random letter"),
        ("I believe it is dark red, not blue", "B", "of option texts, the last"),
        ("", "C", "nothing: a random letter"),
    ],
)
def test_multiple_choice_parse(response, letter, why):
    assert ours_choice(response, OPTIONS, "validation_Art_1") == letter, why
    assert ref_choice(response, OPTIONS, "validation_Art_1") == letter, why


def test_the_random_letter_is_seeded_by_the_item_id():
    letters = ["A", "B", "C", "D"]
    for item_id in ["validation_Art_1", "validation_Art_2", "x"]:
        want = random.Random(item_id).choice(letters)
        assert {ours_choice("no idea", OPTIONS, item_id) for _ in range(3)} == {want}
    guesses = {ours_choice("no idea", OPTIONS, f"validation_Math_{i}") for i in range(40)}
    assert guesses == set(letters)  # it is a guess, not a constant


@pytest.mark.parametrize(
    ("response", "golds", "correct", "why"),
    [
        ("so the rate is 3.429 m/s", ["24/7", "3.429"], True, "the second gold (MMMU Math_15)"),
        ("The answer is 24/7.", ["24/7", "3.429"], True, "the first gold"),
        ("It is MgS", ["$MgS$", "MgS"], True, "a gold text inside a key part"),
        ("Florida", ["Tampa", "Florida"], True, "the whole answer when no key part"),
        ("Orlando", ["Tampa", "Florida"], False, "no gold"),
        ("therefore x = 1.064", ["1.06"], True, "numbers rounded to 2 places"),
        ("therefore x = 1.07", ["1.06"], False, "a different number"),
        ("the total is 7,243,000 dollars", ["7243000"], True, "thousands commas"),
        ("the answer is abc", ["B"], False, "a one-letter gold needs a space beside it"),
        ("the answer is b c", ["B"], True, "… which it has here"),
        ("The value is 12 cm and the answer is 5", ["12"], False, "the shortest key part"),
        ("The value is 12.\nSo it is 5", ["12"], True, "each line has its key part"),
    ],
)
def test_open_answers(response, golds, correct, why):
    assert mmmu.eval_open(golds, mmmu.parse_open_response(response)) is correct, why
    assert ref.eval_open(golds, ref.parse_open_response(response)) is correct, why


def test_every_gold_counts_not_only_the_first():
    # The old rule kept the first of a list gold; "3.429" is MMMU's second accepted answer.
    response = "<answer>3.429</answer>"
    two = Candidate(response, "24/7", "free_form", accepted=("3.429",), item_id="m15")
    one = Candidate(response, "24/7", "free_form", item_id="m15")
    assert (mmmu.official(two).correct, mmmu.official(one).correct) == (1, 0)


def test_official_reads_the_answer_span_and_checks_its_types():
    verdict = mmmu.official(
        Candidate("<think>(A)</think><answer>(B)</answer>", "B", "multiple_choice", ("x", "y"))
    )
    assert verdict == ("(B)", 1.0, 1)
    with pytest.raises(ValueError, match="yes_no"):
        mmmu.official(Candidate("yes", "yes", "yes_no", item_id="q1"))
    with pytest.raises(ValueError, match=r"'q2'.*without options"):
        mmmu.official(Candidate("A", "A", "multiple_choice", item_id="q2"))


# Generated answers: letters in wrappings, option texts in prose, numbers with units and
# commas, scientific notation, equations, lists, several lines.
WORDS = ["the", "answer", "is", "so", "thus", "therefore", "final", "result", "could be", "=",
         "I", "think", "a", "A", "because", "of", "figure", "cm", "m/s", "$", "%", "\n", ". ",
         "x", "y", ",", "!", "?", ":", "'", "Answer:", "Final answer:"]  # fmt: skip
TEXTS = ["red", "blue", "green", "dark red", "97", "102", "18", "A", "B", "C", "the cat", "cat",
         "MgS", "$MgS$", "Tampa", "Florida", "24/7", "3.429", "1.06", "7,243,000", "<image 2>",
         "Transformation", "nan", "inf", "1e3", "", "x"]  # fmt: skip
NUMBERS = ["3", "3.0", "3.429", "3.43", "-2.5", "1,000", "1,000,000", "12,34", "2.5e3", "1E-2",
           ".5", "007", "24/7", "1/2", "100%", "0.001", "1_000", "nan", "-0"]  # fmt: skip
WRAPS = ["{}", "({})", "{}.", "**{}**", "{})", " {} ", "[{}]", "Option {}", "The answer is ({})"]


def random_response(rng: random.Random, options: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(0, 10)):
        kind = rng.random()
        if kind < 0.2 and options:
            letter = rng.choice("ABCDEFGHZ"[: len(options) + 2] + "ab")
            parts.append(rng.choice(WRAPS).format(letter))
        elif kind < 0.4:
            parts.append(rng.choice(options + TEXTS))
        elif kind < 0.6:
            parts.append(rng.choice(NUMBERS) + rng.choice(["", " cm", "%", " m/s", ",", "."]))
        else:
            parts.append(rng.choice(WORDS))
    return rng.choice([" ", "", "\n", ". "]).join(parts)


def generated(seed: int, n: int) -> list[tuple[str, list[str], list[str], str]]:
    """(response, options, golds, item id)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        options = [rng.choice(TEXTS) for _ in range(rng.choice([2, 3, 4, 4, 5, 7, 9]))]
        golds = [rng.choice(TEXTS + NUMBERS) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        out.append((random_response(rng, options), options, golds, f"validation_Gen_{i}"))
    return out


CASES = generated(11, 2000)


def test_multiple_choice_parse_is_the_released_code_on_generated_answers():
    differ = [
        (response, options, ours_choice(response, options, i), ref_choice(response, options, i))
        for response, options, _, i in CASES
        if ours_choice(response, options, i) != ref_choice(response, options, i)
    ]
    assert not differ, differ[:5]


def test_open_parse_and_eval_are_the_released_code_on_generated_answers():
    for response, _, golds, _ in CASES:
        ours, theirs = mmmu.parse_open_response(response), ref.parse_open_response(response)
        assert same_items(ours, theirs), response
        for gold in (golds, golds[0]):
            assert mmmu.eval_open(gold, ours) == ref.eval_open(gold, theirs), (response, gold)
        for gold in golds:
            assert mmmu.normalize_str(gold) == ref.normalize_str(gold) or gold == "nan"
            assert mmmu.extract_numbers(gold) == ref.extract_numbers(gold)


def test_official_verdicts_are_the_released_code_on_generated_answers():
    for response, options, golds, item_id in CASES:
        full = random.Random(item_id).choice(["{}", "<think>(A) 3</think><answer>{}</answer>"])
        full = full.format(response)
        span = answer_span(full)
        letter = random.Random(item_id + "gold").choice("ABCDEFGHI"[: len(options)])
        mc = Candidate(full, letter, "multiple_choice", tuple(options), item_id=item_id)
        want = ref.eval_multi_choice(letter, ref_choice(span, options, item_id))
        assert mmmu.official(mc).correct == int(want), (span, options)
        open_ = Candidate(full, golds[0], "free_form", accepted=tuple(golds[1:]), item_id=item_id)
        want = ref.eval_open(golds, ref.parse_open_response(span))
        assert mmmu.official(open_) == (span or None, float(want), int(want)), (span, golds)


def test_the_generated_answers_reach_every_branch():
    # Agreement proves little unless the generator reaches each way of reading an answer.
    index = {"bracket": 0, "bare": 0, "text": 0, "random": 0}
    for response, options, _, _ in CASES:
        padded = " " + response.strip(",.!?;:'") + " "
        letters = [chr(ord("A") + i) for i in range(len(options))]
        if any(f"({c})" in padded for c in letters):
            index["bracket"] += 1
        elif any(f" {c} " in padded for c in letters):
            index["bare"] += 1
        elif len(padded.split()) > 5 and any(o.lower() in padded.lower() for o in options):
            index["text"] += 1
        else:
            index["random"] += 1
    assert min(index.values()) >= 100, index
    correct_open = sum(
        ref.eval_open(golds, ref.parse_open_response(response)) for response, _, golds, _ in CASES
    )
    assert correct_open >= 100
