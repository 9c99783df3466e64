"""Prompt formats: how a problem is asked and how a well-formed response looks.

Each format shares its name with the format reward that checks it (``vlrl.rewards``); a test
asserts that :meth:`PromptFormat.render_target` earns the full format reward.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class PromptFormat:
    """A named prompt format.

    Attributes:
        name: registry key, used by experiment configs (``prompt: think_answer``).
        template: user-turn text with ``{Question}``.
        target: a well-formed response with ``{reasoning}`` and ``{answer}`` (used for SFT targets).
        pattern: the full-match regex a well-formed response satisfies.
        source: where the format comes from.
    """

    name: str
    template: str
    target: str
    pattern: str
    source: str

    def render_prompt(self, question: str) -> str:
        """The user-turn text for ``question``.

        >>> PROMPTS["think_answer"].render_prompt("How many shapes?")[:34]
        'How many shapes? First output the '
        """
        return self.template.format(Question=question)

    def render_target(self, reasoning: str, answer: str) -> str:
        """A well-formed response.

        >>> PROMPTS["think_answer"].render_target("two circles", "2")
        '<think>two circles</think><answer>2</answer>'
        """
        return self.target.format(reasoning=reasoning, answer=answer)

    def is_well_formed(self, response: str) -> bool:
        return re.fullmatch(self.pattern, response.strip(), re.DOTALL) is not None


PROMPTS: dict[str, PromptFormat] = {
    fmt.name: fmt
    for fmt in [
        PromptFormat(
            name="think_answer",
            template=(
                "{Question} First output the thinking process in <think> </think> tags and then "
                "output the final answer in <answer> </answer> tags."
            ),
            target="<think>{reasoning}</think><answer>{answer}</answer>",
            pattern=r"<think>.*?</think>\s*<answer>.*?</answer>",
            source="VLM-R1 get_question_template default (reference/vlm-r1.md §2, §1.2)",
        ),
    ]
}


def get_prompt(name: str) -> PromptFormat:
    """Look up a prompt format by name, with a clear error listing the known ones."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise KeyError(f"unknown prompt format {name!r}; known: {sorted(PROMPTS)}") from None
