"""RefCOCO / RefCOCO+ / RefCOCOg referring-expression comprehension, one format for the three
lmms-eval repackagings (one schema): ``lmms-lab/RefCOCO`` (splits ``val``, ``test``, ``testA``,
``testB``), ``lmms-lab/RefCOCOplus`` (``val``, ``testA``, ``testB``) and ``lmms-lab/RefCOCOg``
(``val``, ``test``); config ``default``, files ``data/<split>-NNNNN-of-NNNNN[-<hash>].parquet``
(lmms-lab has since renamed them ``lmms-lab-encoder/…``, the ids lmms-eval uses at HEAD).
Every split present under ``data/`` is converted; the split is the file name's prefix. vlrl
fetches only the standard test splits from them (RefCOCO and RefCOCO+ testA / testB, RefCOCOg
test); the val splits come from VLM-R1's own files (:mod:`vlrl.data.formats.vlm_r1_rec`).

Rows (objects) per split, from the dataset cards: RefCOCO val 8,811, test 5,000, testA 1,975,
testB 1,810; RefCOCOg val 7,573, test 5,023. RefCOCO testA / testB are the UNC splits' objects
(``jxu124/refcoco``'s card: validation 3,811, testA 1,975, testB 1,810). RefCOCO val holds 5,000
rows more than the UNC val (3,811 objects on 1,500 pictures, TensorFlow Datasets' ``ref_coco``
catalog), RefCOCOg val 5,000 more than the UMD val (2,573), and RefCOCO test is no UNC split:
5,000 is the size of the Google splits' val and test (same catalog), which partition objects
rather than pictures, so their pictures overlap the UNC / UMD train split. lmms-lab does not say
where the rows come from; vlrl does not use those splits. The expression counts below are
checked at conversion, so a non-standard split fails there whatever its row count.

Standard sizes, checked: a split must hold the expressions of a standard split of its name, else
the conversion fails naming its files, the count found and the sizes accepted
(:data:`STANDARD_EXPRESSIONS`: RefCOCO (UNC) val 10,834 / testA 5,657 / testB 5,095; RefCOCO+
(UNC) val 10,758 / testA 5,726 / testB 4,889; RefCOCOg (UMD) val 4,896 / test 9,602; sources in
:mod:`vlrl.data.formats.vlm_r1_rec`). The files do not say which of the three datasets they are,
so a split name accepts the size of each dataset that has it; the pinned ``repo_id`` says which.

Raw schema (the dataset card's ``dataset_info``), one row per referred object:

- ``question_id``: string (e.g. ``"469306"``), the referred object: lmms-eval passes it on as
  ``ann_id``; a repeat within a split is an error;
- ``image``: ``datasets.Image`` (parquet struct ``{bytes, path}``), the whole COCO train2014
  picture the box is drawn on;
- ``question``: string, lmms-eval's region-captioning instruction ("Please carefully observe the
  area circled in the image and come up with a caption for the area."), not read;
- ``answer``: list of strings, the object's referring expressions;
- ``segmentation``: list of float32 (a flat polygon), not read;
- ``bbox``: list of 4 float32, COCO ``[x, y, w, h]`` in absolute pixels of ``image``;
- ``iscrowd``: int8 and ``file_name``: string (``COCO_train2014_000000296747_0.jpg``), not read.

Mapping to :class:`vlrl.items.records.Record`, VLM-R1's REC protocol (``om-ai-lab/VLM-R1``
``src/eval/test_rec_r1.py`` over its ``rec_jsons_processed`` files, issue #11):

- one record per referring expression, not per row: VLM-R1's files hold one item per expression
  (``problem``/``normal_caption`` one sentence; its RefCOCO train file has the 120,624
  expressions of the UNC train split), and lmms-eval ``lmms_eval/tasks/refcoco/utils_rec.py::
  refcoco_bbox_rec_preprocess_dataset`` explodes ``answer`` the same way ("each answer should be
  its own row");
- ``problem`` = :data:`PROBLEM` with the expression (stripped), VLM-R1's data text
  ("Please provide the bounding box coordinate of the region this sentence describes: the lady
  with the blue shirt."); ``test_rec_r1.py`` appends its own thinking / JSON instruction, which
  vlrl's prompt format replaces. (lmms-eval's ``refcoco_bbox_rec_doc_to_text`` prefixes a request
  for 0-1 normalised coordinates instead, which does not fit Qwen2.5-VL's absolute pixels.)
- ``boxes`` = ``[[x, y, x + w, y + h]]`` in pixels of the stored (original) image, VLM-R1's
  ``solution`` (``[103.93, 299.99, 238.15, 477.41]`` for COCO ``[103.93, 299.99, 134.22,
  177.42]``); the float32 noise of the hub's ``bbox`` is removed by rounding to
  :data:`DECIMALS` places (COCO boxes have two); ``answer`` = :func:`vlrl.items.answers.dumps_box`;
  ``problem_type`` = ``grounding``;
- a box that leaves the image by at most :data:`EDGE_TOLERANCE` px is clamped to it; a box
  further out, or empty, is an error naming the row;
- ``id`` = ``<question_id>#<n>``, ``n`` the expression's place in ``answer``; ``groups`` =
  ``{"object": question_id}`` (the expressions of one object are a cluster); ``task`` = the
  split; ``data_source`` = ``refcoco`` for all three datasets (the benchmark config names which).

Scoring (protocol ``vlm_r1_rec``): correct iff IoU > 0.5 (strict) with the box of the first
``<answer>``, read as absolute pixels; the benchmarks draw VLM-R1's ``random.seed(42);
random.shuffle(data); data[:2000]`` (``subsample``) from lmms-lab's row order. VLM-R1 released
no test-split files and reports no test-split number, so there are no VLM-R1 items to match.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.answers import dumps_box
from vlrl.items.records import Record

DATA_SOURCE = "refcoco"
SPLITS = ("val", "test", "testA", "testB")
#: Split → {expressions: which standard split has that many} (the module docstring's sizes).
STANDARD_EXPRESSIONS = {
    "val": {10_834: "RefCOCO (UNC)", 10_758: "RefCOCO+ (UNC)", 4_896: "RefCOCOg (UMD)"},
    "testA": {5_657: "RefCOCO (UNC)", 5_726: "RefCOCO+ (UNC)"},
    "testB": {5_095: "RefCOCO (UNC)", 4_889: "RefCOCO+ (UNC)"},
    "test": {9_602: "RefCOCOg (UMD)"},
}
PATTERN = "data/*.parquet"
PROBLEM = "Please provide the bounding box coordinate of the region this sentence describes: {}."
#: Decimal places kept of a box coordinate (float32 noise beyond; COCO boxes have two).
DECIMALS = 3
#: Pixels a box may leave the image by and be clamped to it (annotation and rounding noise).
EDGE_TOLERANCE = 1.0


def split_of(file: str) -> str:
    """The split a hub file holds: its name up to the first ``-``.

    >>> split_of("data/testA-00000-of-00001-1b1f8a3c.parquet")
    'testA'
    """
    return Path(file).name.split("-", 1)[0]


def xywh_to_xyxy(bbox: list[float]) -> list[float]:
    """A COCO ``[x, y, w, h]`` box as ``[x1, y1, x2, y2]``, rounded to :data:`DECIMALS` places.

    >>> xywh_to_xyxy([103.93000030517578, 299.989990234375, 134.22000122070312, 177.4199981689453])
    [103.93, 299.99, 238.15, 477.41]
    """
    x, y, w, h = (round(float(v), DECIMALS) for v in bbox)
    return [x, y, round(x + w, DECIMALS), round(y + h, DECIMALS)]


def fit_box(box: list[float], width: int, height: int) -> list[float] | None:
    """``box`` clamped to a ``width`` × ``height`` image when it leaves it by at most
    :data:`EDGE_TOLERANCE` px; None when it leaves it by more or is empty after clamping.

    >>> fit_box([0.5, 1, 32.4, 24], 32, 24)
    [0.5, 1, 32, 24]
    >>> fit_box([0, 0, 34, 24], 32, 24) is None
    True
    """
    x1, y1, x2, y2 = box
    tol = EDGE_TOLERANCE
    if x1 < -tol or y1 < -tol or x2 > width + tol or y2 > height + tol:
        return None
    fitted = [max(x1, 0), max(y1, 0), min(x2, width), min(y2, height)]
    if fitted[2] <= fitted[0] or fitted[3] <= fitted[1]:
        return None
    return fitted


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for every referring expression of every row under ``data/``; then
    fail unless every split holds a standard split's expressions (before anything is written:
    :func:`vlrl.data.formats.convert_dataset` writes once every record is in)."""
    seen: dict[tuple[str, str], str] = {}
    files: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for row in parquet_rows(source, PATTERN):
        split = split_of(row.file)
        if split not in SPLITS:
            raise row.error(f"is in split {split!r}, not one of {list(SPLITS)}")
        question_id = object_id(row)
        first = seen.setdefault((split, question_id), row.where)
        if first != row.where:
            raise row.error(f"repeats question_id {question_id!r} of {first} in split {split!r}")
        files.setdefault(split, set()).add(row.file)
        for rec in convert_row(row, images, split, question_id):
            counts[split] = counts.get(split, 0) + 1
            yield split, rec
    for split, found in counts.items():
        check_standard(split, found, sorted(files[split]))


def check_standard(split: str, found: int, files: list[str]) -> None:
    """Refuse a split that does not hold the expressions of a standard split of its name.

    >>> check_standard("testB", 5095, ["data/testB-00000-of-00001.parquet"])
    >>> check_standard("test", 14000, ["data/test-00000-of-00002.parquet"])
    Traceback (most recent call last):
    ...
    vlrl.core.errors.DataError: data/test-...: split 'test' holds 14,000 expressions, ...
    """
    standard = STANDARD_EXPRESSIONS[split]
    if found not in standard:
        sizes = ", ".join(f"{n:,} ({name} {split})" for n, name in standard.items())
        raise DataError(
            f"{', '.join(files)}: split {split!r} holds {found:,} expressions, "
            f"expected one of {sizes}"
        )


def object_id(row: Row) -> str:
    """The row's ``question_id`` (an integer is accepted as its decimal string)."""
    value = row.field("question_id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise row.error(f"field 'question_id' must be a string: {value!r}")
    return str(value).strip()


def expressions(row: Row) -> list[str]:
    """The row's referring expressions, each stripped; none, or an empty one, is an error."""
    value = row.field("answer")
    if not isinstance(value, list) or not value:
        raise row.error(f"field 'answer' must be a non-empty list of expressions: {value!r}")
    for n, text in enumerate(value):
        if not isinstance(text, str) or not text.strip():
            raise row.error(f"field 'answer' item {n} is not an expression: {text!r}")
    return [text.strip() for text in value]


def object_box(row: Row, width: int, height: int) -> list[float]:
    """The row's ``bbox`` (xywh) as an xyxy box inside its ``width`` × ``height`` image."""
    bbox = row.field("bbox")
    if (
        not isinstance(bbox, list)
        or len(bbox) != 4
        or not all(isinstance(v, int | float) and math.isfinite(v) for v in bbox)
    ):
        raise row.error(f"field 'bbox' must be 4 finite numbers [x, y, w, h]: {bbox!r}")
    if bbox[2] <= 0 or bbox[3] <= 0:
        raise row.error(f"field 'bbox' {bbox} has a width or height <= 0")
    box = xywh_to_xyxy(bbox)
    fitted = fit_box(box, width, height)
    if fitted is None:
        raise row.error(
            f"field 'bbox' {bbox} (x1, y1, x2, y2 = {box}) is outside its {width}x{height} image"
        )
    return fitted


def convert_row(row: Row, images: ImageStore, split: str, question_id: str) -> list[Record]:
    """The records of one row: one per referring expression, sharing the image and the box."""
    texts = expressions(row)
    image = images.save(row.field("image"), row, "image")
    with Image.open(images.records_dir / image) as img:
        width, height = img.size
    box = object_box(row, width, height)
    return [
        record(
            row,
            id=f"{question_id}#{n}",
            images=[image],
            image_sizes=[[width, height]],
            problem=PROBLEM.format(text),
            answer=dumps_box(box),
            problem_type="grounding",
            boxes=[box],
            data_source=DATA_SOURCE,
            task=split,
            groups={"object": question_id},
        )
        for n, text in enumerate(texts)
    ]
