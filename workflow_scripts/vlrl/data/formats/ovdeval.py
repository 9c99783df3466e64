"""OVDEval (Yao et al., AAAI 2024, arXiv:2308.13177), as the ``omlab/OVDEval`` hub dataset stores
it: per sub-task an annotation file ``<task>.json`` and its pictures in ``<task>.tar.gz``, at the
top of the repository (the hub tree of commit ``99b2f3d1c0e395fa925c16046d72dee194a8df7f``; the
authors' ``Evaluation.md`` draws them unpacked as ``annotations/<task>.json`` and
``images/<task>/``). The hub holds eight sub-tasks, VLM-R1's Table 4 columns: celebrity, logo,
landmark (proper nouns), color, material (attributes), position, relationship, negation; the
paper's ninth, COCO objects, is not in it.

An annotation file is COCO-like (``om-ai-lab/OVDEval`` ``Evaluation.md`` at commit
``2ba0aa95bf71988207599d7b78cf0005ea6c9e19``, "Dataset Structure"): ``categories`` (``id``,
``name``: every label of the sub-task, hard negatives included), ``annotations`` (``bbox``
``[x, y, w, h]``, ``category_id``, ``image_id``), ``images`` (``id``, ``file_name``, ``width``,
``height``, ``text``: the image's positive labels, ``neg_text``: its hard negatives). The
protocol (``Evaluation.md`` "Result preparation"): each image is asked about the labels ``text``
+ ``neg_text``; the answers are scored by ``eval.py`` (NMS against the ground truth, then
COCO AP: :mod:`vlrl.scoring.detection_ap`).

Mapping to :class:`vlrl.items.records.Record`, one per image, every sub-task into
``records/test.jsonl`` in the order above and each file's image order: ``id`` =
``<task>-<image id>``; ``problem`` = VLM-R1's OVD question about ``text`` + ``neg_text`` in that
order, repeats dropped (:func:`vlrl.data.formats._detection.ovd_question`); ``options`` = those
labels (the categories a predicted box can be mapped to, by name); ``answer`` = the image's
boxes with their category's name, xyxy (:func:`vlrl.data.formats._detection.gold_answer`:
``None`` when it has none); ``boxes`` = the same, each clamped to the picture by at most
:data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px (one further out is an error);
``problem_type`` = ``detection``; ``task`` = the sub-task; ``data_source`` = ``ovdeval``.
Categories are told apart by name, as a model's label can only name them.

The paper's statistics (``docs/statistics.png`` of the repository at that commit) give the
images per sub-task: celebrity 2,244, logo 1,935, landmark 1,533, color 1,170, material 2,124,
position 2,109, relationship 2,169, negation 1,858; the files are converted as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row
from vlrl.data.formats._detection import (
    Pictures,
    boxes_by_image,
    category_names,
    detection_record,
    load_json,
    object_rows,
)
from vlrl.items.records import Record

TASKS = (
    "celebrity",
    "logo",
    "landmark",
    "color",
    "material",
    "position",
    "relationship",
    "negation",
)
"""The sub-tasks on the hub, in VLM-R1 Table 4's column order."""
SPLIT = "test"
DATA_SOURCE = "ovdeval"


def labels_of(row: Row) -> list[str]:
    """The labels an image is asked about: ``text`` then ``neg_text``, repeats dropped."""
    labels: list[str] = []
    for key in ("text", "neg_text"):
        value = row.field(key, allow_empty=True)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise row.error(f"field {key!r} must be a list of labels: {value!r}")
        labels += [v for v in value if v not in labels]
    if not labels:
        raise row.error("has no label to ask about (text and neg_text are empty)")
    return labels


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ``("test", record)`` for every image of every sub-task (module docstring)."""
    for task in TASKS:
        file = f"{task}.json"
        data = load_json(source / file)
        names = category_names(data, file)
        boxes = boxes_by_image(data, names, file)
        rows = object_rows(data, "images", file)
        pictures = Pictures(
            source / f"{task}.tar.gz", (row.text("file_name") for row in rows), images
        )
        for row in rows:
            labels = labels_of(row)
            found = boxes.get(row.field("id"), [])
            yield (
                SPLIT,
                detection_record(
                    row,
                    pictures,
                    found,
                    labels,
                    id=f"{task}-{row.field('id')}",
                    data_source=DATA_SOURCE,
                    task=task,
                ),
            )
