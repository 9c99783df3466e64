"""From canonical records to what the trainers read.

- :func:`to_sharegpt`: LLaMA-Factory's sharegpt rows (SFT), one ``<image>`` per image.
- :func:`to_conversation`: the conversational prompt TRL and the generators take, images first
  (the position TRL's ``prepare_multimodal_messages`` gives them, and LLaMA-Factory's here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlrl.errors import DataError
from vlrl.prompts import PromptFormat
from vlrl.records import Record


def to_conversation(record: Record, fmt: PromptFormat) -> list[dict[str, Any]]:
    """The user turn for ``record`` with one image placeholder per image.

    >>> from vlrl.prompts import PROMPTS
    >>> rec = Record(id="1", images=["a.png"], problem="How many?", answer="2",
    ...              problem_type="numerical", data_source="t")
    >>> to_conversation(rec, PROMPTS["think_answer"])[0]["content"][0]
    {'type': 'image'}
    """
    content: list[dict[str, Any]] = [{"type": "image"} for _ in record.images]
    content.append({"type": "text", "text": fmt.render_prompt(record.problem)})
    return [{"role": "user", "content": content}]


def sft_target(record: Record, fmt: PromptFormat) -> str:
    """The assistant turn SFT teaches: the record's reasoning and answer in the prompt format."""
    if record.reasoning is None:
        raise DataError(f"record {record.id}: no reasoning to build an SFT target from")
    return fmt.render_target(record.reasoning, record.answer)


def to_sharegpt(record: Record, fmt: PromptFormat, base_dir: Path) -> dict[str, Any]:
    """A LLaMA-Factory sharegpt row with absolute image paths."""
    return {
        "messages": [
            {
                "role": "user",
                "content": "<image>" * len(record.images) + fmt.render_prompt(record.problem),
            },
            {"role": "assistant", "content": sft_target(record, fmt)},
        ],
        "images": [str((base_dir / p).resolve()) for p in record.images],
    }


SHAREGPT_DATASET_INFO = {
    "formatting": "sharegpt",
    "columns": {"messages": "messages", "images": "images"},
    "tags": {
        "role_tag": "role",
        "content_tag": "content",
        "user_tag": "user",
        "assistant_tag": "assistant",
    },
}
