"""Differential tests: the SophiaVL-R1 rewards against the released code
(``reference/released_sophiavl_rewards.py``, a verbatim copy of kxfan2002/SophiaVL-R1 @ a818494)
on seeded random inputs, ordinary ones first (well-formed ``<think>…</think><answer>…</answer>``
completions with numeric, multiple-choice, LaTeX, OCR and free-form answers, right and wrong), then
adversarial ones (missing, nested, unclosed or upper-case tags, leading whitespace, dollars inside
tags, empty strings, unicode, 400- and 5000-digit numbers).

Compared, each value exactly or to 1e-9 (OCR: ``np.exp`` released, ``math.exp`` here):

- ``sophiavl.format`` and :func:`think_answer_format` with ``math_format_reward`` (``math.py``
  lines 26-29) on the dollar-stripped response (``custom.py`` line 284), the gate it is released;
- the scorers (:func:`numerical_score`, :func:`choices_score`, :func:`ocr_score`,
  :func:`free_form_score`) with ``math.py``'s ``*_compute_score``, and ``sophiavl.outcome`` with
  the answer score of ``CustomRewardManager.__call__`` (``custom.py`` lines 281-290) under the
  manager that ``main.py`` (lines 103-109) and ``ray_trainer.py`` (line 720) select for the type;
- :func:`parse_thinking_score` with ``get_process_reward`` (``custom.py`` lines 167-218) answered
  by an offline fake server, and :func:`thinking_request` with the body it posts;
- :func:`sophiavl_user_text` with ``RLHFDataset.__getitem__`` (``dataset.py`` lines 169-175), and
  the prompt constants of :mod:`vlrl.items.prompts` with ``dataset.py`` and ``run_train.sh``;
- the hand-written case tables of ``test_sophiavl.py`` with the released values.

Declared deviations (the expected value is the released one on the input shown):

1. Problem-type aliases: vlrl's ``multiple_choice``, ``ocr`` and ``free_form`` are SophiaVL's
   ``multiple choice``, ``OCR`` and ``free-form``
   (:data:`vlrl.items.prompt_texts.PROBLEM_TYPE_ALIASES`, declared in the reward module's
   docstring); released, they would fall back to ``numerical``.
   Expected: the released manager of ``sophiavl_type(problem_type)``.
2. Non-string ground truths are read as ``str(answer)`` (``outcome_reward``); released,
   ``re.search`` raises TypeError. Expected: the released score of ``str(answer)``.
3. A thinking reply whose number does not parse (``</think> 1.2.3``): ``extract_score`` raises,
   ``get_process_reward`` retries ten times and returns 0; :func:`parse_thinking_score` returns 0.0
   at once (declared in its docstring). The comparison with ``get_process_reward`` is then exact.
4. ``sophiavl_user_text`` with ``options=None`` for a multiple-choice problem appends nothing;
   released, ``"; ".join(map(str, None))`` raises TypeError. Expected: released with ``[]``.

Where both raise (``sophiavl_user_text`` on a type with no template: KeyError) the exception types
must agree.
"""

from __future__ import annotations

import contextlib
import io
import math
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from released_code import released_module

from vlrl.items.prompt_texts import SOPHIAVL_THINK_PATTERN
from vlrl.rewards.sophiavl import (
    REWARDS,
    SOPHIAVL_QUESTION_TEMPLATE,
    SOPHIAVL_SYSTEM_PROMPT,
    SOPHIAVL_TYPE_TEMPLATE,
    THINKING_SYSTEM_PROMPT,
    choices_score,
    free_form_score,
    numerical_score,
    ocr_score,
    parse_thinking_score,
    sophiavl_type,
    sophiavl_user_text,
    strip_dollars,
    think_answer_format,
    thinking_request,
    unwrap_answer,
)

released = released_module("released_sophiavl_rewards.py")
TRAINER = SimpleNamespace(reward_fn_dict=released.released_reward_fn_dict())

ORDINARY, ADVERSARIAL = 150, 150  # cases per differential test: ordinary first, then adversarial


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or the exception it raises (released prints on retries: muted)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(*args)
    except Exception as exc:  # recorded and compared
        return exc


def same(got: Any, expected: Any) -> bool:
    """Equal values (to 1e-9 for numbers; vlrl's are floats), or exceptions of one type."""
    if isinstance(expected, Exception) or isinstance(got, Exception):
        return type(got) is type(expected)
    if isinstance(expected, str | dict):
        return got == expected
    return isinstance(got, float) and math.isclose(got, float(expected), rel_tol=0, abs_tol=1e-9)


def check(cases: list[tuple], vlrl: Callable[..., Any], oracle: Callable[..., Any]) -> None:
    """Fail on the first case where vlrl and the released code disagree, showing its repr."""
    for index, case in enumerate(cases):
        got, expected = call(vlrl, *case), call(oracle, *case)
        kind = "ordinary" if index < ORDINARY else "adversarial"
        assert same(got, expected), f"{kind} case {index}: {case!r}: {got!r} != {expected!r}"


# --- generated completions and ground truths -----------------------------------------------------

THINKS = [
    "let me think", "Hmm, 2 + 3 = 5.", "wait, the options are A and B", "\nstep 1\nstep 2\n",
    "oh, I see: $x^2 = 4$", "", "the area is \\frac{1}{2} b h",
]  # fmt: skip
NOISE = [
    "\u200b", "\u00a0", "\u3000", "\u202e", "\ufeff", "é", "e\u0301", "５", "٣", "答案", "😀",
    "\t", "\n", " ", "$", "$$", "<", ">", "</", "think", "answer", "{", "}", "\\", "ß", "ﬁ",
]  # fmt: skip
HUGE = ["1" + "0" * 400, "9" * 5000, "1e400", "-" + "9" * 50, "0." + "3" * 300]


def noise(rng: random.Random, n: int = 8) -> str:
    """Up to ``n`` - 1 tokens of unicode, whitespace, dollars and tag fragments."""
    return "".join(rng.choice(NOISE) for _ in range(rng.randrange(n)))


SEPARATORS = ["", " ", "\n", "\n\n"]
TAILS = ["", "\n", " ", " done.", "<|im_end|>"]


def well_formed(rng: random.Random, answer: str) -> str:
    """A completion that passes the format gate, with ``answer`` in its ``<answer>``."""
    head = f"<think>{rng.choice(THINKS)}</think>{rng.choice(SEPARATORS)}"
    return f"{head}<answer>{answer}</answer>{rng.choice(TAILS)}"


def malformed(rng: random.Random, answer: str, other: str) -> str:
    """A completion with a broken, doubled or disguised structure around ``answer``."""
    think = rng.choice(THINKS)
    return rng.choice([
        " " + well_formed(rng, answer),
        "\n" + well_formed(rng, answer),
        f"Sure. {well_formed(rng, answer)}",
        f"<answer>{answer}</answer>",
        f"<think>{think}</think>{answer}",
        f"<think><think>{think}</think></think><answer>{answer}</answer>",
        f"<think>{think}</think><answer><answer>{answer}</answer></answer>",
        f"<think><answer>{other}</answer></think><answer>{answer}</answer>",
        well_formed(rng, answer) + f"<answer>{other}</answer>",
        f"<think>{think}</think><answer>{answer}",
        f"<think>{think}<answer>{answer}</answer>",
        f"<THINK>{think}</THINK><ANSWER>{answer}</ANSWER>",
        f"<think >{think}</think><answer >{answer}</answer>",
        f"<answer>{answer}</answer><think>{think}</think>",
        f"$<think>{think}</think><answer>{answer}</answer>$",  # well formed once $ are stripped
        f"<thi$nk>{think}</think><answer>{answer}</ans$$wer>",  # likewise
        f"<think>{think}</think><answer>{noise(rng)}{answer}{noise(rng)}</answer>",
        well_formed(rng, noise(rng, 20)),
        well_formed(rng, rng.choice(HUGE)),
        well_formed(rng, ""),
        well_formed(rng, " \n\t "),
        noise(rng, 30),
        "",
    ])  # fmt: skip


def ground_truth(rng: random.Random, gold: str) -> str:
    """The ``answer`` column: plain, wrapped in ``<answer>`` or in dollars, as datasets have it."""
    return rng.choice([gold, gold, f"<answer>{gold}</answer>", f"<answer> {gold} </answer>",
                       f"${gold}$", f"$${gold}$$"])  # fmt: skip


def adversarial_truth(rng: random.Random, gold: str) -> Any:
    """An ``answer`` column that is empty, broken, noisy, huge or not a string."""
    return rng.choice([
        ground_truth(rng, gold), "", " ", "$", "<answer></answer>", f"<answer>{gold}",
        f"<answer><answer>{gold}</answer>", noise(rng, 12), rng.choice(HUGE), 5, 3.5,
    ])  # fmt: skip


def outcome_cases(
    seed: int, types: list[str], golds: list[str], variants: Callable[[str], list[str]]
) -> list[tuple[Any, Any, str]]:
    """(completion, answer column, problem type): ORDINARY well-formed cases whose answer is
    the gold, a variant of it or another gold, then ADVERSARIAL ones."""
    rng = random.Random(seed)
    cases = []
    for index in range(ORDINARY + ADVERSARIAL):
        gold, other = rng.choice(golds), rng.choice(golds)
        pred = rng.choice([gold, other, *variants(gold)])
        if index < ORDINARY:
            completion, answer = well_formed(rng, pred), ground_truth(rng, gold)
        else:
            completion, answer = malformed(rng, pred, other), adversarial_truth(rng, gold)
        if rng.random() < 0.1:  # a conversational completion
            completion = [{"role": "assistant", "content": completion}]
        cases.append((completion, answer, rng.choice(types)))
    return cases


def released_outcome(completion: Any, answer: Any, problem_type: str) -> float:
    """The released answer score of one response under the manager of its type (deviation 1 and
    2: the type's SophiaVL name, ``str(answer)``)."""
    text = completion if isinstance(completion, str) else completion[0]["content"]
    sample = SimpleNamespace(non_tensor_batch={"problem_type": sophiavl_type(problem_type)})
    manager = released.released_select(TRAINER, sample)
    return released.released_answer_score(manager, str(answer), text)


def vlrl_outcome(completion: Any, answer: Any, problem_type: str) -> float:
    """The registered ``sophiavl.outcome`` on one row."""
    (value,) = REWARDS["sophiavl.outcome"](
        [completion], answer=[answer], problem_type=[problem_type]
    )
    return value


def check_outcome(cases: list[tuple], scorer: Callable[[str, str], float] | None) -> None:
    """``sophiavl.outcome`` against the released manager; the vlrl scorer of the type (when
    given) against the released ``*_compute_score`` on the same preprocessed strings."""
    check(cases, vlrl_outcome, released_outcome)
    if scorer is None:
        return
    fn = released.released_select(TRAINER, SimpleNamespace(non_tensor_batch={
        "problem_type": sophiavl_type(cases[0][2])})).compute_score  # fmt: skip
    pairs = [
        (strip_dollars(c if isinstance(c, str) else c[0]["content"]),
         strip_dollars(unwrap_answer(str(a))))
        for c, a, _ in cases
    ]  # fmt: skip
    check(pairs, scorer, fn)


NUMBERS = ["5", "3.5", "0.5", "-2", "12", "1/2", "\\frac{1}{2}", "10\\%", "1,000", "\\sqrt{2}",
           "3 cm", "1e3", "x^2", "(1, 2)", "\\{1,2\\}", "2\\pi", "0", "100"]  # fmt: skip


def numeric_variants(gold: str) -> list[str]:
    """Renderings of a numeric answer mathruler may or may not grade equal."""
    return [f" {gold} ", f"${gold}$", f"{gold}.0", f"\\boxed{{{gold}}}", f"\\text{{{gold}}}",
            f"{gold} degrees", "\\frac{10}{20}", "0.50", "5.0", gold.upper()]  # fmt: skip


def test_numerical_matches_released() -> None:
    cases = outcome_cases(1, ["numerical"], NUMBERS, numeric_variants)
    check_outcome(cases, numerical_score)


def test_other_types_fall_back_to_numerical_like_released() -> None:
    types = ["yes_no", "grounding", "detection", "essay", "None", "", "Numerical", "multi-choice"]
    golds = ["yes", "No", "[0, 0, 10, 10]", "5", "\\frac{1}{2}", "a cat"]
    cases = outcome_cases(2, types, golds, lambda g: [g.lower(), g.capitalize(), f" {g}."])
    check_outcome(cases, None)


LETTERS = ["A", "B", "C", "D", "E", "AC", "A,C", "B, D"]


def letter_variants(gold: str) -> list[str]:
    """Near-misses of a choice letter: case, punctuation, extra or repeated letters."""
    return [f" {gold} ", gold.lower(), f"{gold}.", f"({gold})", f"A, {gold}", f"{gold},{gold}",
            ", ".join(gold.replace(",", "").replace(" ", "")), f"Option {gold}", ""]  # fmt: skip


def test_multiple_choice_matches_released() -> None:
    cases = outcome_cases(3, ["multiple choice"], LETTERS, letter_variants)
    check_outcome(cases, choices_score)
    check_outcome(outcome_cases(4, ["multiple_choice"], LETTERS, letter_variants), None)


WORDS = ["hello", "world", "STOP", "Main", "st.", "42", "café", "the", "sign", "EXIT", "No", "3:15"]


def text_golds(seed: int) -> list[str]:
    """Twenty short transcriptions from :data:`WORDS`."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 7))) for _ in range(20)]


def edited(gold: str) -> list[str]:
    """Edits of a text answer: case, order, dropped or added words, inflections."""
    words = gold.split()
    return [gold.lower(), gold.upper(), " ".join(words[::-1]), " ".join(words[1:]),
            "\n".join(words), gold + " extra words", gold.replace(" ", "  "), f"{gold}.",
            " ".join(w + "s" for w in words), " ".join(w + "ing" for w in words)]  # fmt: skip


def test_ocr_matches_released() -> None:
    check_outcome(outcome_cases(5, ["OCR"], text_golds(5), edited), ocr_score)
    check_outcome(outcome_cases(6, ["ocr"], text_golds(6), edited), None)


SENTENCES = ["a red circle on a white background", "two cats sleeping", "The sign says STOP",
             "circles and squares", "running dogs ran", "the quick brown fox jumps"]  # fmt: skip


def test_free_form_and_text_match_released() -> None:
    golds = SENTENCES + text_golds(7)
    check_outcome(outcome_cases(7, ["free-form"], golds, edited), free_form_score)
    check_outcome(outcome_cases(8, ["text"], golds, edited), free_form_score)
    check_outcome(outcome_cases(9, ["free_form"], golds, edited), None)


def test_format_matches_released_gate() -> None:
    rng = random.Random(10)
    texts = [well_formed(rng, rng.choice(NUMBERS + LETTERS)) for _ in range(ORDINARY)]
    texts += [malformed(rng, rng.choice(NUMBERS), rng.choice(LETTERS)) for _ in range(ADVERSARIAL)]

    def gate(text: str) -> float:  # custom.py line 284, then math.py line 43
        return released.math_format_reward(text.replace("$$", "").replace("$", ""))

    check([(t,) for t in texts], lambda t: REWARDS["sophiavl.format"]([t])[0], gate)
    check([(t,) for t in texts], think_answer_format, released.math_format_reward)


def test_think_pattern_is_the_released_one() -> None:
    consts = released.math_format_reward.__code__.co_consts
    assert SOPHIAVL_THINK_PATTERN in consts


# --- thinking reward: reply parsing and the request ----------------------------------------------

SCORE_TOKENS = [
    "<answer>", "</answer>", "</think>", "<think>", "\\box{", "\\boxes{", "\\boxed{", "}", " ",
    "\n", "0", "1", "0.7", "1.0", "0.75", "7", "12", ".", "..", "-", "score", "is", "**",
    "Total Wrong Steps**: ", "wrong steps**", "Final Wrong Steps**: ", "٣", "１", "a1", "_0",
]  # fmt: skip
REPLIES = [
    "<answer>0.7</answer>", "<answer> 1 </answer>", "0.3", "The score is 0.6", "\\box{0.5}",
    "\\boxes{1}", "<think>fine</think><answer>0.9</answer>", "</think> 0.8", "<answer>0</answer>",
    "<answer>1.0</answer>", "Score: 0.4 out of 1.0", "\\box{0.3} and <answer>0.9</answer>",
    "<answer>0.9</answer> \\box{0.2}", "I give 1 point. <answer>0.6</answer>", "</think> 0.85",
    "<think>0 errors</think><answer>0.8</answer>", "**Total Wrong Steps**: 0 so 1.0",
]  # fmt: skip
HOSTILE_REPLIES = [
    "</think> 1.2.3", "</think> ...", "</think> " + "9" * 5000, "</think> " + "9" * 400,
    "**Total Wrong Steps**: 12", "**3 wrong steps**", "**0 wrong steps**",
    "**Final Wrong Steps**: 2",
    "<answer>0.75</answer>", "10 out of 10", "</think> ٣", "\\boxed{0.4}", "", "</think>\n7",
    "<answer>2</answer>", "</think><answer>5.5</answer>", "-1", "x0.5y", "0.5.5", "</think>\n.25",
    "</think> .5 **Total Wrong Steps**: 3", "</think><answer>.3</answer> **2 wrong steps**",
]  # fmt: skip


def reply_cases(seed: int) -> list[tuple[str]]:
    """Reward-model replies: scores as the prompt asks, token soups, then hostile ones."""
    rng = random.Random(seed)
    cases = [(rng.choice(REPLIES),) for _ in range(ORDINARY // 2)]
    cases += [("".join(rng.choice(SCORE_TOKENS) for _ in range(rng.randrange(1, 6))),)
              for _ in range(ORDINARY - len(cases))]  # fmt: skip
    cases += [(rng.choice(HOSTILE_REPLIES),) for _ in range(ADVERSARIAL // 3)]
    cases += [(rng.choice(HOSTILE_REPLIES + SCORE_TOKENS) + noise(rng) + rng.choice(REPLIES),)
              for _ in range(ADVERSARIAL - ADVERSARIAL // 3)]  # fmt: skip
    return cases


def released_reply_score(reply: str) -> float:
    """What ``get_process_reward`` returns when the server answers ``reply`` (deviation 3)."""
    released.httpx.reply = reply
    return released.get_process_reward("user\nQ\n", "<think>t</think><answer>1</answer>", None)


def test_parse_thinking_score_matches_released() -> None:
    check(reply_cases(11), parse_thinking_score, released_reply_score)


PROMPTS = [
    "system\nYou FIRST think.\nuser\nHow many?\nassistant\n", "user\nQ\n", "<image> Q", "",
    "user\n$x$ {Question} {0}\n", "user\n答案 \u202e\u200b\n", "user\n<image>What?\nassistant\n",
]  # fmt: skip


def request_cases(seed: int) -> list[tuple]:
    """(model, decoded prompt, response, base64 image or None) for the request body."""
    rng = random.Random(seed)
    cases = []
    for index in range(ORDINARY + ADVERSARIAL):
        model = rng.choice(["thinking-reward-model", "m", ""])
        image = rng.choice([None, "QUJD", "iVBORw0KGgo="])
        if index < ORDINARY:
            prompt = rng.choice(PROMPTS[:3])
            response = well_formed(rng, rng.choice(NUMBERS))
        else:
            prompt = rng.choice(PROMPTS) + noise(rng)
            response = malformed(rng, rng.choice(NUMBERS), rng.choice(LETTERS))
            image = rng.choice([image, ""])
        cases.append((model, prompt, response, image))
    return cases


def released_request(model: str, prompt: str, response: str, image: str | None) -> dict:
    """The body ``get_process_reward`` posts; the response reaches it dollar-stripped
    (``custom.py`` lines 284 and 316)."""
    released.reward_model = model  # custom.py line 33 reads it from REWARD_MODEL
    released.httpx.reply = "<answer>0.5</answer>"
    released.get_process_reward(prompt, response.replace("$$", "").replace("$", ""), image)
    return released.httpx.requests.pop()


def test_thinking_request_matches_released() -> None:
    check(request_cases(12), thinking_request, released_request)
    assert THINKING_SYSTEM_PROMPT == "You are a helpful assistant."


# --- prompts (verl/utils/dataset.py, run_train.sh) -----------------------------------------------


def user_text_cases(seed: int) -> list[tuple]:
    """(problem, problem type, options) for the user turn."""
    rng = random.Random(seed)
    types = [*SOPHIAVL_TYPE_TEMPLATE, "multiple_choice", "ocr", "free_form"]
    problems = ["How many?", "<image> What is shown?", "Which colour?", "Read it.", "x = {0}?"]
    options = [["A. red", "B. blue"], ["A. 1", "B. 2", "C. 3"], [], [1, 2.5, None]]
    cases = []
    for index in range(ORDINARY + ADVERSARIAL):
        problem, kind, opts = rng.choice(problems), rng.choice(types), rng.choice(options)
        if index >= ORDINARY:
            problem = rng.choice([problem, "", "<image>", "<IMAGE>"]) + noise(rng, 12)
            kind = rng.choice([kind, kind, kind, "yes_no", "grounding", "Multiple Choice"])
            opts = rng.choice([opts, None, ["{Question}", "\u202e答案", "$x$"]])
        cases.append((problem, kind, opts))
    return cases


def released_user_text(problem: str, problem_type: str, options: list | None) -> str:
    """The released user turn (deviations 1 and 4: the SophiaVL type name, ``None`` as ``[]``)."""
    row = {"prompt": problem, "problem_type": sophiavl_type(problem_type), "options": options or []}
    return released.released_user_text(row)


def test_user_text_matches_released() -> None:
    check(user_text_cases(13), sophiavl_user_text, released_user_text)


def test_prompt_constants_are_the_released_ones() -> None:
    assert SOPHIAVL_TYPE_TEMPLATE == released.TYPE_TEMPLATE
    assert SOPHIAVL_QUESTION_TEMPLATE == released.QUESTION_TEMPLATE
    # run_train.sh passes it on the command line; main.py's OmegaConf.from_cli parses it as YAML
    from omegaconf import OmegaConf

    parsed = OmegaConf.from_cli([f"data.system_prompt={released.SYSTEM_PROMPT}"])
    assert parsed.data.system_prompt == SOPHIAVL_SYSTEM_PROMPT
    assert "\n" in released.SYSTEM_PROMPT and "\n" not in SOPHIAVL_SYSTEM_PROMPT


def test_case_tables_of_test_sophiavl_are_the_released_values() -> None:
    """The hand-written tables of ``test_sophiavl.py`` hold the released values (their source)."""
    from test_sophiavl import FORMAT_CASES, OUTCOME_CASES, PARSE_CASES

    for text, answer, ptype, expected, why in OUTCOME_CASES:
        assert same(float(expected), call(released_outcome, text, answer, ptype)), why
    for reply, expected, why in PARSE_CASES:
        assert same(float(expected), call(released_reply_score, reply)), why
    for text, expected, why in FORMAT_CASES:
        assert released.math_format_reward(strip_dollars(text)) == expected, why
