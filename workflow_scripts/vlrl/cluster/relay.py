"""Stop signals delivered to every process of a training run, however the cluster delivers them.

Slurm signals a job step (``--signal=URG@<s>`` before the time limit, ``scancel --signal``, a
preemption's SIGTERM) through its process tracking. Under ``proctrack/cgroup``, the common
setting, only the step's direct children of ``slurmstepd`` get it (Slurm's
``src/plugins/proctrack/cgroup/proctrack_cgroup.c``: other processes of the step's cgroup are
skipped unless ``cgroup.conf`` sets ``SignalChildrenProcesses=yes``, a key Slurm 23.02 added,
default no). Below that child sit the stage, torchrun, and the ranks, which torchrun starts in
sessions of their own (``start_new_session``), so neither the signal nor a process-group kill
reaches them.

So every process Slurm starts for a training stage is a relay (``python -m vlrl.cluster.relay
CMD...``): it runs ``CMD`` and, on a stop signal, sends SIGURG to every descendant, in whatever
session or group: the stage and each rank checkpoint after their step and stop
(:func:`vlrl.cluster.preemption.stop_on_signals`), while launchers (torchrun, bash) ignore
SIGURG by default instead of killing their ranks mid-save. A SIGTERM also means "the end is
near": after :data:`~vlrl.cluster.preemption.TERM_GRACE_S`, or at a second SIGTERM, the relay
passes SIGTERM on to ``CMD`` (as before the relay; Slurm's SIGKILL follows anyway).

The relay imports nothing beyond the standard library, so any Python runs it as a script
(``python3 .../vlrl/cluster/relay.py CMD...``: the host's, beside a container,
:mod:`vlrl.cluster.container`); it exits with ``CMD``'s status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

RELAYED_ENV = "VLRL_RELAYED"
"""Set (to the Slurm step) in the environment of a command the relay runs: that process gets
stop signals however the cluster delivers them."""

STOP_SIGNALS = (signal.SIGURG, signal.SIGUSR1, signal.SIGTERM)
"""Signals on which a resumable stage's training processes checkpoint and stop, and that the
relay turns into a stop request for every descendant (:mod:`vlrl.cluster.preemption` uses
these; declared here, the module without vlrl imports)."""

TERM_GRACE_S = 120
"""How long a stage gets after SIGTERM to checkpoint and stop before it ends without one, and
after which the relay passes SIGTERM on (Slurm kills a job KillWait seconds, often 30, after
its SIGTERM anyway)."""


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: the state (``Z``: a zombie,
    dead but not yet reaped), then the parent's pid, …; None once ``pid`` is gone. The name is
    in parentheses and may hold any character, ``)`` and spaces too, so it ends at the last
    ``)``."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int | None = None) -> list[int]:
    """Every living descendant of ``pid`` (this process by default), children first, across
    sessions and process groups (read from ``/proc``: the relay may run in a Python without
    vlrl's packages, the host's beside a container)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(entry.name)
        if fields is not None and fields[0] != "Z":  # gone meanwhile, or a zombie: dead already
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [os.getpid() if pid is None else pid]
    while queue:
        kids = sorted(children.get(queue.pop(0), []))
        found += kids
        queue += kids
    return found


def signal_descendants(sig: int, pid: int | None = None) -> list[int]:
    """Send ``sig`` to every descendant of ``pid`` (this process by default); returns the pids
    it reached."""
    reached = []
    for child in descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, sig)
            reached.append(child)
    return reached


def relay(cmd: Sequence[str], grace_s: float = TERM_GRACE_S) -> int:
    """Run ``cmd`` and relay stop signals to all its processes (see the module docstring);
    returns its exit status (128 + N for a process ended by signal N, as a shell says)."""
    if not cmd:
        raise SystemExit("usage: python -m vlrl.cluster.relay CMD [ARGS...]")
    env = {**os.environ, RELAYED_ENV: os.environ.get("SLURM_STEP_ID", "1")}
    child = subprocess.Popen(list(cmd), env=env)
    terms = 0

    def pass_sigterm_on(*signal_args):
        with contextlib.suppress(ProcessLookupError):  # the command ended meanwhile
            os.kill(child.pid, signal.SIGTERM)

    def on_stop(signum, frame):
        nonlocal terms
        reached = signal_descendants(signal.SIGURG)
        name = signal.Signals(signum).name
        print(f"relay: {name}: asked {len(reached)} processes to stop (SIGURG)", file=sys.stderr)
        if signum == signal.SIGTERM:
            terms += 1
            if terms > 1:
                pass_sigterm_on()
            else:
                signal.signal(signal.SIGALRM, pass_sigterm_on)
                signal.alarm(max(1, int(grace_s)))

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGINT, lambda signum, frame: os.kill(child.pid, signal.SIGINT))
    status = child.wait()
    return 128 - status if status < 0 else status


def run_in_step(cmd: Sequence[str]) -> int:
    """Run ``cmd`` (an ``srun`` of the stage under the relay) and return its exit status, with
    the stop signals ignored here: the relay in the step acts on them (this process is no
    direct child of slurmstepd, so under ``proctrack/cgroup`` it gets none; under
    ``proctrack/linuxproc`` it gets each, and passing a SIGTERM on through srun would be a
    second SIGTERM to the stage, which ends it at once)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    status = subprocess.call(list(cmd))
    return 128 - status if status < 0 else status


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m vlrl.cluster.relay [--] CMD [ARGS...]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    sys.exit(relay(args))


if __name__ == "__main__":
    main()
