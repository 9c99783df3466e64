"""``llamafactory-cli train`` with vlrl's callbacks, run by the sft stage in the sft environment.

LLaMA-Factory takes trainer callbacks only through its Python API (``run_exp(callbacks=...)``,
llamafactory/train/tuner.py); its CLI calls ``run_exp()`` with none, in its own process or in
every rank of the torchrun it starts, which runs its launcher file (llamafactory/launcher.py,
``launch``). This module is that CLI with one difference: the trainer gets :class:`StopAtStep`
when ``$VLRL_SFT_MAX_STEPS`` is set (``sft.max_steps``: stop after that step of the schedule
``num_train_epochs`` plans). LLaMA-Factory's own ``launch`` still decides how to start and
where: the ranks it starts run this module (``-m``) instead of its launcher file, and read the
same variable, which torchrun and srun pass on. A rank ends as GRPO's do
(:func:`~vlrl.cluster.rank_exit.exit_finished_rank`): once ``run_exp`` has returned, with its
model and logs written, it exits without the interpreter's finalization, where the second rank
of a 2-rank SFT run aborted in CI ("terminate called without an active exception").

    python -m vlrl.cluster.llamafactory_train train train.yaml [key=value ...]

May import: :mod:`vlrl.cluster.timelimit`, :mod:`vlrl.cluster.rank_exit`, llamafactory (it runs
only where LLaMA-Factory is).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import NoReturn

MAX_STEPS = "VLRL_SFT_MAX_STEPS"
"""The variable that carries ``sft.max_steps`` to every process of the run."""

MODULE = "vlrl.cluster.llamafactory_train"


def callbacks(env: os._Environ | dict[str, str] = os.environ) -> list:
    """The callbacks ``env`` asks for: :class:`StopAtStep` at ``$VLRL_SFT_MAX_STEPS``, else none.

    >>> [type(c).__name__ for c in callbacks({MAX_STEPS: "600"})], callbacks({})
    (['StopAtStep'], [])
    """
    if not env.get(MAX_STEPS):
        return []
    from vlrl.cluster.timelimit import StopAtStep

    return [StopAtStep(int(env[MAX_STEPS]), "sft.num_train_epochs", "sft.max_steps")]


def train_rank(run_exp: Callable[[], None]) -> NoReturn:
    """Run one rank's share of the training (``run_exp``), then end the rank cleanly.

    A rank that aborts prints every thread's stack; one that finished exits 0 whatever the C++
    teardown would have done. A failure of ``run_exp`` propagates (the rank exits 1 with it).
    """
    from vlrl.cluster.rank_exit import exit_finished_rank, report_aborts

    report_aborts()
    run_exp()
    exit_finished_rank()


def main() -> None:
    from llamafactory import launcher
    from llamafactory.train import tuner

    # launch() imports run_exp from the module when it trains in this process...
    tuner.run_exp = functools.partial(tuner.run_exp, callbacks=callbacks())
    # ...and starts "torchrun ... {launcher.__file__} {args}".split() for several processes:
    # each rank then runs this module, with the arguments after "train".
    launcher.__file__ = f"-m {MODULE}"
    if sys.argv[1:2] == ["train"]:
        launcher.launch()  # trains here (one process) or starts the ranks
    else:  # a rank started by launch()'s torchrun, or by srun
        train_rank(tuner.run_exp)


if __name__ == "__main__":
    main()
