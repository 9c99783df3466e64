"""SophiaVL-R1's released reward code, verbatim: the oracle of
``tests/rewards/test_sophiavl_released.py``.

Source: kxfan2002/SophiaVL-R1 @ a8184947bf3ba215c511225a739789bdfce44930 (Apache-2.0), copied for
testing only; the file's last change is given after its name:

- ``verl/utils/reward_score/math.py`` (664d762): lines 15-100 (imports, ``alpha``,
  ``math_format_reward``, ``math_acc_reward``, ``math_compute_score``, ``choices_compute_score``,
  ``ocr_compute_score``, ``free_form_compute_score``), unchanged;
- ``verl/workers/reward/custom.py`` (4fd36a8): lines 31-33 (environment read at import), 38-126
  (the score extractors and ``extract_score``), 167-218 (``get_process_reward``) and 226-246
  (``CustomRewardManager`` and its ``__init__``), unchanged; in :func:`released_answer_score`,
  the lines of ``CustomRewardManager.__call__`` (group branch) that compute one answer score,
  281-290, dedented into a function, ``answer_score[index] =`` written ``answer_score =``;
  its imports ``os``, ``math`` and ``re`` (lines 18, 21, 27) are imported below;
- ``verl/trainer/main.py`` (a818494): lines 103-109 (``reward_fn_dict``) in
  :func:`released_reward_fn_dict`, dedented;
- ``verl/trainer/ray_trainer.py`` (4040e1e): lines 715 and 720 (the problem type of a group and
  the reward manager it selects) in :func:`released_select`, dedented; of line 715's list
  comprehension over the group's samples, the expression for one sample ``s``;
- ``verl/utils/dataset.py`` (e6408a0): lines 38-52 (``TYPE_TEMPLATE``, ``QUESTION_TEMPLATE``),
  and lines 169-175 of ``RLHFDataset.__getitem__`` (the user turn) in :func:`released_user_text`,
  dedented, ``self.prompt_key`` being ``"prompt"`` (the constructor's default);
- ``scripts/train_scripts/run_train.sh`` (4040e1e): ``SYSTEM_PROMPT`` (lines 14-15; the bash
  string in triple double quotes has the same value in Python: no ``$``, backslash or backquote).

Shims, not code changes (the imported libraries mathruler, jiwer, numpy and rouge_score are the
installed ones, unshimmed):

- ``httpx``: :class:`FakeHttpx`, whose ``post`` records each request body (``requests``) and
  answers with the chat reply set in ``reply``, so ``get_process_reward`` runs offline;
- ``time``: ``sleep`` does nothing (``get_process_reward`` sleeps 1..10 s between retries);
- ``PreTrainedTokenizer`` (a type annotation of ``CustomRewardManager.__init__``): ``object``;
- ``r1v_compute_score``: ``None`` (``CustomRewardManager.__init__`` names it, the tests never
  select it).

Not formatted or linted, to stay verbatim.
"""

# ruff: noqa
# fmt: off

# --- verl/utils/reward_score/math.py, lines 15-100 ----------------------------------------------
import re

from mathruler.grader import extract_boxed_content, grade_answer
from jiwer import wer
import numpy as np
from rouge_score import rouge_scorer
# from bert_score import score

alpha =40


def math_format_reward(predict_str: str) -> float:
    pattern = re.compile(r"<think>(.*?)</think>.*<answer>(.*?)</answer>.*", re.DOTALL)
    format_match = re.fullmatch(pattern, predict_str)
    return 1.0 if format_match else 0.0


def math_acc_reward(predict_str: str, ground_truth: str) -> float:
    match = re.search(r"<answer>(.*?)</answer>", predict_str, re.DOTALL)
    if match:
        predict_str_strip= match.group(1)
    else:
        predict_str_strip = predict_str
    # answer = extract_boxed_content(predict_str_strip)
    return 1.0 if grade_answer(predict_str_strip, ground_truth) else 0.0


def math_compute_score(predict_str: str, ground_truth: str, steps = 100000) -> float:
    if math_format_reward(predict_str):
        match = re.search(r"<answer>(.*?)</answer>", predict_str, re.DOTALL)
        if match:
            predict_str_strip= match.group(1)
        else:
            predict_str_strip = predict_str
        return math_acc_reward(predict_str_strip, ground_truth)
    else:
        return 0.0

def choices_compute_score(predict: str, ground_truth: list, steps = 100000) -> float:
    if math_format_reward(predict):
        match = re.search(r"<answer>(.*?)</answer>", predict, re.DOTALL)
        if match:
            predict_str_strip= match.group(1)
        else:
            predict_str_strip = predict
        if predict == "":
            return 0.0
        answer = [a.strip() for a in predict_str_strip.split(',')]
        if len(answer)!= len(ground_truth):
            return 0.0
        for a in answer:
            if a not in ground_truth:
                return 0.0
        return 1.0
    else:
        return 0.0

def ocr_compute_score(predict_str: str, ground_truth: str, steps = 100000) -> float:
    if math_format_reward(predict_str):
        match = re.search(r"<answer>(.*?)</answer>", predict_str, re.DOTALL)
        if match:
            predict_str_strip= match.group(1)
        else:
            predict_str_strip = predict_str
        werate=wer(hypothesis=predict_str_strip.strip(), reference=ground_truth.strip())
        return np.exp(-werate)
    else:
        return 0.0

def free_form_compute_score(predict_str: str, ground_truth: str, steps = 100000) -> float:
    if math_format_reward(predict_str):
        match = re.search(r"<answer>(.*?)</answer>", predict_str, re.DOTALL)
        if match:
            predict_str_strip= match.group(1)
        else:
            predict_str_strip = predict_str
        predict_str_strip = predict_str_strip.replace("\n", " ")
        ground_truth=ground_truth.replace("\n", " ")
        scorer = rouge_scorer.RougeScorer(['rouge1', 'rouge2', 'rougeL'], use_stemmer=True)
        scores = scorer.score(predict_str_strip.strip(), ground_truth.strip())
        r1 = scores['rouge1'].fmeasure
        r2 = scores['rouge2'].fmeasure
        rl = scores['rougeL'].fmeasure
        return (r1+r2+rl)/3
    else:
        return 0.0


# --- shims ----------------------------------------------------------------------------------------
import os
import math
from types import SimpleNamespace


class FakeHttpx:  # shim: httpx (custom.py line 28), offline
    """Records each posted JSON body and answers with ``reply`` (an OpenAI chat completion)."""

    def __init__(self):
        self.requests = []
        self.reply = ""

    def post(self, url, headers=None, json=None, timeout=None):
        self.requests.append(json)
        reply = self.reply
        return SimpleNamespace(
            raise_for_status=lambda: None,
            json=lambda: {"choices": [{"message": {"content": reply}}]},
        )


httpx = FakeHttpx()
time = SimpleNamespace(sleep=lambda seconds: None)  # shim: time (custom.py line 23)
PreTrainedTokenizer = object  # shim: transformers.PreTrainedTokenizer (custom.py line 17)
r1v_compute_score = None  # shim: verl/utils/reward_score/r1v.py, never selected here

# --- verl/workers/reward/custom.py, lines 31-33 --------------------------------------------------
openai_api_key = os.getenv("OPENAI_API_KEY")
openai_api_base = os.getenv("OPENAI_API_URL")
reward_model = os.getenv("REWARD_MODEL")

# --- verl/workers/reward/custom.py, lines 38-126 -------------------------------------------------
def extract_after_think_number(text: str):
    """
    Extract the number after </think> tag.
    Match style: </think> <answer>0.5</answer>
    """
    match = re.search(r'</think>\s*<answer>\s*([\d.]+)\s*</answer>', text)
    if match:
        number_str = match.group(1)
        return int(number_str) if number_str.isdigit() else float(number_str)

    match = re.search(r'</think>\s*([\d.]+)', text)
    if match:
        number_str = match.group(1)
        return int(number_str) if number_str.isdigit() else float(number_str)

    return None

def extract_zero_wrong_steps(text: str):
    """
    Match **0 wrong steps** and extract the number (should be 0 here).
    """
    match = re.search(r'\*\*(\d+)\s+wrong steps\*\*', text)
    if match:
        return int(match.group(1))
    return None


def extract_box_score(text: str):
    """
    Extract float number from \box{} or \boxes{}.
    """
    match = re.search(r'\\box(?:es)?\{([01](?:\.\d)?)\}', text)
    if match:
        return float(match.group(1))
    return None

def extract_total_wrong_steps(text: str):
    """
    Extract the integer from 'Total Wrong Steps:'.
    """
    match = re.search(r'Total Wrong Steps\*\*:\s*(\d+)', text)
    if match:
        return int(match.group(1))
    return None

def extract_xml_answer(text: str):
    """
    Extract float number from <answer>...</answer>.
    """
    match = re.search(r'<answer>\s*([01](?:\.\d)?)\s*</answer>', text)
    if match:
        return float(match.group(1))
    return None

def extract_plain_number(text: str):
    """
    Directly extract the first 0~1 float number from the text (not format-dependent).
    """
    match = re.search(r'\b([01](?:\.\d)?)\b', text)
    if match:
        return float(match.group(1))
    return None


def extract_wrong_steps(text: str):
    """
    Extract the integer after **... Wrong Steps**.
    Match style: **Total Wrong Steps**: 1
    """
    match = re.search(r'\*\*.*?\bWrong Steps\*\*:\s*(\d+)', text)
    if match:
        return int(match.group(1))
    return None

def extract_score(text: str):
    """
    Use above method to extract score
    """
    for extractor in [extract_box_score, extract_xml_answer,extract_plain_number, extract_after_think_number, extract_total_wrong_steps, extract_zero_wrong_steps, extract_wrong_steps]:
        score = extractor(text)
        if score is not None:
            # print(f"Extractor: {extractor.__name__}, Score: {score}")
            if score>1:
                score = 1
            elif score<0:
                score=0
            return score
    # print(f"Extraction Failure: {text}")
    return 0  # all fail

# --- verl/workers/reward/custom.py, lines 167-218 ------------------------------------------------
def get_process_reward(prompt_str, reasoning_str, image):
    if image is not None and "<image>" not in prompt_str:
        prompt_str = f"<image> {prompt_str}"

    prompt = f"""You are an expert reasoning evaluator. I will give you a multimodal question and an answer. Your goal is to judge a reward process and give a score between 0 and 1. You should focus on whether the reasoning process is good rather than whether the final answer is correct.### Evaluation Criteria:\n- **Logical Soundness**: Does each step follow logically from the previous one?\n- **Correct Reasoning**: Are the methods and steps used appropriate and valid? Are the facts and lemmas correctly stated and applied?\n- **Error Identification**: Are there any logical fallacies, unsupported assumptions, or incorrect steps?\n- **Language Consistency**: Is the reasoning process conducted in a single, consistent language without mixing different languages?\n- **Redundancy**: Is the reasoning concise, without unnecessary repetition or extraneous steps?\nProvide a single score from **{{0, 0.1, 0.2, ..., 1.0}}** based on the reasoning quality, where:\n - **0**: Completely flawed reasoning\n- **1**: Perfectly sound reasoning\n- Intermediate values (e.g., 0.3, 0.7) should reflect partial correctness or minor errors.\nBe strict, reward the good process and punish the bad one. You should only output the score without any explanation.
    Question: {prompt_str}
    Reasoning process: {reasoning_str}
    Your response format: <answer>your_score</answer>
    """

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": prompt},
            ],
        },
    ]

    if image is not None:
        messages[1]["content"].append({
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{image}"},
        })

    url = openai_api_base 
    headers = {
        "Content-Type": "application/json"
    }
    payload = {
        "model": reward_model,  
        "messages": messages,
        "temperature": 0.0,
    }

    # retry
    attempt = 0
    max_retry = 10
    while attempt < max_retry:
        try:
            response = httpx.post(url, headers=headers, json=payload, timeout=60)
            response.raise_for_status()
            result = response.json()["choices"][0]["message"]["content"]
            # print(f"get_process_reward score is:" , result)
            return extract_score(result)
        except Exception as e:
            print(f"[Attempt {attempt+1}] get_process_reward failed: {e}, message: {prompt_str}")
            attempt += 1
            time.sleep(attempt) 
    # raise RuntimeError("get_process_reward failed after multiple retries.")
    return 0


# --- verl/workers/reward/custom.py, lines 226-246 (the class, its __init__) -----------------------
class CustomRewardManager:
    def __init__(self, tokenizer: PreTrainedTokenizer, num_examine: int, compute_score: str, T = 500):
        self.tokenizer = tokenizer
        self.num_examine = num_examine
        self.T = T
        # self.model = None
        if compute_score == "math":
            self.compute_score = math_compute_score
        elif compute_score == "r1v":
            self.compute_score = r1v_compute_score
        elif compute_score == "choice": # 这个函数在EasyR1/verl/utils/reward_score/math.py，要考虑好predict和ground_truth分别的类型
            self.compute_score = choices_compute_score
        elif compute_score =="ocr":
            self.compute_score = ocr_compute_score
        elif compute_score =="caption" or compute_score == "text":
            self.compute_score = free_form_compute_score
        # elif compute_score =="text":
        #     self.compute_score = text_compute_score
        #     self.model = "bert-base-multilingual-cased"
        else:
            raise NotImplementedError()


# --- verl/workers/reward/custom.py, lines 281-290 (in CustomRewardManager.__call__, n > 0) ------
def released_answer_score(self, ground_truth, response_str, steps=100000):
    match = re.search(r"<answer>(.*?)</answer>", ground_truth, re.DOTALL)
    if match:
        ground_truth= match.group(1)
    response_str = response_str.replace('$$', '').replace('$', '')
    ground_truth = ground_truth.replace('$$', '').replace('$', '')
    # if self.model == None:
    #     answer_score = self.compute_score(response_str, ground_truth, steps) # response with <answer> tag, gt without
    # else:
    #     answer_score = self.compute_score(response_str, ground_truth, self.model, steps)
    answer_score = self.compute_score(response_str, ground_truth, steps)
    return answer_score


# --- verl/trainer/main.py, lines 103-109 ----------------------------------------------------------
_CONFIG = SimpleNamespace(worker=SimpleNamespace(reward=SimpleNamespace(alpha=500)))  # default T


def released_reward_fn_dict(tokenizer=None, config=_CONFIG):
    reward_fn_dict = {
        "numerical": CustomRewardManager(tokenizer=tokenizer, num_examine=1, compute_score="math", T=config.worker.reward.alpha),
        "multiple choice": CustomRewardManager(tokenizer=tokenizer, num_examine=1, compute_score="choice", T=config.worker.reward.alpha),
        "OCR": CustomRewardManager(tokenizer=tokenizer, num_examine=1, compute_score="ocr", T=config.worker.reward.alpha),
        "free-form": CustomRewardManager(tokenizer=tokenizer, num_examine=1, compute_score="caption", T=config.worker.reward.alpha),
        "text": CustomRewardManager(tokenizer=tokenizer, num_examine=1, compute_score="text", T=config.worker.reward.alpha)
    }
    return reward_fn_dict


# --- verl/trainer/ray_trainer.py, lines 715 and 720 -----------------------------------------------
def released_select(self, s):
    problem_type = s.non_tensor_batch.get("problem_type", "None")
    selected_reward_fn = self.reward_fn_dict.get(problem_type, self.reward_fn_dict["numerical"])
    return selected_reward_fn


# --- verl/utils/dataset.py, lines 38-52 ----------------------------------------------------------
TYPE_TEMPLATE = {
    "multiple choice": " Please provide only the single option letter (e.g., A, B, C, D, etc.) within the <answer> </answer> tags.",
    "numerical": " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> </answer> tags.",
    "OCR": " Please transcribe text from the image/video clearly and provide your text answer within the <answer> </answer> tags.",
    "free-form": " Please provide your text answer within the <answer> </answer> tags.",
    "text": " Please provide the short text answer within the <answer> </answer> tags."
}

QUESTION_TEMPLATE = (
        "{Question}\n"
        "Please think about this question as if you were a human pondering deeply. "
        "Engage in an internal dialogue using expressions such as 'let me think', 'wait', 'Hmm', 'oh, I see', 'let's break it down', etc, or other natural language thought expressions "
        "It's encouraged to include self-reflection or verification in the reasoning process. "
        "Provide your detailed reasoning between the <think> </think> tags, and then give your final answer between the <answer> </answer> tags."
    )


# --- verl/utils/dataset.py, lines 169-175 (in RLHFDataset.__getitem__) ----------------------------
def released_user_text(row_dict, self=SimpleNamespace(prompt_key="prompt")):
    if "problem_type" in row_dict:
        if row_dict["problem_type"] == "multiple choice":
            row_dict[self.prompt_key] = row_dict[self.prompt_key]+ "; ".join(map(str, row_dict["options"])) 
    if "<image>" not in row_dict[self.prompt_key]:
        row_dict[self.prompt_key] = "<image>" + row_dict[self.prompt_key]

    row_dict[self.prompt_key]=QUESTION_TEMPLATE.format(Question=row_dict[self.prompt_key]) + TYPE_TEMPLATE[row_dict['problem_type']]
    return row_dict[self.prompt_key]


# --- scripts/train_scripts/run_train.sh, lines 14-15 ----------------------------------------------
SYSTEM_PROMPT="""You FIRST think about the reasoning process as an internal monologue and then provide the final answer.
 The reasoning process MUST BE enclosed within <think> </think> tagsdd. The final answer MUST BE enclosed within <answer> </answer> tags, for example <think>your_thinking_process</think><answer>your_final_answer</answer>. If you use formula, please use LaTeX format."""
