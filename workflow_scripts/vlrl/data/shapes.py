"""The synthetic shapes world: the embedded default's data, generated from a seed.

A scene is a square RGB image with a plain light background and ``min_shapes``..``max_shapes``
non-overlapping shapes (circle, square, triangle) in a small palette of clearly distinct colours.
Each record asks one question about one scene; the tasks are

- ``color``: "What color is the circle?" with four lettered options (only for a kind that appears
  exactly once); the answer is the letter.
- ``count``: how many shapes, how many <colour> shapes or how many <kind>s; a number.
- ``grounding``: the box of "the <colour> <kind>" (a unique one) as ``[x1, y1, x2, y2]``.
- ``caption``: the shapes from left to right, "a red circle and a blue square".
- ``arithmetic``: small sums and differences of counts; a number.

Every record carries a short ``reasoning`` (the SFT thinking target) and, as ``caption``, the
scene's left-to-right description. With a ``teacher`` (:class:`~vlrl.config.ShapesTeacher`), the
train split also gets that imperfect teacher's demonstrations of the same questions: its
detector misses shapes of some colours (:func:`teacher_view`), and it describes, counts and
answers what it saw (``sft_train.jsonl``: what SFT imitates; GRPO's reward keeps the truth).
Boxes are tight around the drawn pixels, xyxy with exclusive right/bottom edges, in absolute
pixels.

Only ``numpy.random.default_rng`` is used, seeded per split from ``(seed, split)``: the same seed
gives byte-identical images and identical records.

>>> from vlrl.config import ShapesConfig, ShapesTeacher
>>> scene = sample_layout(ShapesConfig(), np.random.default_rng(0))
>>> 1 <= len(scene.shapes) <= 4
True
>>> describe([Shape("circle", "orange", (1, 1, 21, 21)), Shape("square", "red", (30, 1, 50, 21))])
'an orange circle and a red square'
"""

from __future__ import annotations

import copy
import hashlib
import logging
import zlib
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from tqdm import tqdm

from vlrl.config import ShapesConfig, ShapesTeacher
from vlrl.core.errors import ConfigError
from vlrl.items.answers import dumps_box
from vlrl.items.records import ProblemType, Record

log = logging.getLogger(__name__)

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "yellow": (235, 200, 30),
    "purple": (140, 60, 180),
    "orange": (245, 130, 30),
}
"""Shape colours: name → RGB. Every shape pixel has exactly its colour (no anti-aliasing)."""

BACKGROUNDS: tuple[tuple[int, int, int], ...] = (
    (255, 255, 255),
    (245, 240, 225),
    (230, 238, 248),
    (238, 238, 238),
)
"""Plain light backgrounds, far from every shape colour."""

KINDS: tuple[str, ...] = ("circle", "square", "triangle")
TASKS: tuple[str, ...] = ("color", "count", "grounding", "caption", "arithmetic")
VARIANTS: dict[str, tuple[str, ...]] = {
    "color": ("kind",),
    "count": ("total", "color", "kind"),
    "grounding": ("unique",),
    "caption": ("left_to_right",),
    "arithmetic": ("sum", "make", "not"),
}
"""Question templates per task (the ``variant`` argument of :func:`ask`)."""

LETTERS = "ABCD"
PLACES: tuple[str, ...] = (
    "top left",
    "top",
    "top right",
    "left",
    "center",
    "right",
    "bottom left",
    "bottom",
    "bottom right",
)
"""Where a shape's centre lies, by thirds of the image (used in grounding reasoning)."""

GAP = 3  # free pixels between any two shapes' boxes
MARGIN = 2  # free pixels between a shape and the image border
MAX_SCENE_TRIES = 1000  # consecutive rejected scenes before the world is declared too small

GROUNDING_QUESTION = (
    "Please provide the bounding box coordinate of the region this sentence describes: the {what}."
)
CAPTION_QUESTION = "Describe the shapes in the image."


# ------------------------------------------------------------------------------------ scenes
@dataclass(frozen=True)
class Shape:
    """One shape; ``box`` is xyxy in pixels with exclusive right/bottom edges."""

    kind: str
    color: str
    box: tuple[int, int, int, int]

    @property
    def name(self) -> str:
        """``"red circle"``."""
        return f"{self.color} {self.kind}"


@dataclass(frozen=True)
class Scene:
    """A background and its shapes, ordered left to right (see :func:`left_to_right`)."""

    size: int
    background: tuple[int, int, int]
    shapes: tuple[Shape, ...]

    def key(self) -> str:
        """A canonical text of everything drawn: equal keys give identical images."""
        parts = [f"{self.size}", ",".join(map(str, self.background))]
        parts += [f"{s.kind},{s.color},{','.join(map(str, s.box))}" for s in self.shapes]
        return "|".join(parts)


def left_to_right(shapes: Sequence[Shape]) -> tuple[Shape, ...]:
    """Canonical order: by left edge, then top edge, then kind and colour.

    >>> [s.kind for s in left_to_right([Shape("square", "red", (50, 0, 60, 10)),
    ...                                 Shape("circle", "red", (5, 40, 25, 60))])]
    ['circle', 'square']
    """
    return tuple(sorted(shapes, key=lambda s: (s.box[0], s.box[1], s.kind, s.color)))


def _pick(rng: np.random.Generator, items: Sequence[str]) -> str:
    return items[int(rng.integers(len(items)))]


def _apart(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[2] + GAP <= b[0] or b[2] + GAP <= a[0] or a[3] + GAP <= b[1] or b[3] + GAP <= a[1]


def shape_sizes(image_size: int) -> tuple[int, int]:
    """Smallest and largest shape side: about 18% to 36% of the image (20-40 px at 112 px).

    >>> shape_sizes(112)
    (20, 40)
    """
    lo = max(4, round(image_size * 0.18))
    hi = max(lo, round(image_size * 0.36))
    return min(lo, image_size - 2 * MARGIN), min(hi, image_size - 2 * MARGIN)


def _check_config(cfg: ShapesConfig) -> None:
    if cfg.min_shapes > cfg.max_shapes:
        raise ConfigError(
            f"data.shapes.min_shapes ({cfg.min_shapes}) is above max_shapes ({cfg.max_shapes})"
        )
    if not cfg.tasks:
        raise ConfigError("data.shapes.tasks is empty; name at least one of " + ", ".join(TASKS))


def sample_layout(cfg: ShapesConfig, rng: np.random.Generator) -> Scene:
    """Draw a scene description (nothing is rendered): boxes are the squares shapes are drawn in.

    Raises:
        ConfigError: when ``max_shapes`` shapes do not fit the image (after many tries).
    """
    _check_config(cfg)
    size = cfg.image_size
    lo, hi = shape_sizes(size)
    colors = list(COLORS)
    for _ in range(100):
        count = int(rng.integers(cfg.min_shapes, cfg.max_shapes + 1))
        background = BACKGROUNDS[int(rng.integers(len(BACKGROUNDS)))]
        placed: list[Shape] = []
        for _ in range(count):
            kind, color = _pick(rng, KINDS), _pick(rng, colors)
            for _ in range(50):
                side = int(rng.integers(lo, hi + 1))
                x = int(rng.integers(MARGIN, size - MARGIN - side + 1))
                y = int(rng.integers(MARGIN, size - MARGIN - side + 1))
                box = (x, y, x + side, y + side)
                if all(_apart(box, other.box) for other in placed):
                    placed.append(Shape(kind, color, box))
                    break
            else:
                break  # no room: start the scene again
        else:
            return Scene(size, background, left_to_right(placed))
    raise ConfigError(
        f"data.shapes: {cfg.max_shapes} shapes of {lo}-{hi} px do not fit a {size} px image; "
        "lower max_shapes or raise image_size"
    )


def render(scene: Scene) -> tuple[Scene, np.ndarray]:
    """Draw ``scene``; return it with tight boxes (from the drawn pixels) and the RGB array.

    >>> s = Scene(32, (255, 255, 255), (Shape("square", "red", (2, 3, 12, 13)),))
    >>> tight, rgb = render(s)
    >>> tight.shapes[0].box, rgb.shape, rgb[3, 2].tolist(), rgb[0, 0].tolist()
    ((2, 3, 12, 13), (32, 32, 3), [220, 40, 40], [255, 255, 255])
    """
    labels = Image.new("L", (scene.size, scene.size), 0)
    draw = ImageDraw.Draw(labels)
    for index, shape in enumerate(scene.shapes, 1):
        x1, y1, x2, y2 = shape.box
        right, bottom = x2 - 1, y2 - 1  # PIL's coordinates are inclusive
        if shape.kind == "circle":
            draw.ellipse((x1, y1, right, bottom), fill=index)
        elif shape.kind == "square":
            draw.rectangle((x1, y1, right, bottom), fill=index)
        else:
            draw.polygon([(x1, bottom), (right, bottom), ((x1 + right) // 2, y1)], fill=index)
    label_arr = np.asarray(labels)
    lut = np.array([scene.background] + [COLORS[s.color] for s in scene.shapes], dtype=np.uint8)
    rgb = lut[label_arr]
    tight = []
    for index, shape in enumerate(scene.shapes, 1):
        mask = label_arr == index
        cols, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
        box = (int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1)
        tight.append(replace(shape, box=box))
    return replace(scene, shapes=left_to_right(tight)), rgb


# ------------------------------------------------------------------------------------- texts
def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _counted(k: int, noun: str) -> str:
    """``"1 circle"``, ``"3 circles"``, ``"0 circles"``."""
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


def _there_are(k: int, noun: str) -> str:
    return f"There is {_counted(k, noun)}" if k == 1 else f"There are {_counted(k, noun)}"


def describe(shapes: Sequence[Shape]) -> str:
    """The shapes in the given order as one phrase (the caption answer).

    >>> describe([Shape("circle", "red", (0, 0, 1, 1))] * 3)
    'a red circle, a red circle and a red circle'
    """
    names = [f"{_article(s.color)} {s.name}" for s in shapes]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def place(box: Sequence[float], size: int) -> str:
    """Where a box's centre lies, by thirds (one of :data:`PLACES`).

    >>> place([0, 0, 10, 10], 112), place([50, 50, 60, 60], 112), place([100, 50, 110, 60], 112)
    ('top left', 'center', 'right')
    """
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    col, row = min(int(3 * cx / size), 2), min(int(3 * cy / size), 2)
    return PLACES[3 * row + col]


@dataclass(frozen=True)
class Question:
    """One task asked about one scene: the text fields of a record."""

    task: str
    variant: str
    problem: str
    answer: str
    problem_type: ProblemType
    reasoning: str
    options: list[str] = field(default_factory=list)
    boxes: list[list[int]] = field(default_factory=list)


def feasible(task: str, scene: Scene) -> bool:
    """Whether ``task`` can be asked about ``scene`` with a unique answer.

    ``color`` needs a kind that appears exactly once; ``grounding`` a unique colour and kind.
    """
    if task == "color":
        return 1 in Counter(s.kind for s in scene.shapes).values()
    if task == "grounding":
        return 1 in Counter((s.color, s.kind) for s in scene.shapes).values()
    return bool(scene.shapes)


def ask(
    task: str,
    scene: Scene,
    rng: np.random.Generator,
    variant: str | None = None,
    seen: Scene | None = None,
) -> Question | None:
    """Ask ``task`` about ``scene`` (which must be :func:`feasible`); ``variant`` picks a template
    from :data:`VARIANTS` (drawn from ``rng`` when None).

    ``seen``: what an imperfect teacher saw of ``scene`` (:func:`teacher_view`). The question is
    chosen from the true scene, as without it (the same ``rng`` draws); the answer and reasoning
    are the teacher's, from what it saw. None when the teacher cannot answer (the shape asked
    about was missed: a colour or grounding question); it then gives no demonstration.

    >>> scene = Scene(112, (255, 255, 255), (Shape("circle", "red", (5, 5, 25, 25)),
    ...                                      Shape("square", "blue", (60, 60, 90, 90))))
    >>> q = ask("count", scene, np.random.default_rng(0), variant="total")
    >>> q.problem, q.answer
    ('How many shapes are in the image?', '2')
    >>> q.reasoning
    'I see a red circle and a blue square. There are 2 shapes.'
    >>> ask("grounding", scene, np.random.default_rng(0)).answer in ("[5, 5, 25, 25]",
    ...                                                               "[60, 60, 90, 90]")
    True
    """
    if variant is None:
        variant = _pick(rng, VARIANTS[task])
    if variant not in VARIANTS.get(task, ()):
        raise ValueError(f"unknown task/variant {task}/{variant}; known: {VARIANTS}")
    shapes = scene.shapes
    present_colors = sorted({s.color for s in shapes}, key=list(COLORS).index)
    # Below, questions are chosen from `shapes`; answers come from `looked` (the teacher's view).
    looked = shapes if seen is None else seen.shapes
    seen_text = describe(looked) or "no shapes"
    total = len(looked)

    def q(problem: str, answer: str | int, ptype: ProblemType, reasoning: str, **kw) -> Question:
        return Question(task, variant, problem, str(answer), ptype, reasoning, **kw)

    def counted(test) -> int:
        return sum(map(test, looked))

    if task == "color":
        once = [k for k, n in Counter(s.kind for s in shapes).items() if n == 1]
        kind = _pick(rng, sorted(once, key=KINDS.index))
        color = next(s.color for s in shapes if s.kind == kind)
        others = [c for c in COLORS if c != color]
        options = [others[i] for i in rng.choice(len(others), size=3, replace=False)] + [color]
        options = [options[i] for i in rng.permutation(len(options))]
        if not any(s.kind == kind for s in looked):
            return None
        letter = LETTERS[options.index(color)]
        listed = " ".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
        return q(
            f"What color is the {kind}? Options: {listed}",
            letter,
            "multiple_choice",
            f"I see {seen_text}. The {kind} is {color}, which is option {letter}.",
            options=options,
        )
    if task == "count":
        if variant == "total":
            problem, k, noun = "How many shapes are in the image?", total, "shape"
        elif variant == "color":
            # Mostly a colour in the scene; sometimes any colour, so that 0 is an answer too.
            color = _pick(rng, present_colors if rng.random() < 0.75 else list(COLORS))
            problem = f"How many {color} shapes are in the image?"
            k, noun = counted(lambda s: s.color == color), f"{color} shape"
        else:
            kind = _pick(rng, KINDS)
            problem = f"How many {kind}s are in the image?"
            k, noun = counted(lambda s: s.kind == kind), kind
        return q(problem, k, "numerical", f"I see {seen_text}. {_there_are(k, noun)}.")
    if task == "grounding":
        unique = [s for s in shapes if sum(o.name == s.name for o in shapes) == 1]
        shape = unique[int(rng.integers(len(unique)))]
        if shape not in looked:
            return None
        x1, y1, x2, y2 = shape.box
        return q(
            GROUNDING_QUESTION.format(what=shape.name),
            dumps_box(list(shape.box)),
            "grounding",
            f"The {shape.name} is at the {place(shape.box, scene.size)}. "
            f"It spans x from {x1} to {x2} and y from {y1} to {y2}.",
            boxes=[list(shape.box)],
        )
    if task == "caption":
        return q(
            CAPTION_QUESTION,
            seen_text,
            "free_form",
            f"{_there_are(total, 'shape')}. From left to right I see {seen_text}.",
        )
    # arithmetic
    if variant == "sum":
        a, b = (KINDS[i] for i in rng.choice(len(KINDS), size=2, replace=False))
        ka, kb = counted(lambda s: s.kind == a), counted(lambda s: s.kind == b)
        return q(
            f"How many {a}s plus {b}s are there?",
            ka + kb,
            "numerical",
            f"I see {seen_text}. I count {_counted(ka, a)} and {_counted(kb, b)}. "
            f"{ka} plus {kb} is {ka + kb}.",
        )
    if variant == "make":
        target = len(shapes) + int(rng.integers(1, 5))
        return q(
            f"How many more shapes would make {target}?",
            target - total,
            "numerical",
            f"I see {seen_text}. {_there_are(total, 'shape')}. "
            f"{target} minus {total} is {target - total}.",
        )
    color = _pick(rng, present_colors)
    k = counted(lambda s: s.color == color)
    return q(
        f"How many shapes are not {color}?",
        total - k,
        "numerical",
        f"I see {seen_text}. {_there_are(total, 'shape')} and {k} {'is' if k == 1 else 'are'} "
        f"{color}. {total} minus {k} is {total - k}.",
    )


def teacher_view(scene: Scene, teacher: ShapesTeacher, rng: np.random.Generator) -> Scene:
    """What an imperfect teacher sees of ``scene``: each shape of a ``teacher.misses`` colour is
    missed with probability ``teacher.miss_rate`` (one draw per shape, missable or not).

    >>> scene = Scene(112, (255, 255, 255), (Shape("circle", "yellow", (5, 5, 25, 25)),
    ...                                      Shape("square", "blue", (60, 60, 90, 90))))
    >>> [s.name for s in teacher_view(scene, ShapesTeacher(misses=["yellow"]),
    ...                               np.random.default_rng(0)).shapes]
    ['blue square']
    """
    draws = rng.random(len(scene.shapes))
    kept = tuple(
        shape
        for shape, u in zip(scene.shapes, draws, strict=True)
        if not (shape.color in teacher.misses and u < teacher.miss_rate)
    )
    return replace(scene, shapes=kept)


# ------------------------------------------------------------------------------------ splits
def split_rng(seed: int, split: str) -> np.random.Generator:
    """The generator of one split, seeded from ``(seed, split)``: splits never share a stream.

    >>> int(split_rng(0, "train").integers(1000)) == int(split_rng(0, "test").integers(1000))
    False
    """
    return np.random.default_rng([seed % 2**64, zlib.crc32(split.encode())])


def record_key(scene: Scene, problem: str) -> str:
    """Identity of a question about a scene, for de-duplication within and across splits."""
    return hashlib.sha256(f"{scene.key()}\n{problem}".encode()).hexdigest()[:32]


@dataclass
class SplitStats:
    """What :func:`generate_split` drew and threw away.

    Attributes:
        keys: :func:`record_key` of every record kept (pass them as ``exclude`` to later splits).
        taught: with a teacher, its demonstrations of the kept records (same ids and images;
            a record it could not answer has none).
        rejected: reason → candidate records dropped (``duplicate_of_earlier_split``,
            ``duplicate_within_split``).
        resampled: task → scenes drawn that could not ask the task (not an error: drawn again).
    """

    keys: set[str] = field(default_factory=set)
    taught: list[Record] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    resampled: Counter[str] = field(default_factory=Counter)


def _to_record(
    rid: str, image: str, scene: Scene, question: Question, data_source: str = "shapes"
) -> Record:
    return Record(
        id=rid,
        images=[image],
        problem=question.problem,
        answer=question.answer,
        problem_type=question.problem_type,
        options=question.options,
        boxes=[[float(v) for v in box] for box in question.boxes],
        caption=describe(scene.shapes) or "no shapes",
        image_sizes=[[scene.size, scene.size]],
        data_source=data_source,
        task=question.task,
        reasoning=question.reasoning,
    )


def generate_split(
    cfg: ShapesConfig,
    split: str,
    n: int,
    seed: int,
    out_dir: Path,
    *,
    exclude: Collection[str] = frozenset(),
    stats: SplitStats | None = None,
    teacher: ShapesTeacher | None = None,
) -> list[Record]:
    """Generate ``n`` records of ``split``; write their PNGs under ``out_dir/images/<split>/``.

    Tasks follow ``cfg.tasks`` round-robin. A candidate whose scene and question already occur in
    this split or in ``exclude`` (keys of earlier splits) is dropped and drawn again; ``stats``,
    when given, receives the kept keys and the counts of dropped candidates. With a ``teacher``,
    ``stats.taught`` receives its answers to the same questions (:func:`teacher_view`, drawn
    from a stream of its own: the records are those of a split without a teacher).

    >>> import tempfile
    >>> from vlrl.config import ShapesConfig
    >>> out = Path(tempfile.mkdtemp())
    >>> recs = generate_split(ShapesConfig(), "train", 5, 0, out)
    >>> [r.task for r in recs]
    ['color', 'count', 'grounding', 'caption', 'arithmetic']
    >>> recs[0].images
    ['images/train/shapes-train-00000.png']
    """
    _check_config(cfg)
    stats = stats if stats is not None else SplitStats()
    rng = split_rng(seed, split)
    teacher_rng = split_rng(seed, f"{split}/teacher")
    image_dir = Path(out_dir) / "images" / split
    image_dir.mkdir(parents=True, exist_ok=True)
    records = []
    bar = tqdm(total=n, desc=f"shapes {split}", unit="img", disable=None, leave=False)
    with bar:
        for index in range(n):
            task = cfg.tasks[index % len(cfg.tasks)]
            for _ in range(MAX_SCENE_TRIES):
                layout = sample_layout(cfg, rng)
                if not feasible(task, layout):
                    stats.resampled[task] += 1
                    continue
                scene, rgb = render(layout)
                # The teacher is asked the same question: from the generator's state before it.
                asked_from = copy.deepcopy(rng) if teacher is not None else None
                question = ask(task, scene, rng)
                key = record_key(scene, question.problem)
                if key in exclude:
                    stats.rejected["duplicate_of_earlier_split"] += 1
                elif key in stats.keys:
                    stats.rejected["duplicate_within_split"] += 1
                else:
                    break
            else:
                raise ConfigError(
                    f"data.shapes: no new {task} question after {MAX_SCENE_TRIES} scenes for "
                    f"{split} record {index}; the world is too small for n={n} (raise max_shapes "
                    "or image_size, or lower the split size)"
                )
            stats.keys.add(key)
            rid = f"shapes-{split}-{index:05d}"
            rel = f"images/{split}/{rid}.png"
            Image.fromarray(rgb).save(Path(out_dir) / rel, format="PNG")
            records.append(_to_record(rid, rel, scene, question))
            if teacher is not None:
                view = teacher_view(scene, teacher, teacher_rng)
                taught = ask(task, scene, asked_from, seen=view)
                if taught is not None:
                    stats.taught.append(_to_record(rid, rel, view, taught))
            bar.update()
    log.debug("shapes %s: %d records, %s", split, n, dict(stats.rejected) or "no duplicates")
    return records


# ------------------------------------------------------------------------------------ corpus
def _fixed_scenes(size: int) -> list[Scene]:
    """Scenes that reach every template branch: one shape (singular), four with repeats."""
    lo = shape_sizes(size)[0]
    one = (Shape("circle", "orange", (MARGIN, MARGIN, MARGIN + lo, MARGIN + lo)),)
    four = tuple(
        Shape(kind, color, (MARGIN + i, MARGIN, MARGIN + i + 1, MARGIN + 1))
        for i, (kind, color) in enumerate(
            [("circle", "red"), ("square", "blue"), ("triangle", "green"), ("square", "red")]
        )
    )
    return [Scene(size, BACKGROUNDS[0], one), Scene(size, BACKGROUNDS[0], four)]


def text_corpus(
    n: int = 2000,
    seed: int = 0,
    cfg: ShapesConfig | None = None,
    formats: Sequence[str] | None = None,
) -> list[str]:
    """Texts covering every word the generator can emit, without drawing anything (fast).

    For the tiny model's tokenizer: every colour, kind, option letter, position word, number from
    0 to the image size, one question of every template, one prompt and target of each prompt
    format of ``formats`` (default: every one), then ``n`` random questions (problem, reasoning
    and answer each) as :func:`generate_split` would ask them.

    >>> corpus = text_corpus(50)
    >>> "purple" in corpus and "How many shapes are in the image?" in corpus
    True
    """
    from vlrl.items.prompts import PROMPTS

    cfg = cfg or ShapesConfig()
    texts: list[str] = []
    texts += list(COLORS) + list(KINDS) + [f"{k}s" for k in KINDS] + list(LETTERS) + list(PLACES)
    texts += [str(i) for i in range(max(112, cfg.image_size) + 1)]
    texts += [" ".join(f"{_article(c)} {c} {k}" for c in COLORS) for k in KINDS]
    fixed_rng = np.random.default_rng(seed)
    for scene in _fixed_scenes(cfg.image_size):
        for task, variants in VARIANTS.items():
            if feasible(task, scene):
                for variant in variants:
                    qn = ask(task, scene, fixed_rng, variant)
                    texts += [qn.problem, qn.reasoning, qn.answer]
    for fmt in (PROMPTS[name] for name in formats or PROMPTS):
        texts.append(fmt.render_prompt(CAPTION_QUESTION, problem_type="free_form"))
        target = fmt.render_target(
            "I see a red circle.",
            "a red circle",
            description="a red circle",
            boxes=[[4, 6, 30, 32]],
        )
        texts.append(target)
    rng = split_rng(seed, "corpus")
    for index in range(n):
        task = cfg.tasks[index % len(cfg.tasks)]
        scene = sample_layout(cfg, rng)
        while not feasible(task, scene):
            scene = sample_layout(cfg, rng)
        qn = ask(task, scene, rng)
        texts += [qn.problem, qn.reasoning, qn.answer]
    return texts
