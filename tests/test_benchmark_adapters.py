"""Every hub benchmark end to end on its real-schema fixture: the download stage fetches the
pinned revision from a local huggingface_hub cache (or, for a benchmark published as a git
repository, fetches the fixture committed as one) and converts it (its dataset's ``format``),
the benchmark loads and checks its records, and the score stage's rules and metrics score
responses that give the reference answer (all right) and that give none (all wrong).

The fixtures are the format tests' builders (``tests/data/formats/test_<format>.py``)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
import yaml
from git_repo import commit_folder, isolate_git
from hub_cache import seed_cache

from vlrl import git_source
from vlrl.benchmarks import load_benchmark, load_items
from vlrl.config import load_dataset
from vlrl.core import paths
from vlrl.items.answers import dumps_box
from vlrl.items.predictions import items_as_dicts, prediction_of
from vlrl.scoring.metrics import compute
from vlrl.stages import download
from vlrl.stages.score import rule_scores
from vlrl.workflow import pin

REPO = Path(__file__).resolve().parents[1]
FORMAT_TESTS = Path(__file__).parent / "data" / "formats"


#: We-Math's measures (metric kind wemath_four_dimensional) when every question is right and
#: when every one is wrong: all wrong is all insufficient knowledge, and with no composite
#: question solved there is nothing to memorise (RM 0).
WEMATH_BEST_WORST = {
    "score_strict": (1.0, 0.0),
    "score_loose": (1.0, 0.0),
    "IK": (0.0, 1.0),
    "IG": (0.0, 0.0),
    "CM_strict": (1.0, 0.0),
    "CM_loose": (1.0, 0.0),
    "RM_strict": (0.0, 0.0),
    "RM_loose": (0.0, 0.0),
}


def hub_benchmarks() -> list[str]:
    """The benchmarks whose dataset is converted from a hub format."""
    found = []
    for file in sorted((REPO / "config" / "benchmarks").glob("*.yaml")):
        dataset = yaml.safe_load(file.read_text()).get("dataset")
        data_file = REPO / "config" / "datasets" / f"{dataset}.yaml"
        if dataset and yaml.safe_load(data_file.read_text()).get("format"):
            found.append(file.stem)
    return found


def fixture_builder(fmt: str):
    path = FORMAT_TESTS / f"test_{fmt}.py"
    spec = importlib.util.spec_from_file_location(f"format_fixture_{fmt}", path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"write_{fmt}_fixture")


def test_every_format_has_a_fixture_builder() -> None:
    from vlrl.data.formats import formats

    for fmt in formats():
        assert callable(fixture_builder(fmt)), fmt


def _right(record, protocol: str) -> str:
    """The reference answer as a model would write it: a box in VLM-R1's JSON (its REC
    evaluation reads only ``{…[x1, y1, x2, y2]…}`` with whole numbers, its OVD evaluation only
    a ```` ```json ```` block's list)."""
    if record.problem_type == "grounding" and protocol == "vlm_r1_od":
        return '```json\n[{"bbox_2d": ' + dumps_box(record.boxes[0]) + "}]\n```"
    if record.problem_type == "grounding":
        return '{"bbox_2d": ' + dumps_box(record.boxes[0]) + "}"
    return record.answer


NONE = "<answer></answer>"
EMPTY_ANSWER_RIGHT = {"dynamath": {"free_form"}}
"""Benchmarks whose reference rule counts an empty answer right, and of which problem types:
DynaMath's text answers are right when contained in the gold, and "" is contained in every
string (VLMEvalKit vlmeval/dataset/dynamath.py DynaMath_auxeval; vlrl.scoring.dynamath keeps
it). Their wrong answers there are a word that is not the gold."""


@pytest.mark.parametrize("bench", hub_benchmarks())
def test_downloaded_converted_loaded_and_scored(
    bench: str,
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from huggingface_hub import constants

    bench_cfg = load_benchmark(bench)
    assert bench_cfg.dataset is not None
    data_cfg = load_dataset(bench_cfg.dataset)
    assert data_cfg.format is not None
    files = tmp_path_factory.mktemp(f"{bench}-hub")
    fixture_builder(data_cfg.format)(files)
    cache = tmp_path_factory.mktemp(f"{bench}-cache")
    if data_cfg.git is not None:  # published as a git repository: the fixture is one, pinned
        isolate_git(monkeypatch)
        monkeypatch.setenv("VLRL_GIT_CACHE", str(cache))
        url, commit = commit_folder(files)
        # seeded as the offline error says, before the network goes off
        bare = cache / git_source.cache_name(url)
        subprocess.run(["git", "clone", "--quiet", "--bare", url, str(bare)], check=True)
        config = paths.dataset_file(bench_cfg.dataset)
        tree = yaml.safe_load(config.read_text()) | {"git": url, "revision": commit}
        config.write_text(yaml.safe_dump(tree))
        data_cfg = load_dataset(bench_cfg.dataset)
    else:
        commit = data_cfg.revision or "1" * 40
        seed_cache(cache, data_cfg.repo_id, commit, files, repo_type="dataset")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    if data_cfg.revision is None:  # unpinned: `vlrl pin` first, the hub's head being the fixture
        monkeypatch.setattr(pin, "current_commit", lambda repo_id, repo_type: commit)
        assert pin.pin(bench_cfg.dataset).revision == commit

    download.run(bench_cfg.dataset)
    items, base = load_items("tiny_shapes", bench)

    assert items, f"{bench}: no items in {paths.dataset_resource(bench_cfg.dataset)}"
    assert all((base / image).is_file() for r in items for image in r.images)
    iou = bench_cfg.iou_threshold if bench_cfg.iou_threshold is not None else 0.5
    # Answers in the images' own pixels here (no model-input frame to rescale from).
    protocol = bench_cfg.model_copy(update={"box_frame": "original"})
    right_answers = [
        prediction_of(r, f"<think>.</think><answer>{_right(r, bench_cfg.protocols[0])}</answer>")
        for r in items
    ]
    empty_right = EMPTY_ANSWER_RIGHT.get(bench, set())
    no_answers = [
        prediction_of(r, "<answer>nothing</answer>" if r.problem_type in empty_right else NONE)
        for r in items
    ]
    right = items_as_dicts(rule_scores(right_answers, protocol, iou, base))
    wrong = items_as_dicts(rule_scores(no_answers, protocol, iou, base))
    assert [i["id"] for i in right if not i["correct"]] == [], bench
    assert sum(i["correct"] for i in wrong) == 0, bench
    empty = wrong  # the wrong answers are the empty one but where an empty answer is right
    if empty_right:
        nothing = [prediction_of(r, NONE) for r in items]
        empty = items_as_dicts(rule_scores(nothing, protocol, iou, base))
    assert {i["problem_type"] for i in empty if i["correct"]} == empty_right, bench

    # A small fixture lacks some of the tasks a task_sum names (MME's 14 subtasks): sum over
    # those it has (a missing task is an error, tests/scoring/test_metrics.py).
    present = {i["task"] for i in right}
    specs = [
        s.model_copy(update={"tasks": [t for t in s.tasks if t in present]}) if s.tasks else s
        for s in bench_cfg.metrics
    ]
    best = compute(right, specs)
    worst = compute(wrong, specs)
    for spec in [None, *specs]:
        name = "accuracy" if spec is None else spec.name
        if spec is not None and spec.kind == "task_sum":
            per_task = 1 + len([o for o in spec.of if o != "accuracy"])
            tasks = spec.tasks or {i["task"] for i in right}
            assert best[name]["value"] == pytest.approx(spec.scale * per_task * len(tasks))
            assert worst[name]["value"] == pytest.approx(0.0), name
        elif spec is not None and spec.kind == "wemath_four_dimensional":
            best_value, worst_value = WEMATH_BEST_WORST[spec.measure or ""]
            assert best[name]["value"] == pytest.approx(best_value), name
            assert worst[name]["value"] == pytest.approx(worst_value), name
        else:
            assert best[name]["value"] == pytest.approx(1.0), name
            assert worst[name]["value"] == pytest.approx(0.0), name


def test_a_bad_raw_row_fails_the_download_and_leaves_nothing(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq
    from huggingface_hub import constants

    from vlrl.core.errors import DataError

    data_cfg = load_dataset("chartqa")
    files = tmp_path / "hub"
    fixture_builder("chartqa")(files)
    (parquet,) = sorted(files.glob("data/test-*.parquet"))
    table = pq.read_table(parquet)
    pq.write_table(table.drop_columns(["answer"]), parquet)  # every row lacks its answer
    cache = tmp_path / "cache"
    seed_cache(cache, data_cfg.repo_id, data_cfg.revision, files, repo_type="dataset")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))

    with pytest.raises(DataError, match=r"data/test-.*\.parquet row 0: has no field 'answer'"):
        download.run("chartqa")
    assert not paths.dataset_resource("chartqa").exists()
