"""The papers' prompt texts and format patterns, each declared once and cited to the released
code it copies; :mod:`vlrl.items.prompts` builds the named formats from them, and the reward
modules import the patterns they check. This module imports nothing from ``vlrl``.
"""

from __future__ import annotations

# --- VLM-R1 (om-ai-lab/VLM-R1 @ 90052f4, src/open-r1-multimodal/src/open_r1/) ------------------

THINK_ANSWER_PATTERN = r"<think>.*?</think>\s*<answer>.*?</answer>"
"""``grpo_jsonl.py`` ``format_reward``: ``re.fullmatch`` with DOTALL."""

REC_JSON_PATTERN = (
    r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>"
)
"""``qwen_module.py`` ``format_reward_rec``: ``re.search`` with DOTALL."""

VLM_R1_THINK_SENTENCE = (
    "First output the thinking process in <think> </think> tags and then output the final "
    "answer in <answer> </answer> tags."
)
"""``qwen_module.py`` ``get_question_template``: the sentence after ``{Question} `` (default
and ``rec``)."""

VLM_R1_DEFAULT_TEMPLATE = "{Question} " + VLM_R1_THINK_SENTENCE
"""``qwen_module.py`` ``get_question_template`` default (also math and gui)."""

VLM_R1_REC_TEMPLATE = VLM_R1_DEFAULT_TEMPLATE + " Output the final answer in JSON format."
"""``qwen_module.py`` ``get_question_template('rec')``."""

VLM_R1_OD_TEMPLATE = (
    "First thinks about the reasoning process in the mind and then provides the user with the "
    "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> "
    "</answer> tags, respectively, i.e., <think> reasoning process here </think><answer> answer "
    "here </answer>\n{Question}"
)
"""``qwen_module.py`` ``get_question_template('odLength')``: the "enhanced prompt", before the
question."""

VLM_R1_REC_BASELINE_TEMPLATE = (
    "{Question} Please provide the bounding box coordinate in JSON format."
)
"""``src/eval/test_rec_baseline.py`` ``QUESTION_TEMPLATE`` (the script for SFT models)."""

REC_BASELINE_PATTERN = r"\{.*\[\s*-?\d*\.?\d+\s*(?:,\s*-?\d*\.?\d+\s*){3}\].*\}"
"""vlrl's: a JSON object holding 4 numbers as ``extract_bbox_answer`` reads them (fullmatch)."""

# --- Vision-SR1 (zli12321/Vision-SR1 @ 4480e08, train_examples/) -------------------------------

SEE_THINK_SUFFIX = (
    "You are tasked with analyzing an image/video to generate a detailed description to help you "
    "answer the question. First analyze the image/video and produce a self-contained "
    "description—detailed enough that can lead to the correct answer. Wrap the entire description "
    "in <description> </description> tags.\\n Next, engage in an internal dialogue and include "
    "self-reflection or verification in your reasoning process. Provide your detailed, "
    "step-by-step reasoning based on the image/video description information and image/video, and "
    "enclose this part within <think> </think> tags.\\n Finally, provide a single word or phrase "
    "answer to the question in \\boxed{}.\\nThe output format should be: <description> "
    "image/video description here </description> <think> reasoning process here </think> "
    "\\boxed{FINAL ANSWER here}."
)
"""``see_think_format.jinja`` after ``{{ content | trim }} `` (its literal backslash-n kept)."""

SEE_THINK_TEMPLATE = "{Question} " + SEE_THINK_SUFFIX.replace("{", "{{").replace("}", "}}")
"""``str.format`` template of ``see_think_boxed``; the question must be stripped (``| trim``)."""

SEE_THINK_PATTERN = r"^\s*<description>.*?</description>\s*<think>.*?</think>\s*\\boxed\{.*?\}\s*$"
"""``format_reward`` of reward_function/see_think_selfReward.py (``re.fullmatch``, DOTALL)."""

THINK_BOXED_SUFFIX = (
    "You FIRST think about the reasoning process as an internal monologue and then provide the "
    "final answer. The reasoning process MUST BE enclosed within <think> </think> tags. The final "
    "answer MUST BE put in \\boxed{}."
)
"""``cot_format.jinja`` after ``{{ content | trim }} `` (``cot_config.yaml`` format_prompt)."""

THINK_BOXED_TEMPLATE = "{Question} " + THINK_BOXED_SUFFIX.replace("{", "{{").replace("}", "}}")
"""``str.format`` template of ``think_boxed``; the question must be stripped (``| trim``)."""

THINK_BOXED_PATTERN = r"<think>.*?</think>\s*\\boxed\{.*?\}\s*$"
r"""``format_reward`` of reward_function/cot_val.py (``re.fullmatch``, DOTALL; no ``^\s*``)."""

# --- SATORI-R1 (justairr/SATORI-R1 @ 8857b30: prompt.txt, plugin.py) ---------------------------

CAPTION_BBOX_ANSWER_SYSTEM_PROMPT = (
    "Given an image and a question, follow these steps: First, generate a brief image caption "
    "describing the overall scene. Provide the caption inside <caption> </caption>. Next, "
    "determine the relevant reasoning process for answering the question by identifying the most "
    "relevant image regions. Enclose these coordinates in <bbox>[[x1,y1,x2,y2], ...]</bbox>. "
    "Finally, provide the final answer to the question inside <answer> </answer> tags."
)
"""``prompt.txt``: the system prompt (``--system``); the user turn is the plain question."""

SATORI_FORMAT_PATTERN = (
    r"^\s*<caption>.*?</caption>\s*<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*<answer>.*?</answer>\s*$"
)
"""``plugin.py`` ``Format``: used with ``re.match`` and DOTALL | MULTILINE (trailing lines
tolerated)."""

CAPTION_BBOX_ANSWER_PATTERN = (
    r"\s*<caption>.*?</caption>\s*<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*<answer>.*?</answer>\s*(?:\n.*)?"
)
"""The same language as :data:`SATORI_FORMAT_PATTERN`, as a ``re.fullmatch`` (DOTALL) pattern."""

SATORI_THINK_STEP = (
    "Then, think step by step about the question based on the caption and these regions. "
    "Provide the thinking process inside <think> </think>."
)
"""vlrl's construction, not released: the think step, in ``prompt.txt``'s wording, after SATORI-R1
paper v2 Fig. 3 (caption → bbox → think → answer; ``docs/index.html``: "Glance-Focus-Think")."""

CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT = CAPTION_BBOX_ANSWER_SYSTEM_PROMPT.replace(
    " Finally,", f" {SATORI_THINK_STEP} Finally,"
)
"""``prompt.txt`` with :data:`SATORI_THINK_STEP` before its last step ("Finally, …")."""

SATORI_FORMAT_THINK_PATTERN = (
    r"^\s*<caption>.*?</caption>\s*<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*<think>.*?</think>\s*"
    r"<answer>.*?</answer>\s*$"
)
r"""vlrl's construction, not released: :data:`SATORI_FORMAT_PATTERN` with ``\s*<think>.*?</think>``
inserted after ``</bbox>`` (before the ``\s*<answer>``); ``re.match``, DOTALL | MULTILINE."""

CAPTION_BBOX_THINK_ANSWER_PATTERN = (
    r"\s*<caption>.*?</caption>\s*<bbox>\s*\[\[.*?\]\]\s*</bbox>\s*<think>.*?</think>\s*"
    r"<answer>.*?</answer>\s*(?:\n.*)?"
)
"""The language of :data:`SATORI_FORMAT_THINK_PATTERN` as a ``re.fullmatch`` (DOTALL) pattern."""

# --- SophiaVL-R1 (kxfan2002/SophiaVL-R1 @ a818494) ---------------------------------------------

SOPHIAVL_SYSTEM_PROMPT = (
    "You FIRST think about the reasoning process as an internal monologue and then provide the "
    "final answer. The reasoning process MUST BE enclosed within <think> </think> tagsdd. The "
    "final answer MUST BE enclosed within <answer> </answer> tags, for example "
    "<think>your_thinking_process</think><answer>your_final_answer</answer>. If you use formula, "
    "please use LaTeX format."
)
"""``scripts/train_scripts/run_train.sh`` ``SYSTEM_PROMPT`` (lines 14-15, typo "tagsdd" kept) as
the trainer receives it: the script passes it as ``data.system_prompt=…`` and ``verl/trainer/
main.py``'s ``OmegaConf.from_cli`` reads the value as YAML, which folds the script's line break
and the next line's leading space ("answer.\n The") into one space."""

SOPHIAVL_QUESTION_TEMPLATE = (
    "{Question}\n"
    "Please think about this question as if you were a human pondering deeply. "
    "Engage in an internal dialogue using expressions such as 'let me think', 'wait', 'Hmm', "
    "'oh, I see', 'let's break it down', etc, or other natural language thought expressions "
    "It's encouraged to include self-reflection or verification in the reasoning process. "
    "Provide your detailed reasoning between the <think> </think> tags, and then give your final "
    "answer between the <answer> </answer> tags."
)
"""``verl/utils/dataset.py`` ``QUESTION_TEMPLATE`` (training version)."""

SOPHIAVL_TYPE_TEMPLATE = {
    "multiple choice": " Please provide only the single option letter (e.g., A, B, C, D, etc.) "
    "within the <answer> </answer> tags.",
    "numerical": " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> "
    "</answer> tags.",
    "OCR": " Please transcribe text from the image/video clearly and provide your text answer "
    "within the <answer> </answer> tags.",
    "free-form": " Please provide your text answer within the <answer> </answer> tags.",
    "text": " Please provide the short text answer within the <answer> </answer> tags.",
}
"""``verl/utils/dataset.py`` ``TYPE_TEMPLATE``, appended after the question template."""

SOPHIAVL_THINK_PATTERN = r"<think>(.*?)</think>.*<answer>(.*?)</answer>.*"
"""``verl/utils/reward_score/math.py`` ``math_format_reward``: re.fullmatch with DOTALL, no
stripping (must start ``<think>``)."""

PROBLEM_TYPE_ALIASES = {
    "multiple_choice": "multiple choice",
    "ocr": "OCR",
    "free_form": "free-form",
}
"""vlrl canonical problem types → SophiaVL names."""


def sophiavl_type(problem_type: str) -> str:
    """SophiaVL's name for a problem type (identity for names it already uses).

    >>> sophiavl_type("multiple_choice"), sophiavl_type("OCR"), sophiavl_type("yes_no")
    ('multiple choice', 'OCR', 'yes_no')
    """
    return PROBLEM_TYPE_ALIASES.get(problem_type, problem_type)
