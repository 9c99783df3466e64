"""vlrl.reporting.gallery: the same seeded items for every checkpoint, disagreements first, and
boxes drawn where scoring read them."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from vlrl.benchmarks import load_benchmark
from vlrl.config import ReportConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.items.predictions import Prediction, ScoredItem, Scores, write_predictions
from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.gallery import (
    _spread,
    build,
    pick,
    predicted_box,
    reasoning,
    thumbnail,
    verdict,
)
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


# ---------------------------------------------------------------------------------- each part
@pytest.mark.parametrize(
    ("response", "limit", "shown"),
    [
        pytest.param("<think> a b </think><answer>1</answer>", 10, "a b", id="think-stripped"),
        pytest.param("<think>open to the end", 100, "open to the end", id="think-unclosed"),
        pytest.param("<think>12345</think>", 5, "12345", id="exactly-the-limit-is-whole"),
        pytest.param("<think>1234 6</think>", 5, "1234 …", id="cut-then-trailing-space-dropped"),
        pytest.param("so <answer>2 and on", 100, "so", id="answer-unclosed-removed"),
        pytest.param("<answer>a</answer> then <answer>b</answer>", 100, "then", id="answers"),
        pytest.param("<think>  </think>rest", 100, fmt.DASH, id="empty-think-is-a-dash"),
        pytest.param("", 100, fmt.DASH, id="empty-response"),
    ],
)
def test_reasoning(response, limit, shown):
    assert reasoning(response, limit) == shown


def _scored(**fields) -> ScoredItem:
    base = dict(id="1", task="t", problem_type="numerical", extracted="3", correct=1, score=1.0)
    return ScoredItem(**{**base, "method": "rule", **fields})


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        pytest.param({}, "right", id="right-by-rules"),
        pytest.param({"correct": 0, "score": 0.0}, "wrong", id="wrong-by-rules"),
        pytest.param({"method": "judge"}, "right (judge)", id="judged"),
        pytest.param({"correct": 0, "method": "failed"}, "wrong (generation failed)", id="failed"),
        pytest.param({"problem_type": "grounding", "score": 0.456}, "right, IoU 0.46", id="iou"),
        pytest.param(
            {"problem_type": "grounding", "score": 0.5, "method": "judge"},
            "right, IoU 0.50 (judge)",
            id="iou-judged",
        ),
        pytest.param({"problem_type": "grounding", "score": None}, "right", id="no-iou"),
        pytest.param({"correct": None, "score": None}, "unscored (judge gave no verdict)", id="u"),
    ],
)
def test_verdict(fields, shown):
    assert verdict(_scored(**fields)) == shown


def test_spread_of_nothing_is_nothing_and_unscored_differs_from_scored():
    assert _spread([], {}) == []
    assert pick({"a": (None, 1), "b": (1, 1)}, {"a": "t", "b": "t"}, 1, seed=0) == ["a"]
    assert pick({"a": (None, None), "b": (0, 1)}, {"a": "t", "b": "t"}, 1, seed=0) == ["b"]


def test_a_thumbnail_keeps_a_side_of_at_least_a_pixel_and_thicker_lines_when_larger(tmp_path):
    path = tmp_path / "strip.png"
    Image.new("RGB", (300, 2), "white").save(path)
    assert _png(thumbnail(path, 100)).size == (100, 1)
    square = tmp_path / "square.png"
    Image.new("RGB", (100, 100), "white").save(square)
    image = _png(thumbnail(square, 512, [([50, 50, 80, 80], TRUTH)]))
    assert image.size == (512, 512)
    row = [image.getpixel((x, 300)) for x in range(250, 262)]
    assert row.count(GREEN) == 4, "a 512-pixel thumbnail draws lines 512 // 128 pixels wide"
    small = _png(thumbnail(square, 128, [([50, 50, 80, 80], TRUTH)]))
    assert [small.getpixel((x, 75)) for x in range(60, 70)].count(GREEN) == 2, "at least 2"


def test_the_gallery_shows_failures_missing_answers_and_only_items_every_checkpoint_has(project):
    folder = paths.data_dir(EXP) / "images"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        Image.new("RGB", (20, 20), "white").save(folder / f"{name}.png")
    images = [f"images/{name}.png" for name in "abcd"]
    common = dict(task="count", problem_type="numerical", answer="3", prompt="p", model="m")
    evaluation_scores = {}
    for checkpoint, response, error in (
        ("base", "", "timed out"),
        ("sft", "I see <think>three</think> no answer tag", None),
    ):
        ids = ["1", "2"] if checkpoint == "base" else ["1", "3"]
        predictions = [
            Prediction(id=i, problem=f"q{i} of {checkpoint}", images=images, options=["3", "4"],
                       response=response, error=error, checkpoint=checkpoint, **common)
            for i in ids
        ]  # fmt: skip
        write_predictions(paths.predictions_file(EXP, checkpoint, BENCH), predictions)
        items = [
            ScoredItem(id=i, task="count", problem_type="numerical", correct=0, score=0.0,
                       extracted=None, method="failed" if error else "rule")
            for i in ids
        ]  # fmt: skip
        evaluation_scores[checkpoint] = _scores(checkpoint, items)
    ev = Evaluation(BENCH, load_benchmark(BENCH), evaluation_scores)

    [item] = build(EXP, ev, ReportConfig.Gallery(n=5, thumbnail_px=32), seed=0, sft_enabled=True)

    assert (item.id, item.task, item.problem_type) == ("1", "count", "numerical")
    assert (item.question, item.options, item.truth) == ("q1 of base", ["3", "4"], "3")
    assert len(item.images) == 3 and item.missing_images == [], "at most MAX_IMAGES thumbnails"
    base, sft = item.answers
    assert (base.model, base.color, base.answer) == (
        "base",
        COLORS["base"],
        "(no response: timed out)",
    )
    assert (base.reasoning, base.extracted, base.verdict) == (
        fmt.DASH,
        fmt.DASH,
        "wrong (generation failed)",
    )
    assert (sft.model, sft.reasoning, sft.answer, sft.verdict) == (
        "SFT",
        "three",
        fmt.DASH,
        "wrong",
    )


# ---------------------------------------------------------------------------------- edges
def _write(checkpoint: str, ids: list[str], scored: list[str], **fields) -> Scores:
    """Predictions of ``ids`` and scores of ``scored`` for a checkpoint; the pictures are white."""
    folder = paths.data_dir(EXP) / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for i in ids:
        Image.new("RGB", (40, 40), "white").save(folder / f"{i}.png")
    base = dict(task="count", problem_type="numerical", problem="q", answer="3", prompt="p")
    base |= dict(response="<answer>3</answer>", model="m", checkpoint=checkpoint)
    predictions = [
        Prediction(**{**base, "id": i, "images": [f"images/{i}.png"], **fields}) for i in ids
    ]
    write_predictions(paths.predictions_file(EXP, checkpoint, BENCH), predictions)
    problem_type = fields.get("problem_type", "numerical")
    items = [
        ScoredItem(id=i, task="count", problem_type=problem_type, extracted="3",
                   correct=int(i == "1" and checkpoint == "grpo"), score=1.0, method="rule")
        for i in scored
    ]  # fmt: skip
    return _scores(checkpoint, items)


def test_only_items_every_checkpoint_scored_and_predicted_are_drawn_with_the_benchmarks_salt(
    project,
):
    scores = {"base": _write("base", ["1", "2", "3"], ["1", "2"])}
    scores["grpo"] = _write("grpo", ["1", "2", "3"], ["1", "2", "3"])
    ev = Evaluation(BENCH, load_benchmark(BENCH), scores)
    gallery = build(EXP, ev, ReportConfig.Gallery(n=5, thumbnail_px=40), seed=4, sft_enabled=False)
    verdicts = {"1": (0, 1), "2": (0, 0)}
    assert [i.id for i in gallery] == pick(verdicts, {"1": "count", "2": "count"}, 5, 4, BENCH)
    assert [a.checkpoint for a in gallery[0].answers] == ["base", "grpo"]


def test_each_benchmark_draws_its_own_items(project):
    ids = [str(i) for i in range(2, 14)]  # every item agrees: the draw alone orders them
    scores = {c: _write(c, ids, ids) for c in ("base", "grpo")}
    ev = Evaluation(BENCH, load_benchmark(BENCH), scores)
    gallery = build(EXP, ev, ReportConfig.Gallery(n=4, thumbnail_px=40), seed=4, sft_enabled=False)
    tasks = dict.fromkeys(ids, "count")
    verdicts = dict.fromkeys(ids, (0, 0))
    drawn = [i.id for i in gallery]
    assert drawn == pick(verdicts, tasks, 4, 4, BENCH)
    assert drawn != pick(verdicts, tasks, 4, 4), "the benchmark's name salts the draw"


def test_a_missing_predictions_file_is_the_reports_error(project):
    ev = Evaluation(BENCH, load_benchmark(BENCH), {"base": _scores("base", [])})
    with pytest.raises(StageError, match=r"^report: predictions .* do not exist"):
        build(EXP, ev, ReportConfig.Gallery(n=1), seed=0, sft_enabled=True)


def test_only_a_grounding_items_first_reference_box_is_drawn_on_its_first_picture(project):
    boxes = [[2, 2, 12, 12], [24, 24, 36, 36]]
    common = dict(problem_type="grounding", boxes=boxes)
    ev = Evaluation(BENCH, load_benchmark(BENCH), {"base": _write("base", ["1"], ["1"], **common)})
    Image.new("RGB", (40, 40), "white").save(paths.data_dir(EXP) / "images" / "second.png")
    images = ["images/1.png", "images/second.png"]
    write_predictions(
        paths.predictions_file(EXP, "base", BENCH),
        [Prediction(id="1", task="count", problem="q", answer="[2, 2, 12, 12]", prompt="p",
                    response="", model="m", checkpoint="base", images=images, **common)],
    )  # fmt: skip
    [item] = build(EXP, ev, ReportConfig.Gallery(n=1, thumbnail_px=40), 0, True)
    first, second = (_png(data) for data in item.images)
    assert first.getpixel((2, 7)) == GREEN, "the first reference box"
    assert first.getpixel((24, 30)) == (255, 255, 255), "not the second"
    assert second.getpixel((2, 7)) == (255, 255, 255), "boxes only on the first picture"


def test_no_box_is_drawn_on_an_item_that_is_not_grounding(project):
    ev = Evaluation(
        BENCH, load_benchmark(BENCH), {"base": _write("base", ["1"], ["1"], boxes=[[2, 2, 12, 12]])}
    )
    [item] = build(EXP, ev, ReportConfig.Gallery(n=1, thumbnail_px=40), 0, True)
    assert _png(item.images[0]).getpixel((2, 7)) == (255, 255, 255)


def test_an_unreadable_picture_is_named_in_a_warning(project, caplog):
    ev = Evaluation(BENCH, load_benchmark(BENCH), {"base": _write("base", ["7"], ["7"])})
    (paths.data_dir(EXP) / "images" / "7.png").write_bytes(b"not a picture")
    with caplog.at_level("WARNING"):
        [item] = build(EXP, ev, ReportConfig.Gallery(n=1), 0, True)
    assert item.missing_images == ["images/7.png"]
    [message] = caplog.messages
    assert message.startswith("report: gallery image ") and "7.png of item 7: " in message
    assert "cannot identify image file" in message


def test_a_thumbnail_of_any_mode_is_drawn_in_colour_and_a_thin_picture_keeps_a_pixel(tmp_path):
    gray = tmp_path / "gray.png"
    Image.new("L", (40, 40), 255).save(gray)
    image = _png(thumbnail(gray, 40, [([2, 2, 12, 12], TRUTH)]))
    assert image.getpixel((2, 7)) == GREEN
    thin = tmp_path / "thin.png"
    Image.new("RGB", (2, 300), "white").save(thin)
    assert _png(thumbnail(thin, 100)).size == (1, 100)


def test_the_default_salt_is_empty():
    verdicts = {str(i): (i % 2, 0) for i in range(12)}
    tasks = dict.fromkeys(verdicts, "t")
    assert pick(verdicts, tasks, 5, seed=2) == pick(verdicts, tasks, 5, seed=2, salt="")
