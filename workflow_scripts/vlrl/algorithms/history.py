"""What a GRPO run logged: the training curves (dvclive) and the run times kept out of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlrl.core.volatile import split_run_times


def write_curves(directory: Path, args: Any, history: list[dict[str, Any]]) -> None:
    """The training curves, written as transformers' DVCLive callback writes them during
    training (the run's arguments as params), but with each log row at its optimizer step (the
    row's ``step``, as the report's axis; the callback counts log rows: 0, 1, … for steps 2, 4,
    …), from the whole log history without run times: a run resumed from a checkpoint gets the
    curves of every step, which its trainer state restored, not only of the steps it ran (only
    ``train/loss``, the Trainer's mean loss of the steps this run took, differs from an
    uninterrupted run's).

    ``dvcyaml=None``: dvclive must not edit the generated dvc.yaml (the plots are declared there).
    """
    from dvclive import Live
    from dvclive.plots import Metric
    from dvclive.utils import standardize_metric_name

    live = Live(dir=str(directory), dvcyaml=None, save_dvc_exp=False, report=None, resume=False)
    live.log_params(args.to_dict())
    for index, row in enumerate(history):
        live.step = int(row.get("step", index))
        # keys sorted: a resumed run's first rows come back from the checkpoint's trainer state
        # sorted, and the curves' summary must not depend on that
        for key, value in sorted(row.items()):
            if key != "step" and Metric.could_log(value):
                live.log_metric(standardize_metric_name(key, "dvclive.huggingface"), value)
        live.make_summary()
    live.end()


def split_log_history(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """TRL's log history without run times, and the run times (``step_time`` per logged step,
    the rest of the last row's: ``train_runtime``, ...).

    >>> rows, times = split_log_history([{"loss": 0.1, "step_time": 0.5, "step": 1},
    ...                                  {"train_loss": 0.1, "train_runtime": 2.0, "step": 1}])
    >>> rows
    [{'loss': 0.1, 'step': 1}, {'train_loss': 0.1, 'step': 1}]
    >>> times
    {'step_time': [0.5], 'train_runtime': 2.0}
    """
    kept_rows, step_times, totals = [], [], {}
    for row in history:
        kept, times = split_run_times(row)
        kept_rows.append(kept)
        if "step_time" in times:
            step_times.append(times.pop("step_time"))
        totals.update(times)
    return kept_rows, {"step_time": step_times, **totals}
