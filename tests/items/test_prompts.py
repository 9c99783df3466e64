"""Prompt formats: their texts are the papers', and each agrees with its format reward."""

from __future__ import annotations

import pytest

from vlrl.core.errors import DataError
from vlrl.data.convert import SHAREGPT_DATASET_INFO, sft_target, to_conversation, to_sharegpt
from vlrl.items import prompt_texts
from vlrl.items.prompts import PROMPTS, get_prompt
from vlrl.items.records import Record
from vlrl.rewards import REGISTRY, satori, sophiavl, vision_sr1, vlm_r1

FORMAT_REWARD = {
    "think_answer": "common.format",
    "rec_json": "vlm_r1.rec_format",
    "od_json": "vlm_r1.format",
    "rec_baseline": "vlm_r1.rec_baseline_format",
    "see_think_boxed": "vision_sr1.format",
    "think_boxed": "vision_sr1.format_cot",
    "caption_bbox_answer": "satori.format",
    "caption_bbox_think_answer": "satori.format_think",
    "sophiavl_think": "sophiavl.format",
}
"""Each format's format reward; every one scores 0.0 or 1.0."""

WITH_SYSTEM = {"caption_bbox_answer", "caption_bbox_think_answer", "sophiavl_think"}

# (reasoning, answer, description, boxes, why)
TARGET_CASES = [
    ("I see two circles.", "2", None, [[0, 0, 10, 10]], "count, no description"),
    ("The red square is at the top.", "[5, 5, 25, 25]", "a red square", [[5.0, 5.0, 25.0, 25.0]],
     "grounding, float boxes"),
    ("First a circle.\nThen a square.", "B", "a circle and a square", [[1, 2, 3, 4], [5, 6, 7, 8]],
     "multi-line reasoning, two boxes"),
    ("", "a red circle", "", [[0.4, 0.6, 30.5, 31.49]], "empty reasoning and description"),
]  # fmt: skip


def test_every_prompt_has_a_format_reward() -> None:
    assert set(FORMAT_REWARD) == set(PROMPTS)
    assert set(FORMAT_REWARD.values()) <= set(REGISTRY)


@pytest.mark.parametrize("name", sorted(PROMPTS))
@pytest.mark.parametrize(("reasoning", "answer", "description", "boxes", "why"), TARGET_CASES)
def test_rendered_target_earns_full_format_reward(
    name: str, reasoning: str, answer: str, description: str | None, boxes: list, why: str
) -> None:
    fmt = PROMPTS[name]
    target = fmt.render_target(reasoning, answer, description=description, boxes=boxes)
    assert fmt.is_well_formed(target), why
    assert REGISTRY[FORMAT_REWARD[name]]([target]) == [1.0], why
    chat = [{"role": "assistant", "content": target}]
    assert REGISTRY[FORMAT_REWARD[name]]([chat]) == [1.0], why


def test_think_answer_is_unchanged() -> None:
    fmt = PROMPTS["think_answer"]
    expected = (
        "How many shapes? First output the thinking process in <think> </think> tags and then "
        "output the final answer in <answer> </answer> tags."
    )
    assert fmt.render_prompt("How many shapes?") == expected
    assert fmt.render_prompt("How many shapes?", problem_type="numerical") == expected
    assert fmt.render_target("two circles", "2") == "<think>two circles</think><answer>2</answer>"
    assert fmt.render_target("r", "2", description="d", boxes=[[1, 2, 3, 4]]) == (
        "<think>r</think><answer>2</answer>"
    )
    assert fmt.system is None


# (format, question, problem_type, exact rendered user text, why)
PROMPT_CASES = [
    ("rec_json", "Find the dog.", "grounding",
     "Find the dog. First output the thinking process in <think> </think> tags and then output "
     "the final answer in <answer> </answer> tags. Output the final answer in JSON format.",
     "VLM-R1 get_question_template('rec')"),
    ("od_json", "Detect cats.", None,
     "First thinks about the reasoning process in the mind and then provides the user with the "
     "answer. The reasoning process and answer are enclosed within <think> </think> and <answer> "
     "</answer> tags, respectively, i.e., <think> reasoning process here </think><answer> answer "
     "here </answer>\nDetect cats.",
     "VLM-R1 odLength: the enhanced prompt comes before the question"),
    ("see_think_boxed", "  How many cubes?\n", "numerical",
     "How many cubes? " + prompt_texts.SEE_THINK_SUFFIX, "jinja `{{ content | trim }} ` + suffix"),
    ("caption_bbox_answer", "What is red?", "free_form", "What is red?",
     "SATORI-R1: the user turn is the plain question"),
    ("rec_baseline", "the dog on the left", "grounding",
     "the dog on the left Please provide the bounding box coordinate in JSON format.",
     "VLM-R1 test_rec_baseline.py QUESTION_TEMPLATE"),
    ("think_boxed", "  How many cubes?\n", "numerical",
     "How many cubes? You FIRST think about the reasoning process as an internal monologue and "
     "then provide the final answer. The reasoning process MUST BE enclosed within <think> "
     "</think> tags. The final answer MUST BE put in \\boxed{}.",
     "Vision-SR1 cot_format.jinja: `{{ content | trim }} ` + suffix"),
    ("caption_bbox_think_answer", "What is red?", "free_form", "What is red?",
     "SATORI with thinking: the user turn is the plain question"),
    ("sophiavl_think", "How many?", "numerical",
     prompt_texts.SOPHIAVL_QUESTION_TEMPLATE.format(Question="How many?")
     + " Please provide the numerical value (e.g., 42 or 3.14) within the <answer> </answer> tags.",
     "SophiaVL-R1 dataset.py: QUESTION_TEMPLATE + TYPE_TEMPLATE['numerical']"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "question", "ptype", "expected", "why"), PROMPT_CASES)
def test_rendered_prompt_is_the_papers(
    name: str, question: str, ptype: str | None, expected: str, why: str
) -> None:
    assert PROMPTS[name].render_prompt(question, problem_type=ptype) == expected, why


# (format, where, literal the text must contain, why)
LITERAL_CASES = [
    ("see_think_boxed", "prompt", "Wrap the entire description in <description> </description> "
     "tags.\\n Next", "see_think_format.jinja: literal backslash-n kept"),
    ("see_think_boxed", "prompt", "answer to the question in \\boxed{}.",
     "see_think_format.jinja: answer in \\boxed{}"),
    ("see_think_boxed", "prompt", "<think> reasoning process here </think> "
     "\\boxed{FINAL ANSWER here}.", "see_think_format.jinja: ends by restating the format"),
    ("caption_bbox_answer", "system", "Enclose these coordinates in <bbox>[[x1,y1,x2,y2], ...]"
     "</bbox>.", "SATORI-R1 prompt.txt step 2"),
    ("caption_bbox_answer", "system", "Provide the caption inside <caption> </caption>.",
     "prompt.txt step 1"),
    ("caption_bbox_answer", "system", "the final answer to the question inside <answer> </answer> "
     "tags.", "prompt.txt step 3"),
    ("caption_bbox_think_answer", "system", "Enclose these coordinates in <bbox>[[x1,y1,x2,y2], "
     "...]</bbox>. Then, think step by step", "vlrl's think step follows prompt.txt's bbox step"),
    ("caption_bbox_think_answer", "system", "Provide the thinking process inside <think> </think>. "
     "Finally, provide the final answer to the question inside <answer> </answer> tags.",
     "vlrl's think step precedes prompt.txt's answer step"),
    ("think_boxed", "prompt", "The reasoning process MUST BE enclosed within <think> </think> "
     "tags.", "cot_format.jinja"),
    ("sophiavl_think", "system", "enclosed within <think> </think> tagsdd.",
     "run_train.sh: the typo 'tagsdd' is kept"),
    ("sophiavl_think", "system", "If you use formula, please use LaTeX format.",
     "run_train.sh: LaTeX"),
    ("sophiavl_think", "prompt", "'let me think', 'wait', 'Hmm'", "dataset.py: QUESTION_TEMPLATE"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "where", "literal", "why"), LITERAL_CASES)
def test_texts_hold_the_papers_literals(name: str, where: str, literal: str, why: str) -> None:
    fmt = PROMPTS[name]
    assert literal in (fmt.system if where == "system" else fmt.render_prompt("Q")), why


def test_system_prompt_only_where_the_paper_has_one() -> None:
    # VLM-R1 and Vision-SR1 set none (Qwen's default applies); SATORI and SophiaVL do.
    assert {name for name, fmt in PROMPTS.items() if fmt.system} == WITH_SYSTEM
    assert PROMPTS["caption_bbox_answer"].system == prompt_texts.CAPTION_BBOX_ANSWER_SYSTEM_PROMPT
    assert PROMPTS["sophiavl_think"].system == prompt_texts.SOPHIAVL_SYSTEM_PROMPT


# (problem_type, SophiaVL's TYPE_TEMPLATE key or None for no suffix, why)
SOPHIAVL_TYPE_CASES = [
    ("multiple_choice", "multiple choice", "vlrl canonical name"),
    ("multiple choice", "multiple choice", "SophiaVL name"),
    ("ocr", "OCR", "vlrl canonical name"),
    ("OCR", "OCR", "SophiaVL name"),
    ("free_form", "free-form", "vlrl canonical name"),
    ("numerical", "numerical", "same in both"),
    ("text", "text", "SophiaVL only"),
    ("yes_no", None, "no SophiaVL suffix: none appended"),
    ("grounding", None, "no SophiaVL suffix: none appended"),
    (None, None, "no problem type given"),
]


@pytest.mark.parametrize(("ptype", "kind", "why"), SOPHIAVL_TYPE_CASES)
def test_sophiavl_type_suffix(ptype: str | None, kind: str | None, why: str) -> None:
    text = PROMPTS["sophiavl_think"].render_prompt("Q", problem_type=ptype)
    base = prompt_texts.SOPHIAVL_QUESTION_TEMPLATE.format(Question="Q")
    assert text == base + (prompt_texts.SOPHIAVL_TYPE_TEMPLATE[kind] if kind else ""), why
    if kind:  # the reward module builds the same user text (plus <image>)
        assert sophiavl.sophiavl_user_text("Q", ptype) == "<image>" + text, why


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_render_prompt_with_the_question_only(name: str) -> None:
    assert "How many?" in PROMPTS[name].render_prompt("How many?")


def test_satori_target_needs_boxes() -> None:
    with pytest.raises(ValueError, match="caption_bbox_answer"):
        PROMPTS["caption_bbox_answer"].render_target("r", "a")


def test_rec_json_target_answers_with_the_first_box() -> None:
    fmt = PROMPTS["rec_json"]
    target = fmt.render_target("r", "[5, 5, 25, 25]", boxes=[[5.0, 5.0, 25.4, 24.6], [0, 0, 1, 1]])
    assert target == '<think>r</think><answer>{"bbox_2d": [5, 5, 25, 25]}</answer>'
    # without a box the answer is used as given (a JSON answer still earns the format)
    target = fmt.render_target("r", '{"bbox_2d": [1, 2, 3, 4]}')
    assert REGISTRY["vlm_r1.rec_format"]([target]) == [1.0]


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_instruction_texts_are_rendered(name: str) -> None:
    texts = PROMPTS[name].instruction_texts()
    assert texts and all(texts), name
    assert not any("{Question}" in t or "{{" in t for t in texts), name
    fmt = PROMPTS[name]
    if fmt.system:
        assert fmt.system in texts
    assert all(s.strip() in texts for s in fmt.type_suffixes.values())


def test_reward_modules_reexport_the_one_declaration() -> None:
    assert vlm_r1.FORMAT_PATTERN is prompt_texts.THINK_ANSWER_PATTERN
    assert vlm_r1.REC_FORMAT_PATTERN is prompt_texts.REC_JSON_PATTERN
    assert all(vlm_r1.PROMPT_FORMATS[n] is PROMPTS[n] for n in ("rec_json", "od_json"))
    assert vision_sr1.SEE_THINK_SUFFIX is prompt_texts.SEE_THINK_SUFFIX
    assert vision_sr1.SEE_THINK_TEMPLATE is prompt_texts.SEE_THINK_TEMPLATE
    assert vision_sr1.SEE_THINK_PATTERN is prompt_texts.SEE_THINK_PATTERN
    texts = prompt_texts
    assert satori.CAPTION_BBOX_ANSWER_SYSTEM_PROMPT is texts.CAPTION_BBOX_ANSWER_SYSTEM_PROMPT
    assert satori.CAPTION_BBOX_ANSWER_PATTERN is prompt_texts.CAPTION_BBOX_ANSWER_PATTERN
    assert satori.SATORI_FORMAT_PATTERN is prompt_texts.SATORI_FORMAT_PATTERN
    assert sophiavl.SOPHIAVL_SYSTEM_PROMPT is prompt_texts.SOPHIAVL_SYSTEM_PROMPT
    assert sophiavl.SOPHIAVL_QUESTION_TEMPLATE is prompt_texts.SOPHIAVL_QUESTION_TEMPLATE
    assert sophiavl.SOPHIAVL_TYPE_TEMPLATE is prompt_texts.SOPHIAVL_TYPE_TEMPLATE
    assert sophiavl.SOPHIAVL_THINK_PATTERN is prompt_texts.SOPHIAVL_THINK_PATTERN
    assert sophiavl.sophiavl_type is prompt_texts.sophiavl_type


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_source_cites_a_public_commit(name: str) -> None:
    repo, _, rest = PROMPTS[name].source.partition(" @ ")
    assert repo.count("/") == 1 and rest[:7].isalnum(), PROMPTS[name].source


def test_unknown_prompt_lists_known() -> None:
    with pytest.raises(KeyError, match="think_answer"):
        get_prompt("nope")


# --- conversions ---------------------------------------------------------------------------------


def _record(**update) -> Record:
    fields = dict(
        id="r1", images=["img/0.png"], problem="How many shapes?", answer="2",
        problem_type="numerical", caption="a red circle and a blue square",
        image_sizes=[[112, 96]], data_source="t", reasoning="I see two shapes.",
    )  # fmt: skip
    return Record(**{**fields, **update})


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_to_conversation_system_turn(name: str) -> None:
    fmt = PROMPTS[name]
    turns = to_conversation(_record(), fmt)
    user = turns[-1]
    assert user["role"] == "user"
    text = fmt.render_prompt("How many shapes?", problem_type="numerical")
    if fmt.images_after_question:  # Vision-SR1's loader: the picture ends the question
        cut = len("How many shapes?")
        assert user["content"] == [
            {"type": "text", "text": text[:cut]},
            {"type": "image"},
            {"type": "text", "text": text[cut:]},
        ]
    else:
        assert user["content"] == [{"type": "image"}, {"type": "text", "text": text}]
    if name in WITH_SYSTEM:
        assert turns[0] == {"role": "system", "content": [{"type": "text", "text": fmt.system}]}
        assert len(turns) == 2
    else:
        assert len(turns) == 1


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_to_sharegpt_system_column(name: str) -> None:
    fmt = PROMPTS[name]
    row = to_sharegpt(_record(), fmt)
    assert row["system"] == (fmt.system or "")
    assert set(row) == set(SHAREGPT_DATASET_INFO["columns"].values())
    user, assistant = row["messages"]
    text = fmt.render_prompt("How many shapes?", problem_type="numerical")
    if fmt.images_after_question:
        cut = len("How many shapes?")
        assert user["content"] == text[:cut] + "<image>" + text[cut:]
    else:
        assert user["content"] == "<image>" + text
    assert assistant["content"] == sft_target(_record(), fmt)


# (format, record update, expected SFT target, why)
SFT_TARGET_CASES = [
    ("see_think_boxed", {},
     "<description>a red circle and a blue square</description><think>I see two shapes.</think>"
     "\\boxed{2}", "the record's caption is the description"),
    ("see_think_boxed", {"caption": None},
     "<description>I see two shapes.</description><think>I see two shapes.</think>\\boxed{2}",
     "no caption: the reasoning stands in"),
    ("caption_bbox_answer", {},
     "<caption>a red circle and a blue square</caption><bbox>[[0, 0, 112, 96]]</bbox>"
     "<answer>2</answer>", "no boxes: the whole image"),
    ("caption_bbox_answer", {"boxes": [[5.0, 5.0, 25.0, 25.0]], "answer": "[5, 5, 25, 25]",
                             "problem_type": "grounding"},
     "<caption>a red circle and a blue square</caption><bbox>[[5, 5, 25, 25]]</bbox>"
     "<answer>[5, 5, 25, 25]</answer>", "the record's boxes"),
    ("rec_json", {"boxes": [[5.0, 5.0, 25.0, 25.0]], "answer": "[5, 5, 25, 25]",
                  "problem_type": "grounding"},
     '<think>I see two shapes.</think><answer>{"bbox_2d": [5, 5, 25, 25]}</answer>',
     "REC: the first box as VLM-R1's JSON"),
    ("sophiavl_think", {}, "<think>I see two shapes.</think><answer>2</answer>", "think/answer"),
    ("think_boxed", {}, "<think>I see two shapes.</think>\\boxed{2}",
     "regular Vision-R1: think → box, no description"),
    ("rec_baseline", {"boxes": [[5.0, 5.0, 25.0, 25.0]], "answer": "[5, 5, 25, 25]",
                      "problem_type": "grounding"},
     '{"bbox_2d": [5, 5, 25, 25]}', "REC SFT baseline: the JSON box alone, no reasoning"),
    ("caption_bbox_think_answer", {"boxes": [[5.0, 5.0, 25.0, 25.0]]},
     "<caption>a red circle and a blue square</caption><bbox>[[5, 5, 25, 25]]</bbox>"
     "<think>I see two shapes.</think><answer>2</answer>", "SATORI with thinking"),
    ("caption_bbox_think_answer", {},
     "<caption>a red circle and a blue square</caption><bbox>[[0, 0, 112, 96]]</bbox>"
     "<think>I see two shapes.</think><answer>2</answer>", "no boxes: the whole image"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "update", "expected", "why"), SFT_TARGET_CASES)
def test_sft_target(name: str, update: dict, expected: str, why: str) -> None:
    assert sft_target(_record(**update), PROMPTS[name]) == expected, why


def test_sft_target_without_boxes_or_size_is_named() -> None:
    with pytest.raises(DataError, match="r1"):
        sft_target(_record(image_sizes=[]), PROMPTS["caption_bbox_answer"])


# --- the formats of the baselines and of SATORI with thinking ------------------------------------


def test_new_formats_reexported_by_their_reward_modules() -> None:
    assert vision_sr1.THINK_BOXED_SUFFIX is prompt_texts.THINK_BOXED_SUFFIX
    assert vision_sr1.THINK_BOXED_TEMPLATE is prompt_texts.THINK_BOXED_TEMPLATE
    assert vision_sr1.THINK_BOXED_PATTERN is prompt_texts.THINK_BOXED_PATTERN
    assert satori.SATORI_FORMAT_THINK_PATTERN is prompt_texts.SATORI_FORMAT_THINK_PATTERN
    texts = prompt_texts
    assert satori.CAPTION_BBOX_THINK_ANSWER_PATTERN is texts.CAPTION_BBOX_THINK_ANSWER_PATTERN
    assert (
        satori.CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT
        is prompt_texts.CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT
    )
    assert PROMPTS["caption_bbox_think_answer"].system == (
        prompt_texts.CAPTION_BBOX_THINK_ANSWER_SYSTEM_PROMPT
    )


def test_the_tokenizer_corpus_is_fixed() -> None:
    """New formats do not retrain the tiny tokenizer (which would change the default's model
    and every number of `make run`); they are tokenized byte-level all the same
    (tests/models/test_tiny.py)."""
    from vlrl.stages.base_model import CORPUS_FORMATS, instruction_texts

    assert CORPUS_FORMATS == (
        "think_answer",
        "rec_json",
        "od_json",
        "see_think_boxed",
        "caption_bbox_answer",
        "sophiavl_think",
    )
    assert not set(PROMPTS["think_boxed"].instruction_texts()) <= set(instruction_texts())


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_every_format_round_trips_through_the_tiny_tokenizer(name: str, tiny_processor) -> None:
    fmt = PROMPTS[name]
    for text in fmt.instruction_texts():
        ids = tiny_processor.tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tiny_processor.tokenizer.decode(ids) == text, name


# (format, response, well-formed, why)
SHAPE_CASES = [
    ("rec_baseline", '{"bbox_2d": [1, 2, 3, 4]}', True, "the JSON box"),
    ("rec_baseline", ' ```json\n{"bbox_2d": [1.5, -2, 3, 4], "label": "dog"}\n``` ', False,
     "a fenced answer is not the bare object"),
    ("rec_baseline", '{"bbox_2d": [1.5, -2, 3, 4], "label": "dog"}', True, "floats, a label"),
    ("rec_baseline", '{"bbox_2d": [1, 2, 3]}', False, "three numbers"),
    ("rec_baseline", "[1, 2, 3, 4]", False, "a list, not an object"),
    ("rec_baseline", '<think>t</think><answer>{"bbox_2d": [1, 2, 3, 4]}</answer>', False,
     "the RL layout: no thinking in the baseline"),
    ("think_boxed", "<think>t</think>\\boxed{2}", True, "think → box"),
    ("think_boxed", "<description>d</description><think>t</think>\\boxed{2}", False,
     "the see-think layout"),
    ("think_boxed", "<think>t</think><answer>2</answer>", False, "answer tags"),
    ("caption_bbox_think_answer",
     "<caption>c</caption><bbox>[[1,2,3,4]]</bbox><think>t</think><answer>a</answer>", True,
     "caption → bbox → think → answer"),
    ("caption_bbox_think_answer", "<caption>c</caption><bbox>[[1,2,3,4]]</bbox><answer>a</answer>",
     False, "the released layout, without thinking"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "response", "expected", "why"), SHAPE_CASES)
def test_new_format_shapes(name: str, response: str, expected: bool, why: str) -> None:
    assert PROMPTS[name].is_well_formed(response) is expected, why
    assert REGISTRY[FORMAT_REWARD[name]]([response]) == [float(expected)], why
