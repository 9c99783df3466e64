"""vlrl.data.convert: the SFT target a record teaches and the LLaMA-Factory sharegpt row it
becomes, for each of the three kinds of record (the source's whole conversation, the source's own
assistant turn, a record the prompt format is applied to)."""

from __future__ import annotations

import pytest

from vlrl.core.errors import DataError
from vlrl.data.convert import needs_reasoning, sft_target, to_sharegpt
from vlrl.items.prompts import PROMPTS
from vlrl.items.records import Record

THINK_ANSWER = (
    " First output the thinking process in <think> </think> tags and then output the final"
    " answer in <answer> </answer> tags."
)


def record(**update) -> Record:
    fields = dict(
        id="7",
        images=["images/a.png", "images/b.png"],
        problem="Which is red?",
        answer="Lee",
        problem_type="free_form",
        data_source="t",
        reasoning="look",
    )
    return Record(**(fields | update))


def test_sft_target_without_reasoning_is_refused_when_the_format_thinks():
    with pytest.raises(DataError) as exc:
        sft_target(record(reasoning=None), PROMPTS["think_answer"])
    assert str(exc.value) == "record 7: no reasoning to build an SFT target from"


def test_sft_target_without_reasoning_is_refused_when_the_format_describes():
    # caption_bbox_answer has no thinking part: its <caption> is what needs the reasoning
    assert PROMPTS["caption_bbox_answer"].target_fields == {"answer", "boxes", "description"}
    assert needs_reasoning(PROMPTS["caption_bbox_answer"])
    with pytest.raises(DataError) as exc:
        sft_target(record(reasoning=None, boxes=[[0, 0, 2, 2]]), PROMPTS["caption_bbox_answer"])
    assert str(exc.value) == "record 7: no reasoning to build an SFT target from"


def test_sft_target_without_boxes_or_image_size_names_the_record_and_format():
    with pytest.raises(DataError) as exc:
        sft_target(record(), PROMPTS["caption_bbox_think_answer"])
    assert str(exc.value) == (
        "record 7: format 'caption_bbox_think_answer' needs boxes or an image size "
        "(records read with read_records have it)"
    )


def test_sft_target_keeps_an_empty_reasoning_empty():
    assert sft_target(record(reasoning=""), PROMPTS["think_answer"]) == (
        "<think></think><answer>Lee</answer>"
    )


def test_sharegpt_row_of_a_source_conversation_keeps_it_and_the_image_paths():
    turns = [{"role": "user", "content": "<image>Hi"}, {"role": "assistant", "content": "Hello"}]
    row = to_sharegpt(record(turns=turns, system="Be brief."), PROMPTS["think_answer"])
    assert row == {
        "messages": turns,
        "system": "Be brief.",
        "images": ["images/a.png", "images/b.png"],
    }


def test_sharegpt_row_of_a_source_response_is_its_two_turns_without_system():
    row = to_sharegpt(record(response="<think>red</think> Lee"), PROMPTS["sophiavl_think"])
    assert row == {
        "messages": [
            {"role": "user", "content": "<image><image>Which is red?"},
            {"role": "assistant", "content": "<think>red</think> Lee"},
        ],
        "system": "",
        "images": ["images/a.png", "images/b.png"],
    }


def test_sharegpt_row_applies_the_prompt_format_with_the_source_type():
    rec = record(source_type="text")
    row = to_sharegpt(rec, PROMPTS["think_answer"])
    assert row == {
        "messages": [
            {"role": "user", "content": "<image><image>Which is red?" + THINK_ANSWER},
            {"role": "assistant", "content": "<think>look</think><answer>Lee</answer>"},
        ],
        "system": "",
        "images": ["images/a.png", "images/b.png"],
    }


def test_a_source_type_the_format_has_no_suffix_for_gives_vlrls_type() -> None:
    from vlrl.data.convert import prompt_type
    from vlrl.items.prompts import PROMPTS
    from vlrl.items.records import Record

    rec = Record(id="1", images=[], problem="Who?", answer="Lee", problem_type="free_form",
                 source_type="text", data_source="t")  # fmt: skip
    assert "text" not in PROMPTS["think_answer"].type_suffixes
    assert prompt_type(rec, PROMPTS["think_answer"]) == "free_form"
    assert prompt_type(rec, PROMPTS["sophiavl_think"]) == "text"
