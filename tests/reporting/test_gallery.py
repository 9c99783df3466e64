"""vlrl.reporting.gallery: the same seeded items for every checkpoint, disagreements first, and
boxes drawn where scoring read them."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vlrl.benchmarks import load_benchmark
from vlrl.config import ReportConfig
from vlrl.core import paths
from vlrl.items.predictions import Prediction, ScoredItem, Scores, write_predictions
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.gallery import build, pick, predicted_box, thumbnail
from vlrl.reporting.labels import COLORS, TRUTH

EXP, BENCH = "tiny_shapes", "shapes_test"
GREEN = Image.new("RGB", (1, 1), TRUTH).getpixel((0, 0))
RED = Image.new("RGB", (1, 1), COLORS["grpo"]).getpixel((0, 0))


def _png(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def test_the_draw_is_seeded_and_prefers_disagreements():
    verdicts = {f"{i:02d}": (i % 2, (i // 2) % 2) for i in range(40)}
    tasks = {i: ("a", "b")[int(i) % 3 == 0] for i in verdicts}
    drawn = pick(verdicts, tasks, 6, seed=0, salt="bench")
    assert drawn == pick(verdicts, tasks, 6, seed=0, salt="bench")
    assert drawn != pick(verdicts, tasks, 6, seed=1, salt="bench")
    assert drawn != pick(verdicts, tasks, 6, seed=0, salt="other"), "each benchmark its own draw"
    assert all(len(set(verdicts[i])) == 2 for i in drawn)
    assert {tasks[i] for i in drawn[:2]} == {"a", "b"}, "tasks taken in turn"
    few = pick({"x": (1, 1), "y": (0, 1)}, {"x": "t", "y": "t"}, 6, seed=0)
    assert few == ["y", "x"], "disagreement first, then the rest, never more than there is"


def test_boxes_are_drawn_at_scale_in_their_colours(tmp_path):
    path = tmp_path / "white.png"
    Image.new("RGB", (100, 50), "white").save(path)
    png = thumbnail(path, 200, [([10, 10, 40, 40], TRUTH), ([60, 5, 90, 45], COLORS["grpo"])])
    image = _png(png)
    assert image.size == (200, 100)
    assert image.getpixel((21, 50)) == GREEN, "left edge of the reference box, x 10 → 20"
    assert image.getpixel((121, 50)) == RED, "left edge of the predicted box, x 60 → 120"
    assert image.getpixel((60, 50)) == (255, 255, 255), "inside a box: untouched"
    assert thumbnail(path, 200, [([40, 40, 10, 10], TRUTH)]), "a reversed box is drawn too"


def test_a_model_input_box_is_rescaled_as_scoring_does():
    common = dict(
        id="1",
        task="grounding",
        problem_type="grounding",
        problem="where?",
        answer="[50, 100, 100, 200]",
        prompt="p",
        response="r",
        model="m",
        checkpoint="grpo",
    )
    item = ScoredItem(
        id="1",
        task="grounding",
        problem_type="grounding",
        extracted='{"bbox_2d": [14, 28, 28, 56]}',
        correct=1,
        score=1.0,
        method="rule",
    )
    rescaled = Prediction(**common, input_size=[28, 56], image_sizes=[[100, 200]])
    assert predicted_box(rescaled, item) == [50.0, 100.0, 100.0, 200.0]
    assert predicted_box(Prediction(**common), item) == [14.0, 28.0, 28.0, 56.0]
    assert predicted_box(Prediction(**common), item.model_copy(update={"extracted": "no"})) is None
    assert predicted_box(Prediction(**common), item.model_copy(update={"extracted": None})) is None
    # half the frame: no rescale without both the input size and the original size
    unscaled = [14.0, 28.0, 28.0, 56.0]
    assert predicted_box(Prediction(**common, input_size=[28, 56]), item) == unscaled
    assert predicted_box(Prediction(**common, image_sizes=[[100, 200]]), item) == unscaled
    first = Prediction(**common, input_size=[28, 56], image_sizes=[[100, 200], [10, 10]])
    assert predicted_box(first, item) == [50.0, 100.0, 100.0, 200.0]


def _scores(checkpoint: str, items: list[ScoredItem]) -> Scores:
    return Scores(
        experiment=EXP,
        checkpoint=checkpoint,
        benchmark=BENCH,
        n=len(items),
        accuracy=0.5,
        ci_low=0.1,
        ci_high=0.9,
        per_task={},
        headline="accuracy",
        metrics={},
        confidence=0.95,
        generation_failures=0,
        judge=None,
        items=items,
    )


def test_the_gallery_shows_every_checkpoint_on_the_same_items(project):
    folder = paths.data_dir(EXP) / "images"
    folder.mkdir(parents=True)
    evaluation_scores = {}
    for checkpoint, box in (("base", "[0, 0, 5, 5]"), ("grpo", "[24, 24, 60, 60]")):
        predictions, items = [], []
        for i in range(5):
            Image.new("RGB", (80, 80), "white").save(folder / f"{i}.png")
            predictions.append(
                Prediction(
                    id=str(i),
                    task="grounding",
                    problem_type="grounding",
                    problem=f"the {i}",
                    answer="[20, 20, 60, 60]",
                    boxes=[[20, 20, 60, 60]],
                    images=[f"images/{i}.png"],
                    prompt="p",
                    response=f"<think>look {checkpoint}</think><answer>{box}</answer>",
                    model="m",
                    checkpoint=checkpoint,
                )
            )
            right = checkpoint == "grpo" and i < 3
            items.append(
                ScoredItem(
                    id=str(i),
                    task="grounding",
                    problem_type="grounding",
                    extracted=box,
                    correct=int(right),
                    score=float(right),
                    method="rule",
                )
            )
        write_predictions(paths.predictions_file(EXP, checkpoint, BENCH), predictions)
        evaluation_scores[checkpoint] = _scores(checkpoint, items)
    ev = Evaluation(BENCH, load_benchmark(BENCH), evaluation_scores)
    settings = ReportConfig.Gallery(n=2, thumbnail_px=160)

    gallery = build(EXP, ev, settings, seed=0, sft_enabled=True)
    assert [i.id for i in gallery] == [i.id for i in build(EXP, ev, settings, 0, True)]
    assert {i.id for i in gallery} <= {"0", "1", "2"}, "where base and GRPO disagree"
    item = gallery[0]
    assert [a.model for a in item.answers] == ["base", "SFT+GRPO"]
    assert [a.verdict for a in item.answers] == ["wrong, IoU 0.00", "right, IoU 1.00"]
    assert item.answers[1].reasoning == "look grpo" and item.answers[1].answer == "[24, 24, 60, 60]"
    image = _png(item.images[0])
    assert image.size == (160, 160)
    assert image.getpixel((41, 100)) == GREEN, "the reference box, x 20 → 40"
    assert image.getpixel((49, 100)) == RED, "GRPO's box, x 24 → 48"
    assert image.getpixel((100, 100)) == (255, 255, 255)

    (folder / "0.png").unlink()
    everything = build(EXP, ev, settings.model_copy(update={"n": 5}), 0, True)
    missing = next(i for i in everything if i.id == "0")
    assert missing.images == [] and missing.missing_images == ["images/0.png"]


@pytest.mark.parametrize("n", [0, 1])
def test_n_items_at_most(project, n):
    assert len(pick({"a": (1,), "b": (0,)}, {"a": "t", "b": "t"}, n, seed=3)) == n
