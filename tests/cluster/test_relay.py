"""vlrl.cluster.relay: a stop signal that reaches only the first process of a Slurm step (as
Slurm delivers it under proctrack/cgroup) reaches every process of the training run, also those
torchrun starts in sessions of their own. On a real Slurm cluster configured so:
tests/pipeline/test_slurm_preemption.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vlrl.cluster.relay import (
    RELAYED_ENV,
    STOP_SIGNALS,
    descendants,
    main,
    relay,
    run_in_step,
    signal_descendants,
)

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
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job's parent ignores it
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


# In this process (as mutation testing needs: it credits only code the test process runs), with
# the signals this process gets; pytest-timeout's SIGALRM would clash with the relay's.
IN_PROCESS = pytest.mark.timeout(120, method="thread")


@pytest.fixture()
def own_handlers():
    """The relay installs handlers for the stop signals, SIGINT and SIGALRM: put them back."""
    signals = (*STOP_SIGNALS, signal.SIGINT, signal.SIGALRM)
    saved = {sig: signal.getsignal(sig) for sig in signals}
    yield
    signal.alarm(0)
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _relay_here(tmp_path: Path, names: list[str], grace_s: float, then) -> tuple[int, int]:
    """relay() of probes ``names`` in this process while ``then(log)`` runs beside, once every
    probe is up; returns the relay's status and how many other descendants this process had
    (the servers of session fixtures: the relay asks them to stop too, which they ignore)."""
    others = set(descendants())
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    log = tmp_path / "signals.jsonl"
    log.touch()

    def beside() -> None:
        deadline = time.monotonic() + 30
        while not all((tmp_path / f"signals.jsonl.{n}").exists() for n in names):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        try:
            then(tmp_path)
        finally:
            for pid in set(descendants()) - others:
                os.kill(pid, signal.SIGKILL)  # the probes sleep on; Slurm's SIGKILL, here ours

    thread = threading.Thread(target=beside)
    thread.start()
    try:
        status = relay([sys.executable, str(probe), str(log), *names], grace_s)
    finally:
        thread.join()
    return status, len(others)


@IN_PROCESS
@pytest.mark.parametrize("sig", [signal.SIGURG, signal.SIGUSR1])
def test_the_relay_here_turns_a_stop_signal_into_sigurg_for_every_process(
    tmp_path: Path, own_handlers, capfd, sig: signal.Signals
) -> None:
    def stop(root: Path) -> None:
        os.kill(os.getpid(), sig)
        _signals(root, 2)

    status, others = _relay_here(tmp_path, ["stage", "rank0"], 100, stop)
    assert status == 128 + signal.SIGKILL
    assert _signals(tmp_path, 2) == [["rank0", "SIGURG", "1"], ["stage", "SIGURG", "1"]]
    asked = f"relay: {sig.name}: asked {2 + others} processes to stop (SIGURG)\n"
    assert asked in capfd.readouterr().err


@IN_PROCESS
def test_the_relay_here_passes_sigterm_on_at_the_end_of_its_grace(
    tmp_path: Path, own_handlers, capfd, monkeypatch: pytest.MonkeyPatch
) -> None:
    times: dict[str, float] = {}

    def terminate(root: Path) -> None:
        times["sent"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        _signals(root, 2)
        times["passed on"] = time.monotonic()

    alarms: list[int] = []
    alarm = signal.alarm
    monkeypatch.setattr(signal, "alarm", lambda seconds: alarms.append(seconds) or alarm(seconds))
    status, others = _relay_here(tmp_path, ["stage"], 2, terminate)
    assert _signals(tmp_path, 2) == [["stage", "SIGTERM", "1"], ["stage", "SIGURG", "1"]]
    assert 1.5 < times["passed on"] - times["sent"] < 10  # after the grace, not at once
    assert alarms == [2]
    assert status == 128 + signal.SIGKILL
    asked = f"relay: SIGTERM: asked {1 + others} processes to stop (SIGURG)\n"
    assert asked in capfd.readouterr().err


@IN_PROCESS
def test_a_grace_under_a_second_is_a_second_and_may_outlive_the_command(
    own_handlers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``signal.alarm`` counts whole seconds (0 would cancel it); a command that stops on its
    own within the grace leaves an alarm that finds nothing to end, which is no error."""
    alarms: list[int] = []
    alarm = signal.alarm
    monkeypatch.setattr(signal, "alarm", lambda seconds: alarms.append(seconds) or alarm(seconds))
    stops = "import os, signal, time; signal.signal(signal.SIGURG, lambda *a: os._exit(3)); "
    stops += "time.sleep(0.5); os.kill(os.getppid(), signal.SIGTERM); time.sleep(30)"
    assert relay([sys.executable, "-c", stops], grace_s=0.4) == 3
    assert alarms == [1]
    time.sleep(1.5)  # the alarm goes off here, after the command ended


@IN_PROCESS
def test_a_second_sigterm_is_passed_on_at_once(tmp_path: Path, own_handlers) -> None:
    times: dict[str, float] = {}

    def terminate_twice(root: Path) -> None:
        times["sent"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        _signals(root, 1)  # the first one's SIGURG
        os.kill(os.getpid(), signal.SIGTERM)
        _signals(root, 3)
        times["passed on"] = time.monotonic()

    _relay_here(tmp_path, ["stage"], 100, terminate_twice)
    assert _signals(tmp_path, 3) == [
        ["stage", "SIGTERM", "1"], ["stage", "SIGURG", "1"], ["stage", "SIGURG", "1"],
    ]  # fmt: skip
    assert times["passed on"] - times["sent"] < 10  # long before the grace of 100 s


@IN_PROCESS
def test_ctrl_c_reaches_the_command(tmp_path: Path, own_handlers) -> None:
    """SIGINT is passed on to the command (the probe does not catch it: it ends, as a stage
    interrupted at the terminal does)."""

    others = set(descendants())

    def interrupt(root: Path) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 10
        while set(descendants()) - others and time.monotonic() < deadline:
            time.sleep(0.05)

    status, _ = _relay_here(tmp_path, ["stage"], 100, interrupt)
    assert status == 128 + signal.SIGINT  # Python ends on an uncaught KeyboardInterrupt so


@IN_PROCESS
def test_the_relay_here_marks_the_command_relayed_by_its_step(
    tmp_path: Path, own_handlers, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    monkeypatch.setenv("SLURM_STEP_ID", "3")
    show = f"import os; print(os.environ['{RELAYED_ENV}'])"
    assert relay([sys.executable, "-c", show]) == 0
    assert capfd.readouterr().out == "3\n"
    assert relay([sys.executable, "-c", "raise SystemExit(7)"]) == 7
    with pytest.raises(SystemExit) as usage:
        relay([])
    assert usage.value.code == "usage: python -m vlrl.cluster.relay CMD [ARGS...]"


@IN_PROCESS
def test_main_runs_what_follows_the_double_dash(own_handlers, capfd) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--", sys.executable, "-c", "print('ran'); raise SystemExit(4)"])
    assert (done.value.code, capfd.readouterr().out) == (4, "ran\n")
    with pytest.raises(SystemExit) as done:
        main([sys.executable, "-c", "raise SystemExit(0)"])
    assert done.value.code == 0
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(sys, "argv", ["relay", sys.executable, "-c", "raise SystemExit(6)"])
        with pytest.raises(SystemExit) as done:
            main()
        assert done.value.code == 6
    finally:
        monkeypatch.undo()


@IN_PROCESS
def test_the_stage_outside_its_step_here(own_handlers) -> None:
    step = "import os; [os.kill(os.getppid(), s) for s in (10, 15, 23)]; raise SystemExit(5)"
    assert run_in_step([sys.executable, "-c", step]) == 5
    assert run_in_step([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"]) == 137
    assert run_in_step([sys.executable, "-c", "pass"]) == 0


SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]
"""A process that sleeps until it is killed."""


def _with_a_grandchild(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A child of this process that started a child of its own (a sleeper), and that one's pid."""
    pid_file = tmp_path / "grandchild.pid"
    parent = (
        f"import subprocess, sys, time; g = subprocess.Popen({SLEEPER!r}); "
        f"open({str(pid_file)!r}, 'w').write(str(g.pid)); time.sleep(300)"
    )
    child = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and child.poll() is None, "no grandchild started"
        time.sleep(0.05)
    return child, int(pid_file.read_text())


def test_signals_reach_every_descendant_and_say_which(tmp_path: Path) -> None:
    """This process's by default (signal 0: the others, a session fixture's server, are only
    asked whether they are there)."""
    others = set(descendants())
    children = [subprocess.Popen(SLEEPER) for _ in range(2)]
    try:
        assert set(signal_descendants(0)) == others | {c.pid for c in children}
        assert [c.poll() for c in children] == [None, None]
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_signals_reach_the_descendants_of_the_process_given(tmp_path: Path) -> None:
    child, grandchild = _with_a_grandchild(tmp_path)
    try:
        assert signal_descendants(signal.SIGKILL, child.pid) == [grandchild]
        assert child.poll() is None  # not itself
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_descendant_gone_or_not_ours_by_the_signal_is_not_counted(
    monkeypatch: pytest.MonkeyPatch, error: type[OSError]
) -> None:
    child = subprocess.Popen(SLEEPER)
    try:

        def fails(pid: int, sig: int) -> None:
            raise error(pid)

        monkeypatch.setattr(os, "kill", fails)
        assert signal_descendants(signal.SIGURG) == []
    finally:
        monkeypatch.undo()
        child.kill()
        child.wait()


def test_descendants_skip_zombies_and_processes_gone_meanwhile(monkeypatch) -> None:
    """This process's by default; a child that exited but is not yet reaped is dead already."""
    from vlrl.cluster import relay as relay_module

    others = set(descendants())
    sleeper = subprocess.Popen(SLEEPER)
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while (relay_module.stat_fields(exited.pid) or ["Z"])[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [pid for pid in descendants() if pid not in others] == [sleeper.pid]
        read = relay_module.stat_fields
        monkeypatch.setattr(
            relay_module, "stat_fields", lambda pid: None if int(pid) == sleeper.pid else read(pid)
        )
        assert sleeper.pid not in descendants()  # its /proc entry went away while it was read
    finally:
        sleeper.kill()
        sleeper.wait()
        exited.wait()


def test_descendants_go_down_every_branch(tmp_path: Path) -> None:
    """Children first, then theirs: a later child's own children too, not only the first's."""
    others = set(descendants())
    first = subprocess.Popen(SLEEPER)
    second, grandchild = _with_a_grandchild(tmp_path)
    try:
        ours = [pid for pid in descendants() if pid not in others]
        assert ours == [*sorted([first.pid, second.pid]), grandchild]
        assert descendants(second.pid) == [grandchild]
    finally:
        for pid in set(descendants()) - others:
            os.kill(pid, signal.SIGKILL)
        first.wait()
        second.wait()
