"""Rewards of the SophiaVL-R1 recipe: rule-based outcome rewards and the pure parts of the
thinking reward.

Follows the released code (kxfan2002/SophiaVL-R1 @ a818494:
``verl/utils/reward_score/math.py``, ``verl/workers/reward/custom.py``, ``verl/trainer/main.py``,
``verl/utils/dataset.py``).

Columns read: ``answer`` (ground truth; ``<answer>…</answer>`` is unwrapped when present) and
``problem_type``. SophiaVL's type names are ``numerical``, ``multiple choice``, ``OCR``,
``free-form``, ``text``; vlrl's canonical names map onto them through :data:`PROBLEM_TYPE_ALIASES`,
and every other type (``yes_no``, ``grounding``, ``detection``, unknown names) falls back to the
numerical scorer, as the released dispatch does (``reward_fn_dict.get(type, numerical)``).

``sophiavl.thinking`` (the reward model's score, :data:`THINKING_REWARD`) is registered as
a reward built from ``grpo.reward_model`` (:class:`vlrl.rewards.ConfiguredReward`): its network
client (async, bounded, retries, cache) is :mod:`vlrl.rewards.thinking`. This module holds its
pure parts:
:func:`decoded_chat_prompt`, :func:`thinking_prompt_text`, :func:`thinking_request` and
:func:`parse_thinking_score`.

Deviations from the released code (tested against a verbatim copy in
``tests/rewards/test_sophiavl_released.py``): the alias types above (released: numerical); a
ground truth that is not a string is graded as ``str(answer)`` (released: TypeError); a reward
model reply without a parsable score is 0.0 at once (released: ten retries, then 0); a multiple
choice question without options gets no options line (released: TypeError).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from vlrl.items.prompt_texts import PROBLEM_TYPE_ALIASES as PROBLEM_TYPE_ALIASES
from vlrl.items.prompt_texts import SOPHIAVL_QUESTION_TEMPLATE as SOPHIAVL_QUESTION_TEMPLATE
from vlrl.items.prompt_texts import SOPHIAVL_SYSTEM_PROMPT as SOPHIAVL_SYSTEM_PROMPT
from vlrl.items.prompt_texts import SOPHIAVL_THINK_PATTERN as SOPHIAVL_THINK_PATTERN
from vlrl.items.prompt_texts import SOPHIAVL_TYPE_TEMPLATE as SOPHIAVL_TYPE_TEMPLATE
from vlrl.items.prompt_texts import sophiavl_type as sophiavl_type
from vlrl.rewards import ConfiguredReward
from vlrl.rewards.common import completion_text

# --- prompts (verl/utils/dataset.py): declared in vlrl.items.prompts (format ``sophiavl_think``)
# ----

_FORMAT = re.compile(SOPHIAVL_THINK_PATTERN, re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def sophiavl_user_text(problem: str, problem_type: str, options: list[str] | None = None) -> str:
    """The user turn as ``RLHFDataset.__getitem__`` builds it (``verl/utils/dataset.py``).

    Multiple-choice options are joined with ``"; "`` and appended with no separator; ``<image>``
    is prepended when missing (a converter puts the image there); then the question template and
    the per-type suffix (types outside :data:`SOPHIAVL_TYPE_TEMPLATE` raise KeyError, as released).

    >>> sophiavl_user_text("Which?", "multiple_choice", ["A. red", "B. blue"]).splitlines()[0]
    '<image>Which?A. red; B. blue'
    """
    kind = sophiavl_type(problem_type)
    if kind == "multiple choice":
        problem = problem + "; ".join(map(str, options or []))
    if "<image>" not in problem:
        problem = "<image>" + problem
    return SOPHIAVL_QUESTION_TEMPLATE.format(Question=problem) + SOPHIAVL_TYPE_TEMPLATE[kind]


# --- outcome rewards (verl/utils/reward_score/math.py) -----------------------------------------


@functools.cache
def _grade_answer():
    from mathruler.grader import grade_answer  # needs pylatexenc at import time

    return grade_answer


@functools.cache
def _rouge_123():
    # Built on first use: importing rouge_score configures absl's root logging.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def strip_dollars(text: str) -> str:
    """Remove ``$$`` and ``$`` (custom.py does it to the response and the ground truth).

    >>> strip_dollars("$$x$$ = $3$")
    'x = 3'
    """
    return text.replace("$$", "").replace("$", "")


def unwrap_answer(answer: str) -> str:
    """The first ``<answer>…</answer>`` content of a ground truth (unstripped), else unchanged.

    >>> unwrap_answer("<answer>5</answer>"), unwrap_answer("5")
    ('5', '5')
    """
    match = _ANSWER.search(answer)
    return match.group(1) if match else answer


def think_answer_format(text: str) -> float:
    """``math_format_reward``: 1.0 when ``text`` full-matches :data:`SOPHIAVL_THINK_PATTERN`.

    >>> think_answer_format("<think>a</think>x<answer>1</answer>y"), think_answer_format(" <think>")
    (1.0, 0.0)
    """
    return 1.0 if _FORMAT.fullmatch(text) else 0.0


def numerical_score(response: str, gold: str) -> float:
    """``math_compute_score``: mathruler ``grade_answer`` on the ``<answer>`` content."""
    if not think_answer_format(response):
        return 0.0
    pred = _ANSWER.search(response).group(1)
    return 1.0 if _grade_answer()(pred, gold) else 0.0


def choices_score(response: str, gold: str) -> float:
    """``choices_compute_score``: comma-split, stripped letters; as many as ``len(gold)``, each a
    substring of ``gold``. As released, an empty ``<answer></answer>`` scores 1.0 (``''`` is a
    substring of every string)."""
    if not think_answer_format(response):
        return 0.0
    letters = [a.strip() for a in _ANSWER.search(response).group(1).split(",")]
    if len(letters) != len(gold):
        return 0.0
    return 1.0 if all(a in gold for a in letters) else 0.0


def ocr_score(response: str, gold: str) -> float:
    """``ocr_compute_score``: exp(−WER) (jiwer, default transforms), in (0, 1]."""
    if not think_answer_format(response):
        return 0.0
    from jiwer import wer

    pred = _ANSWER.search(response).group(1)
    return math.exp(-wer(hypothesis=pred.strip(), reference=gold.strip()))


def free_form_score(response: str, gold: str) -> float:
    """``free_form_compute_score``: mean of ROUGE-1/2/L F1 (stemmer on, newlines → spaces)."""
    if not think_answer_format(response):
        return 0.0
    pred = _ANSWER.search(response).group(1).replace("\n", " ")
    scores = _rouge_123().score(pred.strip(), gold.replace("\n", " ").strip())
    return (scores["rouge1"].fmeasure + scores["rouge2"].fmeasure + scores["rougeL"].fmeasure) / 3


SCORERS = {
    "numerical": numerical_score,
    "multiple choice": choices_score,
    "OCR": ocr_score,
    "free-form": free_form_score,
    "text": free_form_score,
}
"""``verl/trainer/main.py`` ``reward_fn_dict``; any other type uses ``numerical``."""


def outcome_score(response: str, answer: str, problem_type: str) -> float:
    """One response's outcome reward (``math.py``, with ``custom.py``'s preprocessing).

    >>> outcome_score("<think>t</think><answer>$5$</answer>", "<answer>5</answer>", "numerical")
    1.0
    """
    scorer = SCORERS.get(sophiavl_type(problem_type), numerical_score)
    return float(scorer(strip_dollars(response), strip_dollars(unwrap_answer(answer))))


def outcome_reward(
    completions: list[Any], answer: list[str], problem_type: list[str], **kwargs: Any
) -> list[float | None]:
    """``sophiavl.outcome``: the per-type rule score, gated on the think/answer format.

    Reads ``answer`` and ``problem_type``. Range [0, 1]; 0.0 whenever the format fails.

    >>> outcome_reward(["<think>t</think><answer>B</answer>", "<answer>B</answer>"],
    ...                answer=["B", "B"], problem_type=["multiple_choice"] * 2)
    [1.0, 0.0]
    """
    return [
        outcome_score(completion_text(c), str(a), str(t))
        for c, a, t in zip(completions, answer, problem_type, strict=True)
    ]


def format_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """``sophiavl.format`` (``math_format_reward``), 1.0 or 0.0. Reads no columns.

    The released code never adds it to the reward: it only gates ``sophiavl.outcome``. Register
    it with weight 0 to log it.

    >>> format_reward(["<think>t</think><answer>1</answer>", " <think>t</think><answer>1</answer>"])
    [1.0, 0.0]
    """
    return [think_answer_format(strip_dollars(completion_text(c))) for c in completions]


# --- thinking reward: request text and reply parsing (verl/workers/reward/custom.py) -----------

THINKING_SYSTEM_PROMPT = "You are a helpful assistant."
THINKING_PROMPT_PREFIX = (
    "You are an expert reasoning evaluator. I will give you a multimodal question and an answer. "
    "Your goal is to judge a reward process and give a score between 0 and 1. You should focus on "
    "whether the reasoning process is good rather than whether the final answer is correct.### "
    "Evaluation Criteria:\n"
    "- **Logical Soundness**: Does each step follow logically from the previous one?\n"
    "- **Correct Reasoning**: Are the methods and steps used appropriate and valid? Are the facts "
    "and lemmas correctly stated and applied?\n"
    "- **Error Identification**: Are there any logical fallacies, unsupported assumptions, or "
    "incorrect steps?\n"
    "- **Language Consistency**: Is the reasoning process conducted in a single, consistent "
    "language without mixing different languages?\n"
    "- **Redundancy**: Is the reasoning concise, without unnecessary repetition or extraneous "
    "steps?\n"
    "Provide a single score from **{0, 0.1, 0.2, ..., 1.0}** based on the reasoning quality, "
    "where:\n"
    " - **0**: Completely flawed reasoning\n"
    "- **1**: Perfectly sound reasoning\n"
    "- Intermediate values (e.g., 0.3, 0.7) should reflect partial correctness or minor errors.\n"
    "Be strict, reward the good process and punish the bad one. You should only output the score "
    "without any explanation."
)
"""custom.py ``get_process_reward`` prompt up to the question (the f-string's text)."""

QWEN_DEFAULT_SYSTEM = "You are a helpful assistant."


def decoded_chat_prompt(messages: list[dict[str, Any]]) -> str:
    """A conversational prompt as custom.py sees it: Qwen2/2.5-VL chat template with the
    generation prompt, decoded with special tokens skipped (as ``custom.py`` does).

    Roles and contents are joined as ``role\\ncontent\\n``; image blocks and ``<image>``
    placeholders vanish (they become special tokens); Qwen's default system turn is added when the
    first message is not a system message.

    >>> decoded_chat_prompt([{"role": "user", "content": [{"type": "image"},
    ...                      {"type": "text", "text": "How many?"}]}])
    'system\\nYou are a helpful assistant.\\nuser\\nHow many?\\nassistant\\n'
    """
    parts = []
    if not messages or messages[0]["role"] != "system":
        parts.append(f"system\n{QWEN_DEFAULT_SYSTEM}\n")
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            text = content.replace("<image>", "")
        else:
            text = "".join(
                block.get("text", "") for block in content if block.get("type", "text") == "text"
            )
        parts.append(f"{message['role']}\n{text}\n")
    return "".join(parts) + "assistant\n"


def thinking_prompt_text(prompt: str, response: str, has_image: bool) -> str:
    """The text part of the reward-model request (``custom.py``): the decoded prompt (``<image> ``
    prepended for image samples when missing) and the full response with ``$`` stripped.

    >>> text = thinking_prompt_text("user\\nQ\\n", "<think>$x$</think><answer>1</answer>", True)
    >>> for line in text.split("explanation.")[1].splitlines():
    ...     print(repr(line))
    ''
    '    Question: <image> user'
    'Q'
    ''
    '    Reasoning process: <think>x</think><answer>1</answer>'
    '    Your response format: <answer>your_score</answer>'
    '    '
    """
    if has_image and "<image>" not in prompt:
        prompt = f"<image> {prompt}"
    return (
        f"{THINKING_PROMPT_PREFIX}\n    Question: {prompt}\n    Reasoning process: "
        f"{strip_dollars(response)}\n    Your response format: <answer>your_score</answer>\n    "
    )


def thinking_request(
    model: str, prompt: str, response: str, image_png_b64: str | None
) -> dict[str, Any]:
    """The JSON body custom.py posts to ``/v1/chat/completions``.

    ``image_png_b64`` is the sample's first image as base64 PNG (None for text-only samples).

    >>> body = thinking_request("thinking-reward-model", "user\\nQ\\n", "<think>t</think>", None)
    >>> body["temperature"], [m["role"] for m in body["messages"]]
    (0.0, ['system', 'user'])
    """
    content: list[dict[str, Any]] = [
        {"type": "text", "text": thinking_prompt_text(prompt, response, image_png_b64 is not None)}
    ]
    if image_png_b64 is not None:
        content.append(
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image_png_b64}"}}
        )
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": THINKING_SYSTEM_PROMPT},
            {"role": "user", "content": content},
        ],
        "temperature": 0.0,
    }


def _number(text: str) -> float:
    return int(text) if text.isdigit() else float(text)


_SCORE_EXTRACTORS: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"\\box(?:es)?\{([01](?:\.\d)?)\}"), float),  # extract_box_score
    (re.compile(r"<answer>\s*([01](?:\.\d)?)\s*</answer>"), float),  # extract_xml_answer
    (re.compile(r"\b([01](?:\.\d)?)\b"), float),  # extract_plain_number
    (re.compile(r"</think>\s*<answer>\s*([\d.]+)\s*</answer>"), _number),  # extract_after_think…
    (re.compile(r"</think>\s*([\d.]+)"), _number),  # … second pattern
    (re.compile(r"Total Wrong Steps\*\*:\s*(\d+)"), int),  # extract_total_wrong_steps
    (re.compile(r"\*\*(\d+)\s+wrong steps\*\*"), int),  # extract_zero_wrong_steps
    (re.compile(r"\*\*.*?\bWrong Steps\*\*:\s*(\d+)"), int),  # extract_wrong_steps
]


def parse_thinking_score(reply: str) -> float:
    """custom.py ``extract_score``: the first extractor that matches, clipped to [0, 1]; 0.0 when
    none matches (``custom.py`` ``extract_score``).

    A number that does not parse (``</think> 1.2.3``) makes the released code raise, retry the
    request and finally score 0; here it scores 0.0 directly.

    >>> parse_thinking_score("<answer>0.7</answer>"), parse_thinking_score("no score")
    (0.7, 0.0)
    """
    for pattern, convert in _SCORE_EXTRACTORS:
        match = pattern.search(reply)
        if match:
            try:
                score = convert(match.group(1))
            except ValueError:
                return 0.0
            return float(min(max(score, 0), 1))
    return 0.0


THINKING_REWARD = "sophiavl.thinking"
"""The reward-model reward: built from ``grpo.reward_model``; trust_grpo adds it itself."""


REWARDS = {
    "sophiavl.outcome": outcome_reward,
    "sophiavl.format": format_reward,
    # built when the run starts; named, not imported: the family stays free of the endpoint
    # client (openai, asyncio), and vlrl.rewards.thinking imports this module
    THINKING_REWARD: ConfiguredReward(
        "reward_model", "vlrl.rewards.thinking:get_thinking_reward", "base_url, model"
    ),
}
