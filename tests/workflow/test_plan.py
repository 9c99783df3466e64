"""vlrl plan's measured time: what Snakemake's timings (logs/timings/) say the jobs took here."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.workflow.dag import Job, Planned
from vlrl.workflow.plan import (
    Download,
    Plan,
    Server,
    _quiet,
    _times,
    _train_records,
    disk,
    downloads,
    measured_seconds,
    restore_params_files,
    servers,
)
from vlrl.workflow.plan_text import measured_line, summary

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def planned(rule: str, needed: bool, benchmark: str | None, **wildcards: str) -> Planned:
    job = Job(rule, wildcards, [], [], [], {}, "", frozenset(), benchmark=benchmark)
    return Planned(job, needed, "output missing" if needed else "")


def timing(project: Path, relative: str, seconds: float) -> str:
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:00\t1\t1\t1\t1\t0\t0\t50\t{seconds}\n")
    return relative


def test_the_plan_says_what_the_jobs_took_when_snakemake_last_ran_them(project: Path) -> None:
    sft = timing(project, "logs/timings/sft/e.tsv", 120.0)
    infer = [timing(project, f"logs/timings/infer/e/{c}/b.tsv", 30.0) for c in ("base", "sft")]
    (project / "logs/timings/grpo").mkdir(parents=True)
    (project / "logs/timings/grpo/e.tsv").write_text("not a timing\n")
    jobs = [
        planned("data", True, None, exp="e"),
        planned("sft", True, sft, exp="e"),
        planned("grpo", True, "logs/timings/grpo/e.tsv", exp="e"),
        planned("infer", True, infer[0], exp="e", checkpoint="base", bench="b"),
        planned("infer", False, infer[1], exp="e", checkpoint="sft", bench="b"),
        planned("infer", True, "logs/timings/infer/e/grpo/b.tsv", exp="e", checkpoint="grpo",
                bench="b"),
    ]  # fmt: skip
    measured = measured_seconds(jobs)
    # untimed rule, unreadable file and no file yet are left out
    assert measured == {"sft--e": 120.0, "infer--e--base--b": 30.0, "infer--e--sft--b": 30.0}

    plan = Plan("e", jobs, [], [], [], measured=measured)
    line = measured_line(plan)
    # the jobs to run only: the cached SFT-model inference is not counted
    assert line == (
        "time: 2.5 min one after another, as last measured here for 2 of the 5 jobs to run "
        "(sft 2.0, infer 0.5 min; logs/timings/)"
    )
    assert f"  {line}" in summary(plan)
    cached = Plan("e", [j for j in jobs if not j.needed], [], [], [], measured=measured)
    assert "for 1 of the 1 jobs of the last run (infer 0.5 min" in measured_line(cached)
    assert measured_line(Plan("e", jobs, [], [], [])).startswith("time: not measured here yet")


# the downloads, servers and disk of a plan, decided in this process -------------------------
PIN = "0123456789abcdef0123456789abcdef01234567"


def config_file(project: Path, kind: str, name: str, text: str) -> None:
    (project / "config" / kind / f"{name}.yaml").write_text(text)


def experiment(base_model: str, train: list[str], benchmarks: list[str], **splits: list[str]):
    """The parts of an experiment config :func:`downloads` reads."""
    data = SimpleNamespace(
        **{split: [SimpleNamespace(dataset=d) for d in splits.get(split, [])] for split in SPLITS}
    )
    data.train = [SimpleNamespace(dataset=d) for d in train]
    return SimpleNamespace(base_model=base_model, data=data, benchmarks=benchmarks)


SPLITS = ("train", "sft_train", "val", "test")


@pytest.fixture
def sources(project: Path) -> Path:
    """Models and datasets in each state a download can be in."""
    config_file(project, "models", "pinned", f"builder: hf\nhf: {{repo_id: o/m, revision: {PIN}}}\n"
                "size_bytes: 3000000000\n")  # fmt: skip
    config_file(project, "models", "loose", "builder: hf\nhf: {repo_id: o/l, unpinned: no sha}\n")
    config_file(
        project, "datasets", "hub", f"repo_id: o/d\nrevision: {PIN}\nsize_bytes: 500000000\n"
    )
    config_file(project, "datasets", "unpinned", "repo_id: o/u\nunpinned: no public sha\n")
    config_file(project, "datasets", "mine", "local: data/mine\nsize_bytes: 1000\n")
    config_file(project, "datasets", "theirs", "local: data/theirs\n")
    (project / "data" / "theirs").mkdir(parents=True)
    config_file(
        project, "benchmarks", "on_hub", "loader: records\ndataset: hub\nfile: records/test.jsonl\n"
    )
    return project


def test_each_download_says_its_pinned_source_and_what_blocks_it(sources: Path) -> None:
    found = downloads(experiment("pinned", ["hub", "mine", "theirs"], ["on_hub", "shapes_test"],
                                 val=["unpinned"], test=["hub"]))  # fmt: skip
    assert found == [
        Download("model", "pinned", f"o/m@{PIN[:12]}", 3_000_000_000, "to fetch"),
        Download("dataset", "hub", f"o/d@{PIN[:12]}", 500_000_000, "to fetch"),
        Download("dataset", "mine", "local data/mine", 1000,
                 "USER-PROVIDED, missing: put its files in data/mine (see its description)"),
        Download("dataset", "theirs", "local data/theirs", None, "to fetch"),
        Download("dataset", "unpinned", "o/u@?", None,
                 "UNPINNED: run `vlrl pin unpinned` online first"),
    ]  # fmt: skip
    assert [d.blocked for d in found] == [False, False, True, False, True]


def test_a_git_dataset_shows_its_url_and_commit(sources: Path) -> None:
    config_file(sources, "datasets", "pinned_git", f"git: https://h/o/g.git\nrevision: {PIN}\n")
    config_file(sources, "datasets", "loose_git", "git: https://h/o/l\nunpinned: no sha\n")
    found = downloads(experiment("pinned", ["pinned_git"], [], val=["loose_git"]))
    assert found[1:] == [
        Download("dataset", "pinned_git", f"git https://h/o/g.git@{PIN[:12]}", None, "to fetch"),
        Download("dataset", "loose_git", "git https://h/o/l@?", None,
                 "UNPINNED: run `vlrl pin loose_git` online first"),
    ]  # fmt: skip
    (sources / "resources" / "datasets" / "pinned_git").mkdir(parents=True)
    assert downloads(experiment("pinned", ["pinned_git"], []))[1].state == "present"


def test_what_is_there_is_present(sources: Path) -> None:
    (sources / "resources" / "models" / "pinned").mkdir(parents=True)
    (sources / "resources" / "models" / "pinned" / "config.json").write_text("{}")
    for name in ("hub", "mine"):
        (sources / "resources" / "datasets" / name).mkdir(parents=True)
    found = downloads(experiment("pinned", ["hub", "mine"], []))
    assert [d.state for d in found] == ["present"] * 3
    assert not any(d.blocked for d in found)
    # a model folder without its config.json is not there yet
    (sources / "resources" / "models" / "pinned" / "config.json").unlink()
    assert downloads(experiment("pinned", [], []))[0].state == "to fetch"


def test_an_unpinned_or_tiny_model(sources: Path) -> None:
    loose = downloads(experiment("loose", [], []))[0]
    assert loose == Download("model", "loose", "o/l@?", None,
                             "UNPINNED (no sha): run `vlrl pin loose` online")  # fmt: skip
    assert loose.blocked
    tiny = downloads(experiment("tiny-qwen2.5-vl", [], []))[0]
    assert tiny == Download("model", "tiny-qwen2.5-vl", "tiny (built here)", None, "built locally")
    assert not tiny.blocked


def test_the_servers_a_plan_names(project: Path) -> None:
    from vlrl.config import load_experiment

    assert servers(load_experiment("sophiavl_r1_engines")) == [
        Server("grpo.trust.reward_model",
               "started by the stage: vllm serve resources/models/tiny-qwen2.5-vl-h64"),
        Server("score.judge",
               "started by the stage: vllm serve resources/models/tiny-qwen2.5-vl-h64"),
    ]  # fmt: skip
    assert servers(load_experiment("sophiavl_r1")) == [
        Server("grpo.trust.reward_model",
               "must be running at http://127.0.0.1:8000/v1 (model thinking-reward-model)"),
        Server("score.judge", "must be running at https://api.openai.com/v1 (model gpt-4o-mini)"),
    ]  # fmt: skip
    assert servers(load_experiment("tiny_shapes")) == []


def test_a_served_checkpoint_is_the_one_evaluated(project: Path) -> None:
    from vlrl.config.endpoints import EndpointConfig, ServeConfig

    # infer.openai's server: no model named (the config's own check allows it only there)
    judge = EndpointConfig.model_construct(serve=ServeConfig(backend="transformers"))
    assert servers(judge) == [Server("", "started by the stage: transformers serve the "
                                         "checkpoint evaluated")]  # fmt: skip


def training(sft: bool, grpo: bool, save_steps: int | None = 100, keep: int = 3):
    return SimpleNamespace(
        sft=SimpleNamespace(enabled=sft),
        grpo=SimpleNamespace(enabled=grpo, save_steps=save_steps, save_total_limit=keep),
    )


def test_the_disk_a_run_fills() -> None:
    found = [
        Download("model", "m", "o/m@x", 3_000, "to fetch"),
        Download("dataset", "d", "o/d@x", 500, "to fetch"),
        Download("dataset", "u", "o/u@?", None, "UNPINNED"),
        Download("model", "tiny", "tiny (built here)", None, "built locally"),
    ]
    assert disk(training(sft=True, grpo=True), 1_000, found) == [
        ("downloads", 3_500.0, "the sizes the configs state; not stated: u"),
        ("models written", 6_000.0, "3 full copies (sft, grpo, merged) x 1,000 parameters x 2 "
                                    "bytes (bf16)"),
        ("GRPO checkpoints", 42_000.0, "save_total_limit 3 x 1,000 parameters x 14 bytes (bf16 "
         "weights + fp32 AdamW moments and master weights, as DeepSpeed saves them); removed at "
         "the end"),
    ]  # fmt: skip
    sft_only = disk(training(sft=True, grpo=False), 2_000_000, found[:2])
    assert sft_only == [
        ("downloads", 3_500.0, "the sizes the configs state"),
        ("models written", 4_000_000.0, "1 full copies (sft) x 2,000,000 parameters x 2 bytes "
                                        "(bf16)"),
    ]  # fmt: skip
    no_checkpoints = disk(training(sft=False, grpo=True, save_steps=None), 10, [])
    assert no_checkpoints == [
        ("downloads", None, "the sizes the configs state"),
        ("models written", 40.0, "2 full copies (grpo, merged) x 10 parameters x 2 bytes (bf16)"),
    ]  # fmt: skip
    assert disk(training(True, True), None, found[2:]) == [
        ("downloads", None, "the sizes the configs state; not stated: u"),
        ("models written", None, "parameter count unknown"),
    ]


def test_the_training_records_known_before_the_run(project: Path) -> None:
    shapes = SimpleNamespace(
        data=SimpleNamespace(source="shapes", shapes=SimpleNamespace(n_train=7))
    )
    assert _train_records(shapes, "e") == 7
    hub = SimpleNamespace(data=SimpleNamespace(source="hub"))
    assert _train_records(hub, "e") is None  # the data stage has not run
    records = project / "results" / "e" / "data" / "train.jsonl"
    records.parent.mkdir(parents=True)
    records.write_text('{"a": 1}\n\n  \n{"a": 2}\n{"a": 3}')
    assert _train_records(hub, "e") == 3  # blank lines are no records; the last needs no newline


def test_restoring_the_params_files_the_dag_build_rewrote(project: Path) -> None:
    from vlrl.workflow import preview

    kept = project / "results" / "e" / "params" / "grpo.yaml"
    made = project / "results" / "f" / "params" / "grpo.yaml"
    same = project / "results" / "g" / "params" / "grpo.yaml"
    for path in (kept, same):
        path.parent.mkdir(parents=True)
        path.write_text("lr: 1\n")
    os.utime(kept, ns=(1_000_000_000, 2_000_000_000))
    before = preview.snapshot()
    times = _times(before)
    assert set(before) == {str(kept.relative_to(project)), str(same.relative_to(project))}
    assert times[str(kept.relative_to(project))][1] == 2_000_000_000
    # the DAG build: one rewritten, one created, one rewritten with the same text
    kept.write_text("lr: 2\n")
    made.parent.mkdir(parents=True)
    made.write_text("lr: 3\n")
    same.write_text("lr: 1\n")
    same_time = same.stat().st_mtime_ns
    restore_params_files(before, times)
    assert kept.read_text() == "lr: 1\n"
    assert kept.stat().st_mtime_ns == 2_000_000_000
    assert not made.exists()
    assert same.stat().st_mtime_ns == same_time  # unchanged text: not written again


def test_quiet_raises_a_loggers_level_for_the_block_only() -> None:
    log = logging.getLogger("vlrl.test.quiet")
    log.setLevel(logging.DEBUG)
    with _quiet("vlrl.test.quiet"):
        assert log.level == logging.WARNING
    assert log.level == logging.DEBUG
    with pytest.raises(RuntimeError), _quiet("vlrl.test.quiet"):
        raise RuntimeError
    assert log.level == logging.DEBUG


def test_the_jobs_to_run() -> None:
    jobs = [planned("data", True, None, exp="e"), planned("sft", False, None, exp="e")]
    assert Plan("e", jobs, [], [], []).to_run == jobs[:1]


# the whole plan, made in this process ----------------------------------------------------------
@pytest.fixture(scope="module")
def scratch_copy(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """What ``vlrl plan`` reads of the project (the DAG's files, the configs, the code the
    stages' inputs name, dvc.yaml), copied once for this module's plans; no git, no DVC."""
    import shutil

    repo, root = Path(__file__).resolve().parents[2], tmp_path_factory.mktemp("plan")
    for name in ("Snakefile", "params.yaml", "dvc.yaml"):
        shutil.copy(repo / name, root / name)
    for name in ("rules", "config", "profiles", "workflow_scripts"):
        shutil.copytree(repo / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return SimpleNamespace(root=root)


def test_the_plan_of_the_default_experiment(scratch_copy, monkeypatch) -> None:
    from vlrl.config import load_experiment
    from vlrl.workflow.plan import make_plan

    root = scratch_copy.root
    monkeypatch.chdir(root)
    monkeypatch.setenv("VLRL_ROOT", str(root))
    cfg = load_experiment("tiny_shapes")
    plan = make_plan("tiny_shapes")
    assert plan.experiment == "tiny_shapes" and plan.tracked
    rules = [p.job.rule for p in plan.jobs]
    n_infer = len(cfg.checkpoints) * len(cfg.benchmarks)
    assert rules == ["data", "base_model", "sft", "grpo", "merge", *["infer"] * n_infer,
                     *["score"] * n_infer, "report"]  # fmt: skip
    assert all(p.needed for p in plan.jobs)  # nothing built in the copy
    assert plan.to_run == plan.jobs
    assert plan.downloads == [
        Download("model", cfg.base_model, "tiny (built here)", None, "built locally")
    ]
    assert plan.servers == [] and plan.measured == {} and plan.stale == []
    assert plan.unknown == dict(cfg.unknown) and plan.deviations == dict(cfg.deviations)
    assert plan.reported == cfg.reported
    # the estimate: the shapes world's records and test split, the recipe's benchmarks
    est = plan.estimate
    labels = [s.label for s in est.stages]
    assert labels == ["sft", "grpo", *[f"infer {c} x {b}" for c in cfg.checkpoints
                                       for b in cfg.benchmarks]]  # fmt: skip
    grpo = next(s for s in est.stages if s.label == "grpo")
    new_prompts = grpo.get("steps") * grpo.get("prompts/step") / cfg.grpo.num_iterations
    assert grpo.get("epochs") == new_prompts / cfg.data.shapes.n_train
    infer = next(s for s in est.stages if s.label.startswith("infer"))
    assert infer.get("items") == cfg.data.shapes.n_test
    sft = next(s for s in est.stages if s.label == "sft")
    assert sft.get("records") == cfg.data.shapes.n_train
    assert plan.disk[1][0] == "models written" and plan.disk[1][1] == 3 * est.parameters * 2.0
    # why each job runs: the preview's reasons; no params file is left behind by the plan
    assert plan.preview.why["report--tiny_shapes"][0].startswith("output missing")
    assert not list(root.glob("results/*/params/*.yaml"))


def test_the_disk_names_every_download_of_unstated_size() -> None:
    found = [Download("dataset", n, "o/x@?", None, "to fetch") for n in ("u", "v")]
    assert disk(training(sft=False, grpo=False), None, found)[0] == (
        "downloads", None, "the sizes the configs state; not stated: u, v"
    )  # fmt: skip


def test_the_estimate_of_a_hub_recipe_from_its_configs(project: Path) -> None:
    """The typical picture of the training data, each benchmark's items (its subsample and
    max_items), budget and pictures, as the configs state them (vlm_r1_rec: 640 x 480)."""
    from vlrl.config import load_experiment, load_model
    from vlrl.workflow.plan import _estimate

    config_file(project, "benchmarks", "capped", "loader: records\ndataset: vlm_r1_rec\n"
                "file: f.jsonl\nmax_items: 500\nsubsample: {n: 2000, seed: 1}\n")  # fmt: skip
    config_file(project, "benchmarks", "sampled", "loader: records\ndataset: vlm_r1_rec\n"
                "file: f.jsonl\nmax_items: 5000\nsubsample: {n: 2000, seed: 1}\n")  # fmt: skip
    config_file(project, "benchmarks", "uncounted", "loader: records\ndataset: mmmu\n"
                "file: f.jsonl\n")  # fmt: skip
    cfg = load_experiment("vlm_r1_rec")
    cfg = cfg.model_copy(update={"benchmarks": ["refcoco_val", "capped", "sampled", "uncounted"],
                                 "checkpoints": ["base"]})  # fmt: skip
    est = _estimate(cfg, load_model(cfg.base_model), 1000)
    stages = {s.label: s for s in est.stages}
    picture = "480x640 px within [3136, 12845056] pixels / 28²"
    grpo = stages["grpo"]
    assert {f.name: f.basis for f in grpo.figures}["image tokens/image"].startswith("480x640 px")
    assert grpo.get("epochs") is not None  # the records given
    refcoco = stages["infer base x refcoco_val"]
    assert refcoco.get("items") == 2000  # its subsample
    assert refcoco.get("generated tokens (max)") == 2000 * 256  # its own max_new_tokens
    assert {f.name: f.basis for f in refcoco.figures}["image tokens/image"] == picture
    assert stages["infer base x capped"].get("items") == 500
    assert stages["infer base x sampled"].get("items") == 2000
    uncounted = stages["infer base x uncounted"]
    assert uncounted.get("items") is None
    # mmmu states no picture size: the typical one assumed (the training data's)
    assert {f.name: f.basis for f in uncounted.figures}["image tokens/image"] == picture


def test_the_plan_of_an_experiment_dvc_does_not_track(scratch_copy, monkeypatch) -> None:
    """An experiment outside params.yaml (so outside dvc.yaml) with servers, a reported run and
    its data stage's records; a params file the DAG build rewrites is put back as it was."""
    from vlrl.config import load_experiment
    from vlrl.core import paths as vlrl_paths
    from vlrl.workflow.plan import make_plan

    exp, root = "sophiavl_r1", scratch_copy.root
    monkeypatch.chdir(root)
    monkeypatch.setenv("VLRL_ROOT", str(root))
    cfg = load_experiment(exp)
    stale = root / vlrl_paths.stage_params_file(exp, "grpo")
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("grpo: {beta: 99}\n")
    os.utime(stale, ns=(1_000_000_000, 2_000_000_000))
    records = root / "results" / exp / "data" / "train.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    records.write_text('{"a": 1}\n' * 8)
    try:
        plan = make_plan(exp)
    finally:
        restored = (stale.read_text(), stale.stat().st_mtime_ns)
        shutil.rmtree(root / "results" / exp)
    assert restored == ("grpo: {beta: 99}\n", 2_000_000_000)
    assert not plan.tracked and plan.stale == []
    assert [s.key for s in plan.servers] == ["grpo.trust.reward_model", "score.judge"]
    assert plan.reported == cfg.reported is not None
    assert plan.unknown == dict(cfg.unknown) and plan.unknown  # both stated by the recipe
    assert plan.deviations == dict(cfg.deviations) and plan.deviations
    assert any(j.job.wildcards.get("exp") == exp for j in plan.jobs)
    grpo = next(s for s in plan.estimate.stages if s.label == "grpo")
    prompts = grpo.get("steps") * grpo.get("prompts/step") / cfg.grpo.num_iterations
    assert grpo.get("epochs") == prompts / 8  # the data stage's 8 records


def test_the_estimate_of_a_shapes_benchmark_its_pictures_and_sft_records(project: Path) -> None:
    """A benchmark's own item cap on the shapes world, a benchmark's pictures where its dataset
    states a size other than the training data's, and the SFT records the plan knows."""
    from vlrl.config import load_experiment, load_model
    from vlrl.workflow.plan import _estimate

    config_file(project, "benchmarks", "capped", "loader: records\ndataset: vlm_r1_rec\n"
                "file: f.jsonl\nmax_items: 500\n")  # fmt: skip
    rec = (project / "config" / "datasets" / "vlm_r1_rec.yaml").read_text()
    config_file(project, "datasets", "small_pictures",
                rec.replace("image_size: [640, 480]", "image_size: [320, 240]"))  # fmt: skip
    config_file(project, "benchmarks", "small", "loader: records\ndataset: small_pictures\n"
                "file: f.jsonl\nmax_items: 10\n")  # fmt: skip
    shapes = load_experiment("tiny_shapes")
    shapes = shapes.model_copy(update={"benchmarks": ["capped"], "checkpoints": ["base"]})
    est = _estimate(shapes, load_model(shapes.base_model), 40)
    assert {s.label: s for s in est.stages}["infer base x capped"].get("items") == 500
    sft = load_experiment("vlm_r1_rec_sft")
    assert sft.sft.enabled and sft.sft.max_samples is None
    sft = sft.model_copy(update={"benchmarks": ["small"], "checkpoints": ["base"]})
    stages = {s.label: s for s in _estimate(sft, load_model(sft.base_model), 1000).stages}
    assert stages["sft"].get("records") == 1000
    bases = {f.name: f.basis for f in stages["infer base x small"].figures}
    assert bases["image tokens/image"].startswith("240x320 px")  # not the training's 480x640


def test_a_plan_of_stale_dvc_stages_measured_jobs_and_its_own_experiment_only(
    scratch_copy, monkeypatch, caplog
) -> None:
    """What make_plan gathers beside the jobs: dvc.yaml's stages that lag the DAG, the times a
    Snakemake run measured, and no "wrote" line per params file; params.yaml's other
    experiments (here one that does not exist) play no part in the plan of one."""
    import yaml

    from vlrl.workflow import dag as plan_module
    from vlrl.workflow.plan import make_plan

    root = scratch_copy.root
    monkeypatch.chdir(root)
    monkeypatch.setenv("VLRL_ROOT", str(root))
    dvc_yaml, params = (root / "dvc.yaml").read_text(), (root / "params.yaml").read_text()
    timing = root / "logs" / "timings" / "sft" / "tiny_shapes.tsv"
    try:
        stages = yaml.safe_load(dvc_yaml)
        del stages["stages"]["report--tiny_shapes"]
        (root / "dvc.yaml").write_text(yaml.safe_dump(stages))
        timing.parent.mkdir(parents=True)
        timing.write_text("s\th:m:s\n42.5\t0:00:42\n")
        caplog.set_level(logging.INFO)

        def planned_jobs(*args, **kwargs):  # another logger's line during the DAG build
            logging.getLogger("vlrl.workflow.dag").info("building the DAG")
            return plan_module.planned_jobs(*args, **kwargs)

        with monkeypatch.context() as patched:
            patched.setattr("vlrl.workflow.plan.planned_jobs", planned_jobs)
            plan = make_plan("tiny_shapes")
        assert plan.tracked and plan.stale == ["report--tiny_shapes"]
        assert plan.measured == {"sft--tiny_shapes": 42.5}
        assert not [r for r in caplog.records if r.name == "vlrl.workflow.resolve"]
        assert "building the DAG" in [r.getMessage() for r in caplog.records]  # not all quieted
        (root / "params.yaml").write_text(yaml.safe_dump({"experiments": ["no_such_recipe"]}))
        alone = make_plan("tiny_shapes")
        assert not alone.tracked and alone.stale == []
        assert [p.job.rule for p in alone.jobs] == [p.job.rule for p in plan.jobs]
    finally:
        (root / "dvc.yaml").write_text(dvc_yaml)
        (root / "params.yaml").write_text(params)
        shutil.rmtree(root / "logs", ignore_errors=True)
