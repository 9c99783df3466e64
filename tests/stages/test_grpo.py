"""grpo stage: inputs, resuming, time limits, several processes, and a few real TRL steps
(its TRL set-up: tests/algorithms/test_trl_setup.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from vlrl.algorithms import trl_setup
from vlrl.cluster.preemption import STOP_AT_ENV
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.volatile import is_run_time
from vlrl.items.records import read_records
from vlrl.stages import grpo


@pytest.fixture()
def grpo_inputs(project: Path, shapes_data: Path, tiny_model_dir: Path) -> Path:
    """The scratch project with the grpo stage's inputs: the small shapes data and the tiny
    model (the start of a run with SFT off)."""
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    return project


def test_missing_input_named(project: Path) -> None:
    with pytest.raises(StageError, match=r"train\.jsonl is missing"):
        grpo.run("tiny_shapes", load_experiment("tiny_shapes"))


@pytest.mark.slow
def test_a_few_real_steps_log_rewards_and_change_weights(
    length_reward: str,
    grpo_inputs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from safetensors.torch import load_file
    from transformers import AutoProcessor

    from vlrl import rewards

    frames_seen = []

    def frame(completions, input_size, image_sizes, images, **kwargs):
        """Records the frame each row's reward is given (0 otherwise)."""
        frames_seen.extend(zip(input_size, image_sizes, images, strict=True))
        return [0.0] * len(completions)

    monkeypatch.setitem(rewards.REGISTERED, "test.frame", frame)
    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.max_steps=2",
            "grpo.processes=1",
            "grpo.logging_steps=1",
            "grpo.per_device_train_batch_size=4",
            "grpo.num_generations=2",
            "grpo.max_completion_length=8",
            "grpo.learning_rate=0.01",
            "grpo.rewards={common.format: 0.5, common.accuracy: 1.0, test.length: 1.0, "
            "test.frame: 1.0}",
        ],
    )
    times = grpo.run("tiny_shapes", cfg)
    # rewards get each image's frame as the policy's processor made it (image_grid_thw x 14)
    processor = AutoProcessor.from_pretrained(paths.model_resource("tiny-qwen2.5-vl"))
    assert len(frames_seen) == 2 * 4
    for input_size, image_sizes, images in frames_seen:
        grid = processor.image_processor(images=images[:1], return_tensors="pt")["image_grid_thw"]
        assert input_size == [int(grid[0][2]) * 14, int(grid[0][1]) * 14]
        assert image_sizes[0] == list(images[0].size)
    out = paths.grpo_dir("tiny_shapes")
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 2
    # run times go to the caller and the log, not into the output (it must hash the same)
    assert len(times["step_time"]) == 2 and times["train_runtime"] > 0
    assert not [k for h in summary["log_history"] for k in h if is_run_time(k)]
    logged = [h for h in summary["log_history"] if "reward" in h]
    for name in cfg.grpo.rewards:
        values = [h[f"rewards/{name}/mean"] for h in logged]
        assert values and all(0.0 <= v <= 1.0 for v in values)
    before = load_file(paths.model_resource("tiny-qwen2.5-vl") / "model.safetensors")
    after = load_file(out / paths.GRPO_FINAL / "model.safetensors")
    assert any(not before[k].equal(after[k]) for k in before)
    curves = out / paths.GRPO_DVCLIVE / "plots" / "metrics"
    assert (curves / "train" / "reward.tsv").is_file() or any(curves.rglob("reward*.tsv"))
    names = [p.relative_to(curves).with_suffix("").as_posix() for p in curves.rglob("*.tsv")]
    assert not [n for n in names if is_run_time(n.replace("/", "_"))]  # train/runtime, step_time
    assert "step_time" not in (out / paths.GRPO_DVCLIVE / "metrics.json").read_text()
    # x is the optimizer step of each logged row, as in the report (not dvclive's row count)
    reward_steps = [int(line.split("\t")[0]) for line in
                    (curves / "reward.tsv").read_text().splitlines()[1:]]  # fmt: skip
    assert reward_steps == [h["step"] for h in logged], reward_steps


@pytest.mark.slow
def test_two_processes_train_with_gloo(grpo_inputs: Path, capfd: pytest.CaptureFixture) -> None:
    """grpo.processes=2: two torchrun ranks (gloo on CPU) each generate and train on half of a
    step's completions; the main rank writes the output, and nothing is left behind."""
    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.processes=2",
            "grpo.max_steps=2",
            "grpo.logging_steps=1",
            "grpo.per_device_train_batch_size=2",  # x 2 ranks: 2 prompts x 2 generations
            "grpo.num_generations=2",
            "grpo.max_completion_length=8",
        ],
    )
    times = grpo.run("tiny_shapes", cfg)
    err = capfd.readouterr().err
    assert "[rank 0] " in err and "[rank 1] " in err, err[-2000:]
    out = paths.grpo_dir("tiny_shapes")
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 2 and len(times["step_time"]) == 2
    assert [h["step"] for h in summary["log_history"] if "reward" in h] == [1, 2]
    assert (out / paths.GRPO_FINAL / "model.safetensors").is_file()
    assert (out / paths.GRPO_DVCLIVE / "metrics.json").is_file()
    assert not paths.grpo_checkpoints_dir("tiny_shapes").exists()


def _small(overrides: list[str]) -> list[str]:
    return [
        "sft.enabled=false",
        "grpo.processes=1",  # in this process: the tests register rewards and patch the trainer
        "grpo.logging_steps=1",
        "grpo.per_device_train_batch_size=4",
        "grpo.num_generations=2",
        "grpo.max_completion_length=8",
        "grpo.learning_rate=0.01",
        "grpo.rewards={test.length: 1.0}",
        *overrides,
    ]


@pytest.mark.slow
def test_killed_run_resumes_from_its_last_checkpoint(
    length_reward: str,
    grpo_inputs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trl import GRPOTrainer

    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=2", "grpo.save_steps=1"]))
    original = GRPOTrainer.training_step
    calls = []

    def dies_on_second_step(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "training_step", dies_on_second_step)
    with pytest.raises(KeyboardInterrupt):
        grpo.run("tiny_shapes", cfg)
    checkpoints = paths.grpo_checkpoints_dir("tiny_shapes")
    assert (checkpoints / "checkpoint-1").is_dir()
    assert not paths.grpo_dir("tiny_shapes").exists()  # nothing half-written

    monkeypatch.setattr(GRPOTrainer, "training_step", original)
    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2
    assert not checkpoints.exists()  # removed once the stage succeeded


def _policy_bytes() -> bytes:
    return (paths.grpo_dir("tiny_shapes") / paths.GRPO_FINAL / "model.safetensors").read_bytes()


def _curves() -> dict[str, object]:
    """The dvclive curves, but ``train/loss``: the Trainer's mean loss over the steps a run
    took, which a resumed run takes fewer of."""
    curves = paths.grpo_dir("tiny_shapes") / paths.GRPO_DVCLIVE
    found: dict[str, object] = {
        str(p.relative_to(curves)): p.read_bytes() for p in curves.rglob("*") if p.is_file()
    }
    del found["plots/metrics/train/loss.tsv"]
    summary = json.loads(found.pop("metrics.json"))
    del summary["train"]["loss"]
    found["metrics.json"] = summary
    return found


@pytest.mark.slow
def test_a_run_stopped_before_its_time_limit_resumes_to_the_same_policy(
    length_reward: str,
    grpo_inputs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job whose time limit is near saves a checkpoint after the step it is in and stops
    (Slurm requeues it); the next run resumes there and ends with the policy and the training
    curves an uninterrupted run writes, bit for bit."""
    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=3"]))
    grpo.run("tiny_shapes", cfg)
    uninterrupted, curves = _policy_bytes(), _curves()
    assert "plots/metrics/reward.tsv" in curves
    shutil.rmtree(paths.grpo_dir("tiny_shapes"))

    monkeypatch.setenv(STOP_AT_ENV, repr(time.time()))  # the limit is here: stop at once
    with pytest.raises(StageError, match=r"stopped after step 1 of 3 .* rerun the stage"):
        grpo.run("tiny_shapes", cfg)
    checkpoints = paths.grpo_checkpoints_dir("tiny_shapes")
    assert sorted(p.name for p in checkpoints.glob("checkpoint-*")) == ["checkpoint-1"]
    assert not paths.grpo_dir("tiny_shapes").exists()  # nothing that looks finished

    monkeypatch.delenv(STOP_AT_ENV)
    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 3
    assert _policy_bytes() == uninterrupted
    assert _curves() == curves  # every step's, the ones before the stop included
    assert not checkpoints.exists()


@pytest.mark.slow
def test_every_rank_stops_after_the_same_step(
    grpo_inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two torchrun ranks agree on the step to stop after (all-reduced), so they save one
    checkpoint together instead of waiting for each other for ever; the rerun resumes."""
    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.processes=2",
            "grpo.max_steps=2",
            "grpo.per_device_train_batch_size=2",
            "grpo.num_generations=2",
            "grpo.max_completion_length=8",
        ],
    )
    monkeypatch.setenv(STOP_AT_ENV, repr(time.time()))
    with pytest.raises(StageError, match="stopped after step 1 of 2"):
        grpo.run("tiny_shapes", cfg)
    checkpoints = paths.grpo_checkpoints_dir("tiny_shapes")
    assert (checkpoints / "checkpoint-1").is_dir()
    monkeypatch.delenv(STOP_AT_ENV)
    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2


@pytest.mark.slow
def test_multi_image_rows_train(
    length_reward: str,
    project: Path,
    shapes_data: Path,
    tiny_model_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows with two images: one image placeholder per image, and real steps run."""
    from vlrl.core.files import write_jsonl

    records = read_records(shapes_data / "train.jsonl")
    pairs = [
        r.model_copy(
            update={
                "images": [r.images[0], s.images[0]],
                "image_sizes": [],
                "problem": "Do the two images show the same number of shapes?",
                "answer": "yes",
                "problem_type": "yes_no",
            }
        )
        for r, s in zip(records[::2], records[1::2], strict=True)
    ]
    data = paths.data_dir("tiny_shapes")
    shutil.copytree(shapes_data, data)
    write_jsonl(data / "train.jsonl", [p.model_dump() for p in pairs])
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=1"]))
    dataset = trl_setup.build_dataset(read_records(data / "train.jsonl"), data, cfg)
    assert len(dataset[0]["images"]) == 2
    assert [p["type"] for p in dataset[0]["prompt"][-1]["content"]][:2] == ["image", "image"]
    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["steps"] == 1


# ------------------------------------------------------------------ stop signals and requeue
def _uninterrupted(cfg) -> bytes:
    """The policy of an uninterrupted run of ``cfg`` (its output is removed again)."""
    grpo.run("tiny_shapes", cfg)
    policy = _policy_bytes()
    shutil.rmtree(paths.grpo_dir("tiny_shapes"))
    return policy


@pytest.mark.slow
def test_a_stop_signal_checkpoints_after_its_step_and_the_rerun_resumes(
    length_reward: str,
    grpo_inputs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SIGUSR1 (Slurm's signal before the limit, ``scancel --signal``) in the middle of step 2:
    the step ends, a checkpoint is saved, the stage stops for a rerun instead of dying; the
    rerun ends with the uninterrupted run's policy, bit for bit."""
    import signal

    from trl import GRPOTrainer

    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=3"]))
    uninterrupted = _uninterrupted(cfg)
    original = GRPOTrainer.training_step
    calls = []

    def signalled_in_step_two(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGUSR1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "training_step", signalled_in_step_two)
    with pytest.raises(StageError, match=r"stopped after step 2 of 3 on SIGUSR1, .* rerun the"):
        grpo.run("tiny_shapes", cfg)
    checkpoints = paths.grpo_checkpoints_dir("tiny_shapes")
    assert sorted(p.name for p in checkpoints.glob("checkpoint-*")) == ["checkpoint-2"]
    assert len(calls) == 2  # no step after the signalled one
    monkeypatch.setattr(GRPOTrainer, "training_step", original)
    grpo.run("tiny_shapes", cfg)
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-2") and summary["steps"] == 3
    assert _policy_bytes() == uninterrupted


_KILLED_IN_SAVE = """
import json, os, signal, sys
from transformers.trainer_callback import TrainerState
from vlrl import rewards
from vlrl.config import load_experiment
from vlrl.stages import grpo

save_to_json = TrainerState.save_to_json


def killed_at_step_two(self, path):
    # Trainer._save_checkpoint writes trainer_state.json last: die just before it
    if self.global_step == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return save_to_json(self, path)


def length(completions, **kwargs):  # tests/conftest.py's test.length
    from vlrl.rewards.common import completion_text

    return [min(len(completion_text(c)), 100) / 100 for c in completions]


if sys.argv[2] == "kill":
    TrainerState.save_to_json = killed_at_step_two
rewards.REGISTERED["test.length"] = length
grpo.run("tiny_shapes", load_experiment("tiny_shapes", json.loads(sys.argv[1])))
"""


@pytest.mark.slow
def test_a_save_killed_half_way_resumes_from_the_previous_complete_checkpoint(
    length_reward: str, grpo_inputs: Path
) -> None:
    """A process SIGKILLed inside its checkpoint save (a node lost, a time limit's SIGKILL)
    leaves ``checkpoint-2`` without ``trainer_state.json``; the rerun resumes from the complete
    ``checkpoint-1``, removes the broken one, and ends with the uninterrupted policy.

    Every run is a child process with the same environment: this worker's torch may run other
    CPU kernels than a fresh process (an earlier test may have pinned them for its children)."""
    import subprocess
    import sys

    overrides = _small(["grpo.max_steps=3", "grpo.save_steps=1", "grpo.save_total_limit=5"])

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        script = [sys.executable, "-c", _KILLED_IN_SAVE, json.dumps(overrides), mode]
        return subprocess.run(script, capture_output=True, text=True)

    reference = run("")
    assert reference.returncode == 0, reference.stderr[-3000:]
    uninterrupted = _policy_bytes()
    shutil.rmtree(paths.grpo_dir("tiny_shapes"))
    child = run("kill")
    assert child.returncode == -9, child.stderr[-3000:]
    checkpoints = paths.grpo_checkpoints_dir("tiny_shapes")
    broken = checkpoints / "checkpoint-2"
    assert (broken / "model.safetensors").is_file() and (broken / "optimizer.pt").is_file()
    assert not (broken / "trainer_state.json").exists()
    rerun = run("")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{broken} is incomplete (it has no trainer_state.json" in rerun.stderr
    summary = json.loads((paths.grpo_dir("tiny_shapes") / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 3
    assert _policy_bytes() == uninterrupted


@pytest.fixture()
def fake_slurm_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process as Slurm job 4242 whose ``scontrol`` accepts every command; returns the
    file that lists the commands it got."""
    calls = tmp_path / "scontrol_calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (bin_dir / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv(STOP_AT_ENV, repr(time.time()))  # every run stops after its first step
    calls.touch()
    return calls


@pytest.mark.slow
def test_requeued_only_with_progress_and_at_most_max_requeues(
    length_reward: str, grpo_inputs: Path, fake_slurm_job: Path
) -> None:
    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=4", "grpo.max_requeues=1"]))
    with pytest.raises(StageError, match=r"after step 1 of 4 .* requeued \(time 1 of at most 1"):
        grpo.run("tiny_shapes", cfg)
    assert fake_slurm_job.read_text() == "requeue 4242\n"
    with pytest.raises(StageError) as refused:
        grpo.run("tiny_shapes", cfg)  # the requeued job: resumes at 1, stops after 2
    message = str(refused.value)
    assert "stopped after step 2 of 4 before the job's time limit; not requeued" in message
    assert (
        "max_requeues = 1 times already (1 requeues so far, the runs started at steps [0, 1])"
        in (message)
    )
    assert "resources.grpo.runtime" in message
    assert fake_slurm_job.read_text() == "requeue 4242\n"  # not again
    # raising the limit keeps the checkpoints (an operational key): the next run resumes
    more = load_experiment("tiny_shapes", _small(["grpo.max_steps=4", "grpo.max_requeues=5"]))
    with pytest.raises(StageError, match=r"after step 3 of 4 .* requeued \(time 2 of at most 5"):
        grpo.run("tiny_shapes", more)


@pytest.mark.slow
def test_with_resume_off_a_stopped_run_is_never_requeued(
    length_reward: str, grpo_inputs: Path, fake_slurm_job: Path
) -> None:
    """It would start at step 0 again and stop at the same point, for ever."""
    cfg = load_experiment("tiny_shapes", _small(["grpo.max_steps=3", "grpo.resume=false"]))
    with pytest.raises(StageError, match=r"not requeued: grpo.resume is false.* grpo.resume: true"):
        grpo.run("tiny_shapes", cfg)
    assert fake_slurm_job.read_text() == ""


@pytest.mark.slow
def test_ranks_checkpoint_when_torchrun_gets_sigterm(
    grpo_inputs: Path, capfd: pytest.CaptureFixture
) -> None:
    """Slurm's SIGTERM (preemption, scancel, the limit) reaches torchrun, which passes it on to
    its ranks and exits non-zero: the ranks finish their step and save one checkpoint together,
    and the stage ends as stopped, for a rerun, not as failed."""
    import threading

    import psutil

    cfg = load_experiment(
        "tiny_shapes",
        [
            "sft.enabled=false",
            "grpo.processes=2",
            "grpo.max_steps=6",
            "grpo.save_steps=1",
            "grpo.per_device_train_batch_size=2",
            "grpo.num_generations=2",
            "grpo.max_completion_length=8",
        ],
    )
    first = paths.grpo_checkpoints_dir("tiny_shapes") / "checkpoint-1" / "trainer_state.json"

    def terminate_torchrun_after_step_one() -> None:
        while not first.is_file():
            time.sleep(0.05)
        # the launcher run_group started, in its own process group
        (torchrun,) = [p for p in psutil.Process().children() if os.getpgid(p.pid) == p.pid]
        torchrun.terminate()

    killer = threading.Thread(target=terminate_torchrun_after_step_one, daemon=True)
    killer.start()
    with pytest.raises(StageError, match=r"stopped after step (\d) of 6 on SIGTERM") as stopped:
        grpo.run("tiny_shapes", cfg)
    killer.join(timeout=1)
    step = int(re.search(r"after step (\d)", str(stopped.value)).group(1))
    err = capfd.readouterr().err
    for rank in (0, 1):
        assert f"[rank {rank}] stopping after step {step} of 6 on SIGTERM" in err, err[-3000:]
    last = paths.grpo_checkpoints_dir("tiny_shapes") / f"checkpoint-{step}"
    assert 1 < step < 6 and (last / "trainer_state.json").is_file()
    assert (last / "rng_state_0.pth").is_file() and (last / "rng_state_1.pth").is_file()


def test_in_a_slurm_job_the_stage_reruns_in_a_step_of_its_own_under_the_relay(
    tmp_path: Path,
) -> None:
    """The step's first process is then the relay, which Slurm signals under proctrack/cgroup
    (the stage itself, below Snakemake's own step, would get nothing)."""
    cfg = load_experiment("tiny_shapes")  # 2 CPU processes, cpu_threads 1
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\n")
    srun.chmod(0o755)
    env = {"SLURM_JOB_ID": "77", "PATH": str(tmp_path)}
    cmd = grpo.job_step(cfg, ["grpo", "tiny_shapes"], env)
    assert cmd[:5] == ["srun", "--jobid=77", "--nodes=1", "--ntasks=1", "--cpus-per-task=2"]
    assert cmd[cmd.index("vlrl.cluster.relay") + 1 :][-4:] == [
        "-m",
        "vlrl.cli",
        "grpo",
        "tiny_shapes",
    ]
    assert grpo.job_step(cfg, ["grpo"], {**env, "VLRL_RELAYED": "0"}) is None  # already there
    assert grpo.job_step(cfg, ["grpo"], {"PATH": str(tmp_path)}) is None  # not a Slurm job
    with pytest.raises(StageError, match=r"Slurm job 77 but srun is not on PATH.*bind the Slurm"):
        grpo.job_step(cfg, ["grpo"], {"SLURM_JOB_ID": "77", "PATH": str(tmp_path / "none")})
