"""Benchmark configs and loaders: a held-out split of the experiment's data, or a records file
of a downloaded dataset, every row checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from vlrl.benchmarks import benchmark_inputs, load_benchmark, load_items
from vlrl.core import paths
from vlrl.core.errors import ConfigError, DataError


def write_benchmark(project: Path, name: str, **values: object) -> None:
    (project / "config" / "benchmarks" / f"{name}.yaml").write_text(yaml.safe_dump(values))


def test_records_loader_reads_a_downloaded_dataset(project: Path, shapes_data: Path) -> None:
    shutil.copytree(shapes_data, project / paths.dataset_resource("shapes_hub"))
    write_benchmark(
        project, "hub_test", loader="records", dataset="shapes_hub", file="test.jsonl", max_items=7
    )

    items, base = load_items("tiny_shapes", "hub_test")

    assert benchmark_inputs("tiny_shapes", "hub_test") == [paths.dataset_resource("shapes_hub")]
    assert len(items) == 7 and base == paths.dataset_resource("shapes_hub")
    assert all((base / image).is_file() for item in items for image in item.images)


def test_records_loader_lists_every_bad_row(project: Path, shapes_data: Path) -> None:
    data = project / paths.dataset_resource("bad")
    shutil.copytree(shapes_data, data)
    rows = [json.loads(line) for line in (data / "test.jsonl").read_text().splitlines()]
    rows[1]["answer"] = ""
    rows[4]["images"] = ["test/missing.png"]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_benchmark(project, "b", loader="records", dataset="bad", file="test.jsonl")

    with pytest.raises(DataError) as info:
        load_items("tiny_shapes", "b")

    message = str(info.value)
    assert "2 of 20 rows are invalid" in message
    assert f"test.jsonl:2: id {rows[1]['id']}" in message
    assert f"test.jsonl:5: id {rows[4]['id']}" in message


def test_records_loader_before_the_download_says_what_to_run(project: Path) -> None:
    write_benchmark(project, "b", loader="records", dataset="absent", file="test.jsonl")
    with pytest.raises(ConfigError, match="run `vlrl download absent` first"):
        load_items("tiny_shapes", "b")


def test_subsample_is_vlm_r1s_seeded_shuffle(project: Path, shapes_data: Path) -> None:
    import random

    shutil.copytree(shapes_data, project / paths.dataset_resource("shapes_hub"))
    write_benchmark(project, "all", loader="records", dataset="shapes_hub", file="test.jsonl")
    write_benchmark(
        project,
        "sub",
        loader="records",
        dataset="shapes_hub",
        file="test.jsonl",
        subsample={"n": 5, "seed": 42},
    )
    everything, _ = load_items("tiny_shapes", "all")
    before = random.getstate()

    chosen, _ = load_items("tiny_shapes", "sub")

    random.seed(42)  # src/eval/test_rec_r1.py: random.seed(42); random.shuffle(data); data[:n]
    expected = list(everything)
    random.shuffle(expected)
    assert [r.id for r in chosen] == [r.id for r in expected[:5]]
    random.setstate(before)


@pytest.mark.parametrize(
    ("values", "key", "why"),
    [
        ({"loader": "records", "file": "t.jsonl"}, "dataset", "loader 'records' needs it"),
        ({"loader": "records", "dataset": "d"}, "file", "loader 'records' needs it"),
        ({"loader": "records", "dataset": "d", "file": "../t.jsonl"}, "file", "inside"),
        ({"loader": "records", "dataset": "d", "file": "/t.jsonl"}, "file", "inside"),
        ({"dataset": "d"}, "dataset", "only loader 'records' reads it"),
        ({"loader": "records", "dataset": "a/b", "file": "t"}, "dataset", "pattern"),
        ({"max_items": 0}, "max_items", "greater than or equal to 1"),
        ({"headline": "fAcc"}, "headline", "'fAcc' is not one of ['accuracy']"),
        (
            {"metrics": [{"name": "o", "kind": "mean_of", "of": ["fAcc"]}]},
            "metrics.0.of",
            "['fAcc'] are not metrics defined before",
        ),
        ({"relaxed_tolerance": 1.5}, "relaxed_tolerance", "less than or equal to 1"),
        ({"subsample": {"n": 0}}, "subsample.n", "greater than or equal to 1"),
    ],
)
def test_bad_benchmark_config_names_its_key(project: Path, values: dict, key: str, why: str):
    write_benchmark(project, "b", **values)
    with pytest.raises(ConfigError) as info:
        load_benchmark("b")
    assert f"benchmarks/b.yaml: {key}: " in str(info.value) and why in str(info.value)


def test_a_blank_images_benchmark_is_its_twin_under_its_own_name(project: Path) -> None:
    from vlrl.benchmarks import benchmark_files

    write_benchmark(project, "twin", blank_images_of="shapes_test")
    seeing, blank = load_benchmark("shapes_test"), load_benchmark("twin")

    assert blank.blank_images_of == "shapes_test" and seeing.blank_images_of is None
    assert blank.model_dump(exclude={"blank_images_of", "description"}) == seeing.model_dump(
        exclude={"blank_images_of", "description"}
    )
    assert blank.description == "shapes_test, every image blanked"
    assert benchmark_files("twin") == [paths.benchmark_file("twin"), paths.benchmark_file(
        "shapes_test")]  # fmt: skip
    assert benchmark_files("shapes_test") == [paths.benchmark_file("shapes_test")]


@pytest.mark.parametrize(
    ("values", "why"),
    [
        (
            {"blank_images_of": "shapes_test", "split": "val", "max_items": 3},
            "b.yaml: max_items, split: a blank_images_of benchmark takes every key but "
            "description from 'shapes_test'",
        ),
        (
            {"blank_images_of": "shapes_tset"},
            "b.yaml: blank_images_of: 'shapes_tset' has no file",
        ),
        ({"blank_images_of": "shapes_test_blank"}, "'shapes_test_blank' blanks images itself"),
    ],
)
def test_a_bad_blank_images_benchmark_names_what_is_wrong(
    project: Path, values: dict, why: str
) -> None:
    write_benchmark(project, "b", **values)
    with pytest.raises(ConfigError) as info:
        load_benchmark("b")
    assert why in str(info.value)
    if "tset" in why:
        assert "did you mean" in str(info.value) and "shapes_test" in str(info.value)


def test_every_hub_benchmark_is_in_the_papers_benchmark_experiment() -> None:
    """qwen2.5_vl_3b_benchmarks lists every benchmark read from a hub dataset (a new one is
    added there too, so the base model's column covers it; tests/pipeline plans them all)."""
    from vlrl.config import load_experiment

    listed = set(load_experiment("qwen2.5_vl_3b_benchmarks").benchmarks)
    repo = Path(__file__).resolve().parents[1]
    hub = {
        p.stem
        for p in (repo / "config" / "benchmarks").glob("*.yaml")
        if load_benchmark(p.stem).loader != "experiment_split"  # the experiment's own split
    }
    assert listed == hub


def test_a_split_of_the_experiments_data_comes_from_its_data_stage(project: Path) -> None:
    """shapes_test is the experiment's held-out split: its input is the experiment's data
    folder (another experiment's where the data is shared), never a dataset resource."""
    assert benchmark_inputs("tiny_shapes", "shapes_test") == [paths.data_dir("tiny_shapes")]
    assert benchmark_inputs("tiny_shapes_grpo_lr", "shapes_test") == [paths.data_dir("tiny_shapes")]


def test_the_protocol_is_the_experiments_choice_else_the_benchmarks_default(project: Path) -> None:
    from vlrl.benchmarks import protocol_for

    bench = "mathvista_testmini"
    cfg = load_benchmark(bench)
    other = next(p for p in cfg.protocols if p != cfg.protocol)
    assert protocol_for(bench, cfg, {}) == cfg.protocol
    assert protocol_for(bench, cfg, {"mmmu_val": cfg.protocol, bench: other}) == other
    with pytest.raises(ConfigError) as caught:
        protocol_for(bench, cfg, {bench: "no_such"})
    assert str(caught.value) == (
        f"score.protocol.{bench}: 'no_such' is not a protocol benchmark {bench} supports "
        f"({paths.benchmark_file(bench)}: protocols {cfg.protocols})"
    )


def test_an_unknown_benchmark_is_named_with_where_the_known_ones_are(project: Path) -> None:
    folder = project / "config" / "benchmarks"
    known = len(list(folder.glob("*.yaml")))
    with pytest.raises(ConfigError) as info:
        load_benchmark("no_such")
    assert str(info.value) == (
        f"{folder}/no_such.yaml: no such benchmark 'no_such'; {known} known, in {folder}/"
    )


def test_a_blank_images_benchmark_of_an_unknown_one_says_where_they_are(project: Path) -> None:
    folder = project / "config" / "benchmarks"
    write_benchmark(project, "b", blank_images_of="zzz")
    known = len(list(folder.glob("*.yaml")))
    with pytest.raises(ConfigError) as info:
        load_benchmark("b")
    assert str(info.value) == (
        f"{folder}/b.yaml: blank_images_of: 'zzz' has no file {folder}/zzz.yaml; "
        f"{known} known, in {folder}/"
    )


def test_an_invalid_twin_is_named_by_its_own_file(project: Path) -> None:
    """A blank_images_of benchmark of an invalid one fails as the invalid one does."""
    folder = project / "config" / "benchmarks"
    write_benchmark(project, "seeing", max_items=0)
    write_benchmark(project, "blank", blank_images_of="seeing")
    for name in ("seeing", "blank"):
        with pytest.raises(ConfigError) as info:
            load_benchmark(name)
        assert str(info.value) == (
            f"{folder}/seeing.yaml: max_items: Input should be greater than or equal to 1 (got 0)"
        )


def test_a_split_is_read_from_the_data_of_the_experiment_that_makes_it(
    project: Path, shapes_data: Path
) -> None:
    """tiny_shapes_grpo_lr shares tiny_shapes' data; tiny_shapes_satori makes its own."""
    from vlrl.benchmarks import items_file

    cfg = load_benchmark("shapes_test")
    assert items_file("tiny_shapes_grpo_lr", cfg) == Path("results/tiny_shapes/data/test.jsonl")
    assert items_file("tiny_shapes_satori", cfg) == Path(
        "results/tiny_shapes_satori/data/test.jsonl"
    )
    write_benchmark(project, "val", split="val")
    assert items_file("tiny_shapes_satori", load_benchmark("val")) == Path(
        "results/tiny_shapes_satori/data/val.jsonl"
    )


def test_a_split_before_the_data_stage_says_to_run_it(project: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_items("tiny_shapes_grpo_lr", "shapes_test")
    assert str(info.value) == (
        "benchmark shapes_test: results/tiny_shapes/data/test.jsonl does not exist; "
        "run the data stage first"
    )


def test_a_split_reads_the_records_of_the_experiments_data(
    project: Path, shapes_data: Path
) -> None:
    shutil.copytree(shapes_data, project / paths.data_dir("tiny_shapes"))
    write_benchmark(project, "val", split="val")

    items, base = load_items("tiny_shapes_grpo_lr", "val")

    assert [r.id for r in items] == [f"shapes-val-{i:05d}" for i in range(5)]
    assert base == Path("results/tiny_shapes/data")
    assert all((base / image).is_file() for item in items for image in item.images)


def test_a_bad_row_of_a_records_file_is_listed_under_the_benchmark_and_file(
    project: Path, shapes_data: Path
) -> None:
    data = project / paths.dataset_resource("bad")
    shutil.copytree(shapes_data, data)
    rows = [json.loads(line) for line in (data / "test.jsonl").read_text().splitlines()]
    rows[1]["answer"] = ""
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_benchmark(project, "c", loader="records", dataset="bad", file="test.jsonl")

    with pytest.raises(DataError) as info:
        load_items("tiny_shapes", "c")

    assert str(info.value) == (
        "benchmark c: resources/datasets/bad/test.jsonl: 1 of 20 rows are invalid:\n"
        "  resources/datasets/bad/test.jsonl:2: id shapes-test-00001: answer is empty"
    )


def test_a_records_file_not_downloaded_names_the_benchmark_file(project: Path) -> None:
    write_benchmark(project, "b", loader="records", dataset="absent", file="t.jsonl")
    with pytest.raises(ConfigError) as info:
        load_items("tiny_shapes", "b")
    assert str(info.value) == (
        "benchmark b: resources/datasets/absent/t.jsonl does not exist; run `vlrl download "
        f"absent` first, or check file: in {project}/config/benchmarks/b.yaml"
    )
