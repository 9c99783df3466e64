"""The judge's prompts: one per answer type, each well-formed, versioned and strictly parsed; and
MM-Vet's grader, verbatim."""

from __future__ import annotations

import hashlib

import pytest

from vlrl.scoring.judge_prompts import (
    BY_PROBLEM_TYPE,
    MMVET_GRADER,
    PROMPTS,
    mmvet_query,
    parse_mmvet_score,
    parse_verdict,
    prompt_for,
)

#: sha256 of the ``prompt`` string in yuweihao/MM-Vet ``mm-vet_evaluator.py`` (commit acde843e).
GRADER_PROMPT_SHA256 = "d1b3e0a5b4e72c888b77164489d705bba4dd149934fff564dfba6443d81afe3f"
BINARY = sorted(name for name, p in PROMPTS.items() if not p.graded)

VERDICTS = [
    ("1", 1, "the bare token"),
    ("0", 0, "the bare token"),
    (" 1 \n", 1, "surrounding whitespace is not content"),
    ("Verdict: 0", 0, "echoing the prompt's 'Verdict:' cue"),
    ("**1**", 1, "Markdown emphasis around the token"),
    ("\\boxed{0}", 0, "a boxed verdict"),
    ("1.", 1, "a trailing full stop"),
    ("<think>it says 3, reference 3, so 1? no, 0</think>\n1", 1, "reasoning is dropped first"),
    ("The answers differ.\n0", 0, "only the last line holds the verdict"),
    ("", None, "an empty reply is a failure"),
    ("correct", None, "words outside the vocabulary are failures"),
    ("0 or 1", None, "two verdicts are a failure, not the last one"),
    ("10", None, "a number that is not a verdict token"),
    ("1\nActually I am not sure", None, "a verdict followed by more text is a failure"),
    ("<think>1</think>", None, "a verdict only inside the reasoning is a failure"),
    ("yes", None, "yes/no is not the closed vocabulary"),
]


@pytest.mark.parametrize(
    ("reply", "expected"), [pytest.param(r, e, id=why) for r, e, why in VERDICTS]
)
def test_parse_verdict(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize("name", BINARY)
def test_binary_prompt_has_role_rules_examples_item_and_closed_vocabulary(name):
    prompt = PROMPTS[name].render("How many circles?", "3", "three")
    assert prompt.startswith("You are a strict grader.")
    assert "exactly one token: 1 if the candidate is correct, 0 if it is incorrect" in prompt
    assert prompt.count("Example:") == 2
    # one right and one wrong worked example, each ending in its verdict
    assert " 1\n\n" in prompt and " 0\n\n" in prompt
    tail = prompt[prompt.index("Now grade this candidate.") :]
    assert tail == (
        "Now grade this candidate.\n<Question Begin>How many circles?<Question End>\n"
        "<Reference Begin>3<Reference End>\n<Candidate Begin>three<Candidate End>\nVerdict:"
    )


@pytest.mark.parametrize("name", BINARY)
def test_binary_prompt_parses_only_verdicts(name):
    parse = PROMPTS[name].parse
    assert (parse("1"), parse("Verdict: 0")) == (1.0, 0.0)
    with pytest.raises(ValueError, match="not a 0/1 verdict"):
        parse("probably right")


def test_versions_are_unique_and_name_their_prompt():
    versions = [p.version for p in PROMPTS.values()]
    assert len(set(versions)) == len(versions)
    assert all(p.version.startswith(f"{name}-v") for name, p in PROMPTS.items())


def test_every_judgeable_answer_type_has_a_prompt():
    judgeable = {"multiple_choice", "numerical", "yes_no", "free_form", "ocr"}
    assert set(BY_PROBLEM_TYPE) == judgeable
    assert {t: prompt_for(t).name for t in judgeable}["ocr"] == "free_form"
    with pytest.raises(KeyError):
        prompt_for("grounding")  # boxes are decided by IoU only


def test_mmvet_grader_is_the_authors_verbatim():
    assert hashlib.sha256(MMVET_GRADER.encode()).hexdigest() == GRADER_PROMPT_SHA256
    assert "\n\nQuestion | Ground truth | Prediction | Correctness\n--- | --- | --- | ---\n" in (
        MMVET_GRADER
    )
    assert MMVET_GRADER.endswith("| 1.0\n")
    query = mmvet_query("What is the price?", "eight<OR> 8.0", "It costs 8.")
    assert query == MMVET_GRADER + "\nWhat is the price? | eight <OR>  8.0 | It costs 8. | "
    assert PROMPTS["mmvet"].graded and PROMPTS["mmvet"].render is mmvet_query


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("0.4", 0.4),
        ("1.0", 1.0),
        ("0", 0.0),
        ("0.5 since one part is right", 0.5),
        ("0.7\n", 0.7),
        (" 0.7", None),  # the authors' split(" ") makes the first token empty
        ("1.5", None),
        ("-0.1", None),
        ("The score is 0.5", None),
        ("", None),
        ("0.5,", None),
    ],
)
def test_mmvet_score_is_the_first_token_in_range(reply, expected):
    if expected is None:
        with pytest.raises(ValueError, match="not an MM-Vet score"):
            parse_mmvet_score(reply)
    else:
        assert parse_mmvet_score(reply) == pytest.approx(expected)
