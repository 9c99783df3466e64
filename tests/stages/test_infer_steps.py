"""The infer stage's resume bookkeeping and its generating process, in process and in
milliseconds: what a run's fingerprint follows, how saved batches are kept, reused, discarded,
read back and removed (vlrl.stages.infer.fingerprint, Partial), and what one shard hands its
generator (generate_shard, with recorders for the thread pinning and the generator). The whole
stage is exercised by the slow tests of test_infer.py."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from PIL import Image

from vlrl.config.evaluation import InferConfig
from vlrl.core.errors import StageError
from vlrl.stages import infer
from vlrl.stages.infer import Partial, Shard, fingerprint

CONVERSATIONS = [[{"role": "user", "content": [{"type": "text", "text": "How many?"}]}]]


@pytest.fixture()
def model_dir(tmp_path: Path) -> Path:
    """A model directory: config.json and a nested weights file, with fixed times."""
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    for name, text in (("config.json", "{}"), ("sub/weights.bin", "0123")):
        (model / name).write_text(text)
        os.utime(model / name, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return model


def _fp(model_dir: Path, cfg: InferConfig | None = None, seed: int = 0, ids=("a",), conv=None):
    return fingerprint(model_dir, cfg or InferConfig(), seed, list(ids), conv or CONVERSATIONS)


# ------------------------------------------------------------------------------ fingerprint
def test_the_same_run_has_the_same_fingerprint(model_dir: Path) -> None:
    first = _fp(model_dir)
    assert len(first) == 64 and int(first, 16) >= 0
    assert _fp(model_dir) == first


@pytest.mark.parametrize(
    "change",
    ["rename", "resize", "touch", "nested"],
)
def test_the_fingerprint_follows_the_models_files(model_dir: Path, change: str) -> None:
    before = _fp(model_dir)
    weights = model_dir / "sub" / "weights.bin"
    if change == "rename":  # same size, same time, another name
        stat = (model_dir / "config.json").stat()
        (model_dir / "config.json").rename(model_dir / "config2.json")
        os.utime(model_dir / "config2.json", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif change == "resize":  # same time, another size
        stat = weights.stat()
        weights.write_text("01234")
        os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif change == "touch":  # same bytes, another time
        os.utime(weights, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    else:  # a new file in a subdirectory
        (model_dir / "sub" / "extra.bin").write_text("")
    assert _fp(model_dir) != before, change


def test_the_fingerprint_follows_the_settings_seed_and_items(model_dir: Path) -> None:
    before = _fp(model_dir)
    assert _fp(model_dir, InferConfig(max_new_tokens=7)) != before
    assert _fp(model_dir, seed=1) != before
    assert _fp(model_dir, ids=("b",)) != before
    other = [[{"role": "user", "content": [{"type": "text", "text": "How few?"}]}]]
    assert _fp(model_dir, conv=other) != before


def test_the_worker_count_and_key_order_do_not_change_the_fingerprint(model_dir: Path) -> None:
    """Workers give the same responses; the same settings written in another order are the same
    settings."""
    before = _fp(model_dir, InferConfig(vllm_args={"a": 1, "b": 2}))
    assert _fp(model_dir, InferConfig(vllm_args={"a": 1, "b": 2}, workers=3)) == before
    assert _fp(model_dir, InferConfig(vllm_args={"b": 2, "a": 1})) == before
    turned = [[{"content": [{"text": "How many?", "type": "text"}], "role": "user"}]]
    assert _fp(model_dir, conv=turned) == _fp(model_dir)


# ------------------------------------------------------------------------------ Partial
def _names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def test_a_fresh_directory_is_stamped_with_the_runs_key(tmp_path: Path) -> None:
    root = tmp_path / "b.jsonl.partial"
    assert Partial(root, "key-1").open() == set()
    assert _names(root) == ["fingerprint"]
    assert (root / "fingerprint").read_text() == "key-1"


def test_saved_batches_of_the_same_run_are_resumed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "b.jsonl.partial"
    first = Partial(root, "key-1")
    first.open()
    first.save(0, ["x", "y"])
    first.save(12, ["z"])
    caplog.set_level(logging.INFO, logger="vlrl.stages.infer")
    assert Partial(root, "key-1").open() == {0, 12}
    assert _names(root) == ["batch-00000000.json", "batch-00000012.json", "fingerprint"]
    assert (root / "fingerprint").read_text() == "key-1"
    assert not caplog.records


@pytest.mark.parametrize("stamp", ["key-0", None])
def test_batches_of_another_run_are_discarded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stamp: str | None
) -> None:
    root = tmp_path / "b.jsonl.partial"
    root.mkdir()
    (root / "batch-00000000.json").write_text('["old"]')
    if stamp is not None:
        (root / "fingerprint").write_text(stamp)
    caplog.set_level(logging.INFO, logger="vlrl.stages.infer")
    assert Partial(root, "key-1").open() == set()
    assert _names(root) == ["fingerprint"]
    assert (root / "fingerprint").read_text() == "key-1"
    assert [r.getMessage() for r in caplog.records] == [
        f"infer: {root} is from another run (model or settings changed): discarded"
    ]


def test_a_batch_is_saved_as_utf8_text(tmp_path: Path) -> None:
    partial = Partial(tmp_path / "p", "k")
    partial.open()
    partial.save(3, ["café", {"error": "naïve"}])
    assert (tmp_path / "p" / "batch-00000003.json").read_text(encoding="utf-8") == (
        '["café", {"error": "naïve"}]'
    )


def test_responses_are_read_back_in_item_order_with_a_short_last_batch(tmp_path: Path) -> None:
    partial = Partial(tmp_path / "p", "k")
    partial.open()
    partial.save(4, ["e"])
    partial.save(0, ["a", "b"])
    partial.save(2, ["c", {"error": "timeout"}])
    assert partial.responses(5, 2) == ["a", "b", "c", {"error": "timeout"}, "e"]


def test_a_saved_batch_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "p"
    partial = Partial(root, "k")
    partial.open()
    partial.save(0, ["a", "b"])
    partial.save(2, ["c"])
    with pytest.raises(StageError) as err:
        partial.responses(4, 2)
    assert str(err.value) == f"infer: saved batch 2 in {root} has 1 rows"


def test_remove_deletes_the_directory_and_tolerates_its_absence(tmp_path: Path) -> None:
    partial = Partial(tmp_path / "p", "k")
    partial.open()
    partial.save(0, ["a"])
    partial.remove()
    assert not (tmp_path / "p").exists()
    partial.remove()  # already gone: nothing to do, no error


# ------------------------------------------------------------------------------ generate_shard
class Generator:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def generate(self, conversations, images):
        shown = [[(img.size, img.mode, img.getcolors()) for img in item] for item in images]
        self.calls.append(("generate", conversations, shown))
        return [f"answer to {c}" if c != "q2" else RuntimeError("boom") for c in conversations]


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> list:
    """Recorders for the thread pinning, the generator and the progress bar, in call order."""
    calls: list = []
    monkeypatch.setattr(infer, "pin_cpu_threads", lambda n: calls.append(("pin", n)))

    def make_generator(cfg, model_dir, seed, *, gpus, max_images):
        calls.append(("make", cfg.batch_size, model_dir, seed, gpus, max_images))
        return Generator(calls)

    def tqdm(starts, *, desc, unit, position):
        calls.append(("tqdm", list(starts), desc, unit, position))
        return iter(starts)

    monkeypatch.setattr(infer, "make_generator", make_generator)
    monkeypatch.setattr(infer, "tqdm", tqdm)
    return calls


GRAY = [((6, 4), "RGB", [(24, (200, 200, 200))])]
BLANK = [((6, 4), "RGB", [(24, (128, 128, 128))])]


def _three_items(tmp_path: Path) -> tuple[list[str], list[list[str]]]:
    """Three items, the first and last showing a grayscale 6x4 picture, the second none."""
    Image.new("L", (6, 4), 200).save(tmp_path / "a.png")
    image = str(tmp_path / "a.png")
    return ["q0", "q1", "q2"], [[image], [], [image]]


def test_a_shard_pins_its_threads_and_hands_its_settings_to_the_generator(
    tmp_path: Path, recorded: list
) -> None:
    shard = Shard("m", InferConfig(batch_size=2), 7, 3, "base/b", 0, gpus=2, max_images=1)
    partial = Partial(tmp_path / "p", "k")
    partial.open()
    infer.generate_shard(shard, *_three_items(tmp_path), [0, 2], partial)
    assert recorded == [
        ("pin", 3),
        ("make", 2, "m", 7, 2, 1),
        ("tqdm", [0, 2], "infer base/b", "batch", 0),
        ("generate", ["q0", "q1"], [GRAY, []]),
        ("generate", ["q2"], [GRAY]),
    ]
    assert partial.responses(3, 2) == ["answer to q0", "answer to q1", {"error": "boom"}]


def test_a_later_shard_names_its_position_and_can_show_blank_images(
    tmp_path: Path, recorded: list
) -> None:
    shard = Shard(
        "m", InferConfig(batch_size=2), 7, None, "sft/b", 1, gpus=1, max_images=2, blank_images=True
    )
    partial = Partial(tmp_path / "p", "k")
    partial.open()
    infer.generate_shard(shard, *_three_items(tmp_path), [2], partial)
    assert recorded == [
        ("pin", None),
        ("make", 2, "m", 7, 1, 2),
        ("tqdm", [2], "infer sft/b [1]", "batch", 1),
        ("generate", ["q2"], [BLANK]),
    ]
    assert (tmp_path / "p" / "batch-00000002.json").read_text() == '[{"error": "boom"}]'


def test_a_shard_without_batches_loads_nothing(tmp_path: Path, recorded: list) -> None:
    shard = Shard("m", InferConfig(), 7, 3, "base/b", 1, gpus=2, max_images=1)
    infer.generate_shard(shard, ["q0"], [[]], [], Partial(tmp_path / "p", "k"))
    assert recorded == []
