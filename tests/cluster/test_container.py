"""vlrl.cluster.container: inside an Apptainer image, every srun task of a training run starts
the image again on its node, under the relay run outside it by the host's Python."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vlrl.cluster import container
from vlrl.cluster.distributed import (
    Rendezvous,
    Topology,
    llamafactory_command,
    stage_step_command,
    torchrun_command,
)

IMAGE = {"APPTAINER_CONTAINER": "/shared/vlrl.sif", "VLRL_APPTAINER_ARGS": "--nv -B /etc/slurm"}
HOST_RELAY = ["python3", container.RELAY_SCRIPT, "--"]
IN_IMAGE = ["apptainer", "exec", "--nv", "-B", "/etc/slurm", "/shared/vlrl.sif"]


@pytest.fixture()
def in_image(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in IMAGE.items():
        monkeypatch.setenv(name, value)


def test_the_stages_own_step_starts_the_image_under_the_hosts_relay(in_image: None) -> None:
    cmd = stage_step_command(Topology(1, 2, cpus_per_node=2), ["grpo", "e"], "7", python="py")
    task = cmd[cmd.index("--export=ALL") + 1 :]
    assert task == [*HOST_RELAY, *IN_IMAGE, "py", "-m", "vlrl.cli", "grpo", "e"]


def test_each_nodes_launcher_starts_the_image(in_image: None) -> None:
    rdzv = Rendezvous("n1", 21000, "7")
    cmd = torchrun_command(Topology(2, 8, 8), ["-m", "m"], rdzv, python="py")
    task = cmd[cmd.index("--export=ALL") + 1 :]
    assert task[: len(HOST_RELAY) + len(IN_IMAGE) + 3] == [
        *HOST_RELAY,
        *IN_IMAGE,
        *("py", "-m", "torch.distributed.run"),
    ]
    sft, _ = llamafactory_command(
        Topology(2, 8, 8), ["/opt/vlrl/.venv-sft/bin/llamafactory-cli", "train"], rdzv
    )
    assert sft[sft.index("--export=ALL") + 1 :][: len(HOST_RELAY) + len(IN_IMAGE) + 1] == [
        *HOST_RELAY,
        *IN_IMAGE,
        "bash",
    ]


def test_singularity_images_are_started_with_singularity() -> None:
    task = container.node_task(["x"], {"SINGULARITY_CONTAINER": "/i.sif"})
    assert task[3:] == ["singularity", "exec", "/i.sif", "x"]
    assert container.node_task(["x"], {}) is None


def test_the_relay_runs_in_a_python_without_vlrl() -> None:
    """On a node's host there is no vlrl environment: the relay script needs the standard
    library only."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    done = subprocess.run(
        [python, "-I", container.RELAY_SCRIPT, "--", python, "-c", "raise SystemExit(4)"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4, done.stderr
