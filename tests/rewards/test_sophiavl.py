"""Case tables for the SophiaVL-R1 rewards.

Source: kxfan2002/SophiaVL-R1 @ a818494: ``verl/utils/reward_score/math.py`` lines 26-100 (the
format gate and the per-type scores), ``verl/workers/reward/custom.py`` lines 38-126 (the score
extractors), 167-218 (the reward-model request and its retries) and 281-290 (the answer score),
``verl/trainer/ray_trainer.py`` line 720 (unlisted types score as ``numerical``) and
``verl/utils/dataset.py`` lines 38-52 and 169-175 (the user turn). These are copied verbatim in
``reference/released_sophiavl_rewards.py``; ``test_sophiavl_released.py`` checks that the tables
below hold the released values and compares the rewards with it on generated inputs.
"""

from __future__ import annotations

import math

import pytest

from vlrl.rewards import REGISTRY, ConfiguredReward
from vlrl.rewards.sophiavl import (
    REWARDS,
    SOPHIAVL_TYPE_TEMPLATE,
    decoded_chat_prompt,
    format_reward,
    outcome_reward,
    parse_thinking_score,
    sophiavl_user_text,
    strip_dollars,
    thinking_prompt_text,
    thinking_request,
)


def wrap(answer: str) -> str:
    return f"<think>let me think</think><answer>{answer}</answer>"


FORMAT_CASES = [
    ("<think>t</think><answer>1</answer>", 1.0, "well formed"),
    ("<think>t</think> text <answer>1</answer> tail", 1.0, "text between and after allowed"),
    ("<think>\nt\n</think>\n<answer>1</answer>\n", 1.0, "newlines"),
    (" <think>t</think><answer>1</answer>", 0.0, "leading whitespace: full match fails"),
    ("Sure. <think>t</think><answer>1</answer>", 0.0, "text before think"),
    ("<answer>1</answer>", 0.0, "missing think"),
    ("<think>t</think>", 0.0, "missing answer"),
    ("<answer>1</answer><think>t</think>", 0.0, "blocks out of order"),
    ("<think>t</think><answer>1", 0.0, "unclosed answer"),
    ("<think>$t$</think><answer>$1$</answer>", 1.0, "dollars stripped first"),
    ("", 0.0, "empty completion"),
]


@pytest.mark.parametrize(("text", "expected", "why"), FORMAT_CASES)
def test_format(text: str, expected: float, why: str) -> None:
    assert format_reward([text]) == [expected], why


OUTCOME_CASES = [
    # numerical (mathruler) and the default for other types
    (wrap("5"), "5", "numerical", 1.0, "right number"),
    (wrap(" 5 "), "<answer>5</answer>", "numerical", 1.0, "ground truth unwrapped"),
    (wrap("$5$"), "$$5$$", "numerical", 1.0, "dollars stripped from both"),
    (wrap("\\frac{1}{2}"), "0.5", "numerical", 1.0, "sympy-equal"),
    (wrap("6"), "5", "numerical", 0.0, "wrong number"),
    ("<answer>5</answer>", "5", "numerical", 0.0, "format gate: no think"),
    (" " + wrap("5"), "5", "numerical", 0.0, "format gate: leading space"),
    (wrap("5") + "<answer>6</answer>", "5", "numerical", 1.0, "first answer tag"),
    (wrap("yes"), "Yes", "yes_no", 1.0, "unlisted type → numerical (ray_trainer.py 720)"),
    (wrap("5"), "5", "essay", 1.0, "unknown type → numerical"),
    # multiple choice
    (wrap("B"), "B", "multiple choice", 1.0, "right letter"),
    (wrap(" B "), "B", "multiple_choice", 1.0, "canonical name, stripped"),
    (wrap("b"), "B", "multiple choice", 0.0, "case-sensitive"),
    (wrap("B."), "B", "multiple choice", 0.0, "punctuation not removed"),
    (wrap("(B)"), "B", "multiple choice", 0.0, "parenthesised letter"),
    (wrap("A, B"), "B", "multiple choice", 0.0, "more letters than len(gt)"),
    (wrap("A,B"), "A,B", "multiple choice", 0.0, "multi-answer gt: len('A,B') is 3"),
    (wrap(""), "B", "multiple choice", 1.0, "released quirk (math.py 65-67): '' in gt"),
    ("<think>t</think>B", "B", "multiple choice", 0.0, "format gate"),
    # OCR: exp(-WER)
    (wrap("hello world"), "hello world", "OCR", 1.0, "exact transcription"),
    (wrap("hello word"), "hello world", "ocr", math.exp(-0.5), "one of two words wrong"),
    (wrap("a b c d"), "hello world", "OCR", math.exp(-2.0), "WER > 1 still positive"),
    (wrap("Hello world"), "hello world", "OCR", math.exp(-0.5), "case-sensitive WER"),
    (wrap(""), "", "OCR", 1.0, "both empty: WER 0 (jiwer 4)"),
    (wrap(""), "hello world", "OCR", math.exp(-1.0), "empty transcription: WER 1"),
    ("hello world", "hello world", "OCR", 0.0, "format gate"),
    # free-form / text: mean ROUGE-1/2/L
    (wrap("a red circle"), "a red circle", "free-form", 1.0, "identical"),
    (wrap("a red\ncircle"), "a red circle", "free_form", 1.0, "newline → space"),
    (wrap("circles"), "circle", "free-form", 2 / 3, "stemmer on; no bigram"),
    (wrap("blue square"), "a red circle", "free-form", 0.0, "no overlap"),
    (wrap(""), "a red circle", "free-form", 0.0, "empty answer"),
    (wrap("a red circle"), "a red circle", "text", 1.0, "text uses free-form"),
    ("<answer>a red circle</answer>", "a red circle", "free-form", 0.0, "format gate"),
]


@pytest.mark.parametrize(("text", "answer", "ptype", "expected", "why"), OUTCOME_CASES)
def test_outcome(text: str, answer: str, ptype: str, expected: float, why: str) -> None:
    got = outcome_reward([text], answer=[answer], problem_type=[ptype])
    assert got == [pytest.approx(expected)], why


def test_outcome_partial_rouge_in_open_interval() -> None:
    (got,) = outcome_reward([wrap("a red square")], answer=["a red circle"], problem_type=["text"])
    assert 0.0 < got < 1.0


def test_outcome_conversational_completions() -> None:
    got = outcome_reward(
        [[{"role": "assistant", "content": wrap("5")}]], answer=["5"], problem_type=["numerical"]
    )
    assert got == [1.0]


# --- thinking reward: parsing and request text -------------------------------------------------

PARSE_CASES = [
    ("<answer>0.7</answer>", 0.7, "answer tag"),
    ("<answer> 1 </answer>", 1.0, "answer tag with spaces"),
    ("\\box{0.3} and <answer>0.9</answer>", 0.3, "\\box{} wins over <answer>"),
    ("\\boxes{1}", 1.0, "\\boxes{}"),
    ("\\boxed{0.4}", 0.4, "\\boxed is not \\box: first plain number"),
    ("The score is 0.6 out of 1", 0.6, "first standalone 0-1 number"),
    ("<answer>0.75</answer>", 0.0, "two decimals: plain number reads the leading 0"),
    ("</think> 0.85", 0.0, "plain-number extractor runs before the after-think one"),
    ("</think> 7", 1.0, "after-think number clipped to 1"),
    ("**Total Wrong Steps**: 3", 1.0, "legacy wrong-step count clipped to 1"),
    ("**0 wrong steps**", 0.0, "legacy zero wrong steps"),
    ("**Final Wrong Steps**: 2", 1.0, "legacy generic wrong-steps"),
    ("</think> 2.3.4", 0.0, "unparsable: released retries, scores 0 (custom.py 204-218)"),
    ("10 out of 10", 0.0, "no 0/1 token and nothing else"),
    ("no score here", 0.0, "nothing matches"),
    ("", 0.0, "empty reply"),
]


@pytest.mark.parametrize(("reply", "expected", "why"), PARSE_CASES)
def test_parse_thinking_score(reply: str, expected: float, why: str) -> None:
    got = parse_thinking_score(reply)
    assert got == pytest.approx(expected), why
    assert 0.0 <= got <= 1.0


REQUEST_CASES = [
    ("system\nS\nuser\nQ\nassistant\n", True, "Question: <image> system\nS", "image prepended"),
    ("<image> Q", True, "Question: <image> Q\n", "already has <image>"),
    ("user\nQ\n", False, "Question: user\nQ\n", "text-only sample: no <image>"),
    ("user\n$x$\n", False, "Question: user\n$x$\n", "prompt keeps its dollars"),
]


@pytest.mark.parametrize(("prompt", "image", "needle", "why"), REQUEST_CASES)
def test_thinking_prompt_text(prompt: str, image: bool, needle: str, why: str) -> None:
    text = thinking_prompt_text(prompt, "<think>$a$</think><answer>$$1$$</answer>", image)
    assert needle in text, why
    assert "Reasoning process: <think>a</think><answer>1</answer>\n" in text
    assert text.startswith("You are an expert reasoning evaluator.")
    assert "**{0, 0.1, 0.2, ..., 1.0}**" in text
    assert text.endswith("Your response format: <answer>your_score</answer>\n    ")


def test_thinking_request_body() -> None:
    body = thinking_request("thinking-reward-model", "user\nQ\n", "<think>t</think>", "QUJD")
    assert body["model"] == "thinking-reward-model"
    assert body["temperature"] == 0.0
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You are a helpful assistant."}
    text, image = user["content"]
    assert text["type"] == "text" and "Question: <image> user" in text["text"]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    no_image = thinking_request("m", "user\nQ\n", "r", None)
    assert len(no_image["messages"][1]["content"]) == 1


DECODE_CASES = [
    (
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q?"}]}],
        "system\nYou are a helpful assistant.\nuser\nQ?\nassistant\n",
        "Qwen default system turn added; image block vanishes",
    ),
    (
        [{"role": "system", "content": "S"}, {"role": "user", "content": "<image>Q?"}],
        "system\nS\nuser\nQ?\nassistant\n",
        "explicit system; <image> placeholder vanishes",
    ),
]


@pytest.mark.parametrize(("messages", "expected", "why"), DECODE_CASES)
def test_decoded_chat_prompt(messages: list, expected: str, why: str) -> None:
    assert decoded_chat_prompt(messages) == expected, why


USER_TEXT_CASES = [
    (
        "Which?",
        "multiple_choice",
        ["A. red", "B. blue"],
        "<image>Which?A. red; B. blue\n",
        "options",
    ),
    ("<image> How many?", "numerical", [], "<image> How many?\n", "<image> not duplicated"),
    ("Read it.", "ocr", [], "<image>Read it.\n", "canonical OCR name"),
]


@pytest.mark.parametrize(("problem", "ptype", "options", "start", "why"), USER_TEXT_CASES)
def test_user_text(problem: str, ptype: str, options: list, start: str, why: str) -> None:
    text = sophiavl_user_text(problem, ptype, options)
    assert text.startswith(start), why
    assert text.endswith(
        SOPHIAVL_TYPE_TEMPLATE[
            {"multiple_choice": "multiple choice", "ocr": "OCR"}.get(ptype, ptype)
        ]
    )


def test_user_text_unknown_type_is_an_error() -> None:
    with pytest.raises(KeyError):
        sophiavl_user_text("Q", "grounding")


def test_registry_names() -> None:
    assert set(REWARDS) == {"sophiavl.outcome", "sophiavl.format", "sophiavl.thinking"}
    # the reward-model reward is built from grpo.reward_model when the run starts
    thinking = REGISTRY["sophiavl.thinking"]
    assert isinstance(thinking, ConfiguredReward) and thinking.key == "reward_model"
    assert all(REGISTRY[name] is fn for name, fn in REWARDS.items())


@pytest.mark.parametrize("name", ["sophiavl.format", "sophiavl.outcome"])
def test_one_value_per_completion_in_range(name: str) -> None:
    texts = [row[0] for row in OUTCOME_CASES]
    got = REWARDS[name](
        texts,
        answer=[row[1] for row in OUTCOME_CASES],
        problem_type=[row[2] for row in OUTCOME_CASES],
    )
    assert len(got) == len(texts)
    assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in got)


# --- mutation-testing gaps ---------------------------------------------------------------------


# math.py free_form_compute_score: newlines in either text are word separators, nothing else
# changes (the "XX" sizes pin that the text around a newline is kept).
FREE_FORM_NEWLINE_CASES = [
    ("a red circle", "a red\ncircle\n", "newlines in the ground truth"),
    ("size XX\nXXL shirt", "size XX XXL shirt", "newline in the answer, text around it kept"),
    ("size XX XXL shirt", "size XX\nXXL shirt", "newline in the ground truth, text kept"),
]


@pytest.mark.parametrize(("pred", "gold", "why"), FREE_FORM_NEWLINE_CASES)
def test_free_form_newlines_are_separators(pred: str, gold: str, why: str) -> None:
    got = outcome_reward([wrap(pred)], answer=[gold], problem_type=["free-form"])
    assert got == [pytest.approx(1.0)], why


def test_strip_dollars_removes_only_dollars() -> None:
    assert strip_dollars("XX$$XX costs $5$") == "XXXX costs 5"


def test_outcome_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="zip"):
        outcome_reward([wrap("5")] * 2, answer=["5"] * 2, problem_type=["numerical"])


# Qwen2/2.5-VL chat template (Qwen/Qwen2.5-VL-7B-Instruct ``chat_template.json``): text blocks are
# concatenated with no separator, a block without a "type" but with "text" is text, image blocks
# become special tokens whatever other keys they carry.
DECODE_BLOCK_CASES = [
    (
        [{"type": "text", "text": "How "}, {"type": "image"}, {"type": "text", "text": "many?"}],
        "How many?",
        "text blocks joined with nothing between them",
    ),
    ([{"text": "Q?"}], "Q?", "block without a type is text"),
    ([{"type": "text"}, {"type": "text", "text": "Q?"}], "Q?", "text block without text: empty"),
    ([{"type": "image", "text": "stray"}, {"text": "Q?"}], "Q?", "image block's text ignored"),
]


@pytest.mark.parametrize(("content", "user_text", "why"), DECODE_BLOCK_CASES)
def test_decoded_chat_prompt_blocks(content: list, user_text: str, why: str) -> None:
    got = decoded_chat_prompt([{"role": "user", "content": content}])
    assert got == f"system\nYou are a helpful assistant.\nuser\n{user_text}\nassistant\n", why
