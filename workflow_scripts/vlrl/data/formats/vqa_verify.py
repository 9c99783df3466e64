"""VQA-Verify (``justairr/VQA-Verify``): SATORI-R1's 12k GRPO training set, each question with
an answer-aligned caption and the boxes of the regions that answer it.

Reference: ``justairr/SATORI-R1`` (HEAD ``8857b30``). ``qwen2.5_grpo.sh`` (last changed in
``7722a6b``) trains with ``swift rlhf --rlhf_type grpo --dataset <DATA_PATH> --system
./prompt.txt``; ``plugin.py`` (last changed in ``8923be7``) holds the rewards, which read these
columns of each row (ms-swift's GRPO passes every extra column to the reward functions):

- ``image_caption`` (str): ``CaptionAccuracy``'s reference caption;
- ``bboxs`` (list of ``[x1, y1, x2, y2]``), ``width``, ``height`` (int): ``BoundingBoxAccuracy``
  rescales the predicted boxes from the model-input frame (``smart_resize(height, width)``) to
  ``width`` × ``height``, the original picture, and takes the union IoU with ``bboxs``;
- ``possible_answers`` (list[str]): ``VQAAccuracy`` scores 1.0 when the first ``<answer>``,
  stripped, is ``in`` the list: exact membership, no normalisation.

The question and the picture come through ms-swift's standard columns (ms-swift
``docs/source_en/Customization/Custom-dataset.md``; ``swift/llm/dataset/preprocessor/core.py``
at ``6d00d463``, ms-swift's main on the day ``qwen2.5_grpo.sh`` was committed): ``messages``
(``{role, content}`` turns, ``<image>`` marking where the picture goes) or, in the query-response
layout, the first of ``query``, ``prompt``, ``input``, ``instruction``, ``question``, ``problem``
(``ResponsePreprocessor``'s ``query_keys``); the picture in ``images`` or ``image`` (a path, a
list of them, ``{bytes, path}`` structs as ``datasets.Image`` stores them, or base64 as
``swift/llm/template/vision_utils.py::load_file`` accepts).

Layout. The dataset card and file list could not be read here (see
``config/datasets/vqa_verify.yaml``), so two layouts are read: hub parquet (``*.parquet``, e.g.
``data/train-00000-of-00001.parquet`` from ``push_to_hub``, images as bytes) or ms-swift json
(``*.jsonl`` / ``*.json``; the author's earlier scripts in ``c203de0`` trained on ``.jsonl``
files) with image paths resolved against the json file's folder, then the dataset folder
(ms-swift itself resolves them against the working directory). A release holding both is
refused. Each file's rows go to the split its name starts with (``train`` / ``validation`` /
``test`` before the first ``-``, ``_`` or ``.``), else to ``train``.

Mapping to :class:`vlrl.items.records.Record` (fitted to :mod:`vlrl.rewards.satori`):

- ``problem`` = the one user turn (or query), ``<image>`` tags removed, stripped. A system turn
  must be SATORI's ``prompt.txt``
  (:data:`vlrl.items.prompt_texts.CAPTION_BBOX_ANSWER_SYSTEM_PROMPT`): a row with its own would
  have replaced ``--system`` in ms-swift, so it is refused, not rewritten;
  assistant turns are not read (no reward reads them);
- ``answer`` = ``possible_answers[0]``; ``accepted`` = the others, in order, repeats dropped, so
  ``[answer, *accepted]`` is the set ``VQAAccuracy`` tests membership in. Answers are kept
  verbatim (the test is exact). An empty list, a bare string (``in`` on a string is a substring
  test) or an empty or non-string answer is an error;
- ``caption`` = ``image_caption``, stripped (BLEU tokens and ROUGE-L do not see outer spaces);
- ``boxes`` = ``bboxs``, absolute xyxy pixels of the original picture: each 4 finite numbers with
  x1 < x2 and y1 < y2, inside the picture (one leaving it by at most
  :data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px is clamped to it); empty, flat or outside
  is an error. ``width`` / ``height`` must equal the decoded picture (they set the reward's
  rescaling), and a row must hold exactly one picture (the box frame);
- ``image_sizes`` = ``[[width, height]]``; ``images`` = the picture via :class:`ImageStore`;
- ``problem_type`` = ``free_form`` (exact-match answers from 17 source benchmarks, no options);
  ``data_source`` = ``vqa_verify``; ``id`` = the row's own id field when it has one, else
  ``<split>-<position in the split>`` (files in sorted order).

A row that cannot be converted is yielded as a :class:`RowError` carrying that id, for the
dataset's ``bad_rows`` to stop on or report.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from PIL import Image

from vlrl.core.errors import DataError
from vlrl.core.files import DATASET_MANIFEST, read_jsonl
from vlrl.data.formats import RECORDS_DIR, ImageStore, Row, RowError, parquet_rows, record
from vlrl.data.formats.refcoco import fit_box
from vlrl.items.prompt_texts import CAPTION_BBOX_ANSWER_SYSTEM_PROMPT
from vlrl.items.records import Record

DATA_SOURCE = "vqa_verify"
DEFAULT_SPLIT = "train"
SPLITS = ("train", "validation", "test")
#: ms-swift ``ResponsePreprocessor.query_keys``, in its order (core.py @6d00d463, line 336).
QUERY_KEYS = ("query", "prompt", "input", "instruction", "question", "problem")
#: ms-swift ``RowPreprocessor`` ``images_keys`` (core.py @6d00d463, line 33).
IMAGE_KEYS = ("images", "image")
IMAGE_TAG = "<image>"
PARQUET = ".parquet"
JSON = (".jsonl", ".json")
_SPLIT_PREFIX = re.compile(r"[-_.]")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record | RowError]]:
    """Yield (split, record) for every row of the release under ``source``, or (split, error)
    for a row that cannot be converted."""
    counts: dict[str, int] = {}
    for path in row_files(source):
        split = split_of(path.name)
        for row in read_rows(source, path):
            position = counts.get(split, 0)
            counts[split] = position + 1
            row_id = row.id or f"{split}-{position}"
            try:
                yield split, convert_row(row, row_id, source, path.parent, images)
            except RowError as err:
                yield split, RowError(str(err), row_id)  # named as its record would be


def split_of(name: str) -> str:
    """The split a file's rows belong to: the hub's split name its name starts with, else
    ``train``.

    >>> split_of("train-00000-of-00001.parquet"), split_of("test.jsonl"), split_of("vqa.jsonl")
    ('train', 'test', 'train')
    """
    head = _SPLIT_PREFIX.split(name, 1)[0].lower()
    return head if head in SPLITS else DEFAULT_SPLIT


def row_files(source: Path) -> list[Path]:
    """The files holding rows: every ``*.parquet``, or every ``*.jsonl`` / ``*.json``, sorted;
    the records this format writes, hidden folders and the download manifest left out."""
    found: list[Path] = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if (
            path.suffix in (PARQUET, *JSON)
            and path.is_file()
            and rel.parts[0] != RECORDS_DIR
            and not any(part.startswith(".") for part in rel.parts)
            and rel.as_posix() != DATASET_MANIFEST
        ):
            found.append(path)
    parquet = [p for p in found if p.suffix == PARQUET]
    if parquet and len(parquet) < len(found):
        names = [p.relative_to(source).as_posix() for p in found]
        raise DataError(
            f"{source}: both parquet and json row files are present ({names}); fetch one layout "
            "(allow_patterns)"
        )
    if not found:
        raise DataError(f"{source}: no VQA-Verify rows: no .parquet, .jsonl or .json file")
    return found


def read_rows(source: Path, path: Path) -> Iterator[Row]:
    """The rows of one parquet, jsonl or json (a list of rows) file."""
    rel = path.relative_to(source).as_posix()
    if path.suffix == PARQUET:
        yield from parquet_rows(source, rel)
        return
    if path.suffix == ".jsonl":
        try:
            rows = read_jsonl(path)
        except (OSError, ValueError) as exc:
            raise DataError(str(exc)) from None
    else:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: not a readable json file: {exc}") from None
        if not isinstance(rows, list):
            raise DataError(f"{path}: holds a {type(rows).__name__}, not a list of rows")
    for index, data in enumerate(rows):
        yield Row(rel, index, data)


def convert_row(row: Row, row_id: str, source: Path, folder: Path, images: ImageStore) -> Record:
    """One row as a record (see the module docstring); raises :class:`RowError`."""
    if not isinstance(row.data, dict):
        raise row.error(f"is a {type(row.data).__name__}, not an object")
    problem, tags = question(row)
    answer, accepted = answers(row)
    caption = row.text("image_caption")
    width, height = row.natural("width"), row.natural("height")
    boxes = gold_boxes(row)
    key, value = image_value(row)
    if tags not in (0, 1):
        raise row.error(f"the question has {tags} {IMAGE_TAG} tags for its one picture")
    rel = save_image(row, key, value, source, folder, images)
    with Image.open(images.records_dir / rel) as img:
        actual = img.size
    if (width, height) != actual:
        raise row.error(
            f"fields 'width' / 'height' are {width}x{height} but its picture is "
            f"{actual[0]}x{actual[1]}"
        )
    fitted = []
    for i, box in enumerate(boxes):
        inside = fit_box(box, width, height)
        if inside is None:
            raise row.error(f"bboxs[{i}] {box} is outside its {width}x{height} picture")
        fitted.append(inside)
    return record(
        row,
        id=row_id,
        images=[rel],
        image_sizes=[[width, height]],
        problem=problem,
        answer=answer,
        accepted=accepted,
        problem_type="free_form",
        boxes=fitted,
        caption=caption,
        data_source=DATA_SOURCE,
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def question(row: Row) -> tuple[str, int]:
    """The question without ``<image>`` tags, and how many tags it had."""
    if "messages" in row.data:
        messages = row.field("messages")
        if not isinstance(messages, list):
            raise row.error(f"field 'messages' must be a list of turns: {_short(messages)}")
        users = []
        for i, turn in enumerate(messages):
            if not (
                isinstance(turn, dict)
                and isinstance(turn.get("role"), str)
                and isinstance(turn.get("content"), str)
            ):
                raise row.error(
                    f"messages[{i}] is not a {{role, content}} text turn: {_short(turn)}"
                )
            if turn["role"] == "user":
                users.append(turn["content"])
            elif turn["role"] == "system" and (
                turn["content"].strip() != CAPTION_BBOX_ANSWER_SYSTEM_PROMPT
            ):
                raise row.error(
                    "messages has its own system turn, which ms-swift uses instead of --system "
                    f"prompt.txt: {_short(turn['content'])}"
                )
        if len(users) != 1:
            raise row.error(f"messages has {len(users)} user turns, expected one")
        text = users[0]
    else:
        keys = [key for key in QUERY_KEYS if row.data.get(key) is not None]
        if not keys:
            raise row.error(
                f"has no question: no 'messages' nor any of {list(QUERY_KEYS)} "
                f"(fields: {sorted(row.data)})"
            )
        text = row.text(keys[0], strip=False)
    problem = text.replace(IMAGE_TAG, "").strip()
    if not problem:
        raise row.error(f"the question is empty once its {IMAGE_TAG} tags are removed")
    return problem, text.count(IMAGE_TAG)


def answers(row: Row) -> tuple[str, list[str]]:
    """``possible_answers``: the first, and the others (repeats dropped)."""
    value = row.field("possible_answers")
    if not isinstance(value, list):
        raise row.error(
            "field 'possible_answers' must be a list of strings (plugin.py tests "
            f"`answer in possible_answers`): {_short(value)}"
        )
    if not value:
        raise row.error("field 'possible_answers' is empty: no answer could be correct")
    for i, answer in enumerate(value):
        if not isinstance(answer, str) or not answer.strip():
            raise row.error(f"possible_answers[{i}] is {_short(answer)}, not a non-empty string")
    first = value[0]
    return first, [a for a in dict.fromkeys(value[1:]) if a != first]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def gold_boxes(row: Row) -> list[list[float]]:
    """``bboxs``: one or more boxes of 4 finite numbers with x1 < x2 and y1 < y2."""
    value = row.field("bboxs")
    if not isinstance(value, list) or not value:
        raise row.error(
            f"field 'bboxs' must be a non-empty list of [x1, y1, x2, y2] boxes: {_short(value)}"
        )
    boxes = []
    for i, box in enumerate(value):
        if not (isinstance(box, list) and len(box) == 4 and all(_number(v) for v in box)):
            raise row.error(f"bboxs[{i}] is not 4 finite numbers [x1, y1, x2, y2]: {_short(box)}")
        x1, y1, x2, y2 = (float(v) for v in box)
        if x2 <= x1 or y2 <= y1:
            raise row.error(f"bboxs[{i}] {box} has x2 <= x1 or y2 <= y1")
        boxes.append([x1, y1, x2, y2])
    return boxes


def image_value(row: Row) -> tuple[str, Any]:
    """The row's one picture (``images`` or ``image``), and the field it came from."""
    keys = [key for key in IMAGE_KEYS if row.data.get(key) is not None]
    if not keys:
        raise row.error(f"has no picture: no {' / '.join(repr(k) for k in IMAGE_KEYS)} field")
    key, value = keys[0], row.data[keys[0]]
    if isinstance(value, list):
        if len(value) != 1:
            raise row.error(
                f"field {key!r} holds {len(value)} pictures; width, height and bboxs describe one"
            )
        value = value[0]
    return key, value


def save_image(
    row: Row, key: str, value: Any, source: Path, folder: Path, images: ImageStore
) -> str:
    """Store the picture (bytes, a ``{bytes, path}`` struct, a path or base64, as ms-swift's
    ``load_file`` reads them) and return its records path."""
    if isinstance(value, dict) and not value.get("bytes") and isinstance(value.get("path"), str):
        value = value["path"]
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("http"):
            raise row.error(f"field {key!r} is a URL ({text!r}); the pictures must be in the files")
        if text.startswith("data:"):
            value = text.split(",", 1)[-1]
        elif text:
            path = Path(text).expanduser()
            tried = [path] if path.is_absolute() else [folder / path, source / path]
            found = next((p for p in tried if p.is_file()), None)
            if found is not None:
                return images.save(found.read_bytes(), row, key)
            if len(text) <= 200:  # load_file's rule: longer strings are base64
                looked = ", ".join(str(p) for p in tried)
                raise row.error(
                    f"field {key!r}: picture {text!r} is not a file (looked at {looked})"
                )
    return images.save(value, row, key)
