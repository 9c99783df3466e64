"""The data stage's ``datasets`` source, decision by decision, on hand-written records of a few
rows: which splits it writes, how it rewrites image paths and ids, where its bad-row messages
point and what it logs (vlrl.stages.data._run_datasets); and load_records' whole error."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import DataError, StageError
from vlrl.stages import data as stage

EXP = "tiny_shapes"
OUT = Path("results/tiny_shapes/data")
IMAGE = "../../../resources/datasets/{}/records/images/a.png"


def _row(row_id: str, **extra) -> dict:
    return {
        "id": row_id,
        "images": ["images/a.png"],
        "problem": f"question {row_id}",
        "answer": "1",
        "problem_type": "numerical",
        "data_source": "hand",
        **extra,
    }


def _dataset(name: str, splits: dict[str, list[dict]]) -> Path:
    """A converted dataset: records/<split>.jsonl and one 8x8 picture, images/a.png."""
    records = paths.dataset_resource(name) / "records"
    (records / "images").mkdir(parents=True)
    Image.new("RGB", (8, 8), (255, 255, 255)).save(records / "images" / "a.png")
    for split, rows in splits.items():
        (records / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return records


def _cfg(*splits: str):
    return load_experiment(EXP, ["data.source=datasets", *splits])


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_split_without_sources_after_an_empty_sft_train_is_still_written(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No sft_train sources: no sft_train.jsonl, and the splits after it (val, test) are written;
    one source per split: ids as the dataset gave them; one log line per split."""
    _dataset("fa", {"train": [_row("q1"), _row("q2")], "test": [_row("t1")]})
    caplog.set_level(logging.INFO, logger="vlrl.stages.data")
    stage.run(
        EXP,
        _cfg("data.train=[{dataset: fa, split: train}]", "data.test=[{dataset: fa, split: test}]"),
    )
    assert sorted(p.name for p in OUT.iterdir()) == [
        "report.json",
        "report.md",
        "test.jsonl",
        "train.jsonl",
        "val.jsonl",
    ]
    assert [r["id"] for r in _lines(OUT / "train.jsonl")] == ["q1", "q2"]
    assert [r["id"] for r in _lines(OUT / "test.jsonl")] == ["t1"]
    assert (OUT / "val.jsonl").read_text() == ""
    assert list(json.loads((OUT / "report.json").read_text())["splits"]) == ["train", "val", "test"]
    assert [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.data"] == [
        "data tiny_shapes: records of ['fa'] into results/tiny_shapes/data",
        "train: 2 records from ['fa']",
        "val: 0 records from []",
        "test: 1 records from ['fa']",
    ]


def test_sft_train_with_sources_is_written(project: Path) -> None:
    _dataset("fa", {"train": [_row("q1")], "val": [_row("v1")]})
    stage.run(
        EXP,
        _cfg(
            "data.train=[{dataset: fa, split: train}]", "data.sft_train=[{dataset: fa, split: val}]"
        ),
    )
    assert [r["id"] for r in _lines(OUT / "sft_train.jsonl")] == ["v1"]
    assert list(json.loads((OUT / "report.json").read_text())["splits"]) == [
        "train",
        "sft_train",
        "val",
        "test",
    ]


def test_a_row_without_images_becomes_a_text_only_record(project: Path) -> None:
    text_only = _row("q2")
    del text_only["images"]
    _dataset("fa", {"train": [_row("q1"), text_only]})
    stage.run(EXP, _cfg("data.train=[{dataset: fa, split: train}]"))
    rows = _lines(OUT / "train.jsonl")
    assert [(r["id"], r["images"], r["image_sizes"]) for r in rows] == [
        ("q1", [IMAGE.format("fa")], [[8, 8]]),
        ("q2", [], []),
    ]


def test_ids_are_prefixed_when_a_split_mixes_sources(project: Path) -> None:
    _dataset("fa", {"train": [_row("q1")]})
    _dataset("fb", {"dev": [_row("q1")]})
    stage.run(EXP, _cfg("data.train=[{dataset: fa, split: train}, {dataset: fb, split: dev}]"))
    rows = _lines(OUT / "train.jsonl")
    assert [(r["id"], r["images"]) for r in rows] == [
        ("fa/train/q1", [IMAGE.format("fa")]),
        ("fb/dev/q1", [IMAGE.format("fb")]),
    ]


def test_a_bad_row_is_named_in_the_final_directory(project: Path) -> None:
    """The rows are checked in a temporary directory; the message names where they would be
    published: the data directory's file, and it as the place the image was looked for."""
    _dataset("fa", {"train": [_row("q1"), _row("q2", images=["images/gone.png"])]})
    with pytest.raises(StageError) as err:
        stage.run(EXP, _cfg("data.train=[{dataset: fa, split: train}]"))
    assert str(err.value) == (
        "data tiny_shapes: 1 invalid rows (train 1 of 2); "
        "nothing was written to results/tiny_shapes/data:\n"
        "  results/tiny_shapes/data/train.jsonl:2: id q2: image "
        "'../../../resources/datasets/fa/records/images/gone.png' does not exist "
        "(looked in results/tiny_shapes/data)"
    )
    assert not OUT.exists()


def test_load_records_error_is_titled_with_the_file(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    path = tmp_path / "rows.jsonl"
    good, bad = _row("q1", images=["a.png"]), _row("q2", images=["a.png"], answer=" ")
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError) as err:
        stage.load_records(path)
    assert str(err.value) == (
        f"{path}: 1 of 2 rows are invalid:\n  {path}:2: id q2: answer is empty"
    )
