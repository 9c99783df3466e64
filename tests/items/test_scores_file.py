"""A scores file the report cannot read is named with what is wrong with it, whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlrl.core.errors import StageError
from vlrl.items.predictions import read_scores


def failure(path: Path, **kwargs) -> str:
    with pytest.raises(StageError) as err:
        read_scores(path, **kwargs)
    return str(err.value)


def test_each_unreadable_scores_file_is_named_by_the_reading_stage(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    assert failure(path) == f"report: {path} does not exist"  # the report reads them by default
    assert failure(path, stage="compare") == f"compare: {path} does not exist"
    path.write_text("{")
    assert failure(path) == (
        f"report: {path} is not a valid scores file: Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)"
    )
    path.write_text(json.dumps({"experiment": "e", "checkpoint": "c", "n": "many"}))
    assert failure(path).startswith(
        f"report: {path} is not a valid scores file: benchmark: Field required; n: Input should "
        "be a valid integer, unable to parse string as an integer; accuracy: Field required; "
    )


def test_a_scores_file_with_no_items_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    fields = dict(experiment="e", checkpoint="c", benchmark="b", n=0, accuracy=0.0, ci_low=0.0,
                  ci_high=0.0, per_task={}, headline="accuracy", metrics={}, confidence=0.95,
                  generation_failures=0, judge=None, items=[])  # fmt: skip
    path.write_text(json.dumps(fields))
    assert failure(path) == f"report: {path} has no scored items"
    path.write_text(json.dumps(fields | {"items": [{"id": "q1"}]}))
    assert "is not a valid scores file: items.0.task: Field required; items.0." in failure(path)


def test_a_missing_predictions_file_is_named_by_the_score_stage(tmp_path: Path) -> None:
    from vlrl.items.predictions import read_predictions

    path = tmp_path / "p.jsonl"
    with pytest.raises(StageError) as err:
        read_predictions(path)
    assert str(err.value) == f"score: predictions {path} do not exist; run the infer stage first"


def test_a_prediction_carries_what_scoring_needs_of_its_record() -> None:
    from vlrl.items.predictions import prediction_of
    from vlrl.items.records import Record

    record = Record(id="q1", images=["a.png"], problem="Where?", answer="x",
                    problem_type="grounding", data_source="t", accepted=["y"],
                    boxes=[[1.0, 2.0, 3.0, 4.0]], image_sizes=[[640, 480]])  # fmt: skip
    bare = prediction_of(record, "<answer>[1, 2, 3, 4]</answer>")
    assert (bare.prompt, bare.model, bare.checkpoint, bare.error) == ("", "", "", None)
    assert (bare.input_size, bare.image_sizes) == (None, None)  # not the model-input frame
    assert (bare.accepted, bare.boxes, bare.images) == (["y"], [[1, 2, 3, 4]], ["a.png"])
    framed = prediction_of(record, "", error="timed out", prompt="p", model="m",
                           checkpoint="grpo", input_size=[644, 476])  # fmt: skip
    assert (framed.prompt, framed.model, framed.checkpoint) == ("p", "m", "grpo")
    assert framed.error == "timed out"
    assert (framed.input_size, framed.image_sizes) == ([644, 476], [[640, 480]])
