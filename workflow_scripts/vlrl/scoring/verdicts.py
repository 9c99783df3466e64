"""Rule verdicts on a benchmark's predictions: each prediction made a
:class:`vlrl.scoring.candidate.Candidate` and scored by a protocol's rules (the score stage's
first pass, before any judge; the report's blind baselines score their answers the same way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlrl.core.errors import StageError
from vlrl.items.predictions import Detections, Prediction, ScoredItem
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.detection import gold_detections, item_detections
from vlrl.scoring.protocols import ScoringProtocol, get_protocol


def rule_scores(
    predictions: list[Prediction],
    bench_cfg: Any,
    iou_threshold: float,
    where: Path,
    protocol: ScoringProtocol | None = None,
) -> list[ScoredItem]:
    """Score every prediction by the rules of ``protocol`` (default: the benchmark's;
    ``bench_cfg`` is a :class:`vlrl.benchmarks.BenchmarkConfig`: its ``protocol``, ``family``,
    ``relaxed_tolerance`` and ``box_frame`` are read). With
    ``box_frame`` ``model_input``, a grounding prediction must carry its ``input_size`` and
    ``image_sizes`` (the infer stage writes them)."""
    protocol = protocol or get_protocol(bench_cfg.protocol)
    items = []
    for lineno, prediction in enumerate(predictions, 1):
        common = {
            "id": prediction.id,
            "task": prediction.task,
            "groups": prediction.groups,
            "problem_type": prediction.problem_type,
        }
        if prediction.error:  # no response: nothing to score (see the module docstring)
            items.append(
                ScoredItem(
                    **common,
                    extracted=None,
                    correct=0,
                    score=0.0,
                    method="failed",
                    generation_error=prediction.error,
                    detections=_no_boxes(prediction, where, lineno),
                )
            )
            continue
        candidate = Candidate(
            response=prediction.response,
            answer=prediction.answer,
            problem_type=prediction.problem_type,
            options=tuple(prediction.options),
            accepted=tuple(prediction.accepted),
            boxes=tuple(tuple(box) for box in prediction.boxes),
            precision=prediction.precision,
            item_id=prediction.id,
            family=bench_cfg.family,
            iou_threshold=iou_threshold,
            relaxed_tolerance=bench_cfg.relaxed_tolerance,
            box_frames=_box_frames(prediction, bench_cfg.box_frame, where, lineno),
        )
        try:
            extracted, score, correct = protocol.score(candidate)
            # a detection item's boxes, for its benchmark's corpus metrics (COCO AP, NMS-AP)
            boxes = item_detections(candidate) if prediction.problem_type == "detection" else None
        except (ValueError, RuntimeError) as exc:  # no rule for the type; a missing parser
            raise StageError(f"score: {where}:{lineno}: {exc}") from None
        items.append(
            ScoredItem(
                **common,
                extracted=extracted,
                correct=correct,
                score=float(score),
                method="rule",
                detections=boxes,
            )
        )
    return items


def _no_boxes(prediction: Prediction, where: Path, lineno: int) -> Detections | None:
    """A failed detection item's boxes: none predicted, its gold ones (still to be found)."""
    if prediction.problem_type != "detection":
        return None
    try:
        return Detections(predicted=[], gold=gold_detections(prediction.answer, prediction.id))
    except ValueError as exc:
        raise StageError(f"score: {where}:{lineno}: {exc}") from None


def _box_frames(
    prediction: Prediction, box_frame: str, where: Path, lineno: int
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    if box_frame != "model_input" or prediction.problem_type != "grounding":
        return None
    sizes = prediction.image_sizes or []
    if not prediction.input_size or not sizes:
        raise StageError(
            f"score: {where}:{lineno}: the benchmark's boxes are in the model-input frame "
            "(box_frame: model_input) but the row has no input_size / image_sizes; rerun infer"
        )
    return tuple(prediction.input_size), tuple(sizes[0])
