"""LISA-Grounding, VLM-R1's out-of-domain REC test, read from VLM-R1's own files as the
``omlab/VLM-R1`` hub dataset stores them: the annotations ``lisa_test.json`` inside
``rec_jsons_processed.zip`` (37.6 MB; it also holds the RefCOCO/+/g train and val files, which
this format does not read) and the pictures in ``lisa_test.zip`` (1.2 GB; the hub's file
listing spells it with an underscore, VLM-R1's README link ``…/resolve/main/lisa-test.zip``
with a hyphen, so either name is accepted). Both are read as downloaded, with :mod:`zipfile`.

Ported from ``om-ai-lab/VLM-R1`` ``src/eval/test_rec_r1.py`` (last changed in commit
``00755a23ed1848641d2d14130824d843a080a09c``, 2025-06-26; HEAD
``90052f478646e38bc67363862f699b7afca6b337``), which loads ``<DATA_ROOT>/lisa_test.json`` with
``json.load`` and reads of each item ``x['image']`` (joined to ``IMAGE_ROOT``, the unpacked
images), ``x['problem']`` (the question text) and ``x['solution']`` (the reference box), and
from ``src/open-r1-multimodal/src/open_r1/grpo_rec.py``, the loader of the same json files
(the same three keys). The other keys of an item (``normal_caption``, ``width``, ``height``,
ids, …; ``refcoco_val.json`` items carry them, see VLM-R1 issue #11) are optional here;
``width`` / ``height``, when present, must agree with the picture.

Raw layout. The hub has no card for these archives and their member lists could not be read
here, so the reader does not depend on folder names:

- ``rec_jsons_processed.zip``: the member whose file name is ``lisa_test.json``, wherever it
  lies (users unpack the archive to a ``rec_jsons_processed/`` folder holding the
  ``*_train.jsonl`` and ``*_val.json`` / ``lisa_test.json`` files), ``__MACOSX/`` and ``._*``
  entries ignored; a json list of items;
- ``lisa_test.zip``: the pictures. An item's ``image`` is relative to the folder the archive was
  unpacked in (test_rec_r1.py joins it to ``IMAGE_ROOT``); a third-party LISA evaluator expects
  that folder to hold ``test/`` beside ``lisa_test.json``, so ``test/<name>.jpg``. The member read
  is that path, or the one member ending with ``/`` + that path (an archive with an extra top
  folder); none, or several, is an error naming the item.
- ``solution``: ``[x1, y1, x2, y2]`` in absolute pixels of the original picture (VLM-R1's
  Qwen2.5-VL annotations, the frame test_rec_r1.py rescales predictions into before IoU).

Mapping to :class:`vlrl.records.Record`, one per item, in the json's order (so
``subsample: {n: 2000, seed: 42}`` draws the items VLM-R1's ``random.seed(42);
random.shuffle(data); data[:2000]`` draws):

- ``id`` = ``lisa_test-<position in the json>`` (stable: the file is pinned; no other key is
  known to be unique);
- ``problem`` = the item's ``problem``, stripped (VLM-R1's data text, "Please provide the
  bounding box coordinate of the region this sentence describes: …"; test_rec_r1.py appends its
  thinking / JSON instruction, which vlrl's prompt format replaces);
- ``boxes`` = ``[solution]``, a box leaving the picture by at most
  :data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px clamped to it, one further out (or empty)
  an error naming the item; ``answer`` = :func:`vlrl.answers.dumps_box`; ``problem_type`` =
  ``grounding``; ``image_sizes`` = the picture's;
- ``task`` = ``lisa_test`` (the json file's stem, also the records split); ``data_source`` =
  ``lisa_grounding``; ``groups`` = ``{"image": <the item's image path>}`` (queries on one
  picture are a cluster).

Protocol (test_rec_r1.py): greedy, ``max_new_tokens=256``; the first ``<answer>``, a JSON-ish
``{...[x1, y1, x2, y2]...}`` inside it (integers), rescaled from the model-input frame
(``image_grid_thw`` × 14) to the picture; correct iff IoU > 0.5. Every dataset of
``TEST_DATASETS`` is cut to ``num_samples = 2000`` after the seeded shuffle, LISA included (it
is the active ``TEST_DATASETS`` at HEAD); LISA's test file is smaller (1,658 items, the count a
public evaluator asserts for it; every LISA accuracy of Table 2, 54.82 … 63.14 %, is k / 1,658
truncated to two decimals, and none is k / 2,000), so the cut keeps every item. The benchmark
for it (``config/benchmarks/lisa_grounding.yaml``, to be added with a pinned
``config/datasets/lisa_grounding.yaml``)::

    loader: records
    dataset: lisa_grounding
    file: records/lisa_test.jsonl
    max_new_tokens: 256
    iou_strict: true
    box_frame: model_input
    subsample: {n: 2000, seed: 42}

(VLM-R1 asks with its ``rec`` template, vlrl's ``prompt: rec_json``; without it the
experiment's prompt format applies.) Its dataset would be ``repo_id: omlab/VLM-R1``,
``repo_type: dataset``, ``allow_patterns: [rec_jsons_processed.zip, "lisa[-_]test.zip"]``,
``format: lisa_grounding`` and a 40-hex ``revision``: none was found in public material (the
hub's tree page shows only the short head ``90d57b2``, 13 commits).
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image

from vlrl.answers import dumps_box
from vlrl.data.formats import ImageStore, Row, record
from vlrl.data.formats.refcoco import fit_box
from vlrl.errors import DataError
from vlrl.records import Record

DATA_SOURCE = "lisa_grounding"
#: The annotation archive and, inside it, the json files read: split → member file name.
ANNOTATIONS = "rec_jsons_processed.zip"
JSONS = {"lisa_test": "lisa_test.json"}
#: The image archive under either spelling (hub listing, README link).
IMAGE_ARCHIVES = ("lisa_test.zip", "lisa-test.zip")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("lisa_test", record) for every item of ``lisa_test.json``, in its order."""
    yield from convert_rec_jsons(source, images, JSONS, IMAGE_ARCHIVES, DATA_SOURCE)


def convert_rec_jsons(
    source: Path,
    images: ImageStore,
    jsons: dict[str, str],
    image_archives: tuple[str, ...],
    data_source: str,
) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for every item of the VLM-R1 REC json files ``jsons`` (split →
    member name in :data:`ANNOTATIONS`), their pictures read from the one of ``image_archives``
    present under ``source`` (VLM-R1's RefCOCO files would be ``refcoco_val.json`` … over
    ``train2014.zip``)."""
    archive = ImageArchive(find_archive(source, image_archives))
    try:
        for split, name in jsons.items():
            file, items = read_json_member(source / ANNOTATIONS, name)
            for index, item in enumerate(items):
                row = Row(file, index, item)
                if not isinstance(item, dict):
                    raise row.error(f"is a {type(item).__name__}, not an object")
                yield split, convert_item(row, images, archive, split, data_source)
    finally:
        archive.close()


def find_archive(source: Path, names: tuple[str, ...]) -> Path:
    """The one image archive of ``names`` present under ``source``."""
    present = [source / name for name in names if (source / name).is_file()]
    if not present:
        raise DataError(f"{source}: no image archive; expected one of {list(names)}")
    if len(present) > 1:
        raise DataError(
            f"{source}: both {[p.name for p in present]} are present; fetch one of them"
        )
    return present[0]


def _members(archive: zipfile.ZipFile) -> list[str]:
    # macOS zips carry resource forks (__MACOSX/, ._name) that are not the files.
    return [
        info.filename
        for info in archive.infolist()
        if not info.is_dir()
        and not info.filename.startswith("__MACOSX/")
        and not PurePosixPath(info.filename).name.startswith("._")
    ]


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"{path}: not a readable zip archive: {exc}") from None


def read_json_member(path: Path, name: str) -> tuple[str, list[Any]]:
    """The json list in the member of zip ``path`` whose file name is ``name``, and the label
    that names it in errors (``<zip name>:<member>``)."""
    if not path.is_file():
        raise DataError(f"{path}: the annotation archive is missing")
    with _open_zip(path) as archive:
        found = [m for m in _members(archive) if PurePosixPath(m).name == name]
        if len(found) != 1:
            what = "no member" if not found else f"several members {found}"
            raise DataError(f"{path}: {what} named {name!r}")
        label = f"{path.name}:{found[0]}"
        try:
            items = json.loads(archive.read(found[0]))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{label}: not valid json: {exc}") from None
    if not isinstance(items, list):
        raise DataError(f"{label}: holds a {type(items).__name__}, not a list of items")
    return label, items


class ImageArchive:
    """The pictures of a zip, found by an item's ``image`` path (see the module docstring),
    each read once."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = _open_zip(path)
        self.members = set(_members(self.zip))
        # The folder a first suffix match found; the other items sit in it too, so lookups
        # stay O(1) instead of scanning ~80k names per item (train2014.zip).
        self.prefixes: list[str] = []
        self.saved: dict[str, tuple[str, int, int]] = {}

    def close(self) -> None:
        self.zip.close()

    def member(self, image: str, row: Row) -> str:
        """The member holding the item's ``image`` path."""
        path = image.strip().lstrip("/")
        path = path.removeprefix("./")
        for prefix in ["", *self.prefixes]:
            if prefix + path in self.members:
                return prefix + path
        found = sorted(m for m in self.members if m.endswith("/" + path))
        if not found:
            raise row.error(f"image {image!r} is not in {self.path.name}")
        if len(found) > 1:
            raise row.error(f"image {image!r} matches several members of {self.path.name}: {found}")
        self.prefixes.append(found[0][: -len(path)])
        return found[0]

    def save(self, image: str, row: Row, images: ImageStore) -> tuple[str, int, int]:
        """Store the item's picture; its records path, width and height."""
        name = self.member(image, row)
        if name not in self.saved:
            rel = images.save(self.zip.read(name), row, "image")
            with Image.open(images.records_dir / rel) as img:
                self.saved[name] = (rel, img.width, img.height)
        return self.saved[name]


def solution_box(row: Row) -> list[float]:
    """The item's ``solution``: four finite numbers x1 < x2, y1 < y2 (a json string of them is
    accepted)."""
    value = row.field("solution")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise row.error(f"field 'solution' is not a box [x1, y1, x2, y2]: {value!r}") from None
    if (
        not isinstance(value, list)
        or len(value) != 4
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    ):
        raise row.error(f"field 'solution' must be 4 finite numbers [x1, y1, x2, y2]: {value!r}")
    x1, y1, x2, y2 = (float(v) for v in value)
    if x2 <= x1 or y2 <= y1:
        raise row.error(f"field 'solution' {value} has x2 <= x1 or y2 <= y1")
    return [x1, y1, x2, y2]


def _check_size(row: Row, width: int, height: int) -> None:
    # A width / height that disagrees with the picture means the wrong picture (or a box in
    # another frame): refuse rather than score against it.
    for key, actual in (("width", width), ("height", height)):
        stated = row.data.get(key)
        if stated is not None and stated != actual:
            raise row.error(f"field {key!r} is {stated!r} but its picture is {width}x{height}")


def convert_item(
    row: Row, images: ImageStore, archive: ImageArchive, split: str, data_source: str
) -> Record:
    """One VLM-R1 REC item as a canonical grounding record (see the module docstring)."""
    image = row.field("image")
    if not isinstance(image, str):
        raise row.error(f"field 'image' must be a path: {image!r}")
    problem = row.field("problem")
    if not isinstance(problem, str):
        raise row.error(f"field 'problem' must be a string: {problem!r}")
    box = solution_box(row)
    rel, width, height = archive.save(image, row, images)
    _check_size(row, width, height)
    fitted = fit_box(box, width, height)
    if fitted is None:
        raise row.error(f"field 'solution' {box} is outside its {width}x{height} image {image!r}")
    return record(
        row,
        id=f"{split}-{row.index}",
        images=[rel],
        image_sizes=[[width, height]],
        problem=problem.strip(),
        answer=dumps_box(fitted),
        problem_type="grounding",
        boxes=[fitted],
        data_source=data_source,
        task=split,
        groups={"image": image.strip()},
    )
