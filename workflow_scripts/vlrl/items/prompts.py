r"""Prompt formats: how a problem is asked and how a well-formed response looks.

Each format is named in :data:`PROMPTS` and checked by the format reward of the same paper (a test
asserts that :meth:`PromptFormat.render_target` earns it in full):

- ``think_answer``: VLM-R1's default template; ``common.format`` (also ``vlm_r1.format``).
- ``rec_json``: VLM-R1 REC; ``vlm_r1.rec_format``. The target's answer is the first box as
  ``{"bbox_2d": [x1, y1, x2, y2]}``.
- ``od_json``: VLM-R1 odLength ("enhanced prompt" before the question); ``vlm_r1.format``.
- ``rec_baseline``: VLM-R1's REC SFT baseline (``test_rec_baseline.py``); the target is the JSON
  box alone, no thinking; ``vlm_r1.rec_baseline_format`` (vlrl's check: SFT has no format reward).
- ``see_think_boxed``: Vision-SR1, description → think → ``\boxed{}``; ``vision_sr1.format``.
- ``think_boxed``: Vision-SR1's regular Vision-R1 baseline, think → ``\boxed{}``; ``format_cot``.
- ``caption_bbox_answer``: SATORI-R1, a system prompt and the plain question; caption → bbox →
  answer, no thinking part (the target uses ``reasoning`` only as the caption's fallback);
  ``satori.format``.
- ``caption_bbox_think_answer``: SATORI with a thinking stage (paper v2 Fig. 3); prompt and format
  reward unreleased, so vlrl's construction from the released ones; ``satori.format_think``.
- ``sophiavl_think``: SophiaVL-R1, a system prompt, the question template and a per-type suffix
  (SophiaVL's five types, under their SophiaVL or vlrl names; ``yes_no``, ``grounding`` and
  ``detection`` get no suffix, where the released loader raises KeyError); ``sophiavl.format``.

Images are placed as the papers' loaders place them: first (VLM-R1, SophiaVL's prepended
``<image>``), or right after the question (Vision-SR1's ``_prefix_image_token``:
``images_after_question``). SophiaVL's multiple-choice options are not appended again (vlrl
problems already list them).

The papers' prompt texts and format patterns are declared once, in
:mod:`vlrl.items.prompt_texts`; the reward modules import (and re-export) them. This module
imports nothing from ``vlrl.rewards``.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vlrl.items.prompt_texts import (
    CAPTION_BBOX_ANSWER_PATTERN,
    CAPTION_BBOX_ANSWER_SYSTEM_PROMPT,
    CAPTION_BBOX_THINK_ANSWER_PATTERN,
    CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT,
    PROBLEM_TYPE_ALIASES,
    REC_BASELINE_PATTERN,
    REC_JSON_PATTERN,
    SEE_THINK_PATTERN,
    SEE_THINK_TEMPLATE,
    SOPHIAVL_QUESTION_TEMPLATE,
    SOPHIAVL_SYSTEM_PROMPT,
    SOPHIAVL_THINK_PATTERN,
    SOPHIAVL_TYPE_TEMPLATE,
    THINK_ANSWER_PATTERN,
    THINK_BOXED_PATTERN,
    THINK_BOXED_TEMPLATE,
    VLM_R1_DEFAULT_TEMPLATE,
    VLM_R1_OD_TEMPLATE,
    VLM_R1_REC_BASELINE_TEMPLATE,
    VLM_R1_REC_TEMPLATE,
    sophiavl_type,
)

# --- the format type -----------------------------------------------------------------------------


def _int_box(box: Sequence[float]) -> list[int]:
    return [round(v) for v in box]


@dataclass(frozen=True)
class PromptFormat:
    """A named prompt format.

    Attributes:
        name: registry key, used by experiment configs (``prompt: think_answer``).
        template: user-turn text with ``{Question}`` (a ``str.format`` template).
        target: a well-formed response (used for SFT targets), a ``str.format`` template over
            ``{reasoning}``, ``{answer}``, ``{description}``, ``{boxes}`` and ``{bbox_json}``
            (see :meth:`render_target`).
        pattern: the full-match regex (DOTALL, on the stripped text) a well-formed response
            satisfies; the format reward may be more or less lenient (see its docstring).
        source: where the format comes from.
        system: the system-turn text; None = no system turn (the chat template's default applies).
        type_suffixes: problem type → text appended after the rendered template; types absent
            from it get no suffix.
        strip_question: strip the question before it enters the template.
        images_after_question: the images go right after the question, before the rest of the
            template (Vision-SR1's loader moves ``<image>`` to the end of the question before the
            format prompt is rendered around it); else before all the text.
    """

    name: str
    template: str
    target: str
    pattern: str
    source: str
    system: str | None = None
    type_suffixes: Mapping[str, str] = field(default_factory=dict, hash=False)
    strip_question: bool = False
    images_after_question: bool = False

    def render_prompt(self, question: str, *, problem_type: str | None = None) -> str:
        """The user-turn text for ``question`` (of ``problem_type``, for per-type suffixes).

        >>> PROMPTS["think_answer"].render_prompt("How many shapes?")[:34]
        'How many shapes? First output the '
        >>> PROMPTS["sophiavl_think"].render_prompt("How many?", problem_type="numerical")[-41:]
        '3.14) within the <answer> </answer> tags.'
        """
        text = self.template.format(Question=question.strip() if self.strip_question else question)
        if problem_type is not None:
            text += self.type_suffixes.get(problem_type, "")
        return text

    def user_content(
        self, question: str, *, problem_type: str | None = None, images: int = 0
    ) -> list[dict[str, str]]:
        """The user turn as chat content parts: one ``{"type": "image"}`` per image, placed as
        :attr:`images_after_question` says, and the text of :meth:`render_prompt` around them
        (no empty text part; the texts joined are :meth:`render_prompt`'s).

        >>> PROMPTS["think_answer"].user_content("Hi?", images=1)[0]
        {'type': 'image'}
        >>> [p.get("text", "<image>")[:12] for p in PROMPTS["see_think_boxed"].user_content(
        ...     " How many? ", images=1)]
        ['How many?', '<image>', ' You are tas']
        """
        text = self.render_prompt(question, problem_type=problem_type)
        cut = 0
        if self.images_after_question and images:
            head = self.template.split("{Question}", 1)[0].format()
            cut = len(head) + len(question.strip() if self.strip_question else question)
        parts = [{"type": "text", "text": text[:cut]}, *({"type": "image"} for _ in range(images))]
        parts.append({"type": "text", "text": text[cut:]})
        return [p for p in parts if p.get("text") != ""]

    @property
    def target_fields(self) -> frozenset[str]:
        """The placeholders :attr:`target` uses.

        >>> sorted(PROMPTS["caption_bbox_answer"].target_fields)
        ['answer', 'boxes', 'description']
        """
        return frozenset(f for _, f, _, _ in string.Formatter().parse(self.target) if f)

    def render_target(
        self,
        reasoning: str,
        answer: str,
        *,
        description: str | None = None,
        boxes: Sequence[Sequence[float]] | None = None,
    ) -> str:
        r"""A well-formed response.

        Args:
            reasoning: the worked solution (``{reasoning}``, the thinking part).
            answer: the final answer (``{answer}``).
            description: the image description (``{description}``: Vision-SR1's
                ``<description>``, SATORI's ``<caption>``); ``reasoning`` when None.
            boxes: xyxy boxes in pixels, rounded to integers. ``{boxes}`` (SATORI's ``<bbox>``)
                lists them all and needs at least one (else ValueError); ``{bbox_json}``
                (VLM-R1 REC) is ``{"bbox_2d": [x1, y1, x2, y2]}`` of the first, or ``answer``
                when there is none.

        >>> PROMPTS["think_answer"].render_target("two circles", "2")
        '<think>two circles</think><answer>2</answer>'
        >>> PROMPTS["see_think_boxed"].render_target("so 2", "2", description="two circles")
        '<description>two circles</description><think>so 2</think>\\boxed{2}'
        >>> PROMPTS["caption_bbox_answer"].render_target("two circles", "2", boxes=[[0, 0, 9.6, 8]])
        '<caption>two circles</caption><bbox>[[0, 0, 10, 8]]</bbox><answer>2</answer>'
        >>> PROMPTS["think_boxed"].render_target("so 2", "2")
        '<think>so 2</think>\\boxed{2}'
        >>> PROMPTS["rec_baseline"].render_target("r", "[1, 2, 3, 4]", boxes=[[1, 2, 3, 4.4]])
        '{"bbox_2d": [1, 2, 3, 4]}'
        """
        if "boxes" in self.target_fields and not boxes:
            raise ValueError(f"prompt format {self.name!r}: its target lists boxes; none given")
        boxes = [_int_box(b) for b in boxes or []]
        return self.target.format(
            reasoning=reasoning,
            answer=answer,
            description=reasoning if description is None else description,
            boxes=json.dumps(boxes),
            bbox_json=json.dumps({"bbox_2d": boxes[0]}) if boxes else answer,
        )

    def is_well_formed(self, response: str) -> bool:
        return re.fullmatch(self.pattern, response.strip(), re.DOTALL) is not None

    def instruction_texts(self) -> list[str]:
        """The fixed texts of the format: the template without the question, each per-type
        suffix and the system prompt (for the tiny model's tokenizer corpus); none empty.

        >>> [t[:20] for t in PROMPTS["sophiavl_think"].instruction_texts()][:2]
        ['Please think about t', 'Please provide only ']
        """
        texts = [self.template.format(Question="").strip()]
        texts += [s.strip() for s in self.type_suffixes.values()]
        texts += [self.system] if self.system else []
        return [t for t in dict.fromkeys(texts) if t]


_THINK_ANSWER_TARGET = "<think>{reasoning}</think><answer>{answer}</answer>"

PROMPTS: dict[str, PromptFormat] = {
    fmt.name: fmt
    for fmt in [
        PromptFormat(
            name="think_answer",
            template=VLM_R1_DEFAULT_TEMPLATE,
            target=_THINK_ANSWER_TARGET,
            pattern=THINK_ANSWER_PATTERN,
            source="om-ai-lab/VLM-R1 @ 90052f4: qwen_module.py get_question_template default + "
            "grpo_jsonl.py format_reward",
        ),
        PromptFormat(
            name="rec_json",
            template=VLM_R1_REC_TEMPLATE,
            target="<think>{reasoning}</think><answer>{bbox_json}</answer>",
            pattern=REC_JSON_PATTERN,
            source="om-ai-lab/VLM-R1 @ 90052f4: qwen_module.py get_question_template('rec') + "
            "format_reward_rec",
        ),
        PromptFormat(
            name="od_json",
            template=VLM_R1_OD_TEMPLATE,
            target=_THINK_ANSWER_TARGET,
            pattern=THINK_ANSWER_PATTERN,
            source="om-ai-lab/VLM-R1 @ 90052f4: qwen_module.py get_question_template('odLength') + "
            "grpo_jsonl.py format_reward",
        ),
        PromptFormat(
            name="rec_baseline",
            template=VLM_R1_REC_BASELINE_TEMPLATE,
            target="{bbox_json}",
            pattern=REC_BASELINE_PATTERN,
            source="om-ai-lab/VLM-R1 @ 90052f4: src/eval/test_rec_baseline.py QUESTION_TEMPLATE "
            "(the SFT baseline: the JSON box alone, no thinking)",
        ),
        PromptFormat(
            name="see_think_boxed",
            template=SEE_THINK_TEMPLATE,
            target="<description>{description}</description><think>{reasoning}</think>"
            "\\boxed{{{answer}}}",
            pattern=SEE_THINK_PATTERN,
            source="zli12321/Vision-SR1 @ 4480e08: see_think_format.jinja + "
            "see_think_selfReward.py format_reward",
            strip_question=True,
            images_after_question=True,
        ),
        PromptFormat(
            name="think_boxed",
            template=THINK_BOXED_TEMPLATE,
            target="<think>{reasoning}</think>\\boxed{{{answer}}}",
            pattern=THINK_BOXED_PATTERN,
            source="zli12321/Vision-SR1 @ 4480e08: cot_format.jinja + cot_val.py format_reward "
            "(the regular Vision-R1 baseline, cot_config.yaml)",
            strip_question=True,
            images_after_question=True,
        ),
        PromptFormat(
            name="caption_bbox_answer",
            template="{Question}",
            target="<caption>{description}</caption><bbox>{boxes}</bbox><answer>{answer}</answer>",
            pattern=CAPTION_BBOX_ANSWER_PATTERN,
            source="justairr/SATORI-R1 @ 8857b30: prompt.txt (--system) + plugin.py "
            "external_format",
            system=CAPTION_BBOX_ANSWER_SYSTEM_PROMPT,
        ),
        PromptFormat(
            name="caption_bbox_think_answer",
            template="{Question}",
            target="<caption>{description}</caption><bbox>{boxes}</bbox><think>{reasoning}</think>"
            "<answer>{answer}</answer>",
            pattern=CAPTION_BBOX_THINK_ANSWER_PATTERN,
            source="justairr/SATORI-R1 @ 8857b30: prompt.txt + plugin.py external_format, each "
            "with a think step before the answer: vlrl's construction after SATORI-R1 paper v2 "
            "Fig. 3; not released",
            system=CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT,
        ),
        PromptFormat(
            name="sophiavl_think",
            template=SOPHIAVL_QUESTION_TEMPLATE,
            target=_THINK_ANSWER_TARGET,
            pattern=SOPHIAVL_THINK_PATTERN,
            source="kxfan2002/SophiaVL-R1 @ a818494: run_train.sh SYSTEM_PROMPT + dataset.py "
            "QUESTION_TEMPLATE, TYPE_TEMPLATE + math_format_reward",
            system=SOPHIAVL_SYSTEM_PROMPT,
            type_suffixes={
                t: SOPHIAVL_TYPE_TEMPLATE[sophiavl_type(t)]
                for t in (*SOPHIAVL_TYPE_TEMPLATE, *PROBLEM_TYPE_ALIASES)
            },
        ),
    ]
}


def get_prompt(name: str) -> PromptFormat:
    """Look up a prompt format by name, with a clear error listing the known ones."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise KeyError(f"unknown prompt format {name!r}; known: {sorted(PROMPTS)}") from None
