"""How a training stage launches its processes: in the stage's own process, under torchrun on
one machine, or one torchrun per node of a Slurm job.

The experiment says what a stage needs (``resources.<stage>``: GPUs per node, nodes); the same
numbers size the Slurm job (rules/common.smk) and the launch here, so a recipe asks for 8 GPUs
once and gets 8 processes whether it runs on a workstation or a cluster:

- one process (CPU, or one GPU): the stage trains in its own process;
- several on one node: ``torchrun --standalone --nproc-per-node=N`` (gloo on CPU, nccl on
  GPUs, chosen by accelerate);
- several nodes: the Slurm job runs the stage on its first node, which starts one launcher per
  node with ``srun`` (one task per node, inside the job's allocation); torchrun's c10d
  rendezvous on the first node joins them. LLaMA-Factory launches torchrun itself from its
  ``NNODES`` / ``NODE_RANK`` / ``MASTER_ADDR`` variables, so each node's task sets its
  ``NODE_RANK`` from ``SLURM_NODEID``.

Every process Slurm starts for a training run is the relay (:mod:`vlrl.cluster.relay`), so stop
signals reach the ranks on clusters that signal a step's first process only: each node's task,
and, in a Slurm job, the stage itself (:func:`stage_step_command`: the resumable stage reruns
itself in a job step of its own).

The commands are built by pure functions (tested for 1 GPU, 8 GPUs and 2 nodes x 8).
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlrl.cluster.container import node_task
from vlrl.config import StageResources
from vlrl.core.errors import StageError

log = logging.getLogger(__name__)

RENDEZVOUS_PORTS = (20000, 32768)
"""Ports the multi-node rendezvous uses, one per Slurm job id (so jobs whose first node is the
same differ): below Linux's ephemeral range (``net.ipv4.ip_local_port_range``, 32768-60999 by
default), from which the kernel hands out the ports of outgoing connections, so no client socket
of another job holds it (torchrun's own default, 29500, is one port for every job)."""

NODE_RANK_FROM_SLURM = 'NODE_RANK="$SLURM_NODEID" exec "$0" "$@"'
"""The shell line each node's task runs LLaMA-Factory under: its node rank is Slurm's node id."""


RELAY = "vlrl.cluster.relay"
"""The module every Slurm task of a training run runs under (``python -m``)."""


@dataclass(frozen=True)
class Topology:
    """The processes of one training run: ``nodes`` x ``processes_per_node``."""

    nodes: int = 1
    processes_per_node: int = 1
    gpus_per_node: int = 0
    cpus_per_node: int | None = None
    """CPUs of each node's launcher and its processes (:func:`node_cpus`: what the job asked
    for a node)."""
    mem_mb_per_node: int | None = None

    @property
    def world_size(self) -> int:
        return self.nodes * self.processes_per_node


def processes_per_node(resources: StageResources, cpu_processes: int, reserved: int = 0) -> int:
    """Training processes per node: one per GPU but the ``reserved`` ones its servers take
    (``grpo.server_gpus``), else ``cpu_processes`` (CPU data parallelism).

    >>> processes_per_node(StageResources(gpus=8), 1), processes_per_node(StageResources(), 2)
    (8, 2)
    >>> processes_per_node(StageResources(gpus=8), 1, reserved=2)
    6
    """
    return resources.gpus - reserved if resources.gpus else cpu_processes


def node_cpus(resources: StageResources, processes: int, cpu_threads: int | None) -> int | None:
    """CPUs a job of the stage asks for each node: ``resources.<stage>.cpus``, else
    ``cpu_threads`` for each of its ``processes`` per node, else None (unsized: Slurm's default,
    or the whole machine locally). The one rule behind both the job's ``--cpus-per-task``
    (:func:`vlrl.workflow.cores.stage_threads`) and each node's ``srun`` (:func:`srun_per_node`).

    >>> node_cpus(StageResources(cpus=64), 8, 4), node_cpus(StageResources(), 2, 3)
    (64, 6)
    >>> node_cpus(StageResources(), 2, None) is None
    True
    """
    if resources.cpus is not None:
        return resources.cpus
    return cpu_threads * processes if cpu_threads is not None else None


def topology(
    resources: StageResources,
    cpu_processes: int,
    reserved: int = 0,
    cpu_threads: int | None = None,
) -> Topology:
    """The topology of a stage from its resources, its CPU process count, the GPUs of a node
    its servers take (``reserved``) and the experiment's ``cpu_threads``.

    >>> topology(StageResources(gpus=8, nodes=2, cpus=64, mem_mb=480000), 1)
    ... # doctest: +NORMALIZE_WHITESPACE
    Topology(nodes=2, processes_per_node=8, gpus_per_node=8, cpus_per_node=64,
             mem_mb_per_node=480000)
    >>> topology(StageResources(nodes=2), 2, cpu_threads=3).cpus_per_node  # 3 threads x 2
    6
    """
    per_node = processes_per_node(resources, cpu_processes, reserved)
    return Topology(
        resources.nodes,
        per_node,
        resources.gpus,
        node_cpus(resources, per_node, cpu_threads),
        resources.mem_mb,
    )


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node run meet: the first node of the job, a port, a run id."""

    host: str
    port: int
    run_id: str


def rendezvous_port(job_id: str) -> int:
    """The rendezvous port of Slurm job ``job_id``.

    >>> rendezvous_port("1234"), rendezvous_port("1235"), rendezvous_port("13994")
    (21234, 21235, 21226)
    """
    low, high = RENDEZVOUS_PORTS
    return low + int(job_id) % (high - low)


def slurm_hosts(env: Mapping[str, str] | None = None) -> list[str]:
    """The host names of the Slurm job this process runs in, first node first.

    The node list comes from ``SLURM_JOB_NODELIST`` or, where the job step's environment was
    trimmed (Snakemake's job step keeps only ``SLURM_JOB_ID``), from ``squeue``; ``scontrol show
    hostnames`` expands it.

    Raises:
        StageError: outside a Slurm job, or when Slurm's commands cannot say.
    """
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        raise StageError(
            "this stage spans several nodes (resources.<stage>.nodes > 1), which needs a Slurm "
            "job: SLURM_JOB_ID is not set. Run it with `snakemake --profile profiles/slurm`, "
            "or set nodes: 1"
        )
    nodelist = env.get("SLURM_JOB_NODELIST") or slurm_output(
        ["squeue", "-h", "-j", job, "-o", "%N"]
    )
    hosts = slurm_output(["scontrol", "show", "hostnames", nodelist.strip()]).split()
    if not hosts:
        raise StageError(f"Slurm job {job}: no node in its node list {nodelist!r}")
    return hosts


def slurm_output(cmd: list[str]) -> str:
    """The output of a Slurm command (squeue, scontrol, ...).

    Raises:
        StageError: it could not run or failed (its error output quoted).
    """
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or err
        raise StageError(f"`{' '.join(cmd)}` failed: {str(detail).strip()}") from err
    return done.stdout


def slurm_rendezvous(env: Mapping[str, str] | None = None) -> Rendezvous:
    """The rendezvous of the Slurm job this process runs in (see :func:`slurm_hosts`)."""
    env = os.environ if env is None else env
    first = slurm_hosts(env)[0]  # refuses a process outside a Slurm job
    job = env["SLURM_JOB_ID"]
    return Rendezvous(first, rendezvous_port(job), job)


def rendezvous_for(topo: Topology) -> Rendezvous | None:
    """The Slurm rendezvous when ``topo`` spans nodes, else None (one machine needs none)."""
    return slurm_rendezvous() if topo.nodes > 1 else None


def srun_per_node(topo: Topology, rdzv: Rendezvous) -> list[str]:
    """``srun`` starting one task per node of the job (inside its allocation).

    The step states what each node's task gets: its CPUs, GPUs and memory, as the job asked for
    them. Left out, srun would take them from ``SLURM_CPUS_PER_TASK`` and the like, which the
    job step that runs the stage does not have (Snakemake's jobstep executor clears them), and
    with task binding every node's torchrun and all its ranks would share one core.
    ``--overlap``: the step that runs the stage holds CPUs of the first node; ``--export=ALL``:
    the tasks get the launch variables set here.

    >>> topo = Topology(2, 8, 8, cpus_per_node=64, mem_mb_per_node=480000)
    >>> srun_per_node(topo, Rendezvous("gpu01", 30734, "1234"))  # doctest: +NORMALIZE_WHITESPACE
    ['srun', '--jobid=1234', '--nodes=2', '--ntasks=2', '--ntasks-per-node=1',
     '--cpus-per-task=64', '--gres=gpu:8', '--mem=480000', '--overlap', '--kill-on-bad-exit=1',
     '--export=ALL']
    """
    return [
        "srun",
        f"--jobid={rdzv.run_id}",
        f"--nodes={topo.nodes}",
        f"--ntasks={topo.nodes}",
        "--ntasks-per-node=1",
        *_node_sizes(topo),
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
    ]


def _node_sizes(topo: Topology) -> list[str]:
    sizes = [f"--cpus-per-task={topo.cpus_per_node}"] if topo.cpus_per_node else []
    sizes += [f"--gres=gpu:{topo.gpus_per_node}"] if topo.gpus_per_node else []
    return sizes + ([f"--mem={topo.mem_mb_per_node}"] if topo.mem_mb_per_node else [])


def relayed(
    cmd: Sequence[str], python: str = sys.executable, env: Mapping[str, str] | None = None
) -> list[str]:
    """``cmd`` as a Slurm task of the run: under the relay (:mod:`vlrl.cluster.relay`), in this
    stage's Python; inside an image, the host's relay over the image
    (:func:`vlrl.cluster.container.node_task`).

    >>> relayed(["torchrun", "-m", "m"], python="py", env={})
    ['py', '-m', 'vlrl.cluster.relay', '--', 'torchrun', '-m', 'm']
    """
    return node_task(cmd, env) or [python, "-m", RELAY, "--", *cmd]


def stage_step_command(
    topo: Topology, argv: Sequence[str], job_id: str, python: str = sys.executable
) -> list[str]:
    """The command that reruns a resumable stage (``python -m vlrl.cli ...argv``) in a job step
    of its own under the relay: one task on the job's first node, sized as the job asked for a
    node; ``--overlap`` shares the CPUs the job step that started the stage holds.

    >>> topo = Topology(1, 2, cpus_per_node=2)
    >>> stage_step_command(topo, ["grpo", "tiny"], "77", python="py")
    ... # doctest: +NORMALIZE_WHITESPACE
    ['srun', '--jobid=77', '--nodes=1', '--ntasks=1', '--cpus-per-task=2', '--overlap',
     '--kill-on-bad-exit=1', '--export=ALL', 'py', '-m', 'vlrl.cluster.relay', '--', 'py',
     '-m', 'vlrl.cli', 'grpo', 'tiny']
    """
    srun = ["srun", f"--jobid={job_id}", "--nodes=1", "--ntasks=1", *_node_sizes(topo)]
    srun += ["--overlap", "--kill-on-bad-exit=1", "--export=ALL"]
    return [*srun, *relayed([python, "-m", "vlrl.cli", *argv], python)]


def torchrun_command(
    topo: Topology,
    target: Sequence[str],
    rdzv: Rendezvous | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The command that runs ``target`` (``-m module args...`` or ``script args...``) in every
    process of ``topo``.

    >>> " ".join(torchrun_command(Topology(1, 8, 8), ["-m", "vlrl.stages.grpo"], python="py"))
    'py -m torch.distributed.run --nproc-per-node=8 --standalone -m vlrl.stages.grpo'
    >>> rdzv = Rendezvous("gpu01", 30734, "1234")
    >>> cmd = torchrun_command(Topology(2, 8, 8), ["-m", "m"], rdzv, python="py")
    >>> cmd[:3]  # srun: one launcher per node, meeting on gpu01
    ['srun', '--jobid=1234', '--nodes=2']
    >>> cmd[cmd.index("--export=ALL") + 1 :][:7]  # each node's launcher under the relay
    ['py', '-m', 'vlrl.cluster.relay', '--', 'py', '-m', 'torch.distributed.run']
    >>> cmd[cmd.index("--nproc-per-node=8") + 1 :][:2]
    ['--nnodes=2', '--rdzv-backend=c10d']
    >>> cmd[-4:]
    ['--rdzv-endpoint=gpu01:30734', '--rdzv-id=1234', '-m', 'm']
    """
    per_node = f"--nproc-per-node={topo.processes_per_node}"
    launcher = [python, "-m", "torch.distributed.run", per_node]
    if topo.nodes == 1:
        return [*launcher, "--standalone", *target]  # one node: a free port, no rendezvous
    if rdzv is None:
        raise ValueError(f"{topo.nodes} nodes need a rendezvous")
    return [
        *srun_per_node(topo, rdzv),
        *relayed(launcher, python),
        f"--nnodes={topo.nodes}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={rdzv.host}:{rdzv.port}",
        f"--rdzv-id={rdzv.run_id}",
        *target,
    ]


DEEPSPEED_ACCELERATOR = "DS_ACCELERATOR"
"""The variable DeepSpeed picks its accelerator by (``deepspeed.accelerator.get_accelerator``)."""
EXTENSIONS_DIR = "TORCH_EXTENSIONS_DIR"
"""Where torch builds the ops DeepSpeed compiles at run time (``torch.utils.cpp_extension``)."""


def deepspeed_env(
    cuda: bool, prefix: str = sys.prefix, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables the processes of a DeepSpeed run need on this machine, whose ranks run in
    the Python environment ``prefix``: on one without a CUDA device (``cuda`` false),
    DeepSpeed's CPU accelerator, whose communication backend is gloo (``ccl`` would need
    oneCCL); with one, none (DeepSpeed finds CUDA and uses nccl).

    Set here, by the launch, and not in the configs or the environments: the ZeRO configs, the
    stage code and the library are the GPU run's, and only this choice depends on the machine,
    so a CPU run executes the code a GPU run does. Explicit rather than left to DeepSpeed's
    guess, which falls back on the CPU only after probing every other accelerator.

    The CPU accelerator compiles its shared-memory communication op when its first process
    group starts (about 90 s on 2 cores), into torch's extension cache, whose default folder is
    named by the Python and CUDA versions only, so the sft environment and the GPU set (torch
    2.14.1 and 2.13.0 here) would share it. They must not: torch 2.14 guards a build with an
    advisory lock on a ``lock`` file it leaves in place, and torch 2.13 waits for as long as
    that file exists (``FileBaton.wait``), so after an SFT run under DeepSpeed every GRPO rank
    hung before its first step (seen: 14 min, no output, until killed); each would also rebuild
    the op over the other's build. So each environment gets its own folder. Values the caller
    set win.

    >>> env = deepspeed_env(cuda=False, prefix="/p/.venv-sft", env={"HOME": "/h"})
    >>> env["DS_ACCELERATOR"], env["TORCH_EXTENSIONS_DIR"][:37]
    ('cpu', '/h/.cache/torch_extensions/.venv-sft-')
    >>> deepspeed_env(cuda=True, env={}), deepspeed_env(False, env={"DS_ACCELERATOR": "xpu"})
    ({}, {})
    """
    env = os.environ if env is None else env
    if cuda or DEEPSPEED_ACCELERATOR in env:
        return {}
    out = {DEEPSPEED_ACCELERATOR: "cpu"}
    if EXTENSIONS_DIR not in env:
        cache = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME", "~"), ".cache")
        digest = hashlib.sha256(os.path.abspath(prefix).encode()).hexdigest()[:12]
        name = f"{os.path.basename(os.path.normpath(prefix))}-{digest}"
        out[EXTENSIONS_DIR] = os.path.join(os.path.expanduser(cache), "torch_extensions", name)
    return out


def llamafactory_command(
    topo: Topology,
    cmd: Sequence[str],
    rdzv: Rendezvous | None = None,
    path: str = "",
) -> tuple[list[str], dict[str, str]]:
    """``cmd`` (``llamafactory-cli train ...`` or a command taking its arguments) for ``topo``,
    and the variables LLaMA-Factory's launcher reads.

    One process needs none (LLaMA-Factory then trains in the CLI's process). More go through
    the torchrun LLaMA-Factory starts, found on PATH beside ``cmd[0]``; one node picks a free
    port itself, several meet at ``rdzv`` and each node's task takes ``SLURM_NODEID`` as its
    rank.

    >>> llamafactory_command(Topology(), ["/env/bin/llamafactory-cli", "train", "t.yaml"])
    (['/env/bin/llamafactory-cli', 'train', 't.yaml'], {})
    >>> cmd, env = llamafactory_command(Topology(1, 8, 8), ["/env/bin/python", "-m", "m", "train"])
    >>> cmd, env["NPROC_PER_NODE"], env["NNODES"], env["NODE_RANK"], env["PATH"]
    (['/env/bin/python', '-m', 'm', 'train'], '8', '1', '0', '/env/bin')
    """
    cmd = list(cmd)
    if topo.world_size == 1:
        return cmd, {}
    env = {
        "FORCE_TORCHRUN": "1",
        "NNODES": str(topo.nodes),
        "NPROC_PER_NODE": str(topo.processes_per_node),
        "PATH": os.pathsep.join(filter(None, (os.path.dirname(cmd[0]), path))),
    }
    if topo.nodes == 1:
        return cmd, {**env, "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
    if rdzv is None:
        raise ValueError(f"{topo.nodes} nodes need a rendezvous")
    env.update(MASTER_ADDR=rdzv.host, MASTER_PORT=str(rdzv.port))
    node_task = relayed(["bash", "-c", NODE_RANK_FROM_SLURM, *cmd])
    return [*srun_per_node(topo, rdzv), *node_task], env
