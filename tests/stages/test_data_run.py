"""The data stage's ``shapes`` source and its report, in process and in well under a second each
(vlrl.stages.data.run, _run_shapes, _split_report, render_markdown): what each split's generation
is handed (its size, the seed, the keys of the splits drawn before it, the teacher on train
only), where the rows are checked and named, the files, ``report.json`` and ``report.md`` written
out whole, every log line, and the one error listing every bad row. The generator is a recorder
that makes a few hand-written records and 8x8 pictures (the real one is exercised by
test_data.py); the clock is a fake that advances 1.5 s per reading."""

from __future__ import annotations

import json
import logging
import types
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from vlrl.config import load_experiment
from vlrl.core.errors import StageError
from vlrl.data import shapes
from vlrl.items.records import Record
from vlrl.stages import data as stage

EXP = "tiny_shapes"
OUT = Path("results/tiny_shapes/data")
SMALL = [
    "data.shapes.n_train=3",
    "data.shapes.n_val=1",
    "data.shapes.n_test=2",
    "data.shapes.image_size=56",
    "seed=3",
]
# What each split's generation drew and threw away (inserted out of order: the report sorts).
REJECTED = {
    "test": {},
    "val": {"duplicate_within_split": 1},
    "train": {"duplicate_within_split": 2, "duplicate_of_earlier_split": 3},
}
RESAMPLED = {"test": {"count": 2}, "val": {}, "train": {"count": 4, "arithmetic": 1}}
MARKDOWN_SHAPES_NOTE = (
    "Duplicates are candidates whose scene and question already occurred (in an earlier\n"
    "split or the same one); they were drawn again, so every split has its full size.\n"
)


def _record(split: str, i: int, **extra) -> Record:
    """Record ``i`` of ``split``: even ones count (numerical), odd ones add (free_form)."""
    task = ("count", "arithmetic")[i % 2]
    fields = {
        "id": f"{split}-{i}",
        "images": [f"images/{split}/{split}-{i}.png"],
        "problem": f"question {i} of {split}",
        "answer": str(i),
        "problem_type": ("numerical", "free_form")[i % 2],
        "data_source": "shapes",
        "task": task,
    }
    return Record(**(fields | extra))


@pytest.fixture()
def generated(project: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """``shapes.generate_split`` recorded: it makes ``n`` records of the split (their pictures
    under ``out_dir/images/<split>/``, except the ids in ``missing``), the keys ``<split>-k<i>``,
    the counts of REJECTED and RESAMPLED and, with a teacher, its answers ``t<i>``; the stage's
    clock reads 100, 101.5, 103, ..."""
    rec: dict = {"calls": [], "missing": set()}

    def generate_split(
        cfg, split, n, seed, out_dir, *, exclude=frozenset(), stats=None, teacher=None
    ):
        rec["calls"].append((cfg, split, n, seed, Path(out_dir), frozenset(exclude), teacher))
        records = [_record(split, i) for i in range(n)]
        for r in records:
            if r.id not in rec["missing"]:
                path = Path(out_dir) / r.images[0]
                path.parent.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (8, 8), (255, 255, 255)).save(path)
        stats.keys |= {f"{split}-k{i}" for i in range(n)}
        stats.rejected.update(REJECTED[split])
        stats.resampled.update(RESAMPLED[split])
        if teacher is not None:
            stats.taught += [
                r.model_copy(update={"answer": f"t{i}"}) for i, r in enumerate(records)
            ]
        return records

    monkeypatch.setattr(shapes, "generate_split", generate_split)
    ticks = iter(100 + 1.5 * k for k in range(100))
    monkeypatch.setattr(stage, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    return rec


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.data"]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------------ run, shapes
def test_each_split_is_generated_after_the_held_out_ones_and_excludes_their_keys(
    generated: dict,
) -> None:
    """Test, then val, then train; each handed its size, the seed, the output directory, the
    keys kept by the splits before it; the teacher goes to train alone."""
    cfg = load_experiment(EXP, SMALL)
    stage.run(EXP, cfg)
    out = generated["calls"][0][4]
    assert out.parent == OUT.parent and out.name.startswith("data.tmp-")
    assert [call[1:4] + call[5:] for call in generated["calls"]] == [
        ("test", 2, 3, frozenset(), None),
        ("val", 1, 3, frozenset({"test-k0", "test-k1"}), None),
        (
            "train",
            3,
            3,
            frozenset({"test-k0", "test-k1", "val-k0"}),
            cfg.data.shapes.teacher,
        ),
    ]
    assert cfg.data.shapes.teacher is not None
    assert all(call[0] is cfg.data.shapes and call[4] == out for call in generated["calls"])


def test_the_splits_and_the_teachers_demonstrations_are_published(generated: dict) -> None:
    stage.run(EXP, load_experiment(EXP, SMALL))
    assert sorted(p.name for p in OUT.iterdir()) == [
        "images",
        "report.json",
        "report.md",
        "sft_train.jsonl",
        "test.jsonl",
        "train.jsonl",
        "val.jsonl",
    ]
    for split, n in (("train", 3), ("val", 1), ("test", 2)):
        rows = _lines(OUT / f"{split}.jsonl")
        assert [(r["id"], r["answer"], r["images"], r["image_sizes"]) for r in rows] == [
            (f"{split}-{i}", str(i), [f"images/{split}/{split}-{i}.png"], [[8, 8]])
            for i in range(n)
        ]
    taught = _lines(OUT / "sft_train.jsonl")
    assert [(r["id"], r["answer"], r["image_sizes"]) for r in taught] == [
        ("train-0", "t0", [[8, 8]]),
        ("train-1", "t1", [[8, 8]]),
        ("train-2", "t2", [[8, 8]]),
    ]


def _split(records: int, tasks: dict, types_: dict, rejected: dict, resampled: dict) -> dict:
    return {
        "records": records,
        "tasks": tasks,
        "problem_types": types_,
        "rejected": rejected,
        "invalid_examples": [],
        "resampled_scenes": resampled,
    }


def test_report_json_is_written_whole_in_its_order(generated: dict) -> None:
    stage.run(EXP, load_experiment(EXP, SMALL))
    train_tasks = {"arithmetic": 1, "count": 2}
    train_types = {"free_form": 1, "numerical": 2}
    expected = {
        "experiment": "tiny_shapes",
        "source": "shapes",
        "seed": 3,
        "image_size": 56,
        "splits": {
            "train": _split(
                3,
                train_tasks,
                train_types,
                {"duplicate_of_earlier_split": 3, "duplicate_within_split": 2},
                {"arithmetic": 1, "count": 4},
            ),
            "sft_train": _split(3, train_tasks, train_types, {}, {}),
            "val": _split(1, {"count": 1}, {"numerical": 1}, {"duplicate_within_split": 1}, {}),
            "test": _split(
                2,
                {"arithmetic": 1, "count": 1},
                {"free_form": 1, "numerical": 1},
                {},
                {"count": 2},
            ),
        },
    }
    assert (OUT / "report.json").read_text() == json.dumps(expected, indent=2) + "\n"


def test_report_md_is_written_whole(generated: dict) -> None:
    stage.run(EXP, load_experiment(EXP, SMALL))
    assert (OUT / "report.md").read_text() == (
        "# Data: tiny_shapes\n"
        "\n"
        "Source: `shapes`, seed 3.\n"
        "\n"
        "| split | records | arithmetic | count |\n"
        "|---|---:|---:|---:|\n"
        "| train | 3 | 1 | 2 |\n"
        "| sft_train | 3 | 1 | 2 |\n"
        "| val | 1 | 0 | 1 |\n"
        "| test | 2 | 1 | 1 |\n"
        "\n"
        "## Rejected rows\n"
        "\n"
        "| split | duplicate_of_earlier_split | duplicate_within_split |\n"
        "|---|---:|---:|\n"
        "| train | 3 | 2 |\n"
        "| sft_train | 0 | 0 |\n"
        "| val | 0 | 1 |\n"
        "| test | 0 | 0 |\n"
        "\n" + MARKDOWN_SHAPES_NOTE
    )


def test_one_log_line_per_split_and_the_runs_start_and_end(
    generated: dict, caplog: pytest.LogCaptureFixture
) -> None:
    """Each reading of the fake clock is 1.5 s after the one before: a split takes 1.5 s (two
    readings), the whole run 10.5 s (seven)."""
    caplog.set_level(logging.INFO, logger="vlrl.stages.data")
    stage.run(EXP, load_experiment(EXP, SMALL))
    assert _messages(caplog) == [
        "data tiny_shapes: generating the shapes world (seed 3) into results/tiny_shapes/data",
        "test: 2 records in 1.5s (0 invalid; rejected candidates: none)",
        "val: 1 records in 1.5s (0 invalid; rejected candidates: {'duplicate_within_split': 1})",
        "train: 3 records in 1.5s (0 invalid; rejected candidates: "
        "{'duplicate_of_earlier_split': 3, 'duplicate_within_split': 2})",
        "data tiny_shapes: done in 10.5s",
    ]


def test_without_a_teacher_no_split_gets_one_and_no_sft_train_is_written(
    generated: dict,
) -> None:
    stage.run(EXP, load_experiment(EXP, [*SMALL, "data.shapes.teacher=null"]))
    assert [(call[1], call[6]) for call in generated["calls"]] == [
        ("test", None),
        ("val", None),
        ("train", None),
    ]
    assert not (OUT / "sft_train.jsonl").exists()
    assert list(json.loads((OUT / "report.json").read_text())["splits"]) == [
        "train",
        "val",
        "test",
    ]


def test_bad_rows_of_every_split_are_named_in_the_final_directory_and_nothing_is_written(
    generated: dict, caplog: pytest.LogCaptureFixture
) -> None:
    """Missing pictures of test-1 and train-1 (whose demonstration shares it): each bad row is
    named by the line it would take in the published file and the directory it would be
    published in; every split is still generated and logged with its count of invalid rows."""
    generated["missing"] = {"test-1", "train-1"}
    caplog.set_level(logging.INFO, logger="vlrl.stages.data")
    with pytest.raises(StageError) as err:
        stage.run(EXP, load_experiment(EXP, SMALL))
    missing = "does not exist (looked in results/tiny_shapes/data)"
    assert str(err.value) == (
        "data tiny_shapes: 3 invalid rows (test 1 of 2, train 1 of 3, sft_train 1 of 3); "
        "nothing was written to results/tiny_shapes/data:\n"
        f"  results/tiny_shapes/data/test.jsonl:2: id test-1: image 'images/test/test-1.png' "
        f"{missing}\n"
        f"  results/tiny_shapes/data/train.jsonl:2: id train-1: image "
        f"'images/train/train-1.png' {missing}\n"
        f"  results/tiny_shapes/data/sft_train.jsonl:2: id train-1: image "
        f"'images/train/train-1.png' {missing}"
    )
    assert not OUT.exists()
    assert list(OUT.parent.iterdir()) == []
    assert _messages(caplog) == [
        "data tiny_shapes: generating the shapes world (seed 3) into results/tiny_shapes/data",
        "test: 1 records in 1.5s (1 invalid; rejected candidates: none)",
        "val: 1 records in 1.5s (0 invalid; rejected candidates: {'duplicate_within_split': 1})",
        "train: 2 records in 1.5s (1 invalid; rejected candidates: "
        "{'duplicate_of_earlier_split': 3, 'duplicate_within_split': 2})",
    ]


def test_a_bad_demonstration_alone_stops_the_stage(generated: dict, monkeypatch) -> None:
    """A teacher's answer that is empty: only sft_train has a bad row, and it alone is counted."""
    real = shapes.generate_split

    def blank_teacher(*args, **kwargs):
        records = real(*args, **kwargs)
        taught = kwargs["stats"].taught
        if taught:
            taught[2] = taught[2].model_copy(update={"answer": " "})
        return records

    monkeypatch.setattr(shapes, "generate_split", blank_teacher)
    with pytest.raises(StageError) as err:
        stage.run(EXP, load_experiment(EXP, SMALL))
    assert str(err.value) == (
        "data tiny_shapes: 1 invalid rows (sft_train 1 of 3); "
        "nothing was written to results/tiny_shapes/data:\n"
        "  results/tiny_shapes/data/sft_train.jsonl:3: id train-2: answer is empty"
    )
    assert not OUT.exists()


# ------------------------------------------------------------------------------ _split_report
def test_split_report_counts_tasks_types_and_sorts_the_generators_counts() -> None:
    """A record without a task is counted under the empty name; every count is sorted by key;
    invalid_examples stays, empty, for the report's schema."""
    records = [
        _record("s", 1),
        _record("s", 0, task=None),
        _record("s", 3, problem_type="yes_no", answer="yes"),
        _record("s", 2),
    ]
    stats = shapes.SplitStats(
        rejected=Counter({"duplicate_within_split": 1, "duplicate_of_earlier_split": 5}),
        resampled=Counter({"count": 2, "arithmetic": 7}),
    )
    report = stage._split_report(records, stats)
    assert list(report.items()) == [
        ("records", 4),
        ("tasks", {"": 1, "arithmetic": 2, "count": 1}),
        ("problem_types", {"free_form": 1, "numerical": 2, "yes_no": 1}),
        ("rejected", {"duplicate_of_earlier_split": 5, "duplicate_within_split": 1}),
        ("invalid_examples", []),
        ("resampled_scenes", {"arithmetic": 7, "count": 2}),
    ]
    assert [list(report[key]) for key in ("tasks", "rejected", "resampled_scenes")] == [
        ["", "arithmetic", "count"],
        ["duplicate_of_earlier_split", "duplicate_within_split"],
        ["arithmetic", "count"],
    ]


# ------------------------------------------------------------------------------ render_markdown
def test_markdown_of_shapes_fills_absent_tasks_and_reasons_with_zero() -> None:
    """Columns are every task and every reason of any split, sorted; a split without one shows 0."""
    report = {
        "experiment": "e1",
        "source": "shapes",
        "seed": 7,
        "splits": {
            "train": {
                "records": 5,
                "tasks": {"count": 3, "arithmetic": 2},
                "rejected": {"duplicate_within_split": 4},
            },
            "val": {"records": 1, "tasks": {"count": 1}, "rejected": {}},
            "test": {
                "records": 2,
                "tasks": {"color": 2},
                "rejected": {"duplicate_within_split": 1, "duplicate_of_earlier_split": 6},
            },
        },
    }
    assert stage.render_markdown(report) == (
        "# Data: e1\n"
        "\n"
        "Source: `shapes`, seed 7.\n"
        "\n"
        "| split | records | arithmetic | color | count |\n"
        "|---|---:|---:|---:|---:|\n"
        "| train | 5 | 2 | 0 | 3 |\n"
        "| val | 1 | 0 | 0 | 1 |\n"
        "| test | 2 | 0 | 2 | 0 |\n"
        "\n"
        "## Rejected rows\n"
        "\n"
        "| split | duplicate_of_earlier_split | duplicate_within_split |\n"
        "|---|---:|---:|\n"
        "| train | 0 | 4 |\n"
        "| val | 0 | 0 |\n"
        "| test | 6 | 1 |\n"
        "\n" + MARKDOWN_SHAPES_NOTE
    )


def test_markdown_of_datasets_without_rejections_says_none_and_points_to_the_sources() -> None:
    report = {
        "experiment": "mix",
        "source": "datasets",
        "seed": 0,
        "splits": {
            "train": {"records": 4, "tasks": {"": 3, "rec": 1}, "rejected": {}, "sources": []},
            "test": {"records": 0, "tasks": {}, "rejected": {}, "sources": []},
        },
    }
    assert stage.render_markdown(report) == (
        "# Data: mix\n"
        "\n"
        "Source: `datasets`, seed 0.\n"
        "\n"
        "| split | records |  | rec |\n"
        "|---|---:|---:|---:|\n"
        "| train | 4 | 3 | 1 |\n"
        "| test | 0 | 0 | 0 |\n"
        "\n"
        "## Rejected rows\n"
        "\n"
        "None.\n"
        "\n"
        "Sources per split: report.json (splits.<split>.sources).\n"
    )
