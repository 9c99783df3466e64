"""The prompt as the released trainers render it: a raw row of each paper's training data, read
by vlrl's converter and put in a chat by :func:`vlrl.data.convert.to_conversation`, against the
same row through the released loader (and, for SophiaVL, the released config parser), on
generated rows and the formats' fixture rows.

Vision-SR1 (``tests/items/reference/released_vision_sr1_dataset.py``): the user turn's parts,
text and image positions, are the released ``_build_messages`` output exactly. SophiaVL
(``tests/rewards/reference/released_sophiavl_rewards.py``): the chat rendered by the model's
chat template is the released prompt string exactly, system turn included (as
``OmegaConf.from_cli`` parses ``run_train.sh``'s ``data.system_prompt``). The rows left out are
the remaining differences the recipes list.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from PIL import Image

from vlrl.data.convert import to_conversation
from vlrl.data.formats import ImageStore, Row, easyr1, sophiavl_r1, vlm_r1_jsonl, vlm_r1_rec_train
from vlrl.items.prompts import PROMPTS
from vlrl.items.records import Record

TESTS = Path(__file__).resolve().parents[1]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"released_{path.stem}_for_prompts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VISION_SR1 = load(TESTS / "items" / "reference" / "released_vision_sr1_dataset.py")
VLM_R1 = load(TESTS / "items" / "reference" / "released_vlm_r1_prompt.py")
SOPHIAVL = load(TESTS / "rewards" / "reference" / "released_sophiavl_rewards.py")

WORDS = [
    "How many",
    "apples",
    "are there?",
    "(A) cat\n(B) dog",
    "x = 2",
    "é",
    "答案",
    "\\frac{1}{2}",
]
SPACES = ["", " ", "  ", "\n", "\t "]


def picture(tmp_path: Path, name: str = "p.png") -> Path:
    path = tmp_path / name
    Image.new("RGB", (30, 20), (40, 90, 40)).save(path)
    return path


# --- VLM-R1 (rec_json, think_answer) ------------------------------------------------------------


def vlm_r1_turns(seed: int, n: int) -> list[str]:
    """Human turns with ``<image>`` at the start, inside or absent, spaces and line breaks
    around (``grpo_jsonl.py`` keeps them: it only removes the tag)."""
    rng = random.Random(seed)
    turns = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(1, 4))]
        words.insert(rng.randrange(len(words) + 1), rng.choice(["<image>", "<image>", ""]))
        turns.append(rng.choice(SPACES) + rng.choice(SPACES).join(words) + rng.choice(SPACES))
    return [
        *turns,
        "<image>Please provide the bounding box coordinate of the region this sentence "
        "describes: man on the left.",
    ]


@pytest.mark.parametrize(
    ("prompt", "task_type", "converter"),
    [("rec_json", "rec", vlm_r1_rec_train), ("think_answer", "default", vlm_r1_jsonl)],
)
def test_vlm_r1_user_turn_is_the_released_one(tmp_path: Path, prompt, task_type, converter):
    """REC rows (``run_grpo_rec.sh``: ``--task_type rec``) and general ones (the default
    template), through vlrl's converters and ``to_conversation`` against ``grpo_jsonl.py``."""
    (tmp_path / "images").mkdir()
    picture(tmp_path / "images")
    pictures = vlm_r1_jsonl.ImageFolder(tmp_path / "images")
    store = ImageStore(tmp_path / "records")
    template = VLM_R1.Qwen2VLModule.get_question_template(task_type)
    for index, turn in enumerate(vlm_r1_turns(5, 150)):
        if not turn.replace("<image>", "").strip():
            continue  # an empty question is a row error in vlrl
        gpt = "[1, 2, 10, 12]" if task_type == "rec" else "3"
        raw = {"image": "p.png", "conversations": [
            {"from": "human", "value": turn}, {"from": "gpt", "value": gpt}]}  # fmt: skip
        row = Row("train.jsonl", index, raw)
        record = converter.convert_row(row, "train", store, pictures)
        (ours,) = to_conversation(record, PROMPTS[prompt])
        (released,) = VLM_R1.released_prompt(turn, 1, template)
        for part in released["content"]:  # the image part's "text": None is no text
            if part["type"] == "image":
                del part["text"]
        assert ours == released, repr(turn)


# --- Vision-SR1 (see_think_boxed, think_boxed) ---------------------------------------------------


def vision_sr1_problems(seed: int, n: int) -> list[str]:
    """Problems with one ``<image>`` at the start, in the middle or at the end, spaces around.
    Left out: no ``<image>`` with spaces at the end (the released loader keeps them before the
    picture, vlrl's records are stripped) and several ``<image>`` (the released loader keeps
    each in place; vlrl puts all after the question)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(1, 5))]
        at = rng.randrange(len(words) + 1)
        words.insert(at, "<image>")
        text = rng.choice(SPACES).join(words) if rng.random() < 0.5 else " ".join(words)
        out.append(rng.choice(SPACES) + text + rng.choice(SPACES))
    # without the tag, stripped at the end (the released loader appends the picture)
    return [*out, "How many apples?", " (A) cat\n(B) dog", *(p for p, _ in GOOD_VISION_SR1)]


#: the rows of tests/data/formats/test_easyr1.py's fixture (Vision-SR1-47K's layout)
GOOD_VISION_SR1 = [
    ("<image>How many apples are on the table?", "3"),
    ("Which animal is shown?\n(A) cat\n(B) dog\n<image>", "B"),
    ("What colour is the car? <image>", " red "),
    ("Find x in the triangle.<image>", "\\frac{1}{2}"),
]


@pytest.mark.parametrize(
    ("prompt", "jinja"),
    [("see_think_boxed", "see_think_format.jinja"), ("think_boxed", "cot_format.jinja")],
)
def test_vision_sr1_user_turn_is_the_released_one(tmp_path: Path, prompt: str, jinja: str) -> None:
    released = VISION_SR1.ReleasedLoader(jinja)
    image = {"bytes": picture(tmp_path).read_bytes(), "path": None}
    store = ImageStore(tmp_path / "records")
    for index, problem in enumerate(vision_sr1_problems(7, 200)):
        raw = {"problem": problem, "answer": "3", "images": image}
        record = easyr1.convert_row(Row("train.parquet", index, raw), str(index), tmp_path, store)
        expected = released._build_messages(released._prefix_image_token(dict(raw)))
        assert to_conversation(record, PROMPTS[prompt]) == expected, repr(problem)


def test_the_image_after_the_question_is_not_the_image_first() -> None:
    """The placement matters to the rendered chat (so the test above can fail)."""
    record = Record(
        id="1", images=["a.png"], problem="How many?", answer="2", problem_type="numerical",
        data_source="t",
    )  # fmt: skip
    parts = to_conversation(record, PROMPTS["see_think_boxed"])[0]["content"]
    assert [p["type"] for p in parts] == ["text", "image", "text"]
    assert parts[0]["text"] == "How many?" and parts[2]["text"].startswith(" You are tasked")


# --- SophiaVL (sophiavl_think) -------------------------------------------------------------------


def released_sophiavl_chat(tokenizer, problem: str, kind: str, options: list[str]) -> str:
    """``RLHFDataset.__getitem__``'s prompt string for an image row, the system prompt as
    ``run_train.sh`` passes it through ``OmegaConf.from_cli`` (``verl/trainer/main.py``)."""
    from omegaconf import OmegaConf

    cli = OmegaConf.from_cli([f"data.system_prompt={SOPHIAVL.SYSTEM_PROMPT}"])
    row = {"prompt": problem, "problem_type": kind, "options": options}
    messages = [
        {"role": "system", "content": cli.data.system_prompt},
        {"role": "user", "content": SOPHIAVL.released_user_text(row)},
    ]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return prompt.replace("<image>", "<|vision_start|><|image_pad|><|vision_end|>")


def sophiavl_items(seed: int, n: int) -> list[dict]:
    """Image items of every type, the ``<image>`` tag at the start or absent (a tag inside the
    question stays there in the released prompt; vlrl puts the picture first)."""
    rng = random.Random(seed)
    items = []
    for index in range(n):
        kind = rng.choice(list(sophiavl_r1.PROBLEM_TYPES))
        problem = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
        problem = rng.choice(["", "<image>"]) + rng.choice(SPACES) + problem + rng.choice(SPACES)
        options, answer = [], rng.choice(["5", "STOP", "Lee Harvey Oswald"])
        if kind == "multiple choice":
            options = [f"{letter}. {rng.choice(WORDS)}" for letter in "ABCD"[: rng.randrange(2, 5)]]
            answer = rng.choice("AB")
        items.append({
            "problem_id": index, "problem": problem, "data_type": "image", "problem_type": kind,
            "options": options, "solution": f"<answer>{answer}</answer>", "path": "p.png",
        })  # fmt: skip
    return items


def test_sophiavl_chat_is_the_released_one(tmp_path: Path, tiny_processor) -> None:
    picture(tmp_path)
    store = ImageStore(tmp_path / "records")
    kinds = set()
    for index, item in enumerate(sophiavl_items(3, 150)):
        row = Row("ocr.json", index, item)
        record = sophiavl_r1.convert_item(row, f"OCR-{index}", "OCR", tmp_path, store)
        chat = tiny_processor.apply_chat_template(
            to_conversation(record, PROMPTS["sophiavl_think"]),
            add_generation_prompt=True,
            tokenize=False,
        )
        expected = released_sophiavl_chat(
            tiny_processor.tokenizer, item["problem"], item["problem_type"], item["options"]
        )
        assert chat == expected, json.dumps(item)
        kinds.add(item["problem_type"])
    assert kinds == set(sophiavl_r1.PROBLEM_TYPES)  # "text" among them: its own suffix
