"""vlrl.cluster.relay: a stop signal that reaches only the first process of a Slurm step (as
Slurm delivers it under proctrack/cgroup) reaches every process of the training run, also those
torchrun starts in sessions of their own. On a real Slurm cluster configured so:
tests/pipeline/test_slurm_preemption.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vlrl.cluster.relay import RELAYED_ENV, descendants

# A process that records the signals it gets; "--spawn" starts another in a new session (as
# torchrun starts its ranks) and "--launcher" makes it ignore nothing (torchrun: SIGURG's
# default, ignore; SIGTERM would end it and its ranks).
PROBE = r"""
import json, os, signal, subprocess, sys, time
log, name, *rest = sys.argv[1:]
def record(signum, frame):
    with open(log, "a") as f:
        got = [name, signal.Signals(signum).name, os.environ.get("VLRL_RELAYED")]
        f.write(json.dumps(got) + "\n")
for sig in (signal.SIGURG, signal.SIGUSR1, signal.SIGTERM):
    signal.signal(sig, record)
if rest:
    subprocess.Popen([sys.executable, __file__, log, *rest], start_new_session=True)
open(log + "." + name, "w").close()
time.sleep(60)
"""


def _start(tmp_path: Path, names: list[str], grace_s: str = "120") -> subprocess.Popen:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    log = tmp_path / "signals.jsonl"
    log.touch()
    code = (
        "import sys\nfrom vlrl.cluster.relay import relay\n"
        f"sys.exit(relay(sys.argv[1:], {grace_s}))"
    )
    cmd = [sys.executable, str(probe), str(log), *names]
    relay = subprocess.Popen([sys.executable, "-c", code, *cmd])
    deadline = time.monotonic() + 30
    while not all((tmp_path / f"signals.jsonl.{n}").exists() for n in names):
        assert relay.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    return relay


def _signals(tmp_path: Path, count: int) -> list[list[str]]:
    deadline = time.monotonic() + 10
    while True:
        lines = (tmp_path / "signals.jsonl").read_text().splitlines()
        if len(lines) >= count or time.monotonic() > deadline:
            return sorted(json.loads(line) for line in lines)
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGURG, signal.SIGUSR1, signal.SIGTERM])
def test_a_stop_signal_to_the_relay_reaches_every_process_as_sigurg(
    tmp_path: Path, sig: signal.Signals
) -> None:
    relay = _start(tmp_path, ["stage", "rank0", "rank1"])
    try:
        assert len(descendants(relay.pid)) == 3
        relay.send_signal(sig)
        got = _signals(tmp_path, 3)
        # each process, the ranks in their own sessions included, asked to stop after its step
        assert got == [["rank0", "SIGURG", "1"], ["rank1", "SIGURG", "1"], ["stage", "SIGURG", "1"]]
    finally:
        for pid in descendants(relay.pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        relay.kill()
        relay.wait()


def test_after_sigterm_the_relay_ends_the_run_at_its_grace_and_exits_with_its_status(
    tmp_path: Path,
) -> None:
    relay = _start(tmp_path, ["stage"], grace_s="1")
    relay.send_signal(signal.SIGTERM)
    got = _signals(tmp_path, 2)
    assert got == [["stage", "SIGTERM", "1"], ["stage", "SIGURG", "1"]]  # URG, then TERM at 1 s
    # the probe records SIGTERM and sleeps on: Slurm's SIGKILL ends it; here, the test's
    subprocess.run(["kill", "-9", str(descendants(relay.pid)[0])], check=True)
    assert relay.wait(timeout=10) == 128 + signal.SIGKILL


def test_the_relay_exits_with_its_commands_status() -> None:
    code = "from vlrl.cluster.relay import main; main()"
    cmd = [sys.executable, "-c", code, "--", sys.executable, "-c", "raise SystemExit(7)"]
    assert subprocess.run(cmd).returncode == 7


def test_the_relayed_command_knows_it_is_relayed() -> None:
    code = "from vlrl.cluster.relay import main; main()"
    show = f"import os; print(os.environ['{RELAYED_ENV}'])"
    out = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-c", show], capture_output=True, text=True
    )
    assert out.stdout.strip() == "1"


def test_the_stage_outside_its_step_ignores_stop_signals_and_returns_the_steps_status() -> None:
    """Under proctrack/linuxproc every process of the job gets the signal: the process that
    waits for the step must neither die of it nor pass a second SIGTERM on to the stage."""
    step = "import os; [os.kill(os.getppid(), s) for s in (10, 15, 23)]; raise SystemExit(5)"
    code = (
        "import sys\n"
        "from vlrl.cluster.relay import run_in_step\n"
        "sys.exit(run_in_step([sys.executable, '-c', sys.argv[1]]))\n"
    )
    assert subprocess.run([sys.executable, "-c", code, step]).returncode == 5
    killed = "import os; os.kill(os.getpid(), 9)"
    assert subprocess.run([sys.executable, "-c", code, killed]).returncode == 137
