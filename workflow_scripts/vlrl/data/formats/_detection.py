r"""What the detection benchmark formats share (:mod:`vlrl.data.formats.ovdeval`,
:mod:`vlrl.data.formats.coco_filtered`): VLM-R1's OVD question, the gold answer in the form its
OVD models answer, COCO-style annotation files and pictures found by file name in archives.

The question is VLM-R1's OVD training question, as a VLM-R1 author posted a training row in
``om-ai-lab/VLM-R1`` issue #246 (2025-04-28; the D³ rows of :mod:`vlrl.data.formats.vlm_r1_ovd`
are in that form): the labels as a Python list (``str(list)``), then the output instructions.
The paper (arXiv:2504.07615v2 §4.3) words the same instructions differently ("Please carefully
check the image and detect the following objects: {target list}. Output each detected
target's bbox coordinates in JSON format. …"); VLM-R1 released no evaluation prompt for its OVD
tables, and its models were trained on the issue's wording, so that is the one asked.
The ``od_json`` prompt format (VLM-R1's "enhanced prompt", ``qwen_module.py`` odLength) goes
before it.
"""

from __future__ import annotations

import json
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, record
from vlrl.data.formats.refcoco import fit_box, xywh_to_xyxy
from vlrl.items.records import Record

OVD_QUESTION = (
    "Please carefully check the image and detect the following objects: {labels}. Output the "
    "bbox coordinates of detected objects in JSON format in <answer></answer>. The bbox "
    'coordinate format should be: \n```json\n[{{"bbox_2d": [x1, y1, x2, y2], "label": "object '
    'name"}}]\n```\n. If no targets are detected in the image, simply respond with "None".'
)
"""The human turn of ``om-ai-lab/VLM-R1`` issue #246's training row, ``{labels}`` its list."""


def ovd_question(labels: list[str]) -> str:
    """VLM-R1's OVD question about ``labels`` (module docstring).

    >>> ovd_question(["cat", "rider's helmet"])[67:93]
    '[\\'cat\\', "rider\\'s helmet"].'
    """
    return OVD_QUESTION.format(labels=str(list(labels)))


def gold_answer(boxes: list[tuple[str, list[float]]]) -> str:
    r"""The gold answer as VLM-R1's OVD models write theirs (its training answers, issue #246):
    ``None`` without a box, else a ```` ```json ```` block of ``{"bbox_2d", "label"}``.

    >>> gold_answer([("cat", [1, 2, 3.5, 4])])
    '```json\n[{"bbox_2d": [1, 2, 3.5, 4], "label": "cat"}]\n```'
    >>> gold_answer([])
    'None'
    """
    if not boxes:
        return "None"
    items = [{"bbox_2d": box, "label": label} for label, box in boxes]
    return "```json\n" + json.dumps(items, ensure_ascii=False) + "\n```"


def load_json(path: Path) -> dict[str, Any]:
    """A COCO-style annotation file: an object with ``images``, ``annotations`` and
    ``categories`` lists."""
    if not path.is_file():
        raise DataError(f"{path}: the annotation file is missing")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a JSON file: {exc}") from None
    missing = [
        key
        for key in ("images", "annotations", "categories")
        if not isinstance(data, dict) or not isinstance(data.get(key), list)
    ]
    if missing:
        raise DataError(f"{path}: has no {missing} list (a COCO-style annotation file has them)")
    return data


def category_names(data: Mapping[str, Any], file: str) -> dict[Any, str]:
    """Category id → name of an annotation file."""
    names = {}
    for index, category in enumerate(data["categories"]):
        row = Row(file, index, category)
        if not isinstance(category, dict) or "id" not in category:
            raise row.error(f"category {category!r} has no id")
        names[category["id"]] = row.text("name", strip=False)
    return names


def object_rows(data: Mapping[str, Any], key: str, file: str) -> list[Row]:
    """The rows of the file's list ``key`` (``images``, ``annotations``), each an object (else
    an error naming it)."""
    rows = [Row(f"{file} {key}", i, value) for i, value in enumerate(data[key])]
    for row in rows:
        if not isinstance(row.data, dict):
            raise row.error(f"is not an object: {row.data!r}")
    return rows


def boxes_by_image(
    data: Mapping[str, Any], names: Mapping[Any, str], file: str
) -> dict[Any, list[tuple[str, list[float]]]]:
    """Image id → its annotations as ``(category name, COCO xywh box)``, in the file's order."""
    found: dict[Any, list[tuple[str, list[float]]]] = {}
    for row in object_rows(data, "annotations", file):
        category = row.field("category_id")
        if category not in names:
            raise row.error(f"category_id {category!r} is not one of the file's categories")
        bbox = row.field("bbox")
        if not (
            isinstance(bbox, list)
            and len(bbox) == 4
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in bbox)
        ):
            raise row.error(f"bbox must be 4 numbers [x, y, w, h]: {bbox!r}")
        found.setdefault(row.field("image_id"), []).append((names[category], bbox))
    return found


def gold_boxes(
    row: Row, boxes: list[tuple[str, list[float]]], width: int, height: int
) -> tuple[list[tuple[str, list[float]]], list[list[float]]]:
    """An image's gold boxes as ``(label, [x1, y1, x2, y2])`` (COCO xywh turned to xyxy,
    3 decimals) for its answer, and for the record's ``boxes`` the same clamped to the picture
    when they leave it by at most :data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px."""
    gold, fitted = [], []
    for label, bbox in boxes:
        box = xywh_to_xyxy(bbox)
        inside = fit_box(box, width, height)
        if inside is None:
            raise row.error(
                f"box {bbox} of {label!r} (x, y, w, h) is empty or leaves its {width}x{height} "
                "picture"
            )
        gold.append((label, box))
        fitted.append(inside)
    return gold, fitted


def detection_record(
    row: Row,
    pictures: Pictures,
    boxes: list[tuple[str, list[float]]],
    labels: list[str],
    *,
    id: str,
    data_source: str,
    task: str,
) -> Record:
    """One image's record: its picture (:class:`Pictures`), asked about ``labels``
    (:func:`ovd_question`), its gold ``boxes`` (COCO xywh) as the answer and, fitted to the
    picture, as the record's boxes (:func:`gold_boxes`)."""
    rel, width, height = pictures.get(row.text("file_name"), row)
    gold, fitted = gold_boxes(row, boxes, width, height)
    return record(
        row,
        id=id,
        images=[rel],
        problem=ovd_question(labels),
        answer=gold_answer(gold),
        problem_type="detection",
        options=labels,
        boxes=fitted,
        image_sizes=[[width, height]],
        data_source=data_source,
        task=task,
    )


class Pictures:
    """The pictures of an archive (tar, tar.gz, zip) or a folder, found by file name, each
    stored once with :class:`~vlrl.data.formats.ImageStore` (only those asked for are read)."""

    def __init__(self, path: Path, names: Iterable[str], images: ImageStore):
        self.path = path
        self.saved: dict[str, tuple[str, int, int]] = {}
        wanted = set(names)
        for name, read in self._members(path):
            base = PurePosixPath(name).name
            if base not in wanted:  # macOS forks (``__MACOSX/…/._name``) have other names
                continue
            if base in self.saved:
                raise DataError(f"{path}: several pictures are named {base!r}")
            rel = images.save(read(), Row(path.name, 0, {"image": name}), "image")
            with Image.open(images.records_dir / rel) as img:
                self.saved[base] = (rel, img.width, img.height)

    @staticmethod
    def _members(path: Path):
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file():
                    yield file.relative_to(path).as_posix(), file.read_bytes
        elif zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        yield info.filename, lambda info=info: archive.read(info)
        else:
            try:
                archive = tarfile.open(path)  # noqa: SIM115  (members are read while it is open)
            except (tarfile.TarError, OSError) as exc:
                raise DataError(f"{path}: not a readable tar or zip archive: {exc}") from None
            with archive:
                for member in archive:
                    if member.isfile():
                        yield member.name, lambda member=member: archive.extractfile(member).read()

    def get(self, name: str, row: Row) -> tuple[str, int, int]:
        """The records path, width and height of the picture named ``name``."""
        try:
            return self.saved[PurePosixPath(name).name]
        except KeyError:
            raise row.error(f"picture {name!r} is not in {self.path.name}") from None
