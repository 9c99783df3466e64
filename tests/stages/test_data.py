"""The data stage: files, report, atomic output, no train/test overlap, row-level errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import DataError, StageError
from vlrl.data import shapes
from vlrl.items.records import Record
from vlrl.stages import data as stage

REPO = Path(__file__).resolve().parents[2]
SMALL = ["data.shapes.n_train=40", "data.shapes.n_val=10", "data.shapes.n_test=20"]
EXP = "tiny_shapes"


def _cfg(extra: list[str] | None = None):
    return load_experiment(EXP, SMALL + (extra or []))


def _digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _leftovers(project: Path) -> list[Path]:
    return list((project / "results" / EXP).glob("data.tmp-*"))


def test_stage_writes_splits_images_and_report(project):
    stage.run(EXP, _cfg())
    out = project / paths.data_dir(EXP)
    sizes = {"train": 40, "val": 10, "test": 20}
    for split, n in sizes.items():
        records = stage.load_records(out / f"{split}.jsonl")
        assert len(records) == n
        assert all(r.images[0].startswith(f"images/{split}/") for r in records)
        assert len(list((out / "images" / split).glob("*.png"))) == n
    # The default's SFT learns from its imperfect teacher: the same questions about the same
    # images, answered from what the teacher saw.
    train = {r.id: r for r in stage.load_records(out / "train.jsonl")}
    taught = stage.load_records(out / "sft_train.jsonl")
    assert [r.id for r in taught] == list(train)
    assert all(r.problem == train[r.id].problem for r in taught)
    assert any(r.answer != train[r.id].answer for r in taught)
    report = json.loads((out / "report.json").read_text())
    assert list(report["splits"]) == ["train", "sft_train", "val", "test"]
    assert report["splits"]["train"]["tasks"] == {"arithmetic": 20, "count": 20}
    assert report["splits"]["sft_train"]["records"] == 40
    assert all(s["records"] == sizes.get(name, 40) for name, s in report["splits"].items())
    assert all("invalid" not in s["rejected"] for s in report["splits"].values())
    markdown = (out / "report.md").read_text()
    assert "| train | 40 |" in markdown and "## Rejected rows" in markdown
    assert not _leftovers(project)


def test_stage_is_deterministic_and_replaces_its_output(project):
    """A rerun replaces the directory with byte-identical files (DVC sees no change)."""
    stage.run(EXP, _cfg())
    first = _digest(project / paths.data_dir(EXP))
    stage.run(EXP, _cfg())
    assert _digest(project / paths.data_dir(EXP)) == first
    stage.run(EXP, _cfg(["seed=1"]))
    assert _digest(project / paths.data_dir(EXP)) != first, "the experiment seed reaches the data"


def test_no_scene_and_question_is_shared_between_train_and_test(project):
    stage.run(EXP, _cfg(["data.shapes.n_train=200", "data.shapes.n_test=100"]))
    out = project / paths.data_dir(EXP)

    def keys(split: str) -> set[tuple[str, str]]:
        return {
            (hashlib.sha256((out / r.images[0]).read_bytes()).hexdigest(), r.problem)
            for r in stage.load_records(out / f"{split}.jsonl")
        }

    assert not keys("train") & keys("test")
    assert not keys("val") & keys("test")


@pytest.mark.parametrize(
    ("fail_on", "reason"),
    [
        ("train", "the last split fails after test and val were written"),
        ("test", "the first split fails before anything was written"),
    ],
)
def test_a_failure_midway_leaves_no_output(project, monkeypatch, fail_on, reason):
    real = shapes.generate_split

    def failing(cfg, split, *args, **kwargs):
        if split == fail_on:
            raise RuntimeError("killed midway")
        return real(cfg, split, *args, **kwargs)

    monkeypatch.setattr(shapes, "generate_split", failing)
    with pytest.raises(RuntimeError, match="killed midway"):
        stage.run(EXP, _cfg())
    assert not (project / paths.data_dir(EXP)).exists(), reason
    assert not _leftovers(project), "the temporary directory is removed"


def test_a_failed_rerun_keeps_the_previous_complete_output(project, monkeypatch):
    stage.run(EXP, _cfg())
    before = _digest(project / paths.data_dir(EXP))
    monkeypatch.setattr(stage, "write_json", lambda *a, **k: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError, match="disk"):
        stage.run(EXP, _cfg(["seed=3"]))
    assert _digest(project / paths.data_dir(EXP)) == before
    assert not _leftovers(project)


def _converted(project: Path, shapes_data: Path, name: str) -> Path:
    """A downloaded dataset as its format leaves it: records/<split>.jsonl and their images."""
    import shutil

    records = project / paths.dataset_resource(name) / "records"
    shutil.copytree(shapes_data, records)
    return records


DATASETS = [
    "data.source=datasets",
    "data.train=[{dataset: fx, split: train, max_samples: 12}, {dataset: fy, split: train}]",
    "data.sft_train=[{dataset: fy, split: val}]",
    "data.test=[{dataset: fx, split: test}]",
]


def test_datasets_source_reads_converted_records(project, shapes_data):
    _converted(project, shapes_data, "fx")
    _converted(project, shapes_data, "fy")
    stage.run(EXP, _cfg(DATASETS))
    out = project / paths.data_dir(EXP)
    train = stage.load_records(out / "train.jsonl")
    # 12 of fx's 40 drawn with the seed, then all 40 of fy's; ids name their dataset.
    assert len(train) == 52
    assert sum(r.id.startswith("fx/train/") for r in train) == 12
    assert len({r.id for r in train}) == 52
    # Pictures stay in the datasets: the paths lead there from the data directory.
    assert all(p.startswith("../../../resources/datasets/") for r in train for p in r.images)
    assert len(stage.load_records(out / "sft_train.jsonl")) == 5
    assert len(stage.load_records(out / "test.jsonl")) == 20
    assert stage.load_records(out / "val.jsonl") == []
    report = json.loads((out / "report.json").read_text())
    assert report["source"] == "datasets"
    assert report["splits"]["train"]["sources"][0] == {
        "dataset": "fx",
        "split": "train",
        "max_samples": 12,
    }
    again = _cfg(DATASETS)
    stage.run(EXP, again)
    assert [r.id for r in stage.load_records(out / "train.jsonl")] == [r.id for r in train]


def test_datasets_source_names_a_missing_split(project, shapes_data):
    _converted(project, shapes_data, "fx")
    cfg = _cfg(["data.source=datasets", "data.train=[{dataset: fx, split: trian}]"])
    with pytest.raises(StageError, match=r"no converted split 'trian'.*\['test', 'train', 'val'\]"):
        stage.run(EXP, cfg)
    assert not (project / paths.data_dir(EXP)).exists()


def test_datasets_source_names_every_bad_row(project, shapes_data):
    records = _converted(project, shapes_data, "fx")
    rows = (records / "train.jsonl").read_text().splitlines()
    bad = json.loads(rows[3]) | {"answer": ""}
    (records / "train.jsonl").write_text("\n".join([*rows[:3], json.dumps(bad), *rows[4:]]) + "\n")
    cfg = _cfg(["data.source=datasets", "data.train=[{dataset: fx, split: train}]"])
    with pytest.raises(StageError, match=r"train.jsonl:4"):
        stage.run(EXP, cfg)


def test_split_lists_need_the_datasets_source(project):
    from vlrl.config import ConfigProblems

    with pytest.raises(
        ConfigProblems, match=r"data.train: is read only with data.source: datasets"
    ):
        _cfg(["data.train=[{dataset: fx, split: train}]"])
    with pytest.raises(ConfigProblems, match=r"data.train: data.source is datasets: list"):
        _cfg(["data.source=datasets"])


# ------------------------------------------------------------------------------ load_records
def _write_png(path: Path, size: int = 32) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), (255, 255, 255)).save(path)


GOOD = Record(
    id="ok",
    images=["img/ok.png"],
    problem="How many shapes are in the image?",
    answer="1",
    problem_type="numerical",
    data_source="t",
).model_dump()


@pytest.mark.parametrize(
    ("line", "message", "reason"),
    [
        ({**GOOD, "images": ["img/missing.png"]}, "does not exist", "missing image"),
        ({**GOOD, "images": ["img/garbage.png"]}, "unreadable", "not an image"),
        ({**GOOD, "boxes": [[0, 0, 40, 10]]}, "outside", "box wider than the 32 px image"),
        ({**GOOD, "boxes": [[5, 5, 5, 10]]}, "x2<=x1", "empty box"),
        ({**GOOD, "colour": "red"}, "Extra inputs", "unknown key"),
        ({**GOOD, "problem_type": "essay"}, "problem_type", "unknown problem type"),
        ("{not json", "not valid JSON", "broken line"),
        ([1, 2], "JSON object", "not a mapping"),
    ],
)
def test_load_records_names_the_file_and_line(tmp_path, line, message, reason):
    _write_png(tmp_path / "img" / "ok.png")
    (tmp_path / "img" / "garbage.png").write_bytes(b"this is not a png")
    path = tmp_path / "rows.jsonl"
    bad = line if isinstance(line, str) else json.dumps(line)
    path.write_text(json.dumps(GOOD) + "\n\n" + bad + "\n")
    with pytest.raises(DataError, match=message) as info:
        stage.load_records(path)
    assert f"{path}:3:" in str(info.value), reason


def test_load_records_reads_valid_rows_and_fills_image_sizes(tmp_path):
    _write_png(tmp_path / "img" / "ok.png", size=40)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    (record,) = stage.load_records(path)
    assert record.image_sizes == [[40, 40]]


def test_load_records_on_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such records file"):
        stage.load_records(tmp_path / "nope.jsonl")
