"""Did a change help? Two experiments compared on the same items.

For every benchmark and checkpoint both experiments evaluate, :func:`compare_rows` pairs the two
scores files item by item (:func:`vlrl.reporting.frames.paired`): the difference A − B in
accuracy points, its paired bootstrap interval, McNemar's exact p, and a plain sentence
(:func:`sentence`). A checkpoint whose scores both experiments read from the same file (a child
shares its parent's SFT and base evaluations, :mod:`vlrl.sharing`) is the same model's output:
it is listed as shared, with no statistics, since there is nothing to compare.

``vlrl compare A B`` prints these rows; a child's report (an experiment that ``extends:``
another) has them against its parent (:func:`parent_pairs` names the parent's files the report
reads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from vlrl import sharing
from vlrl.core.errors import StageError
from vlrl.items.predictions import read_scores
from vlrl.reporting import formatting as fmt
from vlrl.reporting.frames import paired
from vlrl.reporting.labels import label, ordered

COLUMNS = [
    "benchmark", "checkpoint", "model", "a", "b", "shared", "n", "accuracy_a", "accuracy_b",
    "diff", "ci_low", "ci_high", "p_mcnemar", "a_only", "b_only", "discordant_fraction",
    "unscored_a", "unscored_b", "excluded", "file_a", "file_b", "sentence",
]  # fmt: skip
"""The fields of :func:`compare_rows`' rows, in order (the CSV's and JSON's columns)."""


def common(cfg_a: Any, cfg_b: Any, same_data: bool = True) -> list[tuple[str, str]]:
    """``(benchmark, checkpoint)`` that both experiments evaluate on the same items, in A's
    order. A benchmark drawn from each experiment's own data (``loader: experiment_split``) has
    the same items only when both read the same data (``same_data``: a child sharing its
    parent's).

    >>> from types import SimpleNamespace as C
    >>> common(C(benchmarks=["mmmu_val"], checkpoints=["grpo", "base"]),
    ...        C(benchmarks=["mmmu_val"], checkpoints=["base", "sft", "grpo"]))
    [('mmmu_val', 'base'), ('mmmu_val', 'grpo')]
    >>> common(C(benchmarks=["shapes_test"], checkpoints=["grpo"]),
    ...        C(benchmarks=["shapes_test"], checkpoints=["grpo"]), same_data=False)
    []
    """
    from vlrl.benchmarks import load_benchmark

    def comparable(bench: str) -> bool:
        return same_data or load_benchmark(bench).loader != "experiment_split"

    return [
        (bench, checkpoint)
        for bench in cfg_a.benchmarks
        if bench in cfg_b.benchmarks and comparable(bench)
        for checkpoint in ordered(list(cfg_a.checkpoints))
        if checkpoint in cfg_b.checkpoints
    ]


def same_data(a: str, b: str) -> bool:
    """Whether experiments ``a`` and ``b`` read one data folder (:mod:`vlrl.sharing`)."""
    return sharing.data_dir(a).resolve() == sharing.data_dir(b).resolve()


def parent_pairs(exp: str, cfg: Any, parent_cfg: Any) -> list[tuple[str, str, Path, Path]]:
    """``(benchmark, checkpoint, child's scores file, parent's scores file)`` for what a child
    and its parent both evaluate; the two files are one when the child shares the parent's."""
    parent = cfg.extends
    return [
        (bench, checkpoint, sharing.scores_file(exp, checkpoint, bench),
         sharing.scores_file(parent, checkpoint, bench))
        for bench, checkpoint in common(cfg, parent_cfg, same_data(exp, parent))
    ]  # fmt: skip


def sentence(r: dict[str, Any], confidence: float) -> str:
    """One compared row in words: which is better, by how many points, with the paired
    interval, or that the difference is not distinguishable from zero; or that both read one
    shared output.

    >>> row = {"a": "child", "b": "parent", "model": "SFT+GRPO", "benchmark": "shapes_test",
    ...        "shared": False, "diff": -0.042, "ci_low": -0.074, "ci_high": -0.01,
    ...        "accuracy_a": 0.428, "accuracy_b": 0.47, "p_mcnemar": 0.012, "n": 1000}
    >>> print(sentence(row, 0.95))  # doctest: +NORMALIZE_WHITESPACE
    child's SFT+GRPO is 4.2 points worse than parent's on shapes_test (42.8% vs 47.0%,
    paired 95% interval [-7.4, -1.0], McNemar p = 0.012, n = 1000)
    >>> print(sentence({**row, "diff": 0.004, "ci_low": -0.01, "ci_high": 0.02}, 0.95))
    ... # doctest: +NORMALIZE_WHITESPACE, +ELLIPSIS
    child's SFT+GRPO is 0.4 points better than parent's on shapes_test, not distinguishable
    from zero (...)
    >>> sentence({**row, "shared": True, "model": "SFT"}, 0.95)
    "child's SFT on shapes_test is parent's own (one shared output): the same answers"
    """
    if r["shared"]:
        return (
            f"{r['a']}'s {r['model']} on {r['benchmark']} is {r['b']}'s own (one shared output): "
            "the same answers"
        )
    direction = "better" if r["diff"] >= 0 else "worse"
    head = (
        f"{r['a']}'s {r['model']} is {fmt.value(abs(r['diff']))} points {direction} than "
        f"{r['b']}'s on {r['benchmark']}"
    )
    if r["ci_low"] <= 0 <= r["ci_high"]:
        head += ", not distinguishable from zero"
    return (
        f"{head} ({fmt.value(r['accuracy_a'])}% vs {fmt.value(r['accuracy_b'])}%, paired "
        f"{fmt.level(confidence)} interval {fmt.signed_interval(r['ci_low'], r['ci_high'])}, "
        f"McNemar {fmt.p_stated(r['p_mcnemar'])}, n = {fmt.count(r['n'])})"
    )


def compare_rows(
    a: str, b: str, cfg_a: Any, cfg_b: Any, score: Any, seed: int
) -> list[dict[str, Any]]:
    """One row (:data:`COLUMNS`) per benchmark × checkpoint both ``a`` and ``b`` evaluate: the
    paired difference a − b (``score``'s confidence and resamples, ``seed``), or ``shared`` when
    both read one scores file. A missing scores file is an error naming it and the command that
    makes it; two experiments with nothing in common are an error too."""
    pairs = common(cfg_a, cfg_b, same_data(a, b))
    if not pairs:
        raise StageError(
            f"{a} and {b} evaluate no checkpoint on the same items of a common benchmark (a "
            "benchmark split from each one's data counts only when they share the data; "
            f"{a}: "
            f"{list(cfg_a.benchmarks)} × {list(cfg_a.checkpoints)}; {b}: "
            f"{list(cfg_b.benchmarks)} × {list(cfg_b.checkpoints)}): nothing to compare"
        )
    rows = []
    for bench, checkpoint in pairs:
        file_a = sharing.scores_file(a, checkpoint, bench)
        file_b = sharing.scores_file(b, checkpoint, bench)
        for exp, file in ((a, file_a), (b, file_b)):
            if not file.is_file():
                raise StageError(
                    f"{file} does not exist: {exp} has not scored {checkpoint} on {bench}; run "
                    f"`vlrl score {exp} {checkpoint} {bench}` (or `dvc repro` with {exp} in "
                    "params.yaml's experiments)"
                )
        row: dict[str, Any] = dict.fromkeys(COLUMNS)
        row.update(
            benchmark=bench,
            checkpoint=checkpoint,
            model=label(checkpoint, cfg_a.sft.enabled),
            a=a,
            b=b,
            shared=file_a.resolve() == file_b.resolve(),
            file_a=file_a.as_posix(),
            file_b=file_b.as_posix(),
        )
        if not row["shared"]:
            row.update(
                paired((file_a, read_scores(file_a, "compare")),
                       (file_b, read_scores(file_b, "compare")), score, seed)
            )  # fmt: skip
        row["sentence"] = sentence(row, score.confidence)
        rows.append(row)
    return rows


def cells(
    rows: list[dict[str, Any]], confidence: float, a: str = "A", b: str = "B"
) -> list[dict[str, str]]:
    """:func:`compare_rows` as table cells, columns headed ``a`` and ``b``: both accuracies, the
    paired difference a − b with its interval, McNemar's p, n; a checkpoint both read from one
    output is marked shared."""
    table = []
    for r in rows:
        shared = r["shared"]
        table.append(
            {
                "benchmark": r["benchmark"],
                "model": r["model"],
                a: "shared" if shared else fmt.value(r["accuracy_a"]),
                b: "shared" if shared else fmt.value(r["accuracy_b"]),
                f"{a} − {b} (pts)": fmt.DASH if shared else fmt.signed(r["diff"]),
                f"{fmt.level(confidence)} CI (paired bootstrap)": (
                    fmt.DASH if shared else fmt.signed_interval(r["ci_low"], r["ci_high"])
                ),
                "McNemar p": fmt.DASH if shared else fmt.p_value(r["p_mcnemar"]),
                "n paired": fmt.DASH if shared else fmt.count(r["n"]),
            }
        )
    return table


def parent_table(rows: list[dict[str, Any]], confidence: float) -> pd.DataFrame:
    """The child against its parent: :func:`cells` headed child and parent."""
    return pd.DataFrame(cells(rows, confidence, "child", "parent"))
