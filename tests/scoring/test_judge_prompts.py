"""The judge's prompts: one per answer type, each well-formed, versioned and strictly parsed; and
MM-Vet's grader, verbatim."""

from __future__ import annotations

import hashlib

import pytest

from vlrl.scoring.judge_prompts import (
    _BINARY,
    BY_PROBLEM_TYPE,
    MMVET_GRADER,
    PROMPTS,
    _binary_template,
    mmvet_query,
    parse_mmvet_score,
    parse_verdict,
    prompt_for,
)

#: sha256 of the ``prompt`` string in yuweihao/MM-Vet ``mm-vet_evaluator.py`` (commit acde843e).
GRADER_PROMPT_SHA256 = "d1b3e0a5b4e72c888b77164489d705bba4dd149934fff564dfba6443d81afe3f"
BINARY = sorted(name for name, p in PROMPTS.items() if not p.own_layout)

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
    assert PROMPTS["mmvet"].own_layout and PROMPTS["mmvet"].render is mmvet_query


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


# ------------------------------------------------------------------ the binary prompts, exactly
# The binary prompts are vlrl's own text (the verifier *pattern* of CompassVerifier and
# VLMEvalKit ``vlmeval/dataset/utils/verifier.py``, not their wording), so the oracle is the text
# as released under each version: the judge cache is keyed by prompt version and request, and a
# verdict cached under a version must have been given to this exact text. Changing a prompt's
# text means bumping its version and updating the hash here.
#: sha256 of ``render("Q?", "R", "C")`` per prompt version.
RENDERED_SHA256 = {
    "multiple_choice-v1": "68ca94a56e35d4088d9b5a8ff10d7451c1aaf25cad19e73f34330d2cb437b142",
    "numerical-v1": "ee15cf3270c081f4574dd68ad89ba891a9f604063f4e775021a6eae0297a2aab",
    "yes_no-v1": "f57f821defe89c59e5ef883452099696ae67888ecaeb7ee35aec0d9e2a1b79d1",
    "free_form-v1": "c63aa90856346832c5ec41a00fe5fa1a018863c8c787a45c419620d4c046f2c2",
}

MULTIPLE_CHOICE_V1 = """\
You are a strict grader. Decide whether a candidate's final answer to a question matches the \
reference answer.

Rules:
- The question offers options; the reference is the correct option's letter and text.
- Compare only the candidate's final answer with the reference answer; ignore any reasoning.
- The candidate is correct if it chooses that option, by its letter or by its text (or an \
unmistakable paraphrase of it), and no other option.
- A refusal, an empty, truncated or repetitive answer, or an answer that offers several \
different answers is incorrect.
- Reply with exactly one token: 1 if the candidate is correct, 0 if it is incorrect. Write \
nothing else.

Example:
<Question Begin>What is shown?
Options: A. a cat  B. a dog<Question End>
<Reference Begin>B. a dog<Reference End>
<Candidate Begin>(B)<Candidate End>
Verdict: 1

Example:
<Question Begin>What is shown?
Options: A. a cat  B. a dog<Question End>
<Reference Begin>B. a dog<Reference End>
<Candidate Begin>A cat.<Candidate End>
Verdict: 0

Now grade this candidate.
<Question Begin>Q?<Question End>
<Reference Begin>R<Reference End>
<Candidate Begin>C<Candidate End>
Verdict:"""


def _fresh_render(name: str):
    """The prompt's renderer built now: ``PROMPTS`` is built at import, so only a renderer
    built inside the test sees a change to ``_binary_template`` (as mutation testing makes)."""
    return _binary_template(*_BINARY[name])


def test_multiple_choice_prompt_is_exactly_its_v1_text():
    assert PROMPTS["multiple_choice"].version == "multiple_choice-v1"
    assert _fresh_render("multiple_choice")("Q?", "R", "C") == MULTIPLE_CHOICE_V1
    assert PROMPTS["multiple_choice"].render("Q?", "R", "C") == MULTIPLE_CHOICE_V1


@pytest.mark.parametrize("name", BINARY)
def test_each_binary_prompt_is_the_text_of_its_version(name):
    fresh = _fresh_render(name)("Q?", "R", "C")
    assert fresh == PROMPTS[name].render("Q?", "R", "C")
    digest = hashlib.sha256(fresh.encode()).hexdigest()
    assert RENDERED_SHA256[PROMPTS[name].version] == digest, "changed text: bump the version"


@pytest.mark.parametrize("name", BINARY)
def test_binary_prompt_rules_put_the_types_rules_around_the_common_ones(name):
    """The type's first rule (what the answer is), the common "compare only the final answer",
    the type's other rules, then the common refusal and reply rules, one per line."""
    rules, examples = _BINARY[name]
    text = _fresh_render(name)("Q?", "R", "C")
    block = text.split("Rules:\n", 1)[1].split("\n\n", 1)[0]
    common = ("- Compare only", "- A refusal", "- Reply with exactly one token")
    lines = block.split("\n")
    assert lines[0] == rules[0] and lines[1].startswith(common[0])
    assert lines[2:-2] == list(rules[1:])
    assert lines[-2].startswith(common[1]) and lines[-1].startswith(common[2])
    assert len(lines) == len(rules) + 3
    # the worked examples, each with its own question, reference, candidate and verdict
    shots = text.split("\n\nExample:\n")[1:]
    assert len(shots) == len(examples) == 2
    for shot, (q, r, c, v) in zip(shots, examples, strict=True):
        item = shot.split("\n\n")[0]
        assert item == (
            f"<Question Begin>{q}<Question End>\n<Reference Begin>{r}<Reference End>\n"
            f"<Candidate Begin>{c}<Candidate End>\nVerdict: {v}"
        )
    assert [v for *_, v in examples] == [1, 0]


@pytest.mark.parametrize("name", BINARY)
def test_binary_prompt_fills_the_item_verbatim_even_with_braces(name):
    # LaTeX answers carry braces: the item is filled in, never re-formatted
    question, reference, candidate = "Find {x}.", "\\frac{1}{2}", "$\\frac{2}{4}$ {0}"
    text = _fresh_render(name)(question, reference, candidate)
    assert text.endswith(
        "Now grade this candidate.\n<Question Begin>Find {x}.<Question End>\n"
        "<Reference Begin>\\frac{1}{2}<Reference End>\n"
        "<Candidate Begin>$\\frac{2}{4}$ {0}<Candidate End>\nVerdict:"
    )
    assert text == PROMPTS[name].render(question, reference, candidate)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('"1"', 1),
        ("'0'", 0),
        ("Verdict: `1`", 1),
        ("1X", None),  # only quotes, backticks and emphasis are stripped
        ("X0", None),
        ("Verdict: 1X", None),
    ],
)
def test_parse_verdict_strips_quotes_and_nothing_else(reply, expected):
    assert parse_verdict(reply) == expected


def test_failure_messages_quote_the_first_200_characters_of_the_reply():
    reply = "x" * 300
    with pytest.raises(ValueError) as binary:
        PROMPTS["numerical"].parse(reply)
    assert str(binary.value) == f"reply is not a 0/1 verdict: {'x' * 200!r}"
    with pytest.raises(ValueError) as graded:
        parse_mmvet_score(reply)
    assert str(graded.value) == f"reply is not an MM-Vet score in [0, 1]: {'x' * 200!r}"
