"""Rewards never raise on a completion: every registered reward returns a finite number, or None
("not applicable"), for any text a model can produce (issue 10 item 5).

A seeded property test. ``hypothesis`` is not pinned in envs/, so the texts come from
``random.Random(seed)``: random unicode, tag soups (think / answer / description / caption /
bbox / boxed / json fences), box lists with NaN, ±Infinity, 1e400 and 5000-digit numbers, deep
nesting (10,000 levels) and the empty string, each alone and inside the wrappers the rewards parse.
100 kB texts (about 25,000 tokens, beyond any completion budget here) run in a ``slow`` test.
Every registered reward is exercised, a new one too, with no entry here: on :data:`ROWS`, rows
with every column GRPO's dataset gives a reward, or on the rows :data:`COLUMNS` gives it to reach
its scoring paths (see the family test files). The thinking reward-model reward
(``sophiavl.thinking``) needs an endpoint: tests/rewards/test_thinking.py plays its failures.
"""

from __future__ import annotations

import math
import random

import pytest

from vlrl.rewards import REGISTERED, ConfiguredReward, _math_verify, registry, satori

SEEDS = range(120)
GT_BOX = [0, 0, 10, 10]
OD_GT = '```json\n[{"bbox_2d": [0, 0, 100, 100], "label": "cat"}]\n```'
BIG = "1" + "0" * 5000  # more digits than int() accepts (4300)
BIG_FLOAT = "1" + "0" * 400  # an integer beyond float range

ACCURACY_ROWS = [
    ("multiple_choice", "B"), ("yes_no", "yes"), ("numerical", "3.5"),
    ("grounding", "[0, 0, 10, 10]"), ("free_form", "a red circle"), ("ocr", "HELLO 42"),
]  # fmt: skip
SOPHIAVL_ROWS = [
    ("numerical", "3.5"), ("multiple_choice", "B"), ("ocr", "HELLO 42"),
    ("free_form", "a red circle"), ("yes_no", "yes"),
]  # fmt: skip

# One row per problem type with every column GRPO's dataset gives a reward (the dataset's rows
# of vlrl.algorithms.trl_setup.build_dataset, less the prompt and the images): what a reward that
# has no entry in COLUMNS is exercised on.
ROWS = [
    {
        "problem": "q", "answer": a, "possible_answers": [a], "problem_type": t,
        "boxes": [GT_BOX], "options": ["a", "b"], "caption": "a cat", "image_sizes": [[280, 224]],
        "task": t, "id": f"row-{t}",
    }
    for t, a in ACCURACY_ROWS
]  # fmt: skip

# The columns of one row, for the rewards that need rows of their own to reach their scoring
# paths: one dict per variant worth exercising. A reward not listed is exercised on ROWS.
COLUMNS: dict[str, list[dict]] = {
    "common.format": [{}],
    **{
        name: [{"answer": a, "problem_type": t, "boxes": [GT_BOX]} for t, a in ACCURACY_ROWS]
        for name in ("common.accuracy", "common.correct")
    },
    "vlm_r1.format": [{}],
    "vlm_r1.rec_baseline_format": [{}],
    "vlm_r1.math": [{"answer": a} for a in ("3", "\\frac{1}{2}")],
    "vlm_r1.rec_format": [{}],
    **{
        name: [
            {"boxes": [GT_BOX], "image_grid_thw": [1, 8, 10], "image_sizes": [[280, 224]]},
            {"answer": "[0, 0, 10, 10]"},
        ]
        for name in ("vlm_r1.rec_iou", "vlm_r1.rec_iou_binary")
    },
    "vlm_r1.accuracy": [{"answer": a} for a in ("B", "3.5", "a red circle")],
    **{
        name: [{"answer": OD_GT}, {"answer": "None"}]
        for name in ("vlm_r1.odlength", "vlm_r1.ap", "vlm_r1.ap50", "vlm_r1.weighted_sum")
    },
    "vlm_r1.cosine_intended": [{"answer": OD_GT}],
    "vlm_r1.repetition": [{}],
    "vlm_r1.cosine": [{}],
    "vision_sr1.format": [{}],
    "vision_sr1.format_cot": [{}],
    "vision_sr1.accuracy": [{"answer": "3"}, {"answer": "\\frac{1}{2}"}],
    # The second-pass text is the generated text too (see _call).
    "vision_sr1.visual": [{"answer": "3"}],
    "vision_sr1.total": [{"answer": "3"}],
    "sophiavl.format": [{}],
    "sophiavl.outcome": [{"answer": a, "problem_type": t} for t, a in SOPHIAVL_ROWS],
    "satori.format": [{}],
    "satori.format_think": [{}],
    "satori.bbox_iou": [{"boxes": [GT_BOX], "image_sizes": [[640, 480]]}],
    "satori.vqa": [{"possible_answers": ["2", "two"]}, {"answer": "two"}],
    "satori.caption": [{"caption": "a cat on a mat"}],
}
# Configured variants with code paths of their own.
EXTRA = {"satori.bbox_iou[original]": satori.get_bbox_iou_reward(prediction_frame="original")}

# --- text generator ------------------------------------------------------------------------------

TAGS = [
    "<think>", "</think>", "<answer>", "</answer>", "<description>", "</description>",
    "<caption>", "</caption>", "<bbox>", "</bbox>", "\\boxed{", "}", "```json", "```", "```",
    "< think >", "</ answer>", "<answer", "answer>",
]  # fmt: skip
ATOMS = [
    "[", "]", "{", "}", "(", ")", ",", ":", ";", ".", "!", "?", '"', "'", "\\", "$", "$$", " ",
    "\n", "\r\n", "\t", '"bbox_2d"', '"label"', '"cat"', "None", "none", "null", "true",
    "NaN", "nan", "Infinity", "-Infinity", "inf", "\\infty", "1e400", "-1e400", "1e-400", "0",
    "-1", "3.5", "10", "2048", BIG_FLOAT, "A", "B", "b", "c.", "(B)", "yes", "no", "the answer",
    "\\frac{1}{2}", "x^{2}", "答案", "是", "ß", "ﬁ", "ı", "\u200b", "\x00", "🙂", "é",
]  # fmt: skip
NUMBERS = ["0", "7", "-3", "10.5", "1e400", "-1e400", "NaN", "Infinity", BIG_FLOAT, BIG, "1e-400"]


def random_unicode(rng: random.Random, n: int) -> str:
    # Any code point but the surrogates (decoded model output is valid UTF-8).
    chars = []
    while len(chars) < n:
        cp = rng.randrange(0x110000) if rng.random() < 0.5 else rng.randrange(0x80)
        if not 0xD800 <= cp <= 0xDFFF:
            chars.append(chr(cp))
    return "".join(chars)


def box_list(rng: random.Random, python: bool = False) -> str:
    items = []
    for _ in range(rng.randrange(4)):
        coords = ", ".join(rng.choice(NUMBERS) for _ in range(rng.choice([4, 4, 4, 3, 5])))
        if python:
            items.append(f"[{coords}]")
        else:
            label = rng.choice(['"cat"', '"Cat"', '"dog"', "1e400", "null", "[]"])
            items.append(f'{{"bbox_2d": [{coords}], "label": {label}}}')
    return "[" + ", ".join(items) + "]"


def soup(rng: random.Random, n: int) -> str:
    parts = [rng.choice(TAGS + ATOMS) if rng.random() < 0.8 else random_unicode(rng, 3)
             for _ in range(n)]  # fmt: skip
    return "".join(parts)


def wrapped(rng: random.Random, body: str) -> str:
    """``body`` where a reward looks for its answer."""
    return rng.choice([
        "{}",
        "<think>t</think><answer>{}</answer>",
        "<think>t</think><answer>```json\n{}\n```</answer>",
        "<caption>c</caption><bbox>{}</bbox><answer>{}</answer>",
        "<description>{}</description><think>t</think>\\boxed{{}}",
    ]).replace("{}", body)  # fmt: skip


def generated_text(seed: int) -> str:
    rng = random.Random(seed)
    kind = seed % 6
    if kind == 0:
        return random_unicode(rng, rng.randrange(200))
    if kind == 1:
        return soup(rng, rng.randrange(60))
    if kind in (2, 3):
        return wrapped(rng, box_list(rng, python=kind == 3))
    if kind == 4:
        return wrapped(rng, "\\boxed{" + rng.choice(NUMBERS + ATOMS) + "}")
    return wrapped(rng, soup(rng, rng.randrange(30)))


EXTREMES = {
    "empty": "",
    "deep [": "[" * 10_000,
    'deep {"a":': '{"a": ' * 10_000,
    "deep box list": '[{"bbox_2d": ' + "[" * 10_000,
    "deep python": "[[" + "-" * 10_000 + "1]]",
    "long sum": "[[" + "1+" * 100_000 + "1, 0, 1, 1]]",
    "1e400 box": '[{"bbox_2d": [0, 0, 1e400, 100], "label": "cat"}]',
    "float-range int box": f'[{{"bbox_2d": [0, 0, {BIG_FLOAT}, 100], "label": "zebra"}}]',
    "5000-digit box": f'[{{"bbox_2d": [0, 0, {BIG}, 100], "label": "cat"}}]',
    "NaN box": '[{"bbox_2d": [0, 0, NaN, 100], "label": "cat"}]',
    "REC huge int": f"[{BIG_FLOAT}, 0, 10, 10]",
    "python huge int": f"[[0, 0, {BIG_FLOAT}, 10]]",
    "boxed NaN": "\\boxed{NaN}",
    "boxed inf": "\\boxed{\\infty}",
}
WRAPPERS = [
    "{}", "<think>t</think><answer>{}</answer>", "<answer>```json\n{}\n```</answer>",
    "<caption>{}</caption><bbox>{}</bbox><answer>{}</answer>", "\\boxed{{}}",
]  # fmt: skip


def texts() -> list[tuple[str, str]]:
    """(label, text) pairs: the extremes in every wrapper, a 50 kB tag soup, then the seeded
    random texts."""
    out = [(f"{n} in {w!r}", w.replace("{}", t)) for n, t in EXTREMES.items() for w in WRAPPERS]
    out.append(("50 kB tag soup", soup(random.Random(-1), 6_000)))
    out += [(f"seed {s}", generated_text(s)) for s in SEEDS]
    return out


def large_texts() -> list[tuple[str, str]]:
    """100 kB texts (the ``slow`` test): plain, in every wrapper, random unicode, a box list."""
    out = [(f"100 kB x in {w!r}", w.replace("{}", "x" * 100_000)) for w in WRAPPERS]
    out.append(("100 kB unicode", random_unicode(random.Random(-2), 100_000)))
    item = '{"bbox_2d": [10, 10, 60, 60], "label": "cat"}, '
    out.append(("100 kB box list", f"<answer>```json\n[{item * 2_200}{item[:-2]}]\n```</answer>"))
    return out


TEXTS = texts()

# --- the property --------------------------------------------------------------------------------


def _call(name: str, fn, text: str, columns: dict):
    kwargs = {k: [v] for k, v in columns.items()}
    if name in {"vision_sr1.visual", "vision_sr1.total"}:
        kwargs["self_reward_responses"] = [text]
    return fn([text], **kwargs)


def _ok(values: list) -> bool:
    if not isinstance(values, list) or len(values) != 1:
        return False
    (value,) = values
    if value is None:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def reward_names() -> list[str]:
    """Every registered reward but the configured ones (they call a server), then the
    configured variants of :data:`EXTRA`."""
    functions = [n for n, entry in registry().items() if not isinstance(entry, ConfiguredReward)]
    return sorted(functions) + sorted(EXTRA)


def test_columns_name_registered_rewards() -> None:
    assert not set(COLUMNS) - set(registry()), "COLUMNS names a reward the registry does not have"


def test_a_new_reward_needs_no_entry_here(monkeypatch) -> None:
    seen = []

    def new_reward(completions, answer, problem_type, **columns):
        seen.append(problem_type[0])
        return [float(len(answer[0]))] * len(completions)

    monkeypatch.setitem(REGISTERED, "family.new", new_reward)
    assert "family.new" in reward_names()
    assert not _failures("family.new", TEXTS[:2])
    assert set(seen) == {t for t, _ in ACCURACY_ROWS}


def _failures(name: str, texts: list[tuple[str, str]]) -> list[str]:
    fn = EXTRA.get(name) or registry()[name]
    failures = []
    for columns in COLUMNS.get(name.split("[")[0], ROWS):
        for label, text in texts:
            try:
                values = _call(name, fn, text, columns)
            except Exception as exc:  # the property under test
                failures.append(f"{label} with {columns}: raised {exc!r:.200}")
                continue
            if not _ok(values):
                failures.append(f"{label} with {columns}: returned {values!r:.200}")
    return failures


NAMES = reward_names()


@pytest.mark.parametrize("name", NAMES)
def test_reward_returns_a_number_for_any_text(name: str, monkeypatch) -> None:
    # Deeply nested text makes math-verify run to its timeout; 1 s keeps the test short.
    monkeypatch.setattr(_math_verify, "MATH_VERIFY_TIMEOUT_S", 1)
    failures = _failures(name, TEXTS)
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_reward_returns_a_number_for_100kb_text(name: str, monkeypatch) -> None:
    """Slow: mathruler and math-verify take seconds on 100 kB texts."""
    monkeypatch.setattr(_math_verify, "MATH_VERIFY_TIMEOUT_S", 1)
    failures = _failures(name, large_texts())
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])
