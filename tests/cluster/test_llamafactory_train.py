"""How an SFT rank started by LLaMA-Factory's launcher ends: 0 once its training is done, past an
abort in the interpreter's finalization; 1 with the traceback when its training fails."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from vlrl.cluster import llamafactory_train, rank_exit

ROOT = Path(__file__).resolve().parents[2]

# LLaMA-Factory's launcher and tuner, as modules that record what main() asked of them
STAND_INS = """
    import atexit, os, sys, types

    said = []
    launcher = types.ModuleType("llamafactory.launcher")
    launcher.launch = lambda: said.append("launch")
    tuner = types.ModuleType("llamafactory.train.tuner")

    def run_exp(callbacks=None):
        said.append(f"run_exp {[type(c).__name__ for c in callbacks or []]}")
        atexit.register(os.abort)  # the C++ teardown that aborted a finished rank in CI

    tuner.run_exp = run_exp
    package = types.ModuleType("llamafactory")
    package.launcher = launcher
    train = types.ModuleType("llamafactory.train")
    train.tuner = tuner
    sys.modules.update({"llamafactory": package, "llamafactory.launcher": launcher,
                        "llamafactory.train": train, "llamafactory.train.tuner": tuner})
    atexit.register(lambda: print(said, launcher.__file__, flush=True))
"""


def run_script(
    parts: list[str], tmp_path: Path, *args: str, **env: str
) -> subprocess.CompletedProcess:
    script = tmp_path / "rank.py"
    script.write_text("".join(textwrap.dedent(part) for part in [STAND_INS, *parts]))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow_scripts"), **env}
    env.setdefault("VLRL_SFT_MAX_STEPS", "")
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120
    )


MAIN = """
    from vlrl.cluster import llamafactory_train
    llamafactory_train.main()
"""


def test_a_rank_that_trained_exits_0_past_an_abort_at_finalization(tmp_path: Path) -> None:
    done = run_script([MAIN, "print('unreached', flush=True)\n"], tmp_path, "train.yaml")
    assert done.returncode == 0, done.stderr
    assert "unreached" not in done.stdout  # the rank ended in main(), without finalization
    assert "run_exp" not in done.stdout  # nor the atexit handlers: no print of `said`


def test_a_rank_whose_training_fails_exits_1_with_the_traceback(tmp_path: Path) -> None:
    body = """
        def fail(callbacks=None):
            raise RuntimeError("out of memory on rank 1")

        tuner.run_exp = fail
    """
    done = run_script([body, MAIN], tmp_path, "train.yaml")
    assert done.returncode == 1
    assert "RuntimeError: out of memory on rank 1" in done.stderr


def test_the_step_limit_stops_at_its_step_and_names_the_sft_keys_when_it_cannot() -> None:
    (stop,) = llamafactory_train.callbacks({llamafactory_train.MAX_STEPS: "600"})
    assert (stop.last_step, stop.planned_by, stop.stop_key) == (
        600,
        "sft.num_train_epochs",
        "sft.max_steps",
    )


class StandIns:
    """LLaMA-Factory's launcher and tuner modules, in this process, recording their calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
        self.launcher = types.ModuleType("llamafactory.launcher")
        self.launcher.launch = lambda: calls.append("launch")
        self.tuner = types.ModuleType("llamafactory.train.tuner")
        self.tuner.run_exp = lambda callbacks=None: calls.append(
            f"run_exp {[type(c).__name__ for c in callbacks or []]}"
        )
        package, train = types.ModuleType("llamafactory"), types.ModuleType("llamafactory.train")
        package.launcher, train.tuner = self.launcher, self.tuner
        for module in (package, self.launcher, train, self.tuner):
            monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setattr(rank_exit, "report_aborts", lambda: calls.append("report_aborts"))
        monkeypatch.setattr(rank_exit, "exit_finished_rank", lambda: calls.append("exit 0"))


@pytest.mark.parametrize("max_steps, called", [("3", ["StopAtStep"]), ("", [])])
def test_a_rank_reports_aborts_trains_with_the_callbacks_then_exits(
    monkeypatch: pytest.MonkeyPatch, max_steps: str, called: list[str]
) -> None:
    calls: list[str] = []
    StandIns(monkeypatch, calls)
    monkeypatch.setenv(llamafactory_train.MAX_STEPS, max_steps)
    monkeypatch.setattr(sys, "argv", ["llamafactory_train", "train.yaml", "output_dir=o"])
    llamafactory_train.main()
    assert calls == ["report_aborts", f"run_exp {called}", "exit 0"]


def test_the_launcher_process_launches_ranks_of_this_module_and_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    stand_ins = StandIns(monkeypatch, calls)
    monkeypatch.setenv(llamafactory_train.MAX_STEPS, "5")
    monkeypatch.setattr(sys, "argv", ["llamafactory_train", "train", "train.yaml"])
    llamafactory_train.main()
    assert calls == ["launch"]
    assert stand_ins.launcher.__file__ == "-m vlrl.cluster.llamafactory_train"
    stand_ins.tuner.run_exp()  # as launch() calls it when it trains in this process
    assert calls == ["launch", "run_exp ['StopAtStep']"]


def test_a_failing_rank_does_not_exit_as_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    StandIns(monkeypatch, calls)

    def fail() -> None:
        raise RuntimeError("out of memory on rank 1")

    with pytest.raises(RuntimeError, match="rank 1"):
        llamafactory_train.train_rank(fail)
    assert calls == ["report_aborts"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
