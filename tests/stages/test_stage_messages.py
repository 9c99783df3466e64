"""Small decisions of the score, data and infer stages, in process: which benchmarks a rescore
asks and what it says of the others, the data stage's one error for every bad row, and the
model-input frame inference reads boxes in (vlrl.stages.score, .data, .infer)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PIL import Image

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.data.validate import Checked, Problem
from vlrl.stages import data as data_stage
from vlrl.stages import infer, score


@pytest.fixture()
def scored(project: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """score_benchmark recorded (returns a label), read_scores reading a label file."""
    calls: list[tuple] = []

    def score_benchmark(exp, cfg, checkpoint, bench, protocol, out):
        calls.append((exp, cfg, checkpoint, bench, protocol, out))
        return f"rescored {checkpoint} {bench}"

    monkeypatch.setattr(score, "score_benchmark", score_benchmark)
    monkeypatch.setattr(score, "read_scores", lambda path: f"stage {path.read_text()}")
    return calls


def test_rescore_scores_each_checkpoint_of_each_supporting_benchmark(
    scored: list[tuple], caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_experiment("tiny_shapes")
    stage_file = paths.scores_file("e", "grpo", "refcoco_val")
    stage_file.parent.mkdir(parents=True)
    stage_file.write_text("grpo scores")
    with caplog.at_level(logging.WARNING, logger="vlrl.stages.score"):
        pairs = score.rescore(
            "e", cfg, "vlm_r1_rec", ["base", "grpo"], ["mmvet", "refcoco_val", "chartqa"]
        )
    assert scored == [
        ("e", cfg, c, "refcoco_val", "vlm_r1_rec", paths.rescored_file("e", "vlm_r1_rec", c, b))
        for c, b in [("base", "refcoco_val"), ("grpo", "refcoco_val")]
    ]
    assert pairs == [
        ("rescored base refcoco_val", None),  # no stage scores of base: None, nothing read
        ("rescored grpo refcoco_val", "stage grpo scores"),
    ]
    assert caplog.messages == [
        "rescore: chartqa does not support vlm_r1_rec; skipped",
        "rescore: mmvet does not support vlm_r1_rec; skipped",
    ]


def test_rescore_defaults_to_the_experiments_checkpoints_and_benchmarks(
    scored: list[tuple],
) -> None:
    cfg = load_experiment("tiny_shapes")
    score.rescore("e", cfg, "vlmevalkit_2608")
    asked = [(c, b) for _, _, c, b, _, _ in scored]
    assert asked == [
        (c, b) for c in ("base", "sft", "grpo") for b in ("shapes_test", "shapes_test_blank")
    ]


def test_rescore_without_a_supporting_benchmark_lists_what_each_supports(
    scored: list[tuple],
) -> None:
    with pytest.raises(StageError) as err:
        score.rescore("e", load_experiment("tiny_shapes"), "vlm_r1_rec", None, ["mmvet", "mme"])
    assert str(err.value) == (
        "rescore: no benchmark supports protocol 'vlm_r1_rec' (mmvet: ['mmvet_official']; "
        f"mme: {load_benchmark_protocols('mme')})"
    )
    assert not scored


def load_benchmark_protocols(name: str) -> list[str]:
    from vlrl.benchmarks import load_benchmark

    return load_benchmark(name).protocols


def test_the_data_stages_error_counts_and_lists_every_bad_row_of_every_split(
    project: Path,
) -> None:
    checked = {
        "train": Checked(problems=[Problem("t.jsonl:2", "a", "no answer")], rows=5),
        "val": Checked(rows=3),
        "test": Checked(
            problems=[Problem("s.jsonl:1", "b", "bad box"), Problem("s.jsonl:4", None, "empty")],
            rows=9,
        ),
    }
    err = data_stage._invalid_data_error("tiny", checked)
    assert str(err) == (
        f"data tiny: 3 invalid rows (train 1 of 5, test 2 of 9); nothing was written to "
        f"{paths.data_dir('tiny')}:\n"
        "  t.jsonl:2: id a: no answer\n"
        "  s.jsonl:1: id b: bad box\n"
        "  s.jsonl:4: id ?: empty"
    )


def test_inference_reads_each_items_first_image_in_the_processors_frame(
    tiny_model_dir: Path, tiny_processor, tmp_path: Path
) -> None:
    """Sizes from the image header, in the frame the processor makes (image_grid_thw x 14); an
    item without an image has none, and the items after it still get theirs."""
    wide, tall = tmp_path / "wide.png", tmp_path / "tall.png"
    Image.new("RGB", (300, 100)).save(wide)
    Image.new("RGB", (64, 200)).save(tall)

    def frame(path: Path) -> list[int]:
        with Image.open(path) as img:
            grid = tiny_processor.image_processor(images=[img], return_tensors="pt")
        _frames, h, w = (int(v) for v in grid["image_grid_thw"][0])
        return [w * 14, h * 14]

    sizes = infer.model_input_sizes(tiny_model_dir, [[str(wide), str(tall)], [], [str(tall)]])
    assert sizes == [frame(wide), None, frame(tall)]
    assert frame(wide) != frame(tall)
