"""VLM-R1's released REC evaluation files, read as the ``omlab/VLM-R1`` hub dataset stores them:
RefCOCO, RefCOCO+ and RefCOCOg val (``refcoco_val.json``, ``refcocop_val.json``,
``refcocog_val.json`` inside ``rec_jsons_processed.zip``) over the COCO train2014 pictures of
that repository's ``train2014.zip``. These are the files VLM-R1's Table 2 is measured on, and
their items are the standard UNC / UMD val splits, one item per referring expression.
The archives are read as downloaded, with :mod:`zipfile`. :mod:`vlrl.data.formats.lisa_grounding`
reads ``lisa_test.json`` of the same archive with this module's reader. The dataset
(``config/datasets/vlm_r1_rec.yaml``) pins ``omlab/VLM-R1`` at commit
``e5b48b7c5ed7e407f89924b225a6c6c5ebc356af``; its description says where that was read.

Ported from ``om-ai-lab/VLM-R1`` ``src/eval/test_rec_r1.py`` (last changed in commit
``00755a23ed1848641d2d14130824d843a080a09c``; HEAD ``90052f478646e38bc67363862f699b7afca6b337``):
it loads ``<DATA_ROOT>/<dataset>.json`` with ``json.load`` for ``TEST_DATASETS =
['refcoco_val', 'refcocop_val', 'refcocog_val']`` (commented out at HEAD, beside the active
``['lisa_test']``), joins each item's ``image`` to ``IMAGE_ROOT`` (the folder the COCO zip was
unpacked in) and reads ``problem`` (the question) and ``solution`` (the reference box).
``src/open-r1-multimodal/src/open_r1/grpo_rec.py`` reads the same three keys.

Raw layout (VLM-R1's README, "RefCOCO/+/g and LISA-Grounding Annotation files"; issue #11 shows
an item; the hub has no card for the archives and their member lists could not be read here, so
members are found by file name, wherever they lie, ``__MACOSX/`` and ``._*`` entries ignored):

- ``rec_jsons_processed.zip``: the eval files are json lists; an item holds ``image``
  (``"train2014/COCO_train2014_000000581857.jpg"``), ``problem`` ("Please provide the bounding
  box coordinate of the region this sentence describes: the lady with the blue shirt."),
  ``normal_caption`` (the expression), ``solution`` (``[103.93, 299.99, 238.15, 477.41]``: COCO
  ``[x, y, x + w, y + h]`` in pixels of the original picture), ``normalized_solution`` (× 1000 /
  size, for other models), ``width`` / ``height`` and ids, area, category. Only ``image``,
  ``problem``, ``normal_caption`` and ``solution`` are read; ``width`` / ``height``, when
  present, must agree with the picture. The archive also holds the training files
  (``*_train.jsonl``), which :mod:`vlrl.data.formats.vlm_r1_rec_train` reads with this module's
  helpers.
- ``train2014.zip`` (13.5 GB): COCO train2014, members ``train2014/COCO_train2014_<id>.jpg``; an
  item's ``image`` is that path (or the one member ending with ``/`` + it).

Row counts. Each json must hold the items of its standard split, checked before any picture is
read (a wrong file fails naming itself, the count expected and the count found): RefCOCO (UNC)
val 10,834, RefCOCO+ (UNC) val 10,758, RefCOCOg (UMD) val 4,896 expressions. Sources: the
FlagEval RefCOCO page (flageval.baai.ac.cn, "Visual Grounding": RefCOCO train 120,624 /
validation 10,834 / testA 5,657 / testB 5,095); the Ref-L4 card (huggingface.co/datasets/
JierunChen/Ref-L4: the val + test annotations reviewed, RefCOCO 21,586 = 10,834 + 5,657 + 5,095,
RefCOCO+ 21,373 = 10,758 + 5,726 + 4,889, RefCOCOg 14,498 = 4,896 + 9,602), whose totals
the per-split RefCOCO+ and RefCOCOg numbers sum to (no first-party page of each was found).

Mapping to :class:`vlrl.items.records.Record`, one per item, in the json's order (so ``subsample:
{n: 2000, seed: 42}`` draws the items test_rec_r1.py's ``random.seed(42); random.shuffle(data);
data[:2000]`` draws): ``id`` = ``<split>-<position in the json>``; ``problem`` = the item's
``problem``, stripped (test_rec_r1.py appends its thinking / JSON instruction, which vlrl's prompt
format replaces); ``boxes`` = ``[solution]``, a box leaving the picture by at most
:data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px clamped to it, one further out (or empty) an
error naming the item; ``answer`` = :func:`vlrl.items.answers.dumps_box`; ``problem_type`` =
``grounding``; ``image_sizes`` = the picture's; ``task`` = the split (the json's stem,
``refcoco_val``, ``refcocop_val``, ``refcocog_val``, also the records file name); ``data_source``
= ``refcoco``; ``groups`` = ``{"image": <the item's image path>}`` (the expressions of one
picture, its objects' among them, are a cluster).

VLM-R1's OVD evaluation (``src/eval/test_od_r1.py``, same commit) asks the same items another
question: its template formatted with ``normal_caption`` (the expression alone), not
``problem``. Each item is therefore written twice: as above in ``<split>.jsonl`` and, with the
item's ``normal_caption`` as it is as ``problem`` (same id, box, picture and task), in
``<split>_od.jsonl`` (the ``*_val_od`` benchmarks).
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, record
from vlrl.data.formats.refcoco import fit_box
from vlrl.items.answers import dumps_box
from vlrl.items.records import Record

DATA_SOURCE = "refcoco"
#: The annotation archive; the json files are members of it.
ANNOTATIONS = "rec_jsons_processed.zip"
#: Split → member file name of :data:`ANNOTATIONS`.
FILES = {
    "refcoco_val": "refcoco_val.json",
    "refcocop_val": "refcocop_val.json",
    "refcocog_val": "refcocog_val.json",
}
#: Member → the items it must hold (one per expression of the standard split; module docstring).
ROWS = {"refcoco_val.json": 10_834, "refcocop_val.json": 10_758, "refcocog_val.json": 4_896}
#: Member → what it is, for the row-count error.
ABOUT = {
    "refcoco_val.json": "RefCOCO (UNC) val",
    "refcocop_val.json": "RefCOCO+ (UNC) val",
    "refcocog_val.json": "RefCOCOg (UMD) val",
}
IMAGE_ARCHIVES = ("train2014.zip",)


OD_SUFFIX = "_od"
"""The splits VLM-R1's OVD evaluation asks (``<split>_od``: ``normal_caption`` as the question)."""


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for every item of the three val files, each in its json's order,
    and each again in ``<split>_od`` as VLM-R1's OVD evaluation asks it."""
    yield from convert_rec_jsons(
        source,
        images,
        files=FILES,
        rows=ROWS,
        about=ABOUT,
        image_archives=IMAGE_ARCHIVES,
        data_source=DATA_SOURCE,
        od_splits=True,
    )


def od_question(row: Row) -> str:
    """The item's ``normal_caption`` as it is: the question of VLM-R1's OVD evaluation
    (``src/eval/test_od_r1.py`` formats its template with ``x['normal_caption']``, unstripped).
    """
    caption = row.field("normal_caption")
    if not isinstance(caption, str) or not caption.strip():
        raise row.error(f"field 'normal_caption' must be a non-empty string: {caption!r}")
    return caption


def convert_rec_jsons(
    source: Path,
    images: ImageStore,
    *,
    files: Mapping[str, str],
    rows: Mapping[str, int],
    about: Mapping[str, str],
    image_archives: tuple[str, ...],
    data_source: str,
    od_splits: bool = False,
) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for every item of VLM-R1 REC json files ``files`` (split → member of
    :data:`ANNOTATIONS`), once every file holds its ``rows`` items, the pictures read from the
    one of ``image_archives`` present under ``source``; with ``od_splits``, each item also as
    ``<split>_od`` with :func:`od_question` as its problem (same id, box and picture)."""
    loaded = []
    for split, name in files.items():
        label, items = read_json_member(source / ANNOTATIONS, name)
        check_rows(label, items, rows[name], about[name])
        loaded.append((split, label, items))
    archive = ImageArchive(find_archive(source, image_archives))
    try:
        for split, label, items in loaded:
            for index, item in enumerate(items):
                row = Row(label, index, item)
                if not isinstance(item, dict):
                    raise row.error(f"is a {type(item).__name__}, not an object")
                converted = convert_item(row, images, archive, split, data_source)
                yield split, converted
                if od_splits:
                    asked = converted.model_copy(update={"problem": od_question(row)})
                    yield split + OD_SUFFIX, asked
    finally:
        archive.close()


def check_rows(label: str, items: list[Any], expected: int, about: str) -> None:
    """Refuse a json file that does not hold the ``expected`` items of the released file.

    >>> check_rows("a.zip:refcoco_val.json", [{}] * 3, 3, "RefCOCO (UNC) val")
    >>> check_rows("a.zip:refcoco_val.json", [{}] * 2, 3, "RefCOCO (UNC) val")
    Traceback (most recent call last):
    ...
    vlrl.core.errors.DataError: a.zip:refcoco_val.json holds 2 items, expected 3 (RefCOCO (UNC) val)
    """
    if len(items) != expected:
        found = f"{len(items):,} item" + ("" if len(items) == 1 else "s")
        raise DataError(f"{label} holds {found}, expected {expected:,} ({about})")


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


def read_member(path: Path, name: str) -> tuple[str, bytes]:
    """The bytes of the member of zip ``path`` whose file name is ``name``, and the label that
    names it in errors (``<zip name>:<member>``)."""
    if not path.is_file():
        raise DataError(f"{path}: the annotation archive is missing")
    with _open_zip(path) as archive:
        found = [m for m in _members(archive) if PurePosixPath(m).name == name]
        if len(found) != 1:
            what = "no member" if not found else f"several members {found}"
            raise DataError(f"{path}: {what} named {name!r}")
        return f"{path.name}:{found[0]}", archive.read(found[0])


def read_json_member(path: Path, name: str) -> tuple[str, list[Any]]:
    """The json list in the member of zip ``path`` whose file name is ``name``, and the label
    that names it in errors (``<zip name>:<member>``)."""
    label, data = read_member(path, name)
    try:
        items = json.loads(data)
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
