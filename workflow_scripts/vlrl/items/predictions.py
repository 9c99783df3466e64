"""The typed records evaluation passes between its stages: one :class:`Prediction` per item
(``infer`` writes them, ``score`` reads them) and one :class:`ScoredItem` per item inside a
:class:`Scores` file (``score`` writes it, ``report`` reads it).

Each file is written and read by the same model, so a field cannot be renamed on one side only,
and a file cut mid-line or holding a wrong type is an error naming the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from vlrl.core.errors import StageError
from vlrl.core.files import read_jsonl, write_json, write_jsonl
from vlrl.items.records import ProblemType, Record


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())


class Prediction(BaseModel):
    """One model response to one benchmark item, with what scoring needs of the item.

    ``error`` is None, or says why the ``openai`` backend got no response after its retries
    (``response`` is then ""): such an item is recorded as failed, never scored as an answer.
    ``input_size`` (``[width, height]`` of the first image as the processor resized it) and
    ``image_sizes`` are written only for benchmarks whose boxes are in the model-input frame.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    task: str
    groups: dict[str, str] = Field(default_factory=dict)
    input_size: list[int] | None = None
    image_sizes: list[list[int]] | None = None
    problem_type: ProblemType
    problem: str
    answer: str
    accepted: list[str] = Field(default_factory=list)
    precision: int | None = None
    options: list[str] = Field(default_factory=list)
    boxes: list[list[float]] = Field(default_factory=list)
    images: list[str] = Field(default_factory=list)
    prompt: str
    response: str
    error: str | None = None
    model: str
    checkpoint: str

    @model_serializer(mode="wrap")
    def _leave_out_unused(self, handler):
        # Most benchmarks have no groups and no model-input frame: leave the keys out.
        data = handler(self)
        for key in ("groups", "accepted"):
            if not getattr(self, key):
                data.pop(key, None)
        if self.precision is None:
            data.pop("precision", None)
        if self.input_size is None:
            data.pop("input_size", None)
            data.pop("image_sizes", None)
        return data


def prediction_of(
    record: Record,
    response: str,
    *,
    error: str | None = None,
    prompt: str = "",
    model: str = "",
    checkpoint: str = "",
    input_size: list[int] | None = None,
) -> Prediction:
    """The prediction row of one benchmark record and the model's response to it.

    >>> from vlrl.items.records import Record
    >>> r = Record(id="q1", images=[], problem="2+2?", answer="4", problem_type="numerical",
    ...            data_source="t")
    >>> prediction_of(r, "<answer>4</answer>").model_dump(exclude_defaults=True)["task"]
    'numerical'
    """
    return Prediction(
        id=record.id,
        task=record.task or record.problem_type,
        groups=record.groups,
        input_size=input_size,
        image_sizes=record.image_sizes if input_size is not None else None,
        problem_type=record.problem_type,
        problem=record.problem,
        answer=record.answer,
        accepted=record.accepted,
        precision=record.precision,
        options=record.options,
        boxes=record.boxes,
        images=record.images,
        prompt=prompt,
        response=response,
        error=error,
        model=model,
        checkpoint=checkpoint,
    )


class Detection(BaseModel):
    """One box of a detection answer: ``bbox_2d`` xyxy in pixels of the original image, and
    its label (the words the model wrote, or the gold category's name)."""

    model_config = ConfigDict(extra="forbid")

    bbox_2d: list[float] = Field(min_length=4, max_length=4)
    label: str


class Detections(BaseModel):
    """A detection item's boxes as its corpus metrics read them (COCO AP, NMS-AP, greedy
    precision and recall: :mod:`vlrl.scoring.detection_ap`): the boxes the protocol read from
    the response, with labels the item asked about, and the gold boxes."""

    model_config = ConfigDict(extra="forbid")

    predicted: list[Detection]
    gold: list[Detection]


Method = Literal["rule", "judge", "failed"]
"""How an item's verdict was reached: by the rules, by the judge, or not at all (generation
failed: scored 0)."""


class ScoredItem(BaseModel):
    """The verdict on one prediction.

    ``correct`` is 1 or 0, or None when the item is *unscored*: the judge was asked and gave no
    verdict (``judge_error`` says why) and ``score.judge.on_failure`` is ``unscored``. An
    unscored item counts neither as right nor as wrong: it is left out of every accuracy and
    counted in the scores file's ``unscored``. ``score`` is continuous in [0, 1] (IoU, ROUGE-L,
    a graded judge's score) or None when unscored.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    task: str
    groups: dict[str, str] = Field(default_factory=dict)
    problem_type: ProblemType
    extracted: str | None
    correct: Literal[0, 1] | None
    score: float | None
    method: Method
    judge_reply: str | None = None
    judge_error: str | None = None
    generation_error: str | None = None
    detections: Detections | None = Field(
        None, description="Detection items: the boxes read and the gold boxes (corpus metrics)."
    )

    @model_serializer(mode="wrap")
    def _detections_only_for_detection(self, handler):
        # Only detection items carry boxes: other scores files serialize as they did.
        data = handler(self)
        if self.detections is None:
            data.pop("detections", None)
        return data

    @property
    def scored(self) -> bool:
        return self.correct is not None


class JudgeMetadata(BaseModel):
    """Which judge decided a scores file's judged items, and how it went."""

    model_config = ConfigDict(extra="allow")

    model: str
    base_url: str
    mode: str
    prompt_version: str
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0


class MetricValue(BaseModel):
    """A benchmark metric: its value and, for proportions, its n and interval; for a group
    metric, ``left_out``: the groups it left out because a member is unscored."""

    value: float
    n: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    left_out: int | None = None

    @model_serializer(mode="wrap")
    def _left_out_only_for_groups(self, handler):
        data = handler(self)
        if self.left_out is None:
            data.pop("left_out", None)
        return data


class TaskSummary(BaseModel):
    n: int
    accuracy: float
    ci_low: float
    ci_high: float


class Scores(BaseModel):
    """``results/<exp>/scores/<checkpoint>/<bench>.json``: one checkpoint on one benchmark."""

    model_config = ConfigDict(extra="forbid")

    experiment: str
    checkpoint: str
    benchmark: str
    protocol: str = Field(
        "vlrl", description="The scoring protocol (vlrl.scoring.protocols) the verdicts follow."
    )
    n: int
    accuracy: float
    ci_low: float
    ci_high: float
    per_task: dict[str, TaskSummary]
    headline: str
    metrics: dict[str, MetricValue]
    confidence: float
    generation_failures: int
    unscored: int = 0
    judge: JudgeMetadata | None
    items: list[ScoredItem]

    @model_serializer(mode="wrap")
    def _unscored_only_when_any(self, handler):
        # Files from rule-scored runs stay as they were (the key appears once an item is
        # unscored), so adding the count changed no scores file.
        data = handler(self)
        if not self.unscored:
            data.pop("unscored", None)
        return data


# ------------------------------------------------------------------------------- reading
def read_predictions(path: Path, stage: str = "score") -> list[Prediction]:
    """The predictions file at ``path``; a missing file, bad line, wrong field or repeated id
    raises StageError naming the file and line."""
    if not path.is_file():
        raise StageError(f"{stage}: predictions {path} do not exist; run the infer stage first")
    try:
        rows = read_jsonl(path)
    except ValueError as exc:
        raise StageError(f"{stage}: {exc}") from None
    if not rows:
        raise StageError(f"{stage}: {path} has no predictions")
    predictions, seen = [], set()
    for lineno, row in enumerate(rows, 1):
        try:
            prediction = Prediction.model_validate(row)
        except ValidationError as exc:
            raise StageError(f"{stage}: {path}:{lineno}: {_problems(exc)}") from None
        if prediction.id in seen:
            raise StageError(f"{stage}: {path}:{lineno}: id {prediction.id!r} appears twice")
        seen.add(prediction.id)
        predictions.append(prediction)
    return predictions


def write_predictions(path: Path, predictions: list[Prediction]) -> None:
    """Write predictions as JSONL, atomically."""
    write_jsonl(path, (p.model_dump(mode="json") for p in predictions))


def read_scores(path: Path, stage: str = "report") -> Scores:
    """A scores file; a missing, malformed or empty one raises StageError naming it."""
    if not path.is_file():
        raise StageError(f"{stage}: {path} does not exist")
    try:
        scores = Scores.model_validate(json.loads(path.read_text()))
    except ValueError as exc:  # JSONDecodeError and ValidationError
        detail = _problems(exc) if isinstance(exc, ValidationError) else str(exc)
        raise StageError(f"{stage}: {path} is not a valid scores file: {detail}") from None
    if not scores.items:
        raise StageError(f"{stage}: {path} has no scored items")
    return scores


def write_scores(path: Path, scores: Scores) -> None:
    """Write a scores file, atomically."""
    write_json(path, scores.model_dump(mode="json"))


def items_as_dicts(items: list[ScoredItem]) -> list[dict[str, Any]]:
    """Scored items as plain dicts, for the metric and statistics functions."""
    return [item.model_dump() for item in items]
