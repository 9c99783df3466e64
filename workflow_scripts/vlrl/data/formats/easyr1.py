r"""EasyR1's RL training data, as Vision-SR1 trains on it: ``LMMs-Lab-Turtle/Vision-SR1-47K``
(split ``train``) → one record per parquet row, in file order.

Read as the loaders read it. ``zli12321/Vision-SR1`` @ 4480e08 trains with
``data.train_files=LMMs-Lab-Turtle/Vision-SR1-47K@train data.prompt_key=problem
data.answer_key=answer data.image_key=images`` (``train_examples/2-7b_selfReward_train.sh``; the
keys are ``train_examples/selfReward_config.yaml``'s) and loads it with its vendored EasyR1
``verl/utils/dataset.py`` ``RLHFDataset``: ``load_dataset`` of the hub parquet, ``problem`` the
prompt, ``answer`` the ground truth (``ground_truth``), ``images`` the pictures, each a ``{bytes,
path}`` struct (``datasets.Image``) — a single struct, not a list, in Vision-SR1-47K: the loader
wraps it (``if not isinstance(raw_images, list): raw_images = [raw_images]``), and public scripts
that read the set use ``sample["images"]`` as one picture. Upstream EasyR1
(``hiyouga/EasyR1`` @ b44b311, same file) also takes a list of pictures, or of paths relative to
``image_dir`` (here: the dataset folder), and ``[]`` for a text-only row; all of these are read.

The ``<image>`` placeholder: Vision-SR1's ``_prefix_image_token`` moves a single ``<image>`` to
the end of the prompt (and appends one when there is none), and its self-reward pass
(``verl/trainer/ray_trainer.py``, ``ABS_Verify_Prompt``) puts the question in with
``question.replace('<image>', '')``. vlrl places the images itself (before the text, one per
picture), so ``problem`` is the text with every ``<image>`` removed and the ends stripped (the
see_think template trims it too). A row with ``<image>`` tokens whose number differs from its
pictures is rejected: the processor could not pair them in either loader.

Split: the parquet files under the dataset folder (``records/`` aside); when their names carry
split words (``train-00000-of-00003.parquet``, ``data/test-…``), as ``datasets`` infers splits
from file names, only the train files are read.

Mapping to :class:`vlrl.items.records.Record` (split ``train``): ``id`` = the row's position across
the files (``"0"``, ``"1"``, …); ``problem`` as above; ``answer`` = ``answer``, stripped;
``images`` = the pictures, stored once each; ``data_source`` = ``vision_sr1_47k`` (the release
this format is for; the rows carry no source column the loader reads). ``problem_type``: the
Vision-SR1 reward ignores it (``see_think_selfReward.py`` grades the ``\boxed{}`` answer with
mathruler's ``grade_answer``), so it only describes the answer for vlrl's own reports:
``multiple_choice`` when the answer is one letter and the problem text lists options up to it
(``(A) …`` lines or ``Options: A: …`` as :func:`vlrl.data.formats.mmstar.parse_options` reads
them, or ``A. …`` lines as :func:`vlrl.data.formats.realworldqa.parse_options` does; ``options`` =
those texts), ``numerical`` when the answer is a plain number (``12``, ``-0.5``, ``3/4``), else
``free_form`` (a letter whose options cannot be read back stays ``free_form``).

Rejected rows (yielded as :class:`~vlrl.data.formats.RowError`, named by ``id``): no ``images``
value or a picture without bytes or file, an unreadable picture, an empty ``problem`` or
``answer``, ``<image>`` tokens that do not match the pictures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from vlrl.core.errors import DataError
from vlrl.data.formats import (
    RECORDS_DIR,
    ImageStore,
    Row,
    RowError,
    mmstar,
    parquet_rows,
    realworldqa,
    record,
)
from vlrl.items.records import Record

DATA_SOURCE = "vision_sr1_47k"
SPLIT = "train"
IMAGE_TOKEN = "<image>"
#: Words ``datasets`` reads a split from in a data file's path (its ``_split_re`` keywords).
_SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "test": "test",
    "testing": "test",
    "eval": "test",
    "evaluation": "test",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
}
_WORD = re.compile(r"[A-Za-z]+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("train", record) for every row of the train parquet files, in order; a row that
    cannot be converted is yielded as a :class:`RowError` carrying its ``id``."""
    index = 0
    for path in train_files(source):
        for row in parquet_rows(source, path.relative_to(source).as_posix()):
            rid = str(index)
            index += 1
            try:
                yield SPLIT, convert_row(row, rid, source, images)
            except RowError as exc:
                yield SPLIT, RowError(str(exc), row_id=rid)


def split_of(rel: str) -> str | None:
    """The split a data file's path names, as ``datasets`` reads it; None if it names none.

    >>> split_of("data/train-00000-of-00002.parquet"), split_of("test.parquet")
    ('train', 'test')
    >>> split_of("data/part-0.parquet") is None
    True
    """
    found = {_SPLIT_WORDS[w.lower()] for w in _WORD.findall(rel) if w.lower() in _SPLIT_WORDS}
    return found.pop() if len(found) == 1 else None


def train_files(source: Path) -> list[Path]:
    """The parquet files of the train split under ``source`` (``records/`` left out): those whose
    name says train when any name says a split, else all."""
    files = sorted(
        p for p in source.rglob("*.parquet") if p.relative_to(source).parts[0] != RECORDS_DIR
    )
    if not files:
        raise DataError(f"{source}: no parquet file")
    splits = {p: split_of(p.relative_to(source).as_posix()) for p in files}
    if any(splits.values()):
        train = [p for p in files if splits[p] == SPLIT]
        if not train:
            named = sorted(p.relative_to(source).as_posix() for p in files)
            raise DataError(f"{source}: no train parquet among {named}")
        return train
    return files


def convert_row(row: Row, rid: str, source: Path, images: ImageStore) -> Record:
    """One EasyR1 row as a canonical record with id ``rid`` (see the module docstring)."""
    text = row.text("problem", strip=False)
    answer = row.text("answer")
    pictures = row_images(row, source, images)
    tokens = text.count(IMAGE_TOKEN)
    if tokens and tokens != len(pictures):
        raise row.error(
            f"field 'problem' has {tokens} {IMAGE_TOKEN} tokens but the row has "
            f"{len(pictures)} images"
        )
    problem = text.replace(IMAGE_TOKEN, "").strip()
    if not problem:
        raise row.error(f"field 'problem' holds nothing but {IMAGE_TOKEN} tokens")
    problem_type, options = answer_kind(problem, answer)
    return record(
        row,
        id=rid,
        images=pictures,
        problem=problem,
        answer=answer,
        problem_type=problem_type,
        options=options,
        data_source=DATA_SOURCE,
    )


def row_images(row: Row, source: Path, images: ImageStore, field: str = "images") -> list[str]:
    """Store the row's pictures (one struct, a list of structs or a list of paths relative to
    ``source``); their records paths, in order. ``[]`` is a text-only row; a null value or
    picture is an error naming the row."""
    value = row.field(field, allow_empty=True)
    if value is None:
        raise row.error(f"field {field!r} is null: the row has no image")
    items = value if isinstance(value, list) else [value]
    stored = []
    for i, item in enumerate(items):
        name = f"{field}[{i}]"
        if isinstance(item, dict) and not item.get("bytes") and item.get("path"):
            item = item["path"]  # a struct that only names its file
        if isinstance(item, str):
            stored.append(images.save(read_image_file(source, item, row, name), row, name))
        elif item is None:
            raise row.error(f"field {name!r} is null: the picture is missing")
        else:
            stored.append(images.save(item, row, name))
    return stored


def read_image_file(base: Path, rel: str, row: Row, field: str) -> bytes:
    """The bytes of picture ``rel`` (relative to ``base``); a missing file is an error naming
    the row."""
    path = base / rel.strip()
    if not path.is_file():
        raise row.error(f"{field} {rel!r} does not exist (looked in {base})")
    return path.read_bytes()


def _is_number(answer: str) -> bool:
    if not _NUMBER.fullmatch(answer):
        return False
    try:
        return math.isfinite(float(Fraction(answer)))
    except (ValueError, ZeroDivisionError):
        return False


def choice_options(problem: str, answer: str) -> list[str]:
    """The option texts ``problem`` lists when ``answer`` is one of their letters; [] otherwise.

    >>> choice_options("Which?\\n(A) red\\n(B) blue", "B"), choice_options("Which?", "B")
    (['red', 'blue'], [])
    >>> choice_options("Which?\\nA. red\\nB. blue", "C")
    []
    """
    if not re.fullmatch(r"[A-Z]", answer):
        return []
    options = mmstar.parse_options(problem)
    if not options:
        try:
            options = realworldqa.parse_options(problem)
        except ValueError:
            options = []
    return options if ord(answer) - ord("A") < len(options) else []


def answer_kind(problem: str, answer: str) -> tuple[str, list[Any]]:
    """(problem_type, options) for a question whose type only its answer tells (module
    docstring).

    >>> answer_kind("How many?", "12"), answer_kind("Which?\\n(A) x\\n(B) y", "A")
    (('numerical', []), ('multiple_choice', ['x', 'y']))
    >>> answer_kind("What colour?", "red")
    ('free_form', [])
    """
    options = choice_options(problem, answer)
    if options:
        return "multiple_choice", options
    return ("numerical" if _is_number(answer) else "free_form"), []
