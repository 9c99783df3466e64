"""Edges of vlrl.scoring.mmmu that test_mmmu_official.py leaves open: answers ending in a
capital X (which only the released punctuation set must leave alone) and ``eval_multi_choice``
on a single gold. The verbatim port of MMMU's ``mmmu/utils/eval_utils.py``
(tests/scoring/reference/mmmu_eval_utils.py) is the oracle."""

from __future__ import annotations

import random

import pytest
from reference import mmmu_eval_utils as ref

from vlrl.scoring import mmmu
from vlrl.scoring.candidate import Candidate, Verdict

OPTIONS = ["Martin Luther King", "Malcolm X", "Rosa Parks"]


def _ref_choice(response: str, seed: int) -> str:
    """The released parse, its global ``random`` swapped for a seeded generator."""
    index2ans, all_choices = ref.get_multi_choice_info(OPTIONS)
    original = ref.random
    ref.random = random.Random(seed)
    try:
        return ref.parse_multi_choice_response(response, all_choices, index2ans)
    finally:
        ref.random = original


def _our_choice(response: str, seed: int) -> str:
    index2ans, all_choices = mmmu.get_multi_choice_info(OPTIONS)
    return mmmu.parse_multi_choice_response(response, all_choices, index2ans, random.Random(seed))


@pytest.mark.parametrize(
    "response",
    [
        "I think the speech was given by Malcolm X",
        "I think the speech was given by Malcolm X.",
        "I think the speech was given by Malcolm X!?",
        "I think the speech was given by Malcolm X;'",
        "I think the speech was given by Malcolm X:,",
    ],
)
def test_multiple_choice_text_ending_in_x(response: str) -> None:
    """Only ``,.!?;:'`` are stripped from the ends, so an option text ending in X is still
    found (a random guess, seeded here to avoid B, would replace it otherwise)."""
    seed = next(s for s in range(100) if random.Random(s).choice(["A", "B", "C"]) != "B")
    assert _ref_choice(response, seed) == "B"
    assert _our_choice(response, seed) == "B"


@pytest.mark.parametrize(
    ("response", "gold", "correct"),
    [
        ("The answer is Malcolm X", "Malcolm X", 1),
        ("The answer is Malcolm X.", "Malcolm X", 1),
        ("The answer is Malcolm", "Malcolm X", 0),
        ("so the unit is 5 X", "5 x", 1),
    ],
)
def test_open_answer_ending_in_x(response: str, gold: str, correct: int) -> None:
    """Only full stops are stripped from an open answer before it is lower-cased."""
    expected = ref.eval_open(gold, ref.parse_open_response(response))
    assert expected == bool(correct)
    assert mmmu.eval_open(gold, mmmu.parse_open_response(response)) == expected
    candidate = Candidate(f"<answer>{response}</answer>", gold, "free_form")
    assert mmmu.official(candidate) == Verdict(response, float(correct), correct)


@pytest.mark.parametrize(
    ("gold", "pred"), [("B", "B"), ("B", "C"), ("A", "a"), (["A", "C"], "C"), (["A"], "B")]
)
def test_eval_multi_choice_single_and_list_gold(gold, pred: str) -> None:
    assert mmmu.eval_multi_choice(gold, pred) == ref.eval_multi_choice(gold, pred)
    assert mmmu.eval_multi_choice(gold, pred) == (pred in gold if isinstance(gold, list) else
                                                 gold == pred)  # fmt: skip
