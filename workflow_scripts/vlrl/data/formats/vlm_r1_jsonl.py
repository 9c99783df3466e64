"""VLM-R1's general GRPO training data: the conversation jsonl its ``grpo_jsonl.py`` trains on, as
a folder of user-provided files (``local:`` datasets such as ``vlm_r1_math``) → one record per row.
:mod:`vlrl.data.formats.vlm_r1_ovd` (detection) and :mod:`vlrl.data.formats.vlm_r1_rec_train`
(RefCOCO/+/g train) read the same rows with this module's functions.

Ported from ``om-ai-lab/VLM-R1`` ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` at HEAD
``90052f478646e38bc67363862f699b7afca6b337`` (``main``, lines 946-990: the loader; 826-861: the
``accu_reward_method`` dispatch) and that commit's README, "For your own data".

Raw layout (a dataset folder):

- ``<split>.jsonl``, one file or more: each is one ``--data_file_paths`` entry; its stem is the
  split (``records/<split>.jsonl``). One JSON object per line; blank lines are skipped.
- ``images/``: the ``--image_folders`` entry. A row's ``image`` is a path relative to it
  (``os.path.join(image_folder, image)``), a single path or a list (multi-image rows).

Row: ``{"id": 1, "image": "folder/picture.jpg" | [...], "conversations": [{"from": "human",
"value": "<image>…question…"}, {"from": "gpt", "value": "…answer…"}], "accu_reward_method":
"math"}``; ``image`` is optional (text-only rows) and so is ``accu_reward_method`` (VLM-R1 then
uses the file's ``--reward_method``, default ``default``).

Mapping to :class:`vlrl.items.records.Record`, as ``grpo_jsonl.py`` reads the row:

- ``problem`` = the human turn with every ``<image>`` removed, not stripped (``grpo_jsonl.py``
  line 979: the prompt format wraps it as VLM-R1's question template does, spaces and all);
- ``answer`` = VLM-R1's ``solution``: the gpt turn with ``<answer>`` / ``</answer>`` removed and
  stripped, or ``str()`` of a number (``grpo_jsonl.py`` line 987);
- ``problem_type``: ``detection`` for the detection rewards (:data:`DETECTION_METHODS`; the
  answer is then checked as :func:`detection_boxes` says and ``boxes`` = its boxes), ``yes_no``
  for ``yes_no``, else ``numerical`` when the answer is one plain number, else ``free_form``
  (``mcq`` rows carry no options, so they are ``free_form``: the letter is the answer);
- ``images`` / ``image_sizes`` = the pictures, stored once each; ``id`` = ``<split>-<row index>``
  (the row's own ``id`` need not be unique; errors name it); ``task`` = the row's
  ``accu_reward_method`` when it has one, else the split; ``data_source`` = the split.

Deviations, all as row errors (``bad_rows`` decides): an ``accu_reward_method`` VLM-R1 does not
know (VLM-R1 silently uses ``default``), rows with other than two turns (VLM-R1 reads the first
two only) or turns not ``human`` then ``gpt``, an ``image`` that is absolute or leaves ``images/``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data.formats import RECORDS_DIR, ImageStore, Row, RowError, record
from vlrl.data.formats.refcoco import fit_box
from vlrl.items.records import Record

#: The image folder of a dataset folder (VLM-R1's ``--image_folders``).
IMAGE_FOLDER = "images"
#: ``accuracy_reward``'s methods (``grpo_jsonl.py`` lines 832-861); any other is ``default``.
METHODS = frozenset(
    {"default", "mcq", "yes_no", "llm", "map", "math", "weighted_sum", "od_ap", "od_ap50",
     "odLength", "all_match"}
)  # fmt: skip
#: The methods that score a list of boxes (``map_reward``, ``od_reward``, ``odLength_reward``,
#: ``detection_score``): their rows are ``detection`` records.
DETECTION_METHODS = frozenset({"map", "weighted_sum", "od_ap", "od_ap50", "odLength"})
#: Split names that are records files of their own (:func:`vlrl.data.formats.convert_dataset`).
RESERVED_SPLITS = frozenset({"rejected", "report"})
_FENCE = re.compile(r"```json(.*?)```", re.DOTALL)  # map_reward / detection_score's pattern
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ID = re.compile(r'"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))')
_SPLIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class Pictures(Protocol):
    """Where a row's ``image`` paths are read from: a folder (:class:`ImageFolder`) or a zip
    (:class:`vlrl.data.formats.vlm_r1_rec.ImageArchive`)."""

    def save(self, image: str, row: Row, images: ImageStore) -> tuple[str, int, int]: ...


@dataclass(frozen=True)
class Sample:
    """A row as ``grpo_jsonl.py`` reads it: image paths, problem, solution (the gpt value), and
    the row's ``accu_reward_method`` (None when it has none)."""

    images: list[str]
    problem: str
    solution: Any
    method: str | None


class ImageFolder:
    """The pictures under a folder, found by a row's ``image`` path, each stored once."""

    def __init__(self, root: Path):
        self.root = root
        self.saved: dict[str, tuple[str, int, int]] = {}

    def save(self, image: str, row: Row, images: ImageStore) -> tuple[str, int, int]:
        """Store the picture at ``image`` (relative to the folder); its records path, width and
        height."""
        rel = PurePosixPath(image.strip())
        if not image.strip() or rel.is_absolute() or ".." in rel.parts:
            raise row.error(f"image {image!r} must be a path inside {self.root.name}/")
        key = rel.as_posix()
        if key not in self.saved:
            path = self.root / key
            if not path.is_file():
                raise row.error(f"image {image!r} does not exist ({self.root.name}/{key})")
            stored = images.save(path.read_bytes(), row, "image")
            with Image.open(images.records_dir / stored) as img:
                self.saved[key] = (stored, img.width, img.height)
        return self.saved[key]


def jsonl_lines(label: str, data: bytes) -> list[tuple[int, str]]:
    """The non-blank lines of a jsonl file's bytes, with their 0-based line numbers."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{label}: not UTF-8 text: {exc}") from None
    # Universal newlines, as VLM-R1's ``for line in open(data_file)``: not str.splitlines, which
    # also splits at U+2028 and other separators a JSON string may hold unescaped.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [(i, line) for i, line in enumerate(lines) if line.strip()]


def rows(label: str, lines: Iterable[tuple[int, str]]) -> Iterator[Row | RowError]:
    """Each line as a :class:`Row` (index = its line number), or the error of a line that is not
    a JSON object (its id read from the text when it shows one)."""
    for index, line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            found = _ID.search(line)
            data = {"id": found.group(1) or found.group(2)} if found else {}
            yield Row(label, index, data).error(f"is not valid JSON: {exc}")
            continue
        if not isinstance(data, dict):
            yield Row(label, index, {}).error(f"is a JSON {type(data).__name__}, not an object")
            continue
        yield Row(label, index, data)


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _turn(row: Row, turns: list, index: int, role: str) -> Any:
    turn = turns[index]
    if not isinstance(turn, dict) or turn.get("from") != role or "value" not in turn:
        raise row.error(f"turn {index} must be {{'from': {role!r}, 'value': ...}}: {_short(turn)}")
    return turn["value"]


def read_sample(row: Row, *, box_list: bool = False) -> Sample:
    """The row's images, problem, solution and reward method (``grpo_jsonl.py`` lines 967-990).

    The solution is the gpt value with answer tags removed and stripped, ``str()`` of a number,
    or (``box_list``) a list kept as it is."""
    image = row.data.get("image")
    if image is None:
        paths = []
    elif isinstance(image, str):
        paths = [image]
    elif isinstance(image, list) and image and all(isinstance(p, str) for p in image):
        paths = list(image)
    else:
        raise row.error(f"field 'image' must be a path or a non-empty list of paths: {image!r}")
    turns = row.field("conversations")
    if not isinstance(turns, list) or len(turns) != 2:
        count = len(turns) if isinstance(turns, list) else type(turns).__name__
        raise row.error(f"field 'conversations' must hold 2 turns (human, gpt), not {count}")
    question = _turn(row, turns, 0, "human")
    if not isinstance(question, str) or not question.replace("<image>", "").strip():
        raise row.error(f"the human turn is empty or not a string: {_short(question)}")
    value = _turn(row, turns, 1, "gpt")
    if isinstance(value, str):
        solution: Any = value.replace("<answer>", "").replace("</answer>", "").strip()
        if not solution:
            raise row.error(f"the gpt turn is empty: {_short(value)}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        solution = str(value)
    elif box_list and isinstance(value, list):
        solution = value
    else:
        raise row.error(f"the gpt turn must be a string or a number: {_short(value)}")
    method = row.data.get("accu_reward_method")
    if method is not None and method not in METHODS:
        raise row.error(
            f"field 'accu_reward_method' is {method!r}, not one of VLM-R1's {sorted(METHODS)}"
        )
    return Sample(paths, question.replace("<image>", ""), solution, method)


def finite_box(row: Row, value: Any, what: str) -> list[float]:
    """``value`` as a box of four finite numbers with x1 < x2 and y1 < y2."""
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    ):
        raise row.error(f"{what} must be 4 finite numbers [x1, y1, x2, y2]: {value!r}")
    x1, y1, x2, y2 = (float(v) for v in value)
    if x2 <= x1 or y2 <= y1:
        raise row.error(f"{what} {value} has x2 <= x1 or y2 <= y1")
    return [x1, y1, x2, y2]


def fitted_box(row: Row, box: list[float], size: tuple[int, int], what: str) -> list[float]:
    """``box`` clamped to the picture (:func:`vlrl.data.formats.refcoco.fit_box`); further out
    is an error naming the row."""
    fitted = fit_box(box, *size)
    if fitted is None:
        raise row.error(f"{what} {box} is outside its {size[0]}x{size[1]} image")
    return fitted


def detection_boxes(row: Row, answer: str) -> list[list[float]]:
    """The boxes of a detection answer: ``None`` (nothing to detect: no boxes), or exactly one
    ```` ```json ```` block holding a list of ``{"bbox_2d": [x1, y1, x2, y2], "label": str}``
    (issue #246's gpt turn). One block only: ``map_reward`` reads the last, ``detection_score``
    the first (``grpo_jsonl.py`` lines 312-314, 445-447)."""
    if answer == "None":
        return []
    blocks = _FENCE.findall(answer)
    if len(blocks) != 1:
        raise row.error(
            f'the gpt turn must be "None" or one ```json block of boxes, not {len(blocks)} '
            f"blocks: {answer[:200]!r}"
        )
    try:
        items = json.loads(blocks[0].strip())
    except json.JSONDecodeError as exc:
        raise row.error(f"the gpt turn's ```json block is not valid JSON: {exc}") from None
    if not isinstance(items, list):
        raise row.error(f"the gpt turn's ```json block is a {type(items).__name__}, not a list")
    boxes = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("label"), str):
            raise row.error(
                f"detection {n} must be {{'bbox_2d': [...], 'label': str}}: {_short(item)}"
            )
        boxes.append(finite_box(row, item.get("bbox_2d"), f"detection {n}'s bbox_2d"))
    return boxes


def problem_type(sample: Sample) -> str:
    """The record's problem type from the row's reward method and answer (module docstring)."""
    if sample.method in DETECTION_METHODS:
        return "detection"
    if sample.method == "yes_no":
        return "yes_no"
    return "numerical" if _NUMBER.fullmatch(sample.solution) else "free_form"


def convert_row(
    row: Row,
    split: str,
    images: ImageStore,
    pictures: Pictures,
    *,
    detection: bool = False,
) -> Record:
    """One row as a canonical record (module docstring); ``detection``: every row is a detection
    row (:mod:`vlrl.data.formats.vlm_r1_ovd`, a file whose ``--reward_method`` is one)."""
    sample = read_sample(row)
    kind = problem_type(sample)
    if detection and kind != "detection":
        if sample.method is not None:
            raise row.error(
                f"field 'accu_reward_method' is {sample.method!r}, not a detection reward "
                f"({sorted(DETECTION_METHODS)})"
            )
        kind = "detection"
    boxes = detection_boxes(row, sample.solution) if kind == "detection" else []
    if kind == "detection" and len(sample.images) != 1:
        raise row.error(f"a detection row needs exactly one image, not {len(sample.images)}")
    stored = [pictures.save(path, row, images) for path in sample.images]
    if boxes:
        size = stored[0][1:]
        boxes = [
            fitted_box(row, box, size, f"detection {n}'s bbox_2d") for n, box in enumerate(boxes)
        ]
    return record(
        row,
        id=f"{split}-{row.index}",
        images=[rel for rel, _, _ in stored],
        image_sizes=[[width, height] for _, width, height in stored],
        problem=sample.problem,
        answer=sample.solution,
        problem_type=kind,
        boxes=boxes,
        data_source=split,
        task=sample.method or split,
    )


def convert_rows(
    split: str, found: Iterable[Row | RowError], convert: Callable[[Row], Record]
) -> Iterator[tuple[str, Record | RowError]]:
    """``(split, convert(row))`` for every row, a row that cannot be converted yielded as its
    error (``bad_rows`` decides)."""
    for row in found:
        if isinstance(row, RowError):
            yield split, row
            continue
        try:
            yield split, convert(row)
        except RowError as exc:
            yield split, exc


def jsonl_files(source: Path) -> list[Path]:
    """The dataset folder's ``*.jsonl`` files, each a split (module docstring)."""
    files = sorted(source.glob("*.jsonl"))
    nested = sorted(
        p.relative_to(source).as_posix()
        for p in source.rglob("*.jsonl")
        if p.parent != source and p.relative_to(source).parts[0] != RECORDS_DIR
    )
    if nested:
        raise DataError(
            f"{source}: only the folder's own *.jsonl files are read, not {nested[:5]}: move "
            "them up (each file is a split)"
        )
    if not files:
        raise DataError(
            f"{source}: no *.jsonl file; put VLM-R1 jsonl files (one per split) there and their "
            f"pictures under {IMAGE_FOLDER}/"
        )
    for path in files:
        if not _SPLIT.fullmatch(path.stem) or path.stem in RESERVED_SPLITS:
            raise DataError(
                f"{path}: {path.stem!r} cannot name a split (letters, digits, _ . -; not "
                f"{sorted(RESERVED_SPLITS)}): rename the file"
            )
    return files


def convert_folder(
    source: Path, images: ImageStore, *, detection: bool = False
) -> Iterator[tuple[str, Record | RowError]]:
    """Every row of every jsonl file of the dataset folder ``source``, in file and line order."""
    pictures = ImageFolder(source / IMAGE_FOLDER)
    for path in jsonl_files(source):
        label = path.relative_to(source).as_posix()
        found = rows(label, jsonl_lines(label, path.read_bytes()))
        one = functools.partial(
            convert_row, split=path.stem, images=images, pictures=pictures, detection=detection
        )
        yield from convert_rows(path.stem, found, one)


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record | RowError]]:
    """Yield (split, record) for every row of the folder's jsonl files (a row that cannot be
    converted as its error)."""
    yield from convert_folder(source, images)
