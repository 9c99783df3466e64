"""From canonical records to what the trainers read.

- :func:`to_sharegpt`: LLaMA-Factory's sharegpt rows (SFT), one ``<image>`` per image.
- :func:`to_conversation`: the conversational prompt TRL and the generators take.

Both place the images where the prompt format says (:meth:`PromptFormat.user_content`: before
the text, or after the question as Vision-SR1's loader puts them).
"""

from __future__ import annotations

from typing import Any

from vlrl.core.errors import DataError
from vlrl.items.prompts import PromptFormat
from vlrl.items.records import Record


def to_conversation(record: Record, fmt: PromptFormat) -> list[dict[str, Any]]:
    """The prompt turns for ``record``: the format's system turn (when it has one), then the user
    turn with one image placeholder per image and the text of :meth:`PromptFormat.render_prompt`
    (given the record's problem type), as :meth:`PromptFormat.user_content` places them.

    >>> from vlrl.items.prompts import PROMPTS
    >>> rec = Record(id="1", images=["a.png"], problem="How many?", answer="2",
    ...              problem_type="numerical", data_source="t")
    >>> to_conversation(rec, PROMPTS["think_answer"])[0]["content"][0]
    {'type': 'image'}
    >>> [m["role"] for m in to_conversation(rec, PROMPTS["sophiavl_think"])]
    ['system', 'user']
    """
    content = fmt.user_content(
        record.problem, problem_type=prompt_type(record, fmt), images=len(record.images)
    )
    turns = [{"role": "user", "content": content}]
    if fmt.system is not None:
        turns.insert(0, {"role": "system", "content": [{"type": "text", "text": fmt.system}]})
    return turns


def prompt_type(record: Record, fmt: PromptFormat) -> str:
    """The problem type ``fmt``'s per-type suffix is chosen by: the source's own type name when
    the format has a suffix for it, else vlrl's.

    >>> from vlrl.items.prompts import PROMPTS
    >>> rec = Record(id="1", images=[], problem="Who?", answer="Lee", problem_type="free_form",
    ...              source_type="text", data_source="t")
    >>> prompt_type(rec, PROMPTS["sophiavl_think"]), prompt_type(rec, PROMPTS["think_answer"])
    ('text', 'free_form')
    """
    if record.source_type is not None and record.source_type in fmt.type_suffixes:
        return record.source_type
    return record.problem_type


def sft_target(record: Record, fmt: PromptFormat) -> str:
    """The assistant turn SFT teaches: the record's reasoning and answer in the prompt format.

    The record's ``caption`` is the description (Vision-SR1) or caption (SATORI); without one the
    reasoning stands in. Its ``boxes`` fill SATORI's ``<bbox>`` (all of them) and VLM-R1 REC's
    JSON answer (the first); a SATORI target for a record without boxes lists the whole first
    image, ``[[0, 0, width, height]]``.
    """
    if record.reasoning is None and needs_reasoning(fmt):
        raise DataError(f"record {record.id}: no reasoning to build an SFT target from")
    boxes = record.boxes
    if not boxes and "boxes" in fmt.target_fields:
        if not record.image_sizes:
            raise DataError(
                f"record {record.id}: format {fmt.name!r} needs boxes or an image size "
                "(records read with read_records have it)"
            )
        width, height = record.image_sizes[0]
        boxes = [[0, 0, width, height]]
    return fmt.render_target(
        record.reasoning or "", record.answer, description=record.caption, boxes=boxes
    )


def needs_reasoning(fmt: PromptFormat) -> bool:
    """Whether the format's SFT target has a thinking part (VLM-R1's SFT baseline answers with
    the box alone).

    >>> from vlrl.items.prompts import PROMPTS
    >>> needs_reasoning(PROMPTS["think_answer"]), needs_reasoning(PROMPTS["rec_baseline"])
    (True, False)
    """
    return bool({"reasoning", "description"} & fmt.target_fields)


def to_sharegpt(record: Record, fmt: PromptFormat) -> dict[str, Any]:
    """A LLaMA-Factory sharegpt row; image paths as the record has them, relative to the
    records' directory (LLaMA-Factory's ``media_dir``), so the row is the same in every checkout.

    The ``system`` column holds the format's system prompt, ``""`` when it has none (LLaMA-Factory
    then uses the template's default system prompt, as without the column).

    >>> from vlrl.items.prompts import PROMPTS
    >>> rec = Record(id="1", images=["images/train/1.png"], problem="How many?", answer="2",
    ...              problem_type="numerical", data_source="t", reasoning="two")
    >>> to_sharegpt(rec, PROMPTS["think_answer"])["images"]
    ['images/train/1.png']

    A record with its source's whole conversation (``turns``: cold-start data) keeps it verbatim,
    ``<image>`` tags and system prompt included. One with only its source's own assistant turn
    (``response``) keeps both turns, with no system prompt (LLaMA-Factory's template default, as
    the source's own training had):

    >>> cold = rec.model_copy(update={"problem": "Describe, then solve.", "response": "<think>…"})
    >>> [m["content"] for m in to_sharegpt(cold, PROMPTS["think_answer"])["messages"]]
    ['<image>Describe, then solve.', '<think>…']
    """
    if record.turns is not None:  # the source's conversation, as LLaMA-Factory read it there
        return {
            "messages": [dict(turn) for turn in record.turns],
            "system": record.system or "",
            "images": [str(p) for p in record.images],
        }
    if record.response is not None:
        return {
            "messages": [
                {"role": "user", "content": "<image>" * len(record.images) + record.problem},
                {"role": "assistant", "content": record.response},
            ],
            "system": "",
            "images": [str(p) for p in record.images],
        }
    parts = fmt.user_content(
        record.problem, problem_type=prompt_type(record, fmt), images=len(record.images)
    )
    user = "".join(p["text"] if p["type"] == "text" else "<image>" for p in parts)
    return {
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": sft_target(record, fmt)},
        ],
        "system": fmt.system or "",
        "images": [str(p) for p in record.images],
    }


SHAREGPT_DATASET_INFO = {
    "formatting": "sharegpt",
    "columns": {"messages": "messages", "system": "system", "images": "images"},
    "tags": {
        "role_tag": "role",
        "content_tag": "content",
        "user_tag": "user",
        "assistant_tag": "assistant",
    },
}
