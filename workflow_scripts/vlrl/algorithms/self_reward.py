"""``self_reward``: Vision-SR1's visual self-reward on TRL's GRPOTrainer (zli12321/Vision-SR1
@ 4480e08, ``verl/trainer/ray_trainer.py`` ``fit()``).

After the first pass, the policy answers each question again from its own description, without
the image: the description is the first ``<description>`` block of the completion (the whole
completion when there is none, as released), the prompt is ``ABS_Verify_Prompt`` as the only user
message, and generation goes through the trainer's own backend (transformers or vLLM colocate)
with the same sampling settings, one sample per completion, under ``no_grad``. Its tokens are
never trained. The decoded texts fill the ``self_reward_responses`` column that
``vision_sr1.visual`` / ``vision_sr1.total`` grade.

The override is of ``GRPOTrainer._calculate_rewards`` (private; ``trl`` is pinned to 1.16.0).
"""

from __future__ import annotations

from typing import Any

import torch
from trl import GRPOTrainer

from vlrl.config import SelfRewardSettings
from vlrl.rewards.common import completion_text
from vlrl.rewards.vision_sr1 import (
    SELF_REWARD_COLUMN,
    extract_description,
    self_reward_prompt,
)

QUESTION_COLUMN = "problem"


def second_pass_description(completion: str, missing: str = "whole_response") -> str:
    """The description the second pass answers from.

    >>> second_pass_description("<description>two cubes</description><think>t</think>")
    'two cubes'
    >>> second_pass_description(r"<think>t</think>\\boxed{2}", missing="empty")
    ''
    """
    if missing == "empty" and "<description>" not in completion:
        return ""
    return extract_description(completion)


def second_pass_prompts(
    texts: list[str], questions: list[str], missing: str = "whole_response"
) -> list[list[dict[str, str]]]:
    """The second pass's chat prompts, one per first-pass response text.

    As released (``verl/trainer/ray_trainer.py`` @4480e08, lines 673-679), the description is
    taken from the decoded text as it is; only the reward function normalises tag whitespace.

    >>> second_pass_prompts(["<description>x < 5</description>"], ["Q?"])[0][0]["content"][:32]
    'Text description: x < 5\\nQuestion'
    """
    return [
        [{"role": "user", "content": self_reward_prompt(second_pass_description(t, missing), q)}]
        for t, q in zip(texts, questions, strict=True)
    ]


class SelfRewardGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that runs Vision-SR1's image-free second pass before scoring."""

    def __init__(self, *args: Any, settings: SelfRewardSettings, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.self_reward = settings

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        answers = self.second_pass(inputs, completions)
        for row, answer in zip(inputs, answers, strict=True):
            row[SELF_REWARD_COLUMN] = answer
        return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)

    def second_pass(self, inputs: list[dict[str, Any]], completions: list) -> list[str]:
        """The policy's image-free answers, one per completion, from its own descriptions."""
        if QUESTION_COLUMN not in inputs[0]:
            raise KeyError(
                f"self_reward needs the dataset column {QUESTION_COLUMN!r} (the raw question)"
            )
        texts = [completion_text(c) for c in completions]
        questions = [str(row[QUESTION_COLUMN]) for row in inputs]
        prompts = second_pass_prompts(texts, questions, self.self_reward.missing_description)
        prompt_ids, _, multimodal = self._tokenize_prompts(prompts)
        with torch.no_grad():
            completion_ids, _ = self._generate_single_turn(
                prompt_ids, None, multimodal, num_generations=1
            )
        answers = self.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["self_reward/description_missing"].append(
            sum("<description>" not in t for t in texts) / len(texts)
        )
        self._metrics[mode]["self_reward/second_pass_length"].append(
            sum(len(ids) for ids in completion_ids) / len(completion_ids)
        )
        return answers
