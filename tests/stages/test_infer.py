"""infer stage: one response per benchmark item; splitting the batches over worker processes
gives the same responses as one process; a killed run stops its workers and resumes."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import session_processes

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import read_jsonl
from vlrl.stages import infer

BENCH = "shapes_test"
VLRL = Path(sys.executable).parent / "vlrl"


@pytest.fixture()
def ready(project: Path, tiny_model_dir: Path, shapes_data: Path) -> Path:
    """The tiny base model and a generated shapes dataset in place for experiment tiny_shapes."""
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    return project


def predict(*overrides: str) -> list[dict]:
    cfg = load_experiment("tiny_shapes", ["infer.max_new_tokens=8", *overrides])
    infer.run("tiny_shapes", cfg, "base", BENCH)
    return list(read_jsonl(paths.predictions_file("tiny_shapes", "base", BENCH)))


@pytest.mark.spawns
def test_workers_give_the_responses_of_one_process(ready: Path) -> None:
    # Sampled, so that a batch generated with another seed or beside other items would show.
    sampled = ["infer.temperature=1.0", "infer.batch_size=3"]
    one = predict(*sampled, "infer.workers=1")
    two = predict(*sampled, "infer.workers=2")
    assert len(one) == 20
    assert [r["id"] for r in two] == [r["id"] for r in one]
    assert [r["response"] for r in two] == [r["response"] for r in one]
    assert len({r["response"] for r in one}) > 1


def test_a_missing_model_is_named(project: Path) -> None:
    cfg = load_experiment("tiny_shapes")
    with pytest.raises(StageError, match=r"model .*tiny-qwen2\.5-vl is missing"):
        infer.run("tiny_shapes", cfg, "base", BENCH)


@pytest.mark.parametrize(
    ("n", "size", "workers", "expected"),
    [
        (8000, 256, 2, [(0, 4096), (4096, 8000)]),
        (7, 2, 3, [(0, 4), (4, 6), (6, 7)]),
        (5, 8, 2, [(0, 5)]),
    ],
)
def test_shards_are_whole_batches(n, size, workers, expected) -> None:
    shards = infer.batch_shards(n, size, workers)
    assert shards == expected
    assert all(a % size == 0 for a, _ in shards)


@pytest.mark.spawns
def test_killed_run_stops_its_workers_and_resumes(ready: Path, caplog) -> None:
    settings = [
        "infer.batch_size=1",
        "infer.workers=2",
        "infer.max_new_tokens=32",
        "infer.temperature=1.0",
    ]
    expected = [r["response"] for r in predict(*settings)]
    out = paths.predictions_file("tiny_shapes", "base", BENCH)
    out.unlink()
    partial = out.with_name(out.name + infer.PARTIAL)

    cmd = [str(VLRL), "infer", "tiny_shapes", "base", BENCH]
    cmd += [arg for s in settings for arg in ("--set", s)]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline and len(list(partial.glob("batch-*.json"))) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    saved = len(list(partial.glob("batch-*.json")))
    assert 3 <= saved < 20, f"{saved} batches saved when killed; the test needs a run mid-way"
    assert not out.exists(), "a killed run must not leave a predictions file"
    assert not session_processes(proc.pid), "processes of the killed infer run are still running"

    with caplog.at_level(logging.INFO, logger="vlrl.stages.infer"):
        resumed = [r["response"] for r in predict(*settings)]
    assert f"resuming with {saved} batches done" in caplog.text
    assert resumed == expected
    assert not partial.exists(), "the saved batches are removed once the file is written"


def test_saved_batches_of_other_settings_are_not_reused(ready: Path, caplog) -> None:
    # One process: what is tested is the saved batches' fingerprint, not the workers.
    partial_run = predict("infer.batch_size=4", "infer.workers=1")
    out = paths.predictions_file("tiny_shapes", "base", BENCH)
    partial = out.with_name(out.name + infer.PARTIAL)
    partial.mkdir()
    (partial / "fingerprint").write_text("another run")
    (partial / f"batch-{0:08d}.json").write_text('["stale", "stale", "stale", "stale"]')
    with caplog.at_level(logging.INFO, logger="vlrl.stages.infer"):
        again = predict("infer.batch_size=4", "infer.workers=1")
    assert "is from another run (model or settings changed): discarded" in caplog.text
    assert again == partial_run


def test_openai_backend_records_a_failed_request_as_an_error(
    project: Path, shapes_data: Path, endpoint, caplog
) -> None:
    """The ``openai`` backend against a real local server that refuses the first request (HTTP
    400: not retried): the stage finishes, and that item's row says why it has no response."""
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    model_dir = paths.model_resource("tiny-qwen2.5-vl")  # served elsewhere: only named here
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text("{}")
    endpoint.state.fail_next = [400]
    endpoint.state.replier = lambda body: "<answer>3</answer>"
    server = f"{{base_url: '{endpoint.base_url}', concurrency: 1, backoff_s: 0.01}}"
    cfg = load_experiment("tiny_shapes", ["infer.backend=openai", f"infer.openai={server}"])
    with caplog.at_level(logging.WARNING):
        infer.run("tiny_shapes", cfg, "base", BENCH)
    rows = read_jsonl(paths.predictions_file("tiny_shapes", "base", BENCH))
    assert len(rows) == 20 and endpoint.state.requests == 20
    failed, *ok = rows
    assert failed["response"] == ""
    assert failed["error"].startswith(
        "http_status: BadRequestError (HTTP 400) after 1 attempt(s): Error code: 400"
    )
    assert all(r["response"] == "<answer>3</answer>" and r["error"] is None for r in ok)
    assert "infer: 1 of 20 items got no response" in caplog.text


def test_model_input_sizes_are_the_processors_resize(tiny_model_dir: Path, tmp_path: Path) -> None:
    from PIL import Image
    from transformers import AutoProcessor

    image = tmp_path / "wide.png"
    Image.new("RGB", (300, 97), "white").save(image)
    processor = AutoProcessor.from_pretrained(tiny_model_dir).image_processor
    grid = processor(images=[Image.open(image)], return_tensors="pt")["image_grid_thw"][0]

    sizes = infer.model_input_sizes(tiny_model_dir, [[str(image)], []])

    assert sizes == [[int(grid[2]) * 14, int(grid[1]) * 14], None]
    assert sizes[0][0] % 28 == 0 and sizes[0][1] % 28 == 0  # whole merged patches


def test_a_blank_images_benchmark_shows_the_same_items_with_gray_images(
    project: Path, shapes_data: Path, endpoint
) -> None:
    """shapes_test_blank (blank_images_of: shapes_test) asks the same items, each image
    replaced by a uniform gray one of the same size; shapes_test shows the pictures. Seen by a
    real local server through the ``openai`` backend, as any backend gets them."""
    import base64
    import io

    from PIL import Image

    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    model_dir = paths.model_resource("tiny-qwen2.5-vl")
    model_dir.mkdir(parents=True)
    (model_dir / "config.json").write_text("{}")
    seen: list[Image.Image] = []

    def reply(body: dict) -> str:
        for part in body["messages"][-1]["content"]:
            if part["type"] == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                seen.append(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))
        return "<answer>3</answer>"

    endpoint.state.replier = reply
    server = f"{{base_url: '{endpoint.base_url}', concurrency: 1}}"
    cfg = load_experiment("tiny_shapes", ["infer.backend=openai", f"infer.openai={server}"])
    shown = {}
    for bench in (BENCH, "shapes_test_blank"):
        seen.clear()
        infer.run("tiny_shapes", cfg, "base", bench)
        rows = read_jsonl(paths.predictions_file("tiny_shapes", "base", bench))
        shown[bench] = ([r["id"] for r in rows], [r["prompt"] for r in rows], list(seen))
    ids, prompts, pictures = shown[BENCH]
    blank_ids, blank_prompts, blanks = shown["shapes_test_blank"]
    assert (blank_ids, blank_prompts) == (ids, prompts) and len(blanks) == len(pictures) == 20
    assert [b.size for b in blanks] == [p.size for p in pictures]
    assert all(b.getcolors() == [(b.width * b.height, infer.BLANK)] for b in blanks)
    assert all(len(p.getcolors(256 * 256) or range(2)) > 1 for p in pictures)
