"""Vision-SR1's second-pass (self-reward) prompt, verbatim: an oracle of
``tests/rewards/test_vision_sr1_released.py``.

Source: zli12321/Vision-SR1 @ 4480e08 (Apache-2.0), ``verl/trainer/ray_trainer.py``, copied for
testing only: the imports ``re`` and ``typing`` (lines 57-58), ``extract_description`` and
``ABS_Verify_Prompt`` (lines 66-81), unchanged, and the ``second_hop_inputs`` list of
``RayPPOTrainer.fit`` (lines 673-679, unchanged but de-indented). Shim: that list is built inside
``fit`` from the decoded first-round responses (``resp_texts``) and the batch's ``question``
column repeated ``n`` times (``questions``); here it is wrapped in the function
:func:`second_hop_inputs_of` taking those two lists. Not formatted or linted, to stay verbatim.
"""

# ruff: noqa
# fmt: off
import re
from typing import Dict, List, Optional


def extract_description(predict: str) -> Optional[str]:
    """
    Extracts the content of the <answer>…</answer> block from `predict`.
    Returns the inner text (with leading/trailing whitespace stripped),
    or None if no <answer> tag is found.
    """
    match = re.search(r"<description>([\s\S]*?)</description>", predict, re.DOTALL)
    if not match:
        return predict
    return match.group(1).strip()


'''
The prompt to do self eval
'''
ABS_Verify_Prompt = '''Text description: {Description}\nQuestion: {Question}\nYou are provided a text description of a problem and a question. Determine the answer to the question based on the text description. First provide an internal step-by-step reasoning within <think> </think> tags, then provide a single word or phrase answer in \\boxed{}.'''


def second_hop_inputs_of(resp_texts, questions):  # shim: the body is ray_trainer.py 673-679
    # 1.5) process the output texts. Make them their outputs as the inputs for the second round of generation.
    second_hop_inputs = [
        ABS_Verify_Prompt
            .replace("{Description}", extract_description(first_round_text))
            .replace("{Question}",   question.replace('<image>', ''))
        for first_round_text, question in zip(resp_texts, questions)
    ]
    return second_hop_inputs
