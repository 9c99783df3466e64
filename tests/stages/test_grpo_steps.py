"""The grpo stage's own decisions, each in process and in milliseconds: which start model and
inputs it needs, one process or several, what it resumes, when it stops, what it requeues, what
the ranks get and what a run keeps (vlrl.stages.grpo). TRL's training itself is exercised by the
slow tests of test_grpo.py; here the trainer is a recorder."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.cluster import preemption
from vlrl.cluster.distributed import Topology
from vlrl.cluster.preemption import STOP_AT_ENV
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import grpo

EXP = "tiny_shapes"
TIMES = {"step_time": [0.5, 2.5, 1.0], "train_runtime": 4.0}


def _cfg(*overrides: str):
    return load_experiment(EXP, ["sft.enabled=false", *overrides])


def _start(cfg) -> Path:
    return paths.model_resource(cfg.base_model)


@pytest.fixture()
def inputs(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stage's two inputs as empty stand-ins (the run's trainer is a recorder), no Slurm job
    and no stop time in the environment."""
    for name in ("SLURM_JOB_ID", STOP_AT_ENV, "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    data = paths.data_dir(EXP)
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text("")
    start = _start(_cfg())
    start.mkdir(parents=True)
    (start / "config.json").write_text("{}")
    return project


class Recorder:
    """Stands in for grpo.train and grpo.train_in_ranks: records what each was given and what
    the environment and the checkpoints folder held then; writes a file into the output."""

    def __init__(self, times: dict | None = None, during=None) -> None:
        self.calls: list[dict] = []
        self.times = TIMES if times is None else times
        self.during = during  # what the run does to its checkpoints folder

    def train(self, exp, cfg, out, resume_from):
        return self._record(exp=exp, cfg=cfg, out=out, resume_from=resume_from)

    def train_in_ranks(self, exp, cfg, topo, out, resume_from):
        return self._record(exp=exp, cfg=cfg, topo=topo, out=out, resume_from=resume_from)

    def _record(self, **call) -> dict:
        checkpoints = paths.grpo_checkpoints_dir(call["exp"])
        call["requeues"] = preemption.read_requeues(checkpoints)
        call["stop_at"] = os.environ.get(STOP_AT_ENV)
        call["cuda"] = os.environ.get("CUDA_VISIBLE_DEVICES")
        call["out_existed"] = paths.grpo_dir(call["exp"]).exists()
        (call["out"] / "policy.txt").write_text("trained")
        if self.during:
            self.during(checkpoints)
        self.calls.append(call)
        return dict(self.times)


@pytest.fixture()
def trainer(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(grpo, "train", recorder.train)
    monkeypatch.setattr(grpo, "train_in_ranks", recorder.train_in_ranks)
    return recorder


def test_a_disabled_stage_refuses_to_run(project: Path) -> None:
    with pytest.raises(StageError) as err:
        grpo.run(EXP, _cfg("grpo.enabled=false"))
    assert str(err.value) == (
        "experiment tiny_shapes: grpo.enabled is false; the workflow should not run grpo"
    )


def test_the_start_models_config_is_an_input_too(inputs: Path, trainer: Recorder) -> None:
    config = _start(_cfg()) / "config.json"
    config.unlink()
    with pytest.raises(StageError) as err:
        grpo.run(EXP, _cfg())
    assert str(err.value) == f"grpo: input {config} is missing; run the earlier stages first"
    assert not trainer.calls


def test_with_sft_on_the_run_starts_from_the_sft_model(inputs: Path, trainer: Recorder) -> None:
    cfg = load_experiment(EXP, ["grpo.processes=1"])
    start = grpo.sharing.policy_start_dir(EXP, True, cfg.base_model)
    assert start != _start(cfg)
    with pytest.raises(StageError) as err:
        grpo.run(EXP, cfg)
    assert str(err.value) == (
        f"grpo: input {start / 'config.json'} is missing; run the earlier stages first"
    )
    start.mkdir(parents=True)
    (start / "config.json").write_text("{}")
    grpo.run(EXP, cfg)
    assert len(trainer.calls) == 1


def test_one_process_trains_here_and_keeps_the_output(
    inputs: Path, trainer: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _cfg("grpo.processes=1")
    with caplog.at_level(logging.INFO, logger="vlrl.stages.grpo"):
        times = grpo.run(EXP, cfg)
    assert times == TIMES
    (call,) = trainer.calls
    assert "topo" not in call  # train, not train_in_ranks
    assert call["exp"] == EXP and call["cfg"] is cfg and call["resume_from"] is None
    assert call["out"].parent == paths.grpo_dir(EXP).parent and not call["out_existed"]
    assert call["requeues"] == {"starts": [0], "requeues": 0}  # recorded before training
    assert call["stop_at"] is None and call["cuda"] is None
    out = paths.grpo_dir(EXP)
    assert (out / "policy.txt").read_text() == "trained"
    assert not call["out"].exists()  # published as the output
    assert not paths.grpo_checkpoints_dir(EXP).exists()  # the checkpoints go with a finished run
    assert caplog.messages[-2:] == [
        f'grpo: run times (kept out of {out}): 3 logged steps, median 1.000 s; {{"train_runtime": '
        "4.0}",
        f"grpo: wrote {out}",
    ]


def test_a_run_without_logged_steps_says_so(
    inputs: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder({"step_time": []})
    monkeypatch.setattr(grpo, "train", recorder.train)
    with caplog.at_level(logging.INFO, logger="vlrl.stages.grpo"):
        grpo.run(EXP, _cfg("grpo.processes=1"))
    out = paths.grpo_dir(EXP)
    assert f"grpo: run times (kept out of {out}): 0 logged steps, median - s; {{}}" in (
        caplog.messages
    )


def test_several_processes_train_in_ranks_of_the_stages_topology(
    inputs: Path, trainer: Recorder
) -> None:
    cfg = _cfg("grpo.processes=2", "cpu_threads=3")
    grpo.run(EXP, cfg)
    (call,) = trainer.calls
    assert call["topo"] == Topology(1, 2, 0, 6, cfg.resources.grpo.mem_mb)
    assert call["cfg"] is cfg and call["resume_from"] is None


def test_on_gpus_the_ranks_see_the_training_gpus_only(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two GPUs, TRL's vLLM server on the second: one rank, on GPU 0 (set before torch starts)."""
    monkeypatch.setattr(grpo, "check_backends", lambda cfg: None)  # no vLLM, no GPU here
    monkeypatch.setattr(grpo.grpo_servers, "served", _served_as_is)
    cfg = _cfg(
        "resources.grpo.gpus=2",
        "grpo.processes=1",
        "grpo.use_vllm=true",
        "grpo.vllm_mode=server",
        "grpo.vllm_server_gpus=1",
    )
    grpo.run(EXP, cfg)
    (call,) = trainer.calls
    assert call["cuda"] == "0"
    assert "topo" not in call  # 2 GPUs less the server's: one process


def _served_as_is(exp, cfg, start, split):
    import contextlib

    @contextlib.contextmanager
    def served():
        yield cfg

    return served()


def test_without_gpus_the_visible_devices_are_left_alone(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    grpo.run(EXP, _cfg("grpo.processes=1"))
    assert trainer.calls[0]["cuda"] == "3"


def test_a_deepspeed_run_gets_the_accelerators_environment(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = []
    monkeypatch.setattr(grpo, "check_backends", checked.append)
    monkeypatch.setattr(grpo, "deepspeed_env", lambda cuda: {"VLRL_TEST_DS": f"cuda={cuda}"})
    monkeypatch.delenv("VLRL_TEST_DS", raising=False)
    seen = []

    def resume_point(*args):
        args[0].mkdir(parents=True)
        seen.append((args[2:4], os.environ.get("VLRL_TEST_DS")))

    monkeypatch.setattr(grpo.ckpt, "resume_point", resume_point)
    cfg = _cfg("grpo.processes=1", "grpo.deepspeed=zero2")
    grpo.run(EXP, cfg)
    assert checked == [cfg.grpo]
    import torch

    assert seen == [((True, True), f"cuda={torch.cuda.is_available()}")]


def test_without_deepspeed_its_environment_is_not_set(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpo, "deepspeed_env", lambda cuda: pytest.fail("DeepSpeed's env asked"))
    seen = []

    def resume_point(*args):
        args[0].mkdir(parents=True)
        seen.append(args)

    monkeypatch.setattr(grpo.ckpt, "resume_point", resume_point)
    cfg = _cfg("grpo.processes=2", "grpo.resume=false")
    grpo.run(EXP, cfg)
    ((checkpoints, fingerprint, enabled, deepspeed, topo),) = seen
    assert checkpoints == paths.grpo_checkpoints_dir(EXP)
    assert fingerprint == grpo.fingerprint(EXP, cfg, _start(cfg))
    assert (enabled, deepspeed, topo) == (False, False, trainer.calls[0]["topo"])


@pytest.mark.parametrize(
    ("processes", "layout"),
    [(1, "1 node x 1 process (world size 1)"), (2, "1 node x 2 processes (world size 2)")],
)
def test_a_run_resumes_from_its_newest_complete_checkpoint_and_records_the_step(
    inputs: Path, trainer: Recorder, processes: int, layout: str
) -> None:
    cfg = _cfg(f"grpo.processes={processes}")
    checkpoints = paths.grpo_checkpoints_dir(EXP)
    checkpoints.mkdir(parents=True)
    (checkpoints / "vlrl_fingerprint.txt").write_text(grpo.fingerprint(EXP, cfg, _start(cfg)))
    (checkpoints / "vlrl_topology.txt").write_text(layout)
    for step in (2, 4):
        (checkpoints / f"checkpoint-{step}").mkdir()
        (checkpoints / f"checkpoint-{step}" / "trainer_state.json").write_text(
            json.dumps({"global_step": step})
        )
    grpo.run(EXP, cfg)
    (call,) = trainer.calls
    assert ("topo" in call) == (processes > 1)
    assert call["resume_from"] == str(checkpoints / "checkpoint-4")
    assert call["requeues"]["starts"] == [4]


def test_the_run_starts_its_servers_for_its_start_model_and_gpu_split(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from vlrl.algorithms.grpo_servers import gpu_split

    asked, served_cfg = [], object()

    @contextlib.contextmanager
    def served(*args):
        asked.append(args)
        yield served_cfg

    monkeypatch.setattr(grpo.grpo_servers, "served", served)
    cfg = _cfg("grpo.processes=1")
    grpo.run(EXP, cfg)
    assert asked == [(EXP, cfg, _start(cfg), gpu_split(cfg))]
    assert trainer.calls[0]["cfg"] is served_cfg  # training reads the servers' addresses


def test_stop_signals_are_forwarded_to_the_ranks_with_the_relays_grace(
    inputs: Path, trainer: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    asked = []

    @contextlib.contextmanager
    def stop_on_signals(**kwargs):
        asked.append(kwargs)
        yield

    monkeypatch.setattr(grpo, "stop_on_signals", stop_on_signals)
    grpo.run(EXP, _cfg("grpo.processes=2"))
    assert asked == [{"forward": True, "grace_s": 120}]


def test_a_stopped_run_of_several_ranks_needs_every_ranks_files(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint the ranks left lacks rank 1's RNG states: no progress, not requeued."""

    def left_a_checkpoint(checkpoints: Path) -> None:
        _checkpoint(checkpoints, 5)
        for name in ("optimizer.pt", "rng_state_0.pth"):
            (checkpoints / "checkpoint-5" / name).write_bytes(b"")

    recorder = Recorder({"stopped_at": 5}, during=left_a_checkpoint)
    monkeypatch.setattr(grpo, "train_in_ranks", recorder.train_in_ranks)
    with pytest.raises(StageError, match="no checkpoint got past step 0"):
        grpo.run(EXP, _cfg("grpo.processes=2"))


def test_a_run_whose_checkpoints_are_gone_still_finishes(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    recorder = Recorder(during=shutil.rmtree)
    monkeypatch.setattr(grpo, "train", recorder.train)
    grpo.run(EXP, _cfg("grpo.processes=1"))
    assert (paths.grpo_dir(EXP) / "policy.txt").is_file()


def test_the_time_limit_is_passed_to_the_ranks(
    inputs: Path,
    trainer: Recorder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import time

    monkeypatch.setattr(grpo, "stop_time", lambda margin: 1000.25 + margin)
    monkeypatch.setattr(time, "time", lambda: 500.0)
    monkeypatch.setenv(STOP_AT_ENV, "")  # restored after the test; run sets it
    with caplog.at_level(logging.INFO, logger="vlrl.stages.grpo"):
        grpo.run(EXP, _cfg("grpo.processes=1", "grpo.stop_margin_s=100"))
    assert trainer.calls[0]["stop_at"] == "1100.25"
    assert "grpo: stops to resume later 600 s from now" in caplog.messages


def test_a_stopped_run_leaves_no_output_and_keeps_its_checkpoints(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder({"stopped_at": 3, "stopped_by": "on SIGUSR1"})
    monkeypatch.setattr(grpo, "train", recorder.train)
    with pytest.raises(StageError) as err:
        grpo.run(EXP, _cfg("grpo.processes=1"))
    checkpoints = paths.grpo_checkpoints_dir(EXP)
    assert str(err.value).startswith("grpo: stopped after step 3 of 90 on SIGUSR1; not requeued")
    assert not paths.grpo_dir(EXP).exists() and checkpoints.is_dir()


# ---- _stopped: requeue or not, and what it says ------------------------------------------------


def _grpo(**update):
    return load_experiment(EXP).grpo.model_copy(update=update)


def _checkpoint(checkpoints: Path, step: int) -> None:
    path = checkpoints / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))


@pytest.fixture()
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    preemption.record_start(folder, 0)
    return folder


def _stopped_message(times, cfg, checkpoints, ranks=1) -> str:
    with pytest.raises(StageError) as err:
        grpo._stopped(times, cfg, checkpoints, ranks)
    return str(err.value)


def test_with_resume_off_a_stopped_run_is_not_requeued(checkpoints: Path) -> None:
    _checkpoint(checkpoints, 5)
    message = _stopped_message({"stopped_at": 5}, _grpo(resume=False), checkpoints)
    assert message == (
        "grpo: stopped after step 5 of 90 before the job's time limit; not requeued: "
        "grpo.resume is false, so a rerun would start again from step 0 and stop at the same "
        "point. Set grpo.resume: true, or give the job the time the whole run needs "
        "(resources.grpo.runtime)"
    )


def test_without_progress_the_run_is_not_requeued(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: pytest.fail("requeued"))
    message = _stopped_message({"stopped_at": 0, "stopped_by": "on SIGTERM"}, _grpo(), checkpoints)
    assert message == (
        "grpo: stopped after step 0 of 90 on SIGTERM; not requeued: "
        + preemption.requeue_refusal({"starts": [0], "requeues": 0}, None, 3)
    )


def test_the_newest_complete_checkpoint_of_every_rank_is_the_progress(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 6 lacks rank 1's RNG states (two ranks): progress is step 4's, and step 6 is kept
    (the rerun's resume point removes it, not this)."""
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: (False, "not a Slurm job"))
    seen = []
    refusal = grpo.preemption.requeue_refusal
    monkeypatch.setattr(
        grpo.preemption,
        "requeue_refusal",
        lambda record, reached, cap: seen.append((record, reached, cap)) or refusal(*seen[-1]),
    )
    for step in (4, 6):
        _checkpoint(checkpoints, step)
        for name in ("optimizer.pt", "rng_state_0.pth"):
            (checkpoints / f"checkpoint-{step}" / name).write_bytes(b"")
    (checkpoints / "checkpoint-4" / "rng_state_1.pth").write_bytes(b"")
    _stopped_message({"stopped_at": 6}, _grpo(max_requeues=7), checkpoints, ranks=2)
    assert seen == [({"starts": [0], "requeues": 0}, 4, 7)]
    assert (checkpoints / "checkpoint-6").is_dir()


def test_a_deepspeed_checkpoint_needs_its_tag(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: pytest.fail("requeued"))
    _checkpoint(checkpoints, 5)  # no DeepSpeed "latest": incomplete under DeepSpeed
    message = _stopped_message({"stopped_at": 5}, _grpo(deepspeed="zero2"), checkpoints)
    assert "no checkpoint got past step 0" in message


def test_outside_slurm_the_rerun_resumes(
    checkpoints: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _checkpoint(checkpoints, 5)
    with caplog.at_level(logging.WARNING):
        message = _stopped_message({"stopped_at": 5}, _grpo(), checkpoints)
    assert message == (
        f"grpo: stopped after step 5 of 90 before the job's time limit, with a checkpoint in "
        f"{checkpoints}; rerun the stage to resume from it"
    )
    assert not caplog.messages


def test_in_slurm_a_stopped_run_requeues_its_job_and_says_which_time(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    preemption.write_requeues(checkpoints, {"starts": [0, 2], "requeues": 1})
    asked = []
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: asked.append(c) or (True, ""))
    _checkpoint(checkpoints, 5)
    with caplog.at_level(logging.WARNING, logger="vlrl.stages.grpo"):
        message = _stopped_message({"stopped_at": 5}, _grpo(max_requeues=4), checkpoints)
    what = "grpo: stopped after step 5 of 90 before the job's time limit"
    assert message == (
        f"{what}, with a checkpoint in {checkpoints}; the Slurm job is requeued (time 2 of at "
        "most 4) and resumes from it"
    )
    assert asked == [checkpoints]
    assert caplog.messages == [
        f"{what}, with a checkpoint in {checkpoints}; requeuing the Slurm job (time 2 of at most 4)"
    ]


def test_in_slurm_a_refused_requeue_says_why(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: (False, "Slurm said no"))
    _checkpoint(checkpoints, 5)
    message = _stopped_message({"stopped_at": 5}, _grpo(), checkpoints)
    assert message.endswith(
        f"with a checkpoint in {checkpoints}; not requeued: Slurm said no. Rerun the stage to "
        "resume from it"
    )


def test_after_max_requeues_the_run_is_not_requeued(
    checkpoints: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpo.preemption, "requeue_job", lambda c: pytest.fail("requeued"))
    preemption.write_requeues(checkpoints, {"starts": [0, 2], "requeues": 2})
    _checkpoint(checkpoints, 5)
    message = _stopped_message({"stopped_at": 5}, _grpo(max_requeues=2), checkpoints)
    assert "; not requeued: the job was requeued max_requeues = 2 times already" in message


# ---- fingerprint: what a resumable checkpoint must share --------------------------------------


def test_the_fingerprint_hashes_the_grpo_section_seed_prompt_and_weights(tmp_path: Path) -> None:
    start = tmp_path / "start"
    start.mkdir()
    weights = start / "model.safetensors"
    weights.write_bytes(b"1234")
    os.utime(weights, ns=(5, 7))
    (start / "other.bin").write_bytes(b"not weights")
    cfg = _cfg()
    blob = {
        "exp": "e",
        "grpo": cfg.grpo.model_dump(mode="json", exclude=set(grpo.OPERATIONAL)),
        "seed": cfg.seed,
        "prompt": cfg.prompt,
        "weights": [["model.safetensors", 4, 7]],
    }
    expected = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()
    assert grpo.fingerprint("e", cfg, start) == expected


@pytest.mark.parametrize(
    "override", ["grpo.learning_rate=0.5", "seed=9", "prompt=rec_json", "grpo.beta=0.5"]
)
def test_what_is_trained_changes_the_fingerprint(tmp_path: Path, override: str) -> None:
    assert grpo.fingerprint("e", _cfg(override), tmp_path) != grpo.fingerprint(
        "e", _cfg(), tmp_path
    )


@pytest.mark.parametrize(
    "override",
    [
        "grpo.resume=false",
        "grpo.stop_margin_s=5",
        "grpo.max_requeues=9",
        "grpo.save_steps=3",
        "grpo.save_total_limit=7",
    ],
)
def test_how_a_run_checkpoints_keeps_the_fingerprint(tmp_path: Path, override: str) -> None:
    assert grpo.fingerprint("e", _cfg(override), tmp_path) == grpo.fingerprint(
        "e", _cfg(), tmp_path
    )


def test_the_start_weights_and_the_experiment_change_the_fingerprint(tmp_path: Path) -> None:
    cfg = _cfg()
    before = grpo.fingerprint("e", cfg, tmp_path)
    assert grpo.fingerprint("f", cfg, tmp_path) != before
    (tmp_path / "a.safetensors").write_bytes(b"x")
    assert grpo.fingerprint("e", cfg, tmp_path) != before


# ---- train_in_ranks: the ranks' command, config file and times --------------------------------


@pytest.fixture()
def ranks(project: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """grpo.run_group recorded; each test says what the ranks wrote and how they exited."""
    rec = SimpleNamespace(calls=[], times=TIMES, returncode=0)
    checkpoints = paths.grpo_checkpoints_dir(EXP)
    checkpoints.mkdir(parents=True)

    def run_group(cmd, env, stdout):
        rec.calls.append({"cmd": cmd, "env": env, "stdout": stdout})
        rec.config = json.loads((checkpoints / grpo.RANK_CONFIG).read_text())
        rec.stale_times = (checkpoints / grpo.RANK_TIMES).exists()
        if rec.times is not None:
            (checkpoints / grpo.RANK_TIMES).write_text(json.dumps(rec.times))
        return rec.returncode

    monkeypatch.setattr(grpo, "run_group", run_group)
    rec.checkpoints = checkpoints
    return rec


def test_the_ranks_get_the_declared_keys_and_their_times_come_back(
    ranks: SimpleNamespace, tmp_path: Path
) -> None:
    import sys

    from vlrl.config.keys import select
    from vlrl.config.reads import declared_reads

    (ranks.checkpoints / grpo.RANK_TIMES).write_text('{"stale": 1}')
    cfg = _cfg("grpo.max_steps=7")
    out = tmp_path / "out"
    times = grpo.train_in_ranks(EXP, cfg, Topology(1, 2), out, "ckpt-3")
    assert times == TIMES
    assert not ranks.stale_times  # a former run's times are not read back
    assert ranks.config == select(cfg, declared_reads("grpo"))
    assert ranks.config["grpo"]["max_steps"] == 7
    ((call),) = ranks.calls
    config_file = ranks.checkpoints / grpo.RANK_CONFIG
    assert call["cmd"] == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=2",
        "--standalone",
        "-m",
        "vlrl.stages.grpo",
        EXP,
        str(config_file),
        str(out),
        "ckpt-3",
    ]
    assert call["env"] is os.environ and call["stdout"] is sys.stderr


def test_ranks_on_several_nodes_meet_at_the_jobs_rendezvous(
    ranks: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    from vlrl.cluster.distributed import Rendezvous

    rdzv = Rendezvous("node1", 29511, "77")
    topo = Topology(2, 1)
    monkeypatch.setattr(grpo, "rendezvous_for", lambda t: rdzv if t is topo else None)
    given = []
    monkeypatch.setattr(
        grpo, "torchrun_command", lambda *args: given.append(args) or ["torchrun", "a b"]
    )
    with caplog.at_level(logging.INFO, logger="vlrl.stages.grpo"):
        grpo.train_in_ranks(EXP, _cfg(), topo, tmp_path, None)
    config_file = ranks.checkpoints / grpo.RANK_CONFIG
    target = ["-m", "vlrl.stages.grpo", EXP, str(config_file), str(tmp_path), ""]
    assert given == [(topo, target, rdzv)]
    assert ranks.calls[0]["cmd"] == ["torchrun", "a b"]
    assert caplog.messages == ["grpo: 2 processes: torchrun 'a b'"]


def test_a_fresh_run_passes_no_resume_point(ranks: SimpleNamespace, tmp_path: Path) -> None:
    grpo.train_in_ranks(EXP, _cfg(), Topology(1, 2), tmp_path, None)
    assert ranks.calls[0]["cmd"][-1] == ""


def test_ranks_that_fail_fail_the_stage(ranks: SimpleNamespace, tmp_path: Path) -> None:
    ranks.returncode = 3
    with pytest.raises(StageError) as err:
        grpo.train_in_ranks(EXP, _cfg(), Topology(1, 2), tmp_path, None)
    assert str(err.value) == "grpo: the training processes exited with 3 (see above)"


def test_ranks_stopped_by_a_signal_return_where_they_stopped(
    ranks: SimpleNamespace, tmp_path: Path
) -> None:
    """torchrun exits non-zero after a SIGTERM even when the ranks checkpointed and stopped."""
    ranks.returncode, ranks.times = -15, {"stopped_at": 4, "stopped_by": "on SIGTERM"}
    times = grpo.train_in_ranks(EXP, _cfg(), Topology(1, 2), tmp_path, None)
    assert times == {"stopped_at": 4, "stopped_by": "on SIGTERM"}


def test_ranks_that_exit_without_their_times_fail_the_stage(
    ranks: SimpleNamespace, tmp_path: Path
) -> None:
    ranks.times = None
    with pytest.raises(StageError) as err:
        grpo.train_in_ranks(EXP, _cfg(), Topology(1, 2), tmp_path, None)
    times_file = ranks.checkpoints / grpo.RANK_TIMES
    assert str(err.value) == (f"grpo: the training processes finished without writing {times_file}")
    ranks.returncode = 1
    with pytest.raises(StageError, match=r"exited with 1 \(see above\)$"):
        grpo.train_in_ranks(EXP, _cfg(), Topology(1, 2), tmp_path, None)


# ---- rank_main: one rank's entry point ---------------------------------------------------------


@pytest.fixture()
def rank(project: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    rec = SimpleNamespace(trained=[], exits=0, aborts=0, logging=[])

    def train(exp, cfg, out, resume_from):
        rec.trained.append((exp, cfg, out, resume_from, list(rec.logging)))
        return {"step_time": [1.0]}

    def exit_finished_rank():
        rec.exits += 1
        raise SystemExit(0)

    def report_aborts():
        rec.aborts += 1

    monkeypatch.setattr(grpo, "train", train)
    monkeypatch.setattr(grpo, "exit_finished_rank", exit_finished_rank)
    monkeypatch.setattr(grpo, "report_aborts", report_aborts)
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: rec.logging.append(kwargs))
    return rec


def test_rank_zero_trains_the_files_config_and_writes_the_times(
    rank: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "0")
    config_file = tmp_path / grpo.RANK_CONFIG
    from vlrl.config.keys import select
    from vlrl.config.reads import declared_reads

    given = load_experiment(EXP, ["grpo.max_steps=7", "seed=11"])
    config_file.write_text(json.dumps(select(given, declared_reads("grpo"))))
    with pytest.raises(SystemExit):
        grpo.rank_main([EXP, str(config_file), str(tmp_path / "out"), ""])
    ((exp, cfg, out, resume_from, logged),) = rank.trained
    assert (exp, out, resume_from) == (EXP, tmp_path / "out", None)
    assert (cfg.grpo.max_steps, cfg.seed) == (7, 11)  # the file's keys over the experiment's
    assert cfg.description == given.description  # a key the file does not hold
    assert logged == [{"level": logging.INFO, "format": "[rank 0] %(message)s"}]
    assert json.loads((tmp_path / grpo.RANK_TIMES).read_text()) == {"step_time": [1.0]}
    assert (rank.exits, rank.aborts) == (1, 1)


def test_other_ranks_write_no_times_and_resume_where_told(
    rank: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    config_file = tmp_path / grpo.RANK_CONFIG
    config_file.write_text("{}")
    with pytest.raises(SystemExit):
        grpo.rank_main([EXP, str(config_file), str(tmp_path), "ckpt-4"])
    assert rank.trained[0][3] == "ckpt-4"
    assert rank.logging == [{"level": logging.INFO, "format": "[rank 1] %(message)s"}]
    assert not (tmp_path / grpo.RANK_TIMES).exists()


def test_without_a_rank_variable_the_process_is_rank_zero(
    rank: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    config_file = tmp_path / grpo.RANK_CONFIG
    config_file.write_text("{}")
    with pytest.raises(SystemExit):
        grpo.rank_main([EXP, str(config_file), str(tmp_path), ""])
    assert (tmp_path / grpo.RANK_TIMES).is_file()


# ---- job_step ----------------------------------------------------------------------------------


def test_a_job_step_reads_the_process_environment_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\n")
    srun.chmod(0o755)
    monkeypatch.setenv("SLURM_JOB_ID", "78")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("VLRL_RELAYED", raising=False)
    cmd = grpo.job_step(_cfg(), ["grpo", EXP])
    assert cmd[:2] == ["srun", "--jobid=78"]


def test_a_job_steps_size_leaves_out_the_servers_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vlm_r1_rec on 8 GPUs with TRL's server on 2: the step is sized as the job's node."""
    import sys

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\n")
    srun.chmod(0o755)
    cfg = load_experiment(
        "vlm_r1_rec", ["grpo.use_vllm=true", "grpo.vllm_mode=server", "grpo.vllm_server_gpus=2"]
    )
    cmd = grpo.job_step(cfg, ["grpo", "vlm_r1_rec"], {"SLURM_JOB_ID": "5", "PATH": str(tmp_path)})
    assert cmd[:8] == [
        "srun",
        "--jobid=5",
        "--nodes=1",
        "--ntasks=1",
        "--cpus-per-task=64",
        "--gres=gpu:8",
        "--mem=480000",
        "--overlap",
    ]
    assert cmd[-5:] == [sys.executable, "-m", "vlrl.cli", "grpo", "vlm_r1_rec"]


def test_a_job_without_srun_is_named_with_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(StageError) as err:
        grpo.job_step(_cfg(), ["grpo"], {"SLURM_JOB_ID": "77", "PATH": str(tmp_path)})
    assert str(err.value) == (
        "grpo runs in Slurm job 77 but srun is not on PATH, so it cannot start its training "
        "where Slurm's stop signals reach it. Inside a container, bind the Slurm client and its "
        'configuration in (README, "Run on a cluster")'
    )


# ---- train: one process's set-up, run and save (the trainer a recorder) -----------------------


class FakeTrainer:
    """What grpo.train asks of TRL's trainer; a stop callback can be made to fire."""

    def __init__(self, calls: list, stop: tuple | None, **kwargs) -> None:
        import torch

        self.kwargs, self.calls, self.stop = kwargs, calls, stop
        self.args = kwargs["args"]
        frozen = torch.nn.Linear(3, 2)
        frozen.requires_grad_(False)
        self.model = torch.nn.Sequential(torch.nn.Linear(2, 3), frozen)  # 9 trainable
        history = [{"loss": 0.5, "step_time": 0.25, "step": 1}, {"train_runtime": 2.0, "step": 1}]
        self.state = SimpleNamespace(log_history=history)

    def train(self, resume_from_checkpoint):
        self.calls.append(("train", resume_from_checkpoint))
        if self.stop:
            stopper = self.kwargs["callbacks"][0]
            stopper.stopped_at, stopper.stopped_by = self.stop
        return SimpleNamespace(global_step=1, training_loss=0.5)

    def save_model(self, path):
        self.calls.append(("save_model", path))

    def _load_from_checkpoint(self, *args, **kwargs):
        raise AssertionError("the Trainer's own reload")


@pytest.fixture()
def setup(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """grpo.train's collaborators recorded: the policy, the dataset, the rewards, TRL's config
    and trainer, the curves; RANK 0 and no stop time unless a test says otherwise."""
    from vlrl.items.records import Record

    rec = SimpleNamespace(calls=[], stop=None, trainer=None)
    records = [
        Record(
            id=f"r{i}",
            images=[],
            problem="p",
            answer="a",
            task=task,
            problem_type="free_form",
            data_source="test",
        ).model_dump()
        for i, task in enumerate(["count", "color", "count"])
    ]
    (paths.data_dir(EXP) / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    processor = SimpleNamespace(
        image_processor="the image processor",
        save_pretrained=lambda path: rec.calls.append(("processor.save_pretrained", path)),
    )

    def load_policy(start, grpo_cfg, reload_from):
        import torch

        rec.calls.append(("seed", torch.initial_seed()))  # transformers' set_seed seeds torch
        rec.calls.append(("load_policy", start, grpo_cfg, reload_from))
        return "the model", processor

    def build_dataset(records, data_dir, cfg, image_processor):
        rec.calls.append(("build_dataset", [r.id for r in records], data_dir, image_processor))
        rec.calls.append(("build_dataset cfg", cfg))
        return ["row"] * len(records)

    def build_trainer(grpo_cfg, **kwargs):
        rec.trainer = FakeTrainer(rec.calls, rec.stop, **kwargs)
        rec.calls.append(("build_trainer", grpo_cfg, kwargs))
        return rec.trainer

    monkeypatch.setattr(grpo, "load_policy", load_policy)
    monkeypatch.setattr(grpo, "build_trainer", build_trainer)
    monkeypatch.setattr(grpo, "build_dataset", build_dataset)
    monkeypatch.setattr(grpo, "reward_functions", lambda g: [("reward", g)])
    monkeypatch.setattr(grpo, "peft_config", lambda g: f"peft lora={g.lora}")
    monkeypatch.setattr(
        grpo, "trl_config", lambda g, d, seed: SimpleNamespace(g=g, dir=d, seed=seed, ds=False)
    )
    monkeypatch.setattr(grpo, "join_deepspeed", lambda args: setattr(args, "ds", True))
    monkeypatch.setattr(
        grpo, "quiet_progress", lambda t, steps: rec.calls.append(("quiet_progress", t, steps))
    )
    monkeypatch.setattr(grpo, "write_curves", lambda *a: rec.calls.append(("write_curves", *a)))
    monkeypatch.setenv("RANK", "0")
    rec.processor = processor
    rec.out = paths.grpo_dir(EXP)
    rec.out.mkdir(parents=True)
    return rec


def _called(rec: SimpleNamespace, name: str) -> list[tuple]:
    return [c[1:] for c in rec.calls if c[0] == name]


def test_train_sets_up_trains_and_saves_on_the_main_process(
    setup: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _cfg("seed=5", "grpo.max_steps=9", "grpo.tasks=[count]")
    with caplog.at_level(logging.INFO, logger="vlrl.stages.grpo"):
        times = grpo.train(EXP, cfg, setup.out, None)
    start, data = _start(cfg), paths.data_dir(EXP)
    assert _called(setup, "seed") == [(5,)]
    assert _called(setup, "load_policy") == [(start, cfg.grpo, None)]
    assert _called(setup, "build_dataset") == [(["r0", "r2"], data, "the image processor")]
    ((grpo_cfg, kwargs),) = _called(setup, "build_trainer")
    assert grpo_cfg is cfg.grpo
    args = kwargs.pop("args")
    assert (args.g, args.dir, args.seed, args.ds) == (
        cfg.grpo,
        paths.grpo_checkpoints_dir(EXP),
        5,
        False,
    )
    assert _called(setup, "build_dataset cfg") == [(cfg,)]
    callbacks = kwargs.pop("callbacks")
    assert kwargs == {
        "model": "the model",
        "reward_funcs": [("reward", cfg.grpo)],
        "train_dataset": ["row", "row"],
        "processing_class": setup.processor,
        "peft_config": "peft lora=False",
    }
    stopper = callbacks[0]
    assert type(stopper).__name__ == "StopBeforeLimit" and len(callbacks) == 1
    assert (stopper.stop_at, stopper.last_step) == (None, 9)
    assert _called(setup, "quiet_progress") == [(setup.trainer, 9)]
    final = setup.out / paths.GRPO_FINAL
    assert ("train", None) in setup.calls and ("save_model", str(final)) in setup.calls
    assert _called(setup, "processor.save_pretrained") == [(str(final),)]
    history = [{"loss": 0.5, "step": 1}, {"step": 1}]
    assert _called(setup, "write_curves") == [(setup.out / paths.GRPO_DVCLIVE, args, history)]
    assert json.loads((setup.out / "train_summary.json").read_text()) == {
        "start_model": str(start),
        "algorithm": "grpo",
        "resumed_from": None,
        "steps": 1,
        "train_loss": 0.5,
        "rewards": dict(cfg.grpo.rewards),
        "lora": False,
        "log_history": history,
    }
    assert times == {"step_time": [0.25], "train_runtime": 2.0}
    rewards = dict(cfg.grpo.rewards)
    assert f"grpo: 2 prompts, 9 steps, rewards {rewards}, from {start}" in caplog.messages
    assert "grpo: grpo, 9 trainable parameters" in caplog.messages
    from vlrl.cluster.threads import cpu_kernel_report

    assert f"grpo: CPU kernels {cpu_kernel_report()}" in caplog.messages


def test_after_sft_train_starts_from_the_sft_model(setup: SimpleNamespace) -> None:
    cfg = load_experiment(EXP)
    assert cfg.sft.enabled
    grpo.train(EXP, cfg, setup.out, None)
    ((start, _, _),) = _called(setup, "load_policy")
    assert start == grpo.sharing.policy_start_dir(EXP, True, cfg.base_model) != _start(cfg)


def test_other_ranks_save_through_the_trainer_only(
    setup: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    grpo.train(EXP, _cfg(), setup.out, None)
    assert _called(setup, "save_model")  # the Trainer saves on the main process only
    assert not _called(setup, "processor.save_pretrained") and not _called(setup, "write_curves")
    assert not (setup.out / "train_summary.json").exists()


def test_without_a_rank_variable_train_is_the_main_process(
    setup: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RANK")
    grpo.train(EXP, _cfg(), setup.out, None)
    assert (setup.out / "train_summary.json").is_file()


def test_a_full_fine_tune_resumes_its_weights_through_from_pretrained(
    setup: SimpleNamespace,
) -> None:
    """The Trainer's own reload misses a Qwen2.5-VL checkpoint's weights (transformers#43701)."""
    grpo.train(EXP, _cfg(), setup.out, "ckpt/checkpoint-4")
    ((_, _, reload_from),) = _called(setup, "load_policy")
    assert reload_from == Path("ckpt/checkpoint-4")
    assert ("train", "ckpt/checkpoint-4") in setup.calls
    assert setup.trainer._load_from_checkpoint() is None  # replaced: loaded already
    summary = json.loads((setup.out / "train_summary.json").read_text())
    assert summary["resumed_from"] == "ckpt/checkpoint-4"


@pytest.mark.parametrize("override", ["grpo.lora=true", "grpo.deepspeed=zero2"])
def test_lora_and_deepspeed_resume_through_the_trainer(
    setup: SimpleNamespace, override: str
) -> None:
    grpo.train(EXP, _cfg(override), setup.out, "ckpt/checkpoint-4")
    ((_, _, reload_from),) = _called(setup, "load_policy")
    assert reload_from is None
    with pytest.raises(AssertionError, match="own reload"):
        setup.trainer._load_from_checkpoint()


def test_a_deepspeed_run_joins_trls_config_to_deepspeed(setup: SimpleNamespace) -> None:
    grpo.train(EXP, _cfg("grpo.deepspeed=zero2"), setup.out, None)
    ((_, kwargs),) = _called(setup, "build_trainer")
    assert kwargs["args"].ds is True


def test_the_stop_time_and_a_planned_schedule_become_callbacks(
    setup: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STOP_AT_ENV, "1234.5")
    grpo.train(EXP, _cfg("grpo.max_steps=6", "grpo.schedule_steps=60"), setup.out, None)
    ((_, kwargs),) = _called(setup, "build_trainer")
    stopper, at_step = kwargs["callbacks"]
    assert (stopper.stop_at, stopper.last_step) == (1234.5, 6)
    assert type(at_step).__name__ == "StopAtStep"


def test_a_stopped_run_returns_where_and_why_and_saves_nothing(setup: SimpleNamespace) -> None:
    setup.stop = (3, "on SIGTERM")
    times = grpo.train(EXP, _cfg(), setup.out, None)
    assert times == {"stopped_at": 3, "stopped_by": "on SIGTERM"}
    assert not _called(setup, "save_model") and not (setup.out / "train_summary.json").exists()
