"""The infer stage's ``run`` in process and in about a second each: which model it loads, which
prompt and generation budget it asks with, what each generating process is handed, when it
starts a server, how it resumes, splits and reports, and every field of the predictions it
writes. The generator, the worker pool and the model-input frames are recorders (the real ones
are exercised by the slow tests of test_infer.py and the engine tests); everything else is the
stage's own code on a generated shapes dataset."""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from pathlib import Path

import pytest

from vlrl import sharing
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import read_jsonl
from vlrl.stages import infer

EXP, BENCH = "tiny_shapes", "shapes_test"


class Generator:
    """Answers each item with its question's last line; the third item of every call fails."""

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def generate(self, conversations, images):
        self.calls.append(("generate", len(conversations), [len(i) for i in images]))
        texts = [_text(c).splitlines()[0] for c in conversations]
        return [RuntimeError("no reply") if i == 2 else t for i, t in enumerate(texts)]


def _text(conversation) -> str:
    return "".join(p.get("text", "") for p in conversation[-1]["content"])


@pytest.fixture()
def stage(project: Path, shapes_data: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The shapes data and an SFT model directory of tiny_shapes in place; recorders for the
    generator, the server, the shards, the worker pool and the model-input frames."""
    shutil.copytree(shapes_data, paths.data_dir(EXP))
    model = sharing.checkpoint_model_dir(EXP, "sft", "tiny-qwen2.5-vl")
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    rec: dict = {"calls": [], "shards": [], "served": [], "pools": [], "frames": []}
    monkeypatch.setattr(infer, "pin_cpu_threads", lambda n: None)
    monkeypatch.setattr(infer, "tqdm", lambda starts, **kw: iter(starts))

    def make_generator(cfg, model_dir, seed, *, gpus, max_images):
        rec["calls"].append(("make", cfg.max_new_tokens, model_dir, seed, gpus, max_images))
        return Generator(rec["calls"])

    monkeypatch.setattr(infer, "make_generator", make_generator)
    real_shard = infer.generate_shard

    def generate_shard(shard, conversations, images, starts, partial):
        rec["shards"].append((shard, list(starts), [_text(c) for c in conversations]))
        real_shard(shard, conversations, images, starts, partial)

    monkeypatch.setattr(infer, "generate_shard", generate_shard)

    @contextlib.contextmanager
    def served_openai(cfg, model_dir, log_dir, needed):
        rec["served"].append((model_dir, log_dir, needed))
        yield cfg

    monkeypatch.setattr(infer, "served_openai", served_openai)

    class Pool:
        def __init__(self, n):
            rec["pools"].append(("pool", n))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def starmap(self, fn, jobs):
            rec["pools"].append(("starmap", fn, len(jobs)))
            return [fn(*job) for job in jobs]

    class Multiprocessing:
        @staticmethod
        def get_context(method):
            rec["pools"].append(("context", method))
            return type("Context", (), {"Pool": Pool})

    monkeypatch.setattr(infer, "multiprocessing", Multiprocessing)

    def model_input_sizes(model_dir, image_paths):
        rec["frames"].append((model_dir, image_paths))
        return [[i, 2 * i] for i in range(len(image_paths))]

    monkeypatch.setattr(infer, "model_input_sizes", model_input_sizes)
    rec["model"] = model
    return rec


def _bench(name: str, **keys) -> str:
    """A benchmark file of the scratch project: the shapes test split with ``keys``."""
    body = {"loader": "experiment_split", "split": "test", **keys}
    paths.benchmark_file(name).write_text(json.dumps(body))
    return name


def _run(*overrides: str, checkpoint: str = "sft", bench: str = BENCH) -> list[dict]:
    cfg = load_experiment(EXP, ["infer.batch_size=8", "infer.workers=1", *overrides])
    infer.run(EXP, cfg, checkpoint, bench)
    return list(read_jsonl(paths.predictions_file(EXP, checkpoint, bench)))


def test_each_row_is_its_items_response_prompt_model_and_checkpoint(stage: dict, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="vlrl.stages.infer"):
        rows = _run()
    items = list(read_jsonl(paths.data_dir(EXP) / "test.jsonl"))
    assert [r["id"] for r in rows] == [i["id"] for i in items]
    prompts = stage["shards"][0][2]
    assert [r["prompt"] for r in rows] == prompts
    assert all(items[k]["problem"] in prompts[k] for k in range(20))
    failed = [2, 10, 18]  # the third of each batch of 8
    assert [r["response"] for r in rows] == [
        "" if k in failed else prompts[k].splitlines()[0] for k in range(20)
    ]
    assert [r["error"] for r in rows] == ["no reply" if k in failed else None for k in range(20)]
    assert {r["model"] for r in rows} == {str(stage["model"])}
    assert {r["checkpoint"] for r in rows} == {"sft"}
    assert {r.get("input_size") for r in rows} == {None} and stage["frames"] == []
    out = paths.predictions_file(EXP, "sft", BENCH)
    assert caplog.messages == [
        f"infer: {EXP}/sft on {BENCH}: 20 items, backend hf, 1 process(es)",
        f"infer: 3 of 20 items got no response (recorded with their error in {out})",
        f"infer: wrote {out}",
    ]
    assert not out.with_name(out.name + infer.PARTIAL).exists()


def test_one_shard_gets_the_experiments_settings_and_the_server_its_log_folder(
    stage: dict,
) -> None:
    _run("cpu_threads=2", "seed=5")
    [(shard, starts, _)] = stage["shards"]
    assert starts == [0, 8, 16]
    assert (shard.model_dir, shard.seed, shard.cpu_threads) == (str(stage["model"]), 5, 2)
    assert (shard.desc, shard.position, shard.gpus) == (f"sft/{BENCH}", 0, 0)
    assert (shard.max_images, shard.blank_images, shard.cfg.max_new_tokens) == (1, False, 48)
    assert stage["served"] == [
        (stage["model"], paths.server_log_dir("infer", EXP, "sft", BENCH), True)
    ]
    assert stage["calls"][0] == ("make", 48, str(stage["model"]), 5, 0, 1)
    assert stage["pools"] == [], "one shard runs in this process"


def test_the_vllm_backend_gets_the_jobs_gpus(stage: dict) -> None:
    _run("infer.backend=vllm", "resources.infer.gpus=2")
    assert stage["shards"][0][0].gpus == 2


def test_a_blank_images_benchmark_shows_blank_images(stage: dict) -> None:
    _run(bench="shapes_test_blank")
    [(shard, _, _)] = stage["shards"]
    assert shard.blank_images is True and shard.desc == "sft/shapes_test_blank"


def test_several_workers_split_the_batches_over_a_spawned_pool(stage: dict) -> None:
    rows = _run("infer.workers=2")
    assert len(rows) == 20
    assert [(s.position, starts) for s, starts, _ in stage["shards"]] == [(0, [0, 8]), (1, [16])]
    assert stage["pools"] == [
        ("context", "spawn"),
        ("pool", 2),
        ("starmap", infer.generate_shard, 2),
    ]


def test_the_benchmarks_prompt_and_budget_come_before_the_experiments(stage: dict) -> None:
    bench = _bench("shapes_rec", prompt="rec_json", max_new_tokens=5)
    _run(bench=bench)
    [(shard, _, prompts)] = stage["shards"]
    assert shard.cfg.max_new_tokens == 5 and stage["calls"][0][1] == 5
    assert all("in JSON format" in p for p in prompts), "the benchmark's rec_json prompt"
    stage["shards"].clear()
    _run("infer.prompt=think_answer", bench=bench)
    assert not any("in JSON format" in p for p in stage["shards"][0][2]), "infer.prompt comes first"


def test_a_benchmark_without_a_budget_keeps_the_experiments(stage: dict) -> None:
    _run("infer.max_new_tokens=33", bench=_bench("shapes_plain", prompt="rec_json"))
    assert stage["shards"][0][0].cfg.max_new_tokens == 33


def test_a_model_input_benchmark_records_each_items_input_size(stage: dict) -> None:
    rows = _run(bench=_bench("shapes_frame", box_frame="model_input"))
    [(model_dir, images)] = stage["frames"]
    items = list(read_jsonl(paths.data_dir(EXP) / "test.jsonl"))
    assert model_dir == stage["model"]
    assert images == [[str(paths.data_dir(EXP) / p) for p in i["images"]] for i in items]
    assert [r["input_size"] for r in rows] == [[k, 2 * k] for k in range(20)]


def test_saved_batches_of_the_same_run_are_resumed_and_named_in_the_log(
    stage: dict, caplog
) -> None:
    cfg = load_experiment(EXP, ["infer.batch_size=8", "infer.workers=1", "seed=3"])
    out = paths.predictions_file(EXP, "sft", BENCH)
    items = list(read_jsonl(paths.data_dir(EXP) / "test.jsonl"))
    from vlrl.data.convert import to_conversation
    from vlrl.items.prompts import get_prompt
    from vlrl.items.records import Record

    conversations = [to_conversation(Record(**i), get_prompt("think_answer")) for i in items]
    key = infer.fingerprint(stage["model"], cfg.infer, 3, [i["id"] for i in items], conversations)
    partial = infer.Partial(out.with_name(out.name + infer.PARTIAL), key)
    partial.open()
    partial.save(8, ["saved"] * 8)
    with caplog.at_level(logging.INFO, logger="vlrl.stages.infer"):
        rows = _run("seed=3")
    assert caplog.messages[0] == (
        f"infer: {EXP}/sft on {BENCH}: 20 items, backend hf, 1 process(es), "
        "resuming with 1 batches done"
    )
    assert stage["shards"][0][1] == [0, 16]
    assert [r["response"] for r in rows[8:16]] == ["saved"] * 8


def test_with_every_batch_saved_no_server_is_needed_and_nothing_is_generated(
    stage: dict,
) -> None:
    _run()
    out = paths.predictions_file(EXP, "sft", BENCH)
    first = out.read_text()
    # the same run again, its batches saved (as a kill after the last batch leaves them)
    stage["calls"].clear(), stage["served"].clear()
    cfg = load_experiment(EXP, ["infer.batch_size=8", "infer.workers=1"])
    items = list(read_jsonl(paths.data_dir(EXP) / "test.jsonl"))
    rows = list(read_jsonl(out))
    from vlrl.data.convert import to_conversation
    from vlrl.items.prompts import get_prompt
    from vlrl.items.records import Record

    conversations = [to_conversation(Record(**i), get_prompt("think_answer")) for i in items]
    key = infer.fingerprint(stage["model"], cfg.infer, 0, [i["id"] for i in items], conversations)
    partial = infer.Partial(out.with_name(out.name + infer.PARTIAL), key)
    partial.open()
    for start in (0, 8, 16):
        partial.save(
            start,
            [r["response"] if r["error"] is None else {"error": r["error"]} for r in rows][
                start : start + 8
            ],
        )
    _run()
    assert stage["served"] == [
        (stage["model"], paths.server_log_dir("infer", EXP, "sft", BENCH), False)
    ]
    assert stage["calls"] == [], "no generator is made"
    assert out.read_text() == first


def test_a_benchmark_without_items_hands_no_images(stage: dict) -> None:
    (paths.data_dir(EXP) / "test.jsonl").write_text("")
    assert _run() == []
    [(shard, starts, _)] = stage["shards"]
    assert (shard.max_images, starts) == (0, [])


def test_a_checkpoint_the_experiment_does_not_evaluate_is_named(stage: dict) -> None:
    cfg = load_experiment(EXP, ["infer.checkpoints=[base]"])
    with pytest.raises(StageError) as err:
        infer.run(EXP, cfg, "sft", BENCH)
    assert str(err.value) == f"checkpoint 'sft' is not evaluated by {EXP}; it has ['base']"


def test_the_sft_model_of_the_experiment_itself_is_loaded(stage: dict) -> None:
    cfg = load_experiment(EXP)
    assert infer.checkpoint_dir(EXP, cfg, "sft") == stage["model"]
