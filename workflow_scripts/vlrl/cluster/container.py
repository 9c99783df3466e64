"""A training stage inside an Apptainer (or Singularity) image on a Slurm cluster.

With ``snakemake --software-deployment-method apptainer --config container=vlrl.sif`` each rule
runs in the image, the stage included; the stage then starts processes through ``srun``: its
own job step under the relay (:func:`vlrl.cluster.distributed.stage_step_command`) and, on
several nodes, one launcher per node. Two things follow:

- ``srun``, ``squeue`` and ``scontrol`` must work inside the image: the Slurm client, its
  configuration and munge's socket are bound in (README, "Run on a cluster": Containers), and
  the job's ``SLURM_*`` variables pass through (Apptainer keeps the environment unless
  ``--cleanenv``). Where they do not, the stage fails and says so rather than run without its
  time limit (:func:`vlrl.cluster.preemption.job_seconds_left`).
- A task ``srun`` starts runs on the node's host, outside the image, so each task is
  ``python3 <checkout>/workflow_scripts/vlrl/cluster/relay.py -- apptainer exec <args> <image>
  <command>`` (:func:`node_task`): the image again, on every node, and the relay *outside* it,
  because Apptainer's starter does not forward SIGURG into the container (it is the Go
  runtime's preemption signal: apptainer/singularity#5233 ignores it), and SIGURG is the stop
  signal. The relay, standard library only, runs in the host's Python from the checkout the
  jobs share; the arguments of the nested ``apptainer exec`` are ``$VLRL_APPTAINER_ARGS`` (the
  same binds and ``--nv`` as Snakemake's ``--apptainer-args``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

IMAGE_VARIABLES = {"APPTAINER_CONTAINER": "apptainer", "SINGULARITY_CONTAINER": "singularity"}
"""The variables Apptainer (and Singularity before it) set inside a container to its image's
path, and the command that runs that image."""
ARGS_VARIABLE = "VLRL_APPTAINER_ARGS"
"""Options of the ``apptainer exec`` that starts the image on each node (binds, ``--nv``)."""
HOST_PYTHON = "python3"
"""The Python that runs the relay on a node's host."""
RELAY_SCRIPT = str(Path(__file__).with_name("relay.py"))
"""The relay as a script (in the checkout the jobs share, bound into the image at its path)."""


def image(env: Mapping[str, str] | None = None) -> str | None:
    """The path of the image this process runs in, or None outside a container.

    >>> image({"APPTAINER_CONTAINER": "/p/vlrl.sif"}), image({})
    ('/p/vlrl.sif', None)
    """
    env = os.environ if env is None else env
    return next((env[name] for name in IMAGE_VARIABLES if env.get(name)), None)


def node_task(cmd: Sequence[str], env: Mapping[str, str] | None = None) -> list[str] | None:
    """``cmd`` as an ``srun`` task runs it, when this process runs in an image: the host's
    relay over ``apptainer exec`` of the same image; None outside a container.

    >>> env = {"APPTAINER_CONTAINER": "/p/vlrl.sif", "VLRL_APPTAINER_ARGS": "--nv -B /etc/slurm"}
    >>> node_task(["torchrun", "-m", "m"], env)[2:]
    ['--', 'apptainer', 'exec', '--nv', '-B', '/etc/slurm', '/p/vlrl.sif', 'torchrun', '-m', 'm']
    """
    env = os.environ if env is None else env
    path = image(env)
    if path is None:
        return None
    runtime = next(IMAGE_VARIABLES[name] for name in IMAGE_VARIABLES if env.get(name))
    args = shlex.split(env.get(ARGS_VARIABLE, ""))
    return [HOST_PYTHON, RELAY_SCRIPT, "--", runtime, "exec", *args, path, *cmd]
