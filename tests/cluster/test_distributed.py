"""Launching training on 1 GPU, 8 GPUs and 2 nodes x 8, and the Slurm request the experiment's
resources turn into (the sbatch line is built by snakemake-executor-plugin-slurm's own code)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from slurm_stand_ins import slurm_stand_in

from vlrl.cluster.distributed import (
    NODE_RANK_FROM_SLURM,
    RENDEZVOUS_PORTS,
    Rendezvous,
    Topology,
    deepspeed_env,
    llamafactory_command,
    processes_per_node,
    relayed,
    rendezvous_for,
    rendezvous_port,
    slurm_hosts,
    slurm_output,
    slurm_rendezvous,
    srun_per_node,
    stage_step_command,
    topology,
    torchrun_command,
)
from vlrl.config import StageResources, load_experiment
from vlrl.core.errors import StageError
from vlrl.workflow.dag import dag_jobs

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "vlm_r1_rec"
TARGET = ["-m", "vlrl.stages.grpo", "exp", "config.json", "out", ""]
CLI = "/env/bin/llamafactory-cli"
RDZV = Rendezvous("gpu-node-07", 31234, "401234")

# (name, resources, CPU processes) → topology
TOPOLOGIES = [
    ("cpu, one process", StageResources(), 1, Topology(1, 1, 0, None, 4000)),
    ("cpu, two processes", StageResources(cpus=2), 2, Topology(1, 2, 0, 2, 4000)),
    ("1 GPU", StageResources(gpus=1, cpus=8), 1, Topology(1, 1, 1, 8, 4000)),
    ("8 GPUs", StageResources(gpus=8, mem_mb=480000), 1, Topology(1, 8, 8, None, 480000)),
    (
        "2 nodes x 8 GPUs",
        StageResources(gpus=8, nodes=2, cpus=64, mem_mb=480000),
        1,
        Topology(2, 8, 8, 64, 480000),
    ),
]


@pytest.mark.parametrize(
    ("resources", "processes", "expected"),
    [case[1:] for case in TOPOLOGIES],
    ids=[case[0] for case in TOPOLOGIES],
)
def test_topology_follows_the_resources(resources, processes, expected) -> None:
    assert topology(resources, processes) == expected


def test_grpo_on_one_gpu_trains_in_the_stage_process() -> None:
    """One process needs no launcher: run() calls train() in-process (world size 1)."""
    assert topology(StageResources(gpus=1), 1).world_size == 1


def test_grpo_on_8_gpus_is_one_standalone_torchrun() -> None:
    cmd = torchrun_command(Topology(1, 8, 8), TARGET, python="/env/bin/python")
    assert cmd == [
        "/env/bin/python",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=8",
        "--standalone",
        *TARGET,
    ]


def test_grpo_on_2_nodes_is_one_torchrun_per_node_meeting_on_the_first() -> None:
    """Each node's task states the CPUs, GPUs and memory the job asked for per node: the job
    step that runs the stage has no SLURM_CPUS_PER_TASK for srun to inherit."""
    topo = Topology(2, 8, 8, cpus_per_node=64, mem_mb_per_node=480000)
    cmd = torchrun_command(topo, TARGET, RDZV, python="/env/bin/python")
    launcher = cmd.index("/env/bin/python")
    assert cmd[:launcher] == [
        "srun",
        "--jobid=401234",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=64",
        "--gres=gpu:8",
        "--mem=480000",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
    ]
    assert cmd[launcher:] == [
        *("/env/bin/python", "-m", "vlrl.cluster.relay", "--"),  # stop signals reach the ranks
        "/env/bin/python",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=8",
        "--nnodes=2",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=gpu-node-07:31234",
        "--rdzv-id=401234",
        *TARGET,
    ]


def test_several_nodes_need_a_rendezvous() -> None:
    with pytest.raises(ValueError, match="2 nodes need a rendezvous"):
        torchrun_command(Topology(2, 8, 8), TARGET)
    with pytest.raises(ValueError, match="2 nodes need a rendezvous"):
        llamafactory_command(Topology(2, 8, 8), [CLI, "train"])


def test_sft_on_one_gpu_is_llamafactory_alone() -> None:
    assert llamafactory_command(Topology(1, 1, 1), [CLI, "train", "t.yaml"]) == (
        [CLI, "train", "t.yaml"],
        {},
    )


def test_sft_on_8_gpus_lets_llamafactory_start_torchrun() -> None:
    cmd, env = llamafactory_command(Topology(1, 8, 8), [CLI, "train", "t.yaml"], path="/usr/bin")
    assert cmd == [CLI, "train", "t.yaml"]
    assert env == {
        "FORCE_TORCHRUN": "1",
        "NNODES": "1",
        "NPROC_PER_NODE": "8",
        "NODE_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "PATH": "/env/bin:/usr/bin",
    }


def test_sft_on_2_nodes_runs_llamafactory_on_each_with_its_node_rank() -> None:
    cmd, env = llamafactory_command(Topology(2, 8, 8), [CLI, "train", "t.yaml"], RDZV, "/usr/bin")
    assert cmd[:3] == ["srun", "--jobid=401234", "--nodes=2"]
    assert cmd[cmd.index("bash") :] == ["bash", "-c", NODE_RANK_FROM_SLURM, CLI, "train", "t.yaml"]
    relay = cmd.index("bash") - 4  # each node's task under the relay, in the stage's Python
    assert cmd[relay:][:4] == [sys.executable, "-m", "vlrl.cluster.relay", "--"]
    assert env == {
        "FORCE_TORCHRUN": "1",
        "NNODES": "2",
        "NPROC_PER_NODE": "8",
        "MASTER_ADDR": "gpu-node-07",
        "MASTER_PORT": "31234",
        "PATH": "/env/bin:/usr/bin",
    }


def test_several_nodes_of_one_gpu_each_are_a_distributed_run() -> None:
    """Two nodes with one GPU each: one process per node, but a world of two, so both the
    GRPO and the SFT launch meet at the rendezvous (not one process training alone)."""
    topo = topology(StageResources(gpus=1, nodes=2, cpus=8), 4)
    assert (topo.nodes, topo.processes_per_node, topo.world_size) == (2, 1, 2)
    grpo = torchrun_command(topo, TARGET, RDZV, python="py")
    assert grpo[:3] == ["srun", "--jobid=401234", "--nodes=2"]
    assert "--nproc-per-node=1" in grpo and "--nnodes=2" in grpo
    assert "--rdzv-endpoint=gpu-node-07:31234" in grpo
    sft, env = llamafactory_command(topo, [CLI, "train", "t.yaml"], RDZV)
    assert sft[:3] == ["srun", "--jobid=401234", "--nodes=2"]
    assert (env["NNODES"], env["NPROC_PER_NODE"], env["FORCE_TORCHRUN"]) == ("2", "1", "1")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("gpu-node-07", "31234")
    # a server's GPU reserved on a two-GPU node leaves one training process per node
    assert topology(StageResources(gpus=2, nodes=2), 4, reserved=1).world_size == 2


def test_each_node_takes_slurms_node_id_as_its_rank() -> None:
    """The shell line srun runs on every node: NODE_RANK from SLURM_NODEID, the command as is."""
    show = "import os, sys; print(os.environ['NODE_RANK'], sys.argv[1:])"
    cmd = ["bash", "-c", NODE_RANK_FROM_SLURM, sys.executable, "-c", show, "a b", "c"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={"SLURM_NODEID": "1"}, check=True)
    assert out.stdout.strip() == "1 ['a b', 'c']"


def test_rendezvous_port_depends_on_the_job_only() -> None:
    assert rendezvous_port("401234") == rendezvous_port("401234") != rendezvous_port("401235")


def test_rendezvous_ports_are_not_ephemeral_ports() -> None:
    """A port the kernel may hand to any outgoing connection (of another job, of this one's
    NCCL or hub traffic) can be taken when the rendezvous binds: the job's ports lie below the
    ephemeral range, on Linux's default range and on this machine's."""
    low, high = RENDEZVOUS_PORTS
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    first_ephemeral = int(ephemeral.read_text().split()[0]) if ephemeral.is_file() else 32768
    assert 1024 < low < high <= min(32768, first_ephemeral)
    ports = {rendezvous_port(str(job)) for job in range(401000, 401000 + 5000)}
    assert len(ports) == 5000  # consecutive jobs never share a port
    assert all(low <= port < high for port in ports)


def test_outside_slurm_several_nodes_are_refused_with_what_to_do() -> None:
    with pytest.raises(StageError, match=r"SLURM_JOB_ID is not set.*profiles/slurm.*nodes: 1"):
        slurm_hosts({})


# ---------------------------------------------------------------- what the rules ask Slurm for
def _sbatch(job) -> str:
    """The sbatch line snakemake-executor-plugin-slurm builds for a job of the DAG."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    resources = SimpleNamespace(**job.resources)
    resources.get = lambda key, default=None: job.resources.get(key, default)
    fake = SimpleNamespace(resources=resources, threads=job.resources["_cores"])
    params = {
        "run_uuid": "run",
        "slurm_logfile": "log",
        "comment_str": f"rule_{job.rule}",
        "account": "",
        "partition": "",
        "workdir": "",
    }
    return get_submit_command(fake, params) + set_gres_string(fake)


def _jobs(experiment: str, root: Path = ROOT) -> dict[str, object]:
    """One job per rule of the experiment's DAG (the first, for rules with several)."""
    jobs = {}
    for job in dag_jobs(config={"experiments": [experiment]}, root=root):
        jobs.setdefault(job.rule, job)
    return jobs


def test_the_tiny_default_asks_for_no_gpu() -> None:
    jobs = _jobs("tiny_shapes")
    for rule in ("sft", "grpo", "infer"):
        line = _sbatch(jobs[rule])
        assert "gpu" not in line and "--nodes=1" in line, line
        assert "--mem 4000" in line and "-t 60" in line, line


def test_the_3b_recipe_asks_for_8_gpus_on_one_node() -> None:
    cfg = load_experiment(RECIPE)
    assert cfg.resources.grpo.gpus == 8
    jobs = _jobs(RECIPE)
    grpo = _sbatch(jobs["grpo"])
    for flag in ("--gres=gpu:8", "--nodes=1", "--mem 480000", "-t 1440", "--cpus-per-task=64"):
        assert flag in grpo, grpo
    # SIGURG stop_margin_s before the limit: GRPO checkpoints and requeues (vlrl.cluster.preemption)
    assert " --signal=URG@300" in grpo, grpo
    assert "--ntasks-per-gpu" not in grpo and "--gpus" not in grpo
    infer = _sbatch(jobs["infer"])
    assert "--gres=gpu:1" in infer and "--cpus-per-task=8" in infer, infer
    assert "--signal" not in infer
    assert "gpu" not in _sbatch(jobs["data"])


def test_two_nodes_ask_for_one_task_per_node_and_8_gpus_on_each(tmp_path: Path) -> None:
    """2 x 8: --nodes=2 --ntasks=2 and --gres=gpu:8 (per node); the job runs the stage outside a
    job step (the plugin's mpi mode), so the stage's srun can use both nodes."""
    project = tmp_path / "project"
    for name in ("Snakefile", "rules", "config", "params.yaml", "workflow_scripts"):
        src = ROOT / name
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, project / name)
        else:
            (project / name).write_bytes(src.read_bytes())
    recipe = project / "config" / "experiments" / f"{RECIPE}.yaml"
    recipe.write_text(
        recipe.read_text().replace("grpo: {gpus: 8, cpus: 64", "grpo: {gpus: 8, nodes: 2, cpus: 64")
    )
    job = _jobs(RECIPE, project)["grpo"]
    assert job.resources["mpi"] == "srun"
    line = _sbatch(job)
    for flag in ("--nodes=2", "--ntasks=2", "--gres=gpu:8", "--cpus-per-task=64"):
        assert flag in line, line
    assert "--ntasks-per-gpu" not in line and "--gpus" not in line


def test_srun_asks_each_node_for_what_the_job_asked_when_cpu_threads_size_it() -> None:
    """A job sized by cpu_threads alone asks sbatch for cpu_threads x processes CPUs per node
    (vlrl.workflow.cores): each node's srun must ask the same, not srun's one CPU per task."""
    topo = topology(StageResources(nodes=2), 2, cpu_threads=3)
    cmd = torchrun_command(topo, TARGET, RDZV, python="py")
    assert "--cpus-per-task=6" in cmd[: cmd.index("py")]
    assert topology(StageResources(nodes=2, cpus=10), 2, cpu_threads=3).cpus_per_node == 10
    assert topology(StageResources(nodes=2), 2).cpus_per_node is None


def test_a_resumable_stage_reruns_itself_in_a_job_step_under_the_relay() -> None:
    topo = Topology(1, 8, 8, cpus_per_node=64, mem_mb_per_node=480000)
    cmd = stage_step_command(topo, ["grpo", "exp", "--set", "seed=2"], "77", python="py")
    assert cmd == [
        *("srun", "--jobid=77", "--nodes=1", "--ntasks=1"),
        *("--cpus-per-task=64", "--gres=gpu:8", "--mem=480000"),
        *("--overlap", "--kill-on-bad-exit=1", "--export=ALL"),
        *("py", "-m", "vlrl.cluster.relay", "--"),
        *("py", "-m", "vlrl.cli", "grpo", "exp", "--set", "seed=2"),
    ]


# ---------------------------------------------------------------- the decisions, one by one
def test_a_gpu_stage_trains_one_process_per_gpu_unless_servers_take_some() -> None:
    assert processes_per_node(StageResources(gpus=8), 1) == 8  # no server: every GPU
    assert processes_per_node(StageResources(gpus=8), 1, reserved=2) == 6
    assert processes_per_node(StageResources(), 3) == 3  # CPU: the configured processes


def test_an_unsized_node_asks_srun_for_nothing_it_did_not_ask_for() -> None:
    """No cpus, GPUs or memory in the resources: srun gets none of those options (Slurm's
    defaults), not empty or zero ones."""
    cmd = srun_per_node(Topology(2, 1), RDZV)
    assert not [a for a in cmd if a.startswith(("--cpus-per-task", "--gres", "--mem"))]
    sized = srun_per_node(Topology(2, 1, 1, 4, 1000), RDZV)
    assert [a for a in sized if a.startswith(("--cpus-per-task", "--gres", "--mem"))] == [
        "--cpus-per-task=4",
        "--gres=gpu:1",
        "--mem=1000",
    ]


def test_the_rendezvous_port_is_a_whole_port_in_the_range() -> None:
    assert [rendezvous_port(j) for j in ("1234", "1235", "13994")] == [21234, 21235, 21226]
    assert all(isinstance(rendezvous_port(j), int) for j in ("1", "99999"))


def test_the_node_task_follows_the_environment_it_is_given(monkeypatch) -> None:
    for name in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):
        monkeypatch.delenv(name, raising=False)
    task = relayed(["torchrun"], python="py", env={"APPTAINER_CONTAINER": "/i.sif"})
    assert "apptainer" in task and task[-1] == "torchrun"
    assert relayed(["torchrun"], python="py", env={}) == [
        "py", "-m", "vlrl.cluster.relay", "--", "torchrun",
    ]  # fmt: skip


def test_sft_on_one_node_finds_torchrun_beside_its_python_only() -> None:
    _, env = llamafactory_command(Topology(1, 2, 0), ["/env/bin/python", "-m", "m", "train"])
    assert env["PATH"] == "/env/bin"


HOSTNAMES = 'printf "node7\\nnode8\\n"'


def test_the_hosts_come_from_the_jobs_node_list_first_node_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scontrol = slurm_stand_in(tmp_path, "scontrol", HOSTNAMES, monkeypatch)
    squeue = slurm_stand_in(tmp_path, "squeue", "exit 1", monkeypatch)
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "node[7-8]"}
    assert slurm_hosts(env) == ["node7", "node8"]
    assert scontrol.read_text() == "show hostnames node[7-8]\n"
    assert not squeue.exists()  # the environment said it


def test_a_trimmed_job_step_asks_squeue_for_its_node_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snakemake's job step keeps SLURM_JOB_ID only; squeue's line ends in a newline."""
    squeue = slurm_stand_in(tmp_path, "squeue", "echo 'node[7-8]'", monkeypatch)
    scontrol = slurm_stand_in(tmp_path, "scontrol", HOSTNAMES, monkeypatch)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    assert slurm_hosts() == ["node7", "node8"]  # from the process's own environment
    assert squeue.read_text() == "-h -j 77 -o %N\n"
    assert scontrol.read_text() == "show hostnames node[7-8]\n"


def test_a_node_list_of_no_host_is_an_error_naming_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stand_in(tmp_path, "scontrol", "true", monkeypatch)
    with pytest.raises(StageError) as err:
        slurm_hosts({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "x"})
    assert str(err.value) == "Slurm job 77: no node in its node list 'x'"


def test_outside_slurm_the_error_says_what_to_do_whole() -> None:
    with pytest.raises(StageError) as err:
        slurm_hosts({"SLURM_JOB_NODELIST": "node7"})
    assert str(err.value) == (
        "this stage spans several nodes (resources.<stage>.nodes > 1), which needs a Slurm "
        "job: SLURM_JOB_ID is not set. Run it with `snakemake --profile profiles/slurm`, "
        "or set nodes: 1"
    )


def test_a_failing_slurm_command_is_an_error_quoting_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stand_in(
        tmp_path, "squeue", "echo 'slurm_load_jobs error: Invalid job id' >&2; exit 1", monkeypatch
    )
    with pytest.raises(StageError) as err:
        slurm_output(["squeue", "-h", "-j", "77"])
    assert str(err.value) == "`squeue -h -j 77` failed: slurm_load_jobs error: Invalid job id"
    with pytest.raises(StageError, match=r"^`no-such-slurm-command x` failed: \[Errno 2\]"):
        slurm_output(["no-such-slurm-command", "x"])


def test_a_hung_slurm_command_is_given_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    def hangs(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(subprocess, "run", hangs)
    with pytest.raises(StageError) as err:
        slurm_output(["squeue"])
    assert str(err.value) == "`squeue` failed: Command '['squeue']' timed out after 60 seconds"


def test_slurms_output_is_returned_as_text(tmp_path: Path, monkeypatch) -> None:
    slurm_stand_in(tmp_path, "squeue", "echo 1:00", monkeypatch)
    assert slurm_output(["squeue"]) == "1:00\n"


def test_the_rendezvous_is_the_first_node_on_the_jobs_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stand_in(tmp_path, "scontrol", HOSTNAMES, monkeypatch)
    env = {"SLURM_JOB_ID": "1234", "SLURM_JOB_NODELIST": "node[7-8]"}
    assert slurm_rendezvous(env) == Rendezvous("node7", 21234, "1234")
    monkeypatch.setenv("SLURM_JOB_ID", "1235")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[7-8]")
    assert slurm_rendezvous() == Rendezvous("node7", 21235, "1235")  # the process's own
    monkeypatch.delenv("SLURM_JOB_ID")
    with pytest.raises(StageError, match="SLURM_JOB_ID is not set"):
        slurm_rendezvous()


def test_only_a_run_across_nodes_needs_a_rendezvous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_stand_in(tmp_path, "scontrol", HOSTNAMES, monkeypatch)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    one_node = topology(StageResources(gpus=8), cpu_processes=1)
    assert rendezvous_for(one_node) is None  # outside Slurm too
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[7-8]")
    two_nodes = topology(StageResources(gpus=8, nodes=2), cpu_processes=1)
    assert rendezvous_for(two_nodes) == Rendezvous("node7", 21234, "1234")


def test_deepspeed_on_a_machine_without_cuda_takes_the_cpu_accelerator() -> None:
    """Its op build folder is named by the environment (its folder name and a digest of its
    absolute path), under the cache the caller's environment names."""
    assert deepspeed_env(cuda=False, prefix="/p/.venv-sft", env={"HOME": "/h"}) == {
        "DS_ACCELERATOR": "cpu",
        "TORCH_EXTENSIONS_DIR": "/h/.cache/torch_extensions/.venv-sft-8af742b41c41",
    }
    xdg = deepspeed_env(False, prefix="/w/x/.venv/", env={"XDG_CACHE_HOME": "/c", "HOME": "/h"})
    assert xdg == {
        "DS_ACCELERATOR": "cpu",
        "TORCH_EXTENSIONS_DIR": "/c/torch_extensions/.venv-849c9e55d5b2",
    }


def test_deepspeed_without_a_home_caches_in_the_users_home(monkeypatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    assert deepspeed_env(False, prefix="/p/.venv-sft", env={})["TORCH_EXTENSIONS_DIR"] == (
        "/home/u/.cache/torch_extensions/.venv-sft-8af742b41c41"
    )


def test_deepspeed_environments_get_folders_of_their_own(monkeypatch) -> None:
    monkeypatch.chdir("/")
    sft = deepspeed_env(False, prefix="p/.venv", env={"HOME": "/h"})["TORCH_EXTENSIONS_DIR"]
    gpu = deepspeed_env(False, prefix="q/.venv", env={"HOME": "/h"})["TORCH_EXTENSIONS_DIR"]
    assert sft != gpu and sft.startswith("/h/.cache/torch_extensions/.venv-")
    # a relative prefix is named by its absolute path
    assert (
        sft == deepspeed_env(False, prefix="/p/.venv", env={"HOME": "/h"})["TORCH_EXTENSIONS_DIR"]
    )


def test_deepspeed_variables_the_caller_set_win(monkeypatch) -> None:
    monkeypatch.delenv("DS_ACCELERATOR", raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "/mine")
    assert deepspeed_env(cuda=False) == {"DS_ACCELERATOR": "cpu"}  # the process's own environment
    assert deepspeed_env(False, env={"TORCH_EXTENSIONS_DIR": "/mine"}) == {"DS_ACCELERATOR": "cpu"}
    assert deepspeed_env(False, env={"DS_ACCELERATOR": "xpu"}) == {}
    assert deepspeed_env(cuda=True, env={}) == {}  # DeepSpeed finds CUDA itself
