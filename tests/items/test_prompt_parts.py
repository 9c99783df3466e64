"""A prompt format's parts on the branches no shipped format takes."""

from __future__ import annotations

from vlrl.items.prompts import PROMPTS, PromptFormat


def test_no_image_part_unless_asked() -> None:
    assert PROMPTS["think_answer"].user_content("Hi?") == [
        {"type": "text", "text": PROMPTS["think_answer"].render_prompt("Hi?")}
    ]


def test_images_after_the_first_question_of_a_template_that_asks_it_twice() -> None:
    twice = PromptFormat(name="twice", template="A {Question} B {Question} C", target="",
                         pattern="", source="test", images_after_question=True)  # fmt: skip
    assert twice.user_content("q", images=1) == [
        {"type": "text", "text": "A q"}, {"type": "image"}, {"type": "text", "text": " B q C"}
    ]  # fmt: skip


def test_the_instruction_texts_are_the_template_without_the_question() -> None:
    for prompt in PROMPTS.values():
        texts = prompt.instruction_texts()
        bare = prompt.template.replace("{Question}", "").replace("{{", "{").replace("}}", "}")
        if bare.strip():  # a template of the question alone has no text of its own
            assert texts[0] == bare.strip()
        assert None not in texts and "" not in texts
