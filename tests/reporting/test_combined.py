"""vlrl.reporting.combined: benchmarks shown as one number (``report.combined``), their accuracy
over all their items, against hand-computed numbers and against the released rule it ports
(Vision-SR1's ``weighted_mmmu_pro``); its table, its column in the paper's layout, and the
published number pooled from the same benchmarks set beside it."""

from __future__ import annotations

import random
from collections.abc import Iterable
from types import SimpleNamespace

import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.config import ReportConfig
from vlrl.reporting import tables
from vlrl.reporting.combined import combined_rows, combined_table, parts, pooled_row
from vlrl.reporting.frames import Evaluation
from vlrl.reporting.published import reference_file
from vlrl.reporting.versus import summary_columns, versus_rows
from vlrl.scoring.stats import proportion_ci


# The released rule, verbatim: zli12321/Vision-SR1 @ 4480e0802d67670e01fcb403ff579bdb9b3337f5,
# Evaluation/eval_result.py lines 228-255 (Apache-2.0; copied for testing only). ``results`` maps
# a result file's key to (its item count, its accuracy): compute_MCQ_stats returns
# (len(data), correct / total) (lines 152-153), compute_llm_rule_stats (count, accuracy) per
# MLLM_test file_name (lines 220-223).
# fmt: off
def add_weighted_subset(
    results,
    *,
    patterns: Iterable[str] = ("mmmu-pro", "mmmu_pro"),
    label: str = "weighted_mmmu_pro",
    print_table: bool = True,
):
    # ------------------------------------------------------------------
    # 1) weighted aggregate
    # ------------------------------------------------------------------
    matches = [k for k in results if any(p in k for p in patterns)]
    total   = sum(results[k][0] for k in matches)
    weighted_acc = (
        sum(results[k][0] * results[k][1] for k in matches) / total if total else 0.0
    )
    merged = {**results, label: (total, weighted_acc)}

    # ------------------------------------------------------------------
    # 2) pretty-print with key rename
    # ------------------------------------------------------------------
    if print_table:
        rename = {"mmmu-pro": "mmmu_pro_4_options"}   # <-- your custom mapping
        print("\nDataset".ljust(22), "Accuracy")
        print("-" * 34)
        for k, (_, acc) in merged.items():
            shown_key = rename.get(k, k)             # fall back to original
            print(f"{shown_key.ljust(22)} {acc:.3%}")
    return merged
# fmt: on

# The released result keys (eval_result.py lines 346-352 and MLLM_test's file_name), with the
# vlrl benchmark each MMMU-Pro one is.
RELEASED_MMMU_PRO = {
    "mmmu-pro": "mmmu_pro_standard4",
    "mmmu_pro_10options": "mmmu_pro_standard10",
    "mmmu-pro-vision": "mmmu_pro_vision",
}
RELEASED_OTHERS = ["MMMU", "visnumbench", "hallusionbench", "mathverse", "realWorldQA"]
MMMU_PRO = {"mmmu_pro": list(RELEASED_MMMU_PRO.values())}


def row(bench: str, n: int, correct: int, checkpoint: str = "grpo", **extra) -> dict:
    """A results row (vlrl.reporting.frames.results_rows) with ``correct`` of ``n`` right."""
    low, high = proportion_ci(correct, n, 0.95)
    fields = {"benchmark": bench, "checkpoint": checkpoint, "model": checkpoint, "n": n}
    fields |= {"accuracy": correct / n, "ci_low": low, "ci_high": high, "unscored": 0}
    return fields | {"generation_failures": 0, "judge_failures": 0, "judge": None} | extra


def test_three_parts_are_weighted_by_their_items_not_averaged() -> None:
    # 9/10, 12/30 and 6/60 right: 27 of 100 items, where the plain mean of the accuracies is 46.7
    results = [
        row("mmmu_pro_standard4", 10, 9, protocol="vision_sr1", unscored=2, judge="j (v1)"),
        row("mmmu_pro_standard10", 30, 12, protocol="vision_sr1", generation_failures=1),
        row("mmmu_pro_vision", 60, 6, protocol="vision_sr1", judge_failures=3),
    ]
    (combined,) = combined_rows(results, MMMU_PRO, 0.9)
    low, high = proportion_ci(27, 100, 0.9)
    assert combined == {
        "benchmark": "mmmu_pro",
        "checkpoint": "grpo",
        "model": "grpo",
        "n": 100,
        "accuracy": 0.27,
        "ci_low": low,
        "ci_high": high,
        "headline": "accuracy",
        "protocol": "vision_sr1",
        "unscored": 2,
        "generation_failures": 1,
        "judge_failures": 3,
        "judge": "j (v1)",
        "combines": "mmmu_pro_standard4+mmmu_pro_standard10+mmmu_pro_vision",
    }
    plain = sum(r["accuracy"] for r in results) / 3
    assert plain == pytest.approx(1.4 / 3) and combined["accuracy"] != pytest.approx(plain)
    assert parts(combined) == MMMU_PRO["mmmu_pro"] and parts(results[0]) == []


def test_each_checkpoint_gets_its_own_row_and_one_without_every_part_none() -> None:
    results = [
        row("a", 4, 1, "base"),
        row("b", 4, 3, "base", protocol="vlrl"),
        row("a", 4, 4, "grpo", judge="j1"),
        row("b", 8, 2, "grpo", judge="j2"),
        row("a", 4, 2, "sft"),  # sft has no row of b: no combined row
    ]
    rows = combined_rows(results, {"ab": ["a", "b"], "ba": ["b", "a"]}, 0.95)
    assert [(r["benchmark"], r["checkpoint"], r["accuracy"]) for r in rows] == [
        ("ab", "base", 0.5),
        ("ab", "grpo", 0.5),
        ("ba", "base", 0.5),
        ("ba", "grpo", 0.5),
    ]
    assert rows[0]["protocol"] is None, "the parts' protocols differ (None and vlrl)"
    assert rows[1]["judge"] == "j1; j2" and rows[3]["judge"] == "j2; j1"
    assert rows[3]["combines"] == "b+a"


def test_a_checkpoint_without_every_part_leaves_out_only_its_own_row() -> None:
    # base, the first checkpoint, lacks b: sft and grpo after it still get theirs
    results = [row("a", 4, 1, "base"), *(row(b, 4, 2, c) for c in ("sft", "grpo") for b in "ab")]
    rows = combined_rows(results, {"ab": ["a", "b"]}, 0.95)
    assert [r["checkpoint"] for r in rows] == ["sft", "grpo"]


@pytest.mark.parametrize("combines", ["", None, float("nan")])
def test_a_row_without_a_combined_name_has_no_parts(combines) -> None:
    # a NaN is what a combined column of results.csv holds for a benchmark's own row
    assert parts({"benchmark": "a", "combines": combines}) == []


@pytest.mark.parametrize("seed", range(200))
def test_the_combined_accuracy_is_the_released_weighted_mmmu_pro(seed: int) -> None:
    """Differential: random item counts and correct counts of the three settings (and of other
    result keys, which the released rule must leave out), our combined row against the
    released add_weighted_subset on the same counts."""
    rng = random.Random(seed)
    released, results = {}, []
    for key in [*RELEASED_MMMU_PRO, *RELEASED_OTHERS]:
        n = rng.randint(1, 2000)
        correct = rng.choice([0, n, rng.randint(0, n)])
        released[key] = (n, correct / n)
        results.append(row(RELEASED_MMMU_PRO.get(key, key), n, correct))
    rng.shuffle(results)
    expected_n, expected = add_weighted_subset(released, print_table=False)["weighted_mmmu_pro"]
    (combined,) = combined_rows(results, MMMU_PRO, 0.95)
    assert combined["n"] == expected_n
    assert combined["accuracy"] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_pooled_row_is_none_without_every_part() -> None:
    assert pooled_row([{"n": 3, "accuracy": 1.0}, None], 0.95) is None
    assert pooled_row([], 0.95) is None


def test_the_combined_table_shows_each_part_beside_the_number() -> None:
    results = [row("a", 10, 9, "base"), row("b", 30, 12, "base", unscored=1)]
    results += combined_rows(results, {"ab": ["a", "b"]}, 0.95)
    low, high = proportion_ci(21, 40, 0.95)
    table = combined_table(results, "ab")
    assert table.to_dict("records") == [
        {
            "model": "base",
            "accuracy (headline)": f"52.5 [{100 * low:.1f}, {100 * high:.1f}]",
            "n": "40",
            "unscored": "1",
            "a": f"90.0 [{100 * results[0]['ci_low']:.1f}, {100 * results[0]['ci_high']:.1f}]"
            " (n=10)",
            "b": f"40.0 [{100 * results[1]['ci_low']:.1f}, {100 * results[1]['ci_high']:.1f}]"
            " (n=30)",
            "scored by": "rules",
        }
    ]
    assert combined_table(results, "a").empty, "a benchmark's own rows are not a combined table"


POOLED = """\
paper: {title: P, url: u}
protocol: {toolkit: t, prompt: p, judge: j, scoring: vlrl}
columns:
  Both: {benchmark: null, pooled: [shapes_test_blank, shapes_test], scale: percent}
  Single: {benchmark: shapes_test, scale: percent}
rows:
  - {id: r, model: M, source: {table: T1, row: M}, values: {Both: 30.0, Single: 40.0}}
"""


def test_the_published_pooled_number_stands_in_the_combined_column(project) -> None:
    """A published column pooled from the benchmarks of a combined number (in any order) is
    matched to it: the same value, its name, its column of the paper's layout."""
    reference_file("pooled").write_text(POOLED)
    benches = ("shapes_test", "shapes_test_blank")
    results = [row("shapes_test", 100, 50, "base"), row("shapes_test_blank", 300, 60, "base")]
    results += combined_rows(results, {"both": list(benches)}, 0.95)
    links = ReportConfig.model_validate(
        {"published": [{"reference": "pooled", "rows": {"base": "r"}}]}
    ).published
    scores = {"base": SimpleNamespace(protocol="vlrl")}
    evaluations = [Evaluation(b, load_benchmark(b), scores) for b in benches]
    versus = versus_rows(links, results, evaluations, sft_enabled=True, confidence=0.95)
    assert [(r["column"], r["benchmark"]) for r in versus] == [
        ("Single", "shapes_test"),
        ("Both", "both"),
    ], "the combined number after its last benchmark"
    pooled = versus[1]
    assert pooled["reproduced"] == results[2]["accuracy"] == pytest.approx(110 / 400)
    assert (pooled["ci_low"], pooled["ci_high"]) == (results[2]["ci_low"], results[2]["ci_high"])
    assert pooled["delta"] == pytest.approx(110 / 400 - 0.30) and pooled["same_protocol"]

    columns = summary_columns(evaluations, versus, {"both": list(benches)})
    assert columns == [
        ("shapes_test", "accuracy"),
        ("shapes_test_blank", "accuracy"),
        ("both", "accuracy"),
    ]
    summary = tables.summary_table(results, versus, evaluations, columns)
    assert summary.to_dict("records") == [
        {
            "model": "base (reproduced)",
            "shapes_test accuracy": "50.0",
            "shapes_test_blank accuracy": "20.0",
            "both accuracy": "27.5",
            "judge": "none (rules)",
            "scoring protocol": "vlrl",
        },
        {
            "model": "M (pooled, T1)",
            "shapes_test accuracy": "40.0",
            "shapes_test_blank accuracy": "–",
            "both accuracy": "30.0",
            "judge": "as published: j",
            "scoring protocol": "vlrl",
        },
    ]

    # without a combined number of those benchmarks: pooled here, under their names joined
    alone = versus_rows(links, results[:2], evaluations, sft_enabled=True, confidence=0.95)
    assert alone[1]["benchmark"] == "shapes_test_blank+shapes_test"
    assert alone[1]["reproduced"] == pytest.approx(110 / 400)
    assert summary_columns(evaluations, alone) == columns[:2]


def test_a_combined_column_follows_the_last_of_its_benchmarks() -> None:
    evaluations = [
        SimpleNamespace(bench=b, config=SimpleNamespace(headline="accuracy")) for b in "abcd"
    ]
    columns = summary_columns(evaluations, [], {"db": ["d", "b"], "ab": ["a", "b"]})
    names = [c[0] for c in columns]
    assert names == ["a", "b", "ab", "c", "d", "db"]


def test_the_judges_of_the_summary_are_the_benchmarks_own() -> None:
    results = [row("a", 4, 1, "base", judge="j (v1)"), row("b", 4, 3, "base")]
    results += combined_rows(results, {"ab": ["a", "b"]}, 0.95)
    scores = {"base": SimpleNamespace(protocol="vlrl")}
    evaluations = [
        Evaluation(b, SimpleNamespace(headline="accuracy", metrics=[]), scores) for b in "ab"
    ]
    columns = summary_columns(evaluations, [], {"ab": ["a", "b"]})
    (cells,) = tables.summary_table(results, [], evaluations, columns).to_dict("records")
    assert cells["judge"] == "j (v1) on a", "not again on ab"
    assert cells["ab accuracy"] == "50.0"
