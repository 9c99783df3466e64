"""grpo on two nodes, as far as one machine allows: the stage builds the launch a 2-node Slurm
job runs (``srun`` starting one torchrun per node, meeting at a c10d rendezvous on the first
node), and two torchrun groups on localhost really rendezvous over gloo and train as one world.

Only Slurm's commands are stood in for: ``srun`` (tests/stages/fake_slurm/srun) starts the
command it is given once per task on this machine, with ``SLURM_NODEID`` and ``SLURM_PROCID``
set as Slurm sets them, and records its own options; ``scontrol show hostnames`` names the two
"nodes" 127.0.0.1; ``squeue`` says the job has no time limit. Everything after srun's options is
the exact command the job would run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from vlrl.cluster.distributed import RENDEZVOUS_PORTS, rendezvous_port
from vlrl.cluster.threads import THREAD_VARIABLES
from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.stages import grpo

FAKE_SLURM = Path(__file__).with_name("fake_slurm")
SMALL = [
    "sft.enabled=false",
    "grpo.max_steps=2",
    "grpo.logging_steps=1",
    "grpo.per_device_train_batch_size=2",  # x 2 ranks: 2 prompts x 2 generations per step
    "grpo.num_generations=2",
    "grpo.max_completion_length=8",
]


def _free_job_id() -> str:
    """A Slurm job id whose rendezvous port (vlrl.cluster.distributed.rendezvous_port) is free
    here."""
    low, high = RENDEZVOUS_PORTS
    for job in range(4000, 4000 + high - low):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", rendezvous_port(str(job))))
            except OSError:
                continue
            return str(job)
    raise RuntimeError("no free rendezvous port")


@pytest.fixture()
def two_node_job(
    project: Path,
    shapes_data: Path,
    tiny_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The grpo stage's inputs, and the environment of a 2-node Slurm job (its record of srun's
    options is the returned file)."""
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    record = tmp_path / "srun_calls.jsonl"
    monkeypatch.setenv("PATH", f"{FAKE_SLURM}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SRUN_RECORD", str(record))
    monkeypatch.setenv("SLURM_JOB_ID", _free_job_id())
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[01-02]")
    # tiny_shapes' cpu_threads, as the CLI pins it for the stage's processes (vlrl.cluster.threads;
    # torchrun sets one thread per process only when it starts several)
    for name in THREAD_VARIABLES:
        monkeypatch.setenv(name, str(load_experiment("tiny_shapes").cpu_threads))
    return record


@pytest.mark.slow
def test_two_torchrun_groups_rendezvous_and_train_as_one_world(
    two_node_job: Path, capfd: pytest.CaptureFixture
) -> None:
    """resources.grpo.nodes=2 on CPU (one process per node): srun asks for each node's CPUs and
    memory, the two torchruns meet at the job's port on the first node, rank 0 and rank 1 train
    together, and the policy is the one a single node's two processes train, bit for bit."""
    cfg = load_experiment(
        "tiny_shapes",
        [*SMALL, "grpo.processes=1", "resources.grpo.nodes=2", "resources.grpo.cpus=1"],
    )
    grpo.run("tiny_shapes", cfg)
    err = capfd.readouterr().err
    (call,) = [json.loads(line) for line in two_node_job.read_text().splitlines()]
    job = os.environ["SLURM_JOB_ID"]
    assert call["options"] == [
        f"--jobid={job}",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=1",
        "--mem=4000",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
    ]
    relay, torchrun = call["command"][:4], call["command"][4:]
    assert relay[1:] == ["-m", "vlrl.cluster.relay", "--"]  # each node's task under the relay
    assert torchrun[1:4] == ["-m", "torch.distributed.run", "--nproc-per-node=1"]
    assert f"--rdzv-endpoint=127.0.0.1:{rendezvous_port(job)}" in torchrun
    assert "[rank 0] " in err and "[rank 1] " in err, err[-3000:]
    out = paths.grpo_dir("tiny_shapes")
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 2
    two_nodes = (out / paths.GRPO_FINAL / "model.safetensors").read_bytes()

    shutil.rmtree(out)
    one_node = load_experiment("tiny_shapes", [*SMALL, "grpo.processes=2"])
    grpo.run("tiny_shapes", one_node)
    assert (out / paths.GRPO_FINAL / "model.safetensors").read_bytes() == two_nodes
    assert len(two_node_job.read_text().splitlines()) == 1  # one node: no srun
