"""The canonical record: one schema for every dataset after the data stage.

Converters go from each source format into :class:`Record`; :func:`validate_records` checks the
images and boxes against the files on disk and names the row at fault.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from PIL import Image, UnidentifiedImageError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from vlrl.core.errors import DataError

ProblemType = Literal[
    "multiple_choice", "numerical", "free_form", "ocr", "grounding", "detection", "yes_no"
]


class Record(BaseModel):
    """One example. ``boxes`` are xyxy in absolute pixels of the original image; ``reasoning``
    (optional) is the worked solution SFT puts inside the prompt format's thinking part."""

    model_config = ConfigDict(extra="forbid")

    id: str
    images: list[str] = Field(description="Paths relative to the records file's directory.")
    problem: str
    answer: str
    problem_type: ProblemType
    source_type: str | None = Field(
        None,
        description="The problem type under the source's own name where vlrl's is coarser "
        "(SophiaVL's 'text', a short text answer, is vlrl's free_form): a prompt format's "
        "per-type suffix is looked up by it first.",
    )
    accepted: list[str] = Field(
        default_factory=list,
        description="Other accepted answers beside ``answer``: every gold of an MMMU open "
        "question with a list of golds, every letter of a MathVista choice text that repeats.",
    )
    precision: int | None = Field(
        None, ge=0, description="Decimals a float answer is rounded to (MathVista's precision)."
    )
    options: list[str] = Field(default_factory=list)
    boxes: list[list[float]] = Field(default_factory=list)
    caption: str | None = None
    image_sizes: list[list[int]] = Field(
        default_factory=list, description="[width, height] per image."
    )
    data_source: str
    task: str | None = Field(None, description="Finer task label for per-task reporting.")
    reasoning: str | None = Field(None, description="A worked solution: the SFT <think> target.")
    response: str | None = Field(
        None,
        description="The source's own assistant turn, verbatim (cold-start SFT data such as "
        "Vision-SR1-Cold-9K): SFT trains on it as it is, with ``problem`` as the verbatim user "
        "turn; the prompt format is not applied to either.",
    )
    turns: list[dict[str, str]] | None = Field(
        None,
        description="The source's whole conversation, verbatim (LLaMA-Factory sharegpt "
        "``{role, content}`` turns: several rounds, ``<image>`` tags where the source put "
        "them): SFT trains on it as it is, with ``system`` as its system prompt.",
    )
    system: str | None = Field(None, description="The source's system prompt (with ``turns``).")
    groups: dict[str, str] = Field(
        default_factory=dict,
        description="Cluster ids for group metrics and clustered intervals, e.g. "
        "{'figure': '12', 'question': '12_3'} (HallusionBench), {'circular': '107'} (MMBench).",
    )

    @model_serializer(mode="wrap")
    def _without_empty_groups(self, handler):
        # Most data has no groups: leave the key out, so such records serialize as before.
        data = handler(self)
        for key in ("groups", "accepted"):
            if not getattr(self, key):
                data.pop(key, None)
        for key in ("precision", "response", "source_type", "turns", "system"):
            if getattr(self, key) is None:
                data.pop(key, None)
        return data


def check_record(record: Record, base_dir: Path, where: str) -> Record:
    """Open every image and check every box; fill ``image_sizes``.

    Raises DataError naming ``where`` (file:line or id).
    """
    sizes = []
    for rel in record.images:
        path = base_dir / rel
        if not path.is_file():
            raise DataError(f"{where}: image {rel!r} does not exist (looked in {base_dir})")
        try:
            with Image.open(path) as img:
                img.verify()
            with Image.open(path) as img:
                sizes.append([img.width, img.height])
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise DataError(f"{where}: image {rel!r} is unreadable: {exc}") from None
    if record.image_sizes and record.image_sizes != sizes:
        raise DataError(
            f"{where}: image_sizes {record.image_sizes} disagree with the files {sizes}"
        )
    for box in record.boxes:
        if len(box) != 4:
            raise DataError(f"{where}: box {box} must have 4 numbers (x1, y1, x2, y2)")
        if not sizes:
            raise DataError(f"{where}: has boxes but no image")
        width, height = sizes[0]
        x1, y1, x2, y2 = box
        if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
            raise DataError(
                f"{where}: box {box} is outside its {width}x{height} image or has x2<=x1 / y2<=y1"
            )
    if record.problem_type == "multiple_choice" and not record.options:
        raise DataError(f"{where}: multiple_choice record has no options")
    return record.model_copy(update={"image_sizes": sizes})


def parse_record(raw: dict, base_dir: Path, where: str) -> Record:
    """Validate one raw dict as a Record (schema, images, boxes)."""
    try:
        record = Record.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise DataError(f"{where}: {problems}") from None
    return check_record(record, base_dir, where)


def read_records(path: Path, limit: int | None = None) -> list[Record]:
    """Read and validate a canonical JSONL file; image paths are relative to its directory.

    Raises DataError naming ``file:line`` for the first bad row.
    """
    from vlrl.core.files import read_jsonl

    try:
        rows = read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise DataError(str(exc)) from None
    rows = rows[:limit] if limit is not None else rows
    return [parse_record(row, path.parent, f"{path}:{i + 1}") for i, row in enumerate(rows)]
