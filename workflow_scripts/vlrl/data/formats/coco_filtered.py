"""COCO_filtered, VLM-R1's COCO detection benchmark (arXiv:2504.07615v2 §5.1, Table 3), built
from COCO 2017 val: ``instances_val2017.json`` and the ``val2017`` pictures (a folder of them,
or ``val2017.zip``), found by file name anywhere in the downloaded dataset.

VLM-R1 released no file or script for it. Its authors' blog posts say how it was made:
"created from the COCO dataset's instances_val2017.json file. Since VLMs generally struggle at
recall in OD tasks (see ChatRex), we filter out categories with more than 10 annotation boxes,
ensuring that only categories with fewer boxes are included" (om-ai-lab.github.io
``2025_03_20.html``, "COCO filtered"), and that in its "All mode" the question "includes all 80
categories in COCO" (``2025_03_24.html`` §2.1; both files of ``om-ai-lab/om-ai-lab.github.io`` at
commit ``4640672be72ecabdac1958b75ab9672971147aca``). Which unit "filter out" applies to is not
said; vlrl reads it per image: an image is kept when no category has more than
:data:`MAX_BOXES` boxes in it and it has a box at all (so every image is asked about all 80
categories and none of its objects is missing from the ground truth). Every annotation is a
box (``iscrowd`` is not read: VLM-R1's ``calculate_map`` writes every gold box with
``iscrowd`` 0).

Mapping to :class:`vlrl.items.records.Record`, one per kept image in the file's image order,
into ``records/test.jsonl``: ``id`` = ``coco-<image id>``; ``problem`` = VLM-R1's OVD question
about the 80 category names in the file's category order
(:func:`vlrl.data.formats._detection.ovd_question`); ``options`` = those names; ``answer`` = the
image's boxes with their category's name, xyxy; ``boxes`` = the same clamped to the picture by
at most :data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px; ``problem_type`` = ``detection``;
``task`` = ``coco_filtered``; ``data_source`` = ``coco``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore
from vlrl.data.formats._detection import (
    Pictures,
    boxes_by_image,
    category_names,
    detection_record,
    load_json,
    object_rows,
)
from vlrl.items.records import Record

ANNOTATIONS = "instances_val2017.json"
PICTURES = ("val2017.zip", "val2017")
"""Where the pictures may be: COCO's zip, or the folder it unpacks to."""
MAX_BOXES = 10
"""At most this many boxes of one category in a kept image (the blog's "more than 10")."""
SPLIT = "test"
TASK = "coco_filtered"


def keep(boxes: list[tuple[str, list[float]]]) -> bool:
    """Whether an image with these ``(category, box)`` annotations is in COCO_filtered.

    >>> keep([("cup", [0, 0, 1, 1])] * 10), keep([("cup", [0, 0, 1, 1])] * 11), keep([])
    (True, False, False)
    """
    return bool(boxes) and max(Counter(label for label, _ in boxes).values()) <= MAX_BOXES


def _find(source: Path, name: str) -> Path:
    found = sorted(p for p in source.rglob(name) if "records" not in p.relative_to(source).parts)
    if len(found) != 1:
        what = "nothing" if not found else f"several: {[str(p) for p in found]}"
        raise DataError(f"{source}: expected one {name}, found {what}")
    return found[0]


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ``("test", record)`` for every image COCO_filtered keeps (module docstring)."""
    annotations = _find(source, ANNOTATIONS)
    file = annotations.relative_to(source).as_posix()
    data = load_json(annotations)
    names = category_names(data, file)
    labels = list(names.values())
    boxes = boxes_by_image(data, names, file)
    rows = object_rows(data, "images", file)
    kept = [row for row in rows if keep(boxes.get(row.field("id"), []))]
    if not kept:
        raise DataError(f"{annotations}: no image has boxes of at most {MAX_BOXES} per category")
    found = [
        p
        for name in PICTURES
        for p in source.rglob(name)
        if "records" not in p.relative_to(source).parts
    ]
    if not found:
        raise DataError(f"{source}: no COCO val2017 pictures ({' or '.join(PICTURES)})")
    pictures = Pictures(found[0], (row.text("file_name") for row in kept), images)
    for row in kept:
        found = boxes[row.field("id")]
        yield (
            SPLIT,
            detection_record(
                row,
                pictures,
                found,
                labels,
                id=f"coco-{row.field('id')}",
                data_source="coco",
                task=TASK,
            ),
        )
