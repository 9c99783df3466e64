"""The synthetic shapes world: determinism, pixel-exact boxes, task balance, valid answers."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlrl.config import ShapesConfig, ShapesTeacher
from vlrl.core.errors import ConfigError
from vlrl.data import shapes
from vlrl.data.shapes import COLORS, KINDS, Scene, Shape
from vlrl.items.answers import parse_box
from vlrl.items.records import Record, check_record

CAPTION_ITEM = re.compile(r"an? (\w+) (\w+)")


def _gen(tmp_path: Path, name: str, n: int = 40, seed: int = 0, split: str = "train", **cfg):
    out = tmp_path / name
    return shapes.generate_split(ShapesConfig(**cfg), split, n, seed, out), out


def _items(record: Record) -> list[tuple[str, str]]:
    """(colour, kind) of every shape, left to right, read back from the caption."""
    return CAPTION_ITEM.findall(record.caption or "")


def _pixels(out: Path, record: Record) -> np.ndarray:
    return np.asarray(Image.open(out / record.images[0]).convert("RGB"))


def _touches_all_edges(mask: np.ndarray) -> bool:
    """Tightness: the shape reaches the first and last row and column of its box."""
    return bool(mask[0].any() and mask[-1].any() and mask[:, 0].any() and mask[:, -1].any())


def _is_color(rgb: np.ndarray, color: str) -> np.ndarray:
    return (rgb == np.array(COLORS[color], dtype=np.uint8)).all(axis=-1)


# ------------------------------------------------------------------------------ determinism
def test_same_seed_gives_identical_records_and_png_bytes(tmp_path):
    """Reproducibility: the whole split is a pure function of (cfg, split, n, seed)."""
    a, out_a = _gen(tmp_path, "a")
    b, out_b = _gen(tmp_path, "b")
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]
    for record in a:
        path = record.images[0]
        assert (out_a / path).read_bytes() == (out_b / path).read_bytes(), path


@pytest.mark.parametrize(
    ("other", "reason"),
    [
        ({"seed": 1}, "another seed draws another world"),
        ({"split": "test"}, "each split has its own stream, so test never equals train"),
    ],
)
def test_seed_and_split_change_the_data(tmp_path, other, reason):
    base, _ = _gen(tmp_path, "base", n=20)
    changed, _ = _gen(tmp_path, "changed", n=20, **other)
    assert [r.problem + r.answer for r in base] != [r.problem + r.answer for r in changed], reason


def test_no_global_random_state_is_used(tmp_path):
    """Seeding numpy's or Python's global generators must not change the output."""
    import random

    np.random.seed(123)
    random.seed(123)
    a, _ = _gen(tmp_path, "a", n=10)
    np.random.seed(999)
    random.seed(999)
    b, _ = _gen(tmp_path, "b", n=10)
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]


# ------------------------------------------------------------------------------ boxes/pixels
@pytest.mark.parametrize(
    ("kind", "low", "high", "reason"),
    [
        ("square", 1.0, 1.0, "a square fills its box"),
        ("circle", 0.70, 0.86, "a disc fills about pi/4 of its box"),
        ("triangle", 0.42, 0.62, "a triangle fills about half of its box"),
    ],
)
def test_drawn_shapes_fill_their_tight_boxes(kind, low, high, reason):
    rng = np.random.default_rng(5)
    for _ in range(30):
        side = int(rng.integers(20, 41))
        x, y = (int(v) for v in rng.integers(2, 112 - side - 2, size=2))
        scene = Scene(112, (255, 255, 255), (Shape(kind, "blue", (x, y, x + side, y + side)),))
        tight, rgb = shapes.render(scene)
        x1, y1, x2, y2 = tight.shapes[0].box
        mask = _is_color(rgb, "blue")
        inside = mask[y1:y2, x1:x2]
        assert mask.sum() == inside.sum(), "no shape pixel outside the box"
        assert _touches_all_edges(inside)
        assert low <= inside.mean() <= high, reason


def test_every_box_is_tight_around_its_shape_in_generated_scenes():
    """Each shape's colour touches all four box edges and is absent from a 1-px ring around it."""
    cfg = ShapesConfig()
    rng = np.random.default_rng(11)
    for _ in range(100):
        scene, rgb = shapes.render(shapes.sample_layout(cfg, rng))
        for shape in scene.shapes:
            x1, y1, x2, y2 = shape.box
            assert 0 < x1 < x2 < 112 and 0 < y1 < y2 < 112, "a margin keeps shapes off the border"
            mask = _is_color(rgb, shape.color)
            inside = mask[y1:y2, x1:x2]
            assert _touches_all_edges(inside), shape
            ring = mask[y1 - 1 : y2 + 1, x1 - 1 : x2 + 1].copy()
            ring[1:-1, 1:-1] = False
            assert not ring.any(), f"{shape} leaks outside its box"
            assert 18 <= x2 - x1 <= 41, "shapes are about 20-40 px at 112 px"


def test_shapes_never_overlap():
    cfg = ShapesConfig(min_shapes=4, max_shapes=4)
    rng = np.random.default_rng(2)
    for _ in range(100):
        boxes = [s.box for s in shapes.sample_layout(cfg, rng).shapes]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def test_generated_records_pass_the_canonical_checks(tmp_path):
    """check_record opens every PNG and checks every box: generated data is always valid."""
    records, out = _gen(tmp_path, "a", n=25)
    for record in records:
        assert check_record(record, out, record.id) == record
        assert record.data_source == "shapes" and record.reasoning
        assert record.image_sizes == [[112, 112]]
        assert record.images == [f"images/train/{record.id}.png"]


# ------------------------------------------------------------------------------ tasks
@pytest.mark.parametrize(
    ("tasks", "n", "expected", "reason"),
    [
        (list(shapes.TASKS), 50, dict.fromkeys(shapes.TASKS, 10), "five tasks share 50 evenly"),
        (["count", "caption"], 7, {"count": 4, "caption": 3}, "round-robin: the first task leads"),
        (["grounding"], 5, {"grounding": 5}, "a single task takes every record"),
    ],
)
def test_tasks_are_balanced_round_robin(tmp_path, tasks, n, expected, reason):
    records, _ = _gen(tmp_path, "a", n=n, tasks=tasks)
    assert Counter(r.task for r in records) == expected, reason


def _check_answer(record: Record, out: Path) -> None:
    items = _items(record)
    kinds = Counter(kind for _, kind in items)
    colors = Counter(color for color, _ in items)
    problem = record.problem
    if record.task == "color":
        kind = re.match(r"What color is the (\w+)\?", problem).group(1)
        assert kinds[kind] == 1, "asked only about a kind that appears once"
        truth = next(color for color, k in items if k == kind)
        assert record.problem_type == "multiple_choice"
        assert len(record.options) == 4 and len(set(record.options)) == 4
        assert record.options["ABCD".index(record.answer)] == truth
        listed = " ".join(
            f"{letter}. {o}" for letter, o in zip("ABCD", record.options, strict=True)
        )
        assert problem.endswith("Options: " + listed)
    elif record.task == "count":
        assert record.problem_type == "numerical"
        if problem == "How many shapes are in the image?":
            assert int(record.answer) == len(items)
        elif m := re.fullmatch(r"How many (\w+) shapes are in the image\?", problem):
            assert int(record.answer) == colors[m.group(1)]
        else:
            kind = re.fullmatch(r"How many (\w+)s are in the image\?", problem).group(1)
            assert int(record.answer) == kinds[kind]
    elif record.task == "arithmetic":
        assert record.problem_type == "numerical"
        if m := re.fullmatch(r"How many (\w+)s plus (\w+)s are there\?", problem):
            assert int(record.answer) == kinds[m.group(1)] + kinds[m.group(2)]
        elif m := re.fullmatch(r"How many more shapes would make (\d+)\?", problem):
            assert int(record.answer) == int(m.group(1)) - len(items) > 0
        else:
            color = re.fullmatch(r"How many shapes are not (\w+)\?", problem).group(1)
            assert int(record.answer) == len(items) - colors[color]
    elif record.task == "grounding":
        color, kind = re.search(r"describes: the (\w+) (\w+)\.$", problem).groups()
        assert items.count((color, kind)) == 1, "the described shape is unique"
        assert record.problem_type == "grounding"
        assert parse_box(record.answer) == record.boxes[0]
        assert re.fullmatch(r"\[\d+, \d+, \d+, \d+\]", record.answer)
        x1, y1, x2, y2 = (int(v) for v in record.boxes[0])
        inside = _is_color(_pixels(out, record), color)[y1:y2, x1:x2]
        assert _touches_all_edges(inside)
    elif record.task == "caption":
        assert record.problem_type == "free_form"
        assert record.answer == record.caption
    else:
        pytest.fail(f"unknown task {record.task}")


def test_answers_are_right_for_every_task(tmp_path):
    records, out = _gen(tmp_path, "a", n=150)
    for record in records:
        _check_answer(record, out)


def test_caption_lists_the_drawn_shapes_left_to_right(tmp_path):
    """The caption names every drawn colour, in the order of their left edges."""
    records, out = _gen(tmp_path, "a", n=60, tasks=["caption"])
    for record in records:
        rgb = _pixels(out, record)
        items = _items(record)
        drawn = {c for c in COLORS if _is_color(rgb, c).any()}
        assert drawn == {color for color, _ in items}
        first_seen = {}
        for color, _ in items:
            first_seen.setdefault(color, len(first_seen))
        lefts = [
            int(np.flatnonzero(_is_color(rgb, c).any(axis=0))[0])
            for c in sorted(drawn, key=first_seen.get)
        ]
        assert lefts == sorted(lefts), record.caption


@pytest.mark.parametrize(
    ("task", "variant", "answer", "reason"),
    [
        ("count", "total", "3", "three shapes drawn"),
        (
            "caption",
            "left_to_right",
            "an orange circle, a red square and a red triangle",
            "x order",
        ),
        ("color", "kind", None, "letter checked below"),
        ("arithmetic", "make", None, "target minus total"),
        ("grounding", "unique", None, "one of the unique boxes"),
    ],
)
def test_ask_on_a_known_scene(task, variant, answer, reason):
    scene = Scene(
        112,
        (255, 255, 255),
        shapes.left_to_right(
            [
                Shape("triangle", "red", (70, 10, 95, 35)),
                Shape("circle", "orange", (5, 60, 30, 85)),
                Shape("square", "red", (40, 40, 60, 60)),
            ]
        ),
    )
    q = shapes.ask(task, scene, np.random.default_rng(0), variant)
    if answer is not None:
        assert q.answer == answer, reason
    if task == "color":
        kind = re.match(r"What color is the (\w+)", q.problem).group(1)
        assert q.options["ABCD".index(q.answer)] == {s.kind: s.color for s in scene.shapes}[kind]
    if task == "arithmetic":
        assert int(q.answer) == int(re.search(r"make (\d+)", q.problem).group(1)) - 3
    if task == "grounding":
        assert parse_box(q.answer) in [list(map(float, s.box)) for s in scene.shapes]


@pytest.mark.parametrize(
    ("task", "shapes_in_scene", "ok", "reason"),
    [
        ("color", [("circle", "red"), ("circle", "blue")], False, "no kind appears exactly once"),
        ("color", [("circle", "red"), ("square", "red")], True, "each kind appears once"),
        ("grounding", [("circle", "red"), ("circle", "red")], False, "no unique colour+kind"),
        ("grounding", [("circle", "red"), ("circle", "blue")], True, "colour tells them apart"),
        ("count", [("circle", "red")], True, "counting is always possible"),
    ],
)
def test_feasible(task, shapes_in_scene, ok, reason):
    scene = Scene(
        112,
        (255, 255, 255),
        tuple(Shape(k, c, (10 * i, 0, 10 * i + 5, 5)) for i, (k, c) in enumerate(shapes_in_scene)),
    )
    assert shapes.feasible(task, scene) is ok, reason


# ------------------------------------------------------------------------------ duplicates
def test_excluded_questions_are_redrawn_and_counted(tmp_path):
    """A candidate already in an earlier split is dropped, counted and replaced."""
    cfg = ShapesConfig()
    first = shapes.SplitStats()
    shapes.generate_split(cfg, "train", 10, 0, tmp_path / "a", stats=first)
    again = shapes.SplitStats()
    records = shapes.generate_split(
        cfg, "train", 10, 0, tmp_path / "b", exclude=first.keys, stats=again
    )
    assert len(records) == 10
    assert again.rejected["duplicate_of_earlier_split"] >= 1
    assert not again.keys & first.keys


@pytest.mark.parametrize(
    ("cfg", "reason"),
    [
        ({"min_shapes": 3, "max_shapes": 2}, "min above max"),
        ({"tasks": []}, "no task to ask"),
        ({"image_size": 28, "min_shapes": 8, "max_shapes": 8}, "eight shapes cannot fit 28 px"),
    ],
)
def test_impossible_worlds_raise_config_error(tmp_path, cfg, reason):
    with pytest.raises(ConfigError, match=r"data\.shapes"):
        shapes.generate_split(ShapesConfig(**cfg), "train", 3, 0, tmp_path)


# ------------------------------------------------------------------------------ corpus
WORD = re.compile(r"[A-Za-z]+|\d+")


def _words(texts) -> set[str]:
    return {w for t in texts for w in WORD.findall(t)}


@pytest.mark.parametrize(
    ("cfg", "reason"),
    [
        ({}, "the default world"),
        ({"min_shapes": 1, "max_shapes": 1}, "singular phrasing: 'There is 1 shape'"),
        ({"max_shapes": 6, "tasks": ["arithmetic", "count"]}, "larger counts, a task subset"),
    ],
)
def test_text_corpus_covers_every_generated_word(tmp_path, cfg, reason):
    vocab = _words(shapes.text_corpus())
    for seed in (0, 1):
        records, _ = _gen(tmp_path, f"s{seed}", n=100, seed=seed, **cfg)
        texts = [t for r in records for t in (r.problem, r.answer, r.reasoning or "", *r.options)]
        missing = _words(texts) - vocab
        assert not missing, f"{reason}: {sorted(missing)}"


def test_text_corpus_is_fast_draws_nothing_and_is_deterministic(monkeypatch):
    def no_drawing(*args, **kwargs):
        raise AssertionError("text_corpus must not render images")

    monkeypatch.setattr(shapes, "render", no_drawing)
    started = time.perf_counter()
    corpus = shapes.text_corpus(2000)
    assert time.perf_counter() - started < 5
    assert corpus == shapes.text_corpus(2000)
    vocab = _words(corpus)
    assert set(COLORS) | set(KINDS) | set("ABCD") <= vocab
    assert {str(i) for i in range(113)} <= vocab, "numbers 0-112 (box coordinates)"


# ---------------------------------------------------------------------------------- teacher
def _taught(tmp_path: Path, teacher: ShapesTeacher, n: int = 150, **cfg):
    stats = shapes.SplitStats()
    out = tmp_path / "taught"
    records = shapes.generate_split(
        ShapesConfig(**cfg), "train", n, 0, out, stats=stats, teacher=teacher
    )
    return records, stats.taught, out


def test_a_teacher_changes_none_of_the_true_records_or_images(tmp_path):
    plain, out = _gen(tmp_path, "plain", n=60)
    records, _, taught_out = _taught(tmp_path, ShapesTeacher(misses=["yellow"]), n=60)
    assert [r.model_dump() for r in records] == [r.model_dump() for r in plain]
    for record in records:
        image = record.images[0]
        assert (taught_out / image).read_bytes() == (out / image).read_bytes()


def test_the_teacher_answers_the_same_questions_from_what_it_saw(tmp_path):
    """Each demonstration asks its record's question about its image; its caption is the
    teacher's view (the true shapes less some of the missed colours, in order) and its answer is
    right for that view; it is wrong exactly where a missed shape matters."""
    teacher = ShapesTeacher(misses=["yellow", "orange"], miss_rate=0.75)
    records, taught, out = _taught(tmp_path, teacher, n=250)
    truth = {r.id: r for r in records}
    # It abstains only from colour and grounding questions about a shape it missed.
    assert 0.75 * len(records) < len(taught) < len(records)
    abstained = {r.id for r in records} - {r.id for r in taught}
    assert {truth[rid].task for rid in abstained} == {"color", "grounding"}
    wrong = 0
    for demo in taught:
        record = truth[demo.id]
        assert (demo.problem, demo.images, demo.task) == (
            record.problem,
            record.images,
            record.task,
        )
        _check_answer(demo, out)
        seen, true_items = _items(demo), _items(record)
        missed = list(true_items)
        for item in seen:
            missed.remove(item)
        assert [c for c, _ in missed if c not in teacher.misses] == []
        remaining = iter(true_items)
        assert all(item in remaining for item in seen), "the view keeps the left-to-right order"
        wrong += demo.answer != record.answer
        if not missed:
            assert demo.answer == record.answer and demo.reasoning == record.reasoning
    assert 0.1 * len(taught) < wrong < 0.6 * len(taught)


@pytest.mark.parametrize(
    ("rate", "low", "high", "reason"),
    [
        (0.0, 0.0, 0.0, "misses nothing"),
        (0.5, 0.35, 0.65, "misses about half of the colour's shapes"),
        (1.0, 1.0, 1.0, "misses every shape of the colour"),
    ],
)
def test_the_miss_rate_is_the_fraction_of_shapes_missed(tmp_path, rate, low, high, reason):
    records, taught, _ = _taught(
        tmp_path, ShapesTeacher(misses=["yellow"], miss_rate=rate), n=300, tasks=["caption"]
    )
    shown = sum(c == "yellow" for r in records for c, _ in _items(r))
    kept = sum(c == "yellow" for r in taught for c, _ in _items(r))
    assert shown > 100, reason
    assert low <= 1 - kept / shown <= high, reason


def test_the_teacher_gives_no_demonstration_about_a_shape_it_missed():
    scene = Scene(
        112,
        (255, 255, 255),
        (Shape("circle", "yellow", (5, 5, 25, 25)), Shape("square", "blue", (60, 60, 90, 90))),
    )
    seen = shapes.teacher_view(scene, ShapesTeacher(misses=["yellow"]), np.random.default_rng(0))
    asked_about = Counter()
    for seed in range(20):
        for task in ("color", "grounding"):
            truth = shapes.ask(task, scene, np.random.default_rng(seed))
            demo = shapes.ask(task, scene, np.random.default_rng(seed), seen=seen)
            missed = "circle" in truth.problem
            asked_about[task, missed] += 1
            if missed:
                assert demo is None
            else:
                assert (demo.problem, demo.answer) == (truth.problem, truth.answer)
                assert demo.reasoning == truth.reasoning.replace("a yellow circle and ", "")
    assert len(asked_about) == 4, "both shapes were asked about in both tasks"
    total = shapes.ask("count", scene, np.random.default_rng(0), variant="total", seen=seen)
    assert (total.answer, total.reasoning) == ("1", "I see a blue square. There is 1 shape.")
    nothing = shapes.teacher_view(
        scene, ShapesTeacher(misses=["yellow", "blue"]), np.random.default_rng(0)
    )
    total = shapes.ask("count", scene, np.random.default_rng(0), variant="total", seen=nothing)
    assert (total.answer, total.reasoning) == ("0", "I see no shapes. There are 0 shapes.")
