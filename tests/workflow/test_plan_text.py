"""vlrl plan's text and rows, rendered in this process from a plan built by hand: every line
the summary, the stage list, the downloads, disk, servers and estimate sections print."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vlrl.workflow.cost_model import GPU_HOURS, MEMORY, WALL_HOURS
from vlrl.workflow.dag import Job, Planned
from vlrl.workflow.plan import Download, Plan, Server
from vlrl.workflow.plan_text import measured_line, render, rows, stage_lines, summary


def planned(rule: str, needed: bool, reason: str = "", **wildcards: str) -> Planned:
    job = Job(rule, {"exp": "e", **wildcards}, [], [], [], {}, "", frozenset())
    return Planned(job, needed, reason)


class Estimate:
    """What plan_text reads of :class:`vlrl.workflow.cost.Estimate`."""

    def __init__(self, stages: list) -> None:
        self.stages = stages

    def summary(self) -> list[str]:
        return ["compute: 3.0 GPU-hours"]

    def lines(self) -> list[str]:
        return ["grpo: 3.0 GPU-hours", "assumed: 1 x H100"]


def figure(name: str, value: float) -> SimpleNamespace:
    return SimpleNamespace(name=name, value=value)


JOBS = [
    planned("data", False),
    planned("sft", True, "output missing"),
    planned("grpo", True, "params changed"),
    *[planned("infer", True, "output missing", checkpoint="grpo", bench=f"b{i}") for i in range(4)],
    planned("infer", True, "output missing", checkpoint="sft", bench="b0"),
]
WHY = {
    "grpo--e": ["grpo.learning_rate: 1e-06 -> 2e-06"],
    "infer--e--sft--b0": ["input results/e/sft: rebuilt by sft--e"],
    **{f"infer--e--grpo--b{i}": ["input results/e/grpo: rebuilt by grpo--e"] for i in range(4)},
}


def full_plan(**changes) -> Plan:
    fields = dict(
        experiment="e",
        jobs=JOBS,
        downloads=[
            Download("model", "m", "o/m@0123", 3_000_000_000, "present"),
            Download("dataset", "d", "o/d@4567", 500_000_000, "to fetch"),
            Download("dataset", "u", "o/u@?", None, "UNPINNED: run `vlrl pin u` online first"),
            Download("model", "tiny", "tiny (built here)", None, "built locally"),
        ],
        disk=[("downloads", 3.5e9, "stated"), ("models written", None, "parameter count unknown")],
        servers=[Server("score.judge", "must be running at http://h/v1 (model j)")],
        estimate=Estimate(
            [
                SimpleNamespace(
                    label="grpo",
                    figures=[
                        figure(GPU_HOURS, 3.0),
                        figure(WALL_HOURS, 1.5),
                        figure(MEMORY, 2**31),
                    ],
                    devices=2,
                    on_gpu=True,
                ),
                SimpleNamespace(label="infer sft x b0", figures=[], devices=1, on_gpu=False),
            ]
        ),
        reported=SimpleNamespace(hardware="8 x A100", time="12 h", source="paper, sec. 4"),
        unknown={"grpo.beta": "not stated"},
        deviations={"sft.epochs": "fewer here"},
        preview=SimpleNamespace(why=WHY, snakemake_only=[], unknown=[]),
        measured={"sft--e": 90.0},
    )
    return Plan(**(fields | changes))


RENDERED = """\
# Plan: e

## Summary
  stages: 7 to run (1 sft, 1 grpo, 5 infer), 1 cached
  downloads: 2 to fetch, 0.50 GB stated (1 of unstated size); BLOCKED: u (see Downloads)
  disk: at least 3.50 GB
  servers: score.judge (see Servers)
  compute: 3.0 GPU-hours
  time: 1.5 min one after another, as last measured here for 1 of the 7 jobs to run (sft 1.5 \
min; logs/timings/)
  reported by the source: 8 x A100, 12 h (paper, sec. 4)

## Stages: 7 to run, 1 cached (Snakemake's dry run)
  `dvc repro` runs the same stages, after its `resolve` stage (which writes the params files); \
old values are what a stage last ran with
  cached data--e
  run    sft--e
           Snakemake: output missing
  run    grpo--e
           grpo.learning_rate: 1e-06 -> 2e-06
  run    infer x 5: infer--e--grpo--b0, infer--e--grpo--b1, infer--e--grpo--b2, \
infer--e--grpo--b3, infer--e--sft--b0
           output missing or an input rebuilt (each)

## Downloads
  model m: o/m@0123, 3.00 GB: present
  dataset d: o/d@4567, 0.50 GB: to fetch
  dataset u: o/u@?, size unknown: UNPINNED: run `vlrl pin u` online first
  model tiny: tiny (built here), size unknown: built locally
  BLOCKED: 1 download(s) cannot run as configured (above)

## Disk
  downloads: 3.50 GB (stated)
  models written: size unknown (parameter count unknown)
  at least 3.50 GB

## Servers
  score.judge: must be running at http://h/v1 (model j)

## Compute and memory (estimate)
  grpo: 3.0 GPU-hours
  assumed: 1 x H100

## Reported by the source: 8 x A100, 12 h (paper, sec. 4)

## Unknown in the public sources (the values set are stated guesses)
  grpo.beta: not stated

## Deviations from the sources
  sft.epochs: fewer here"""


def test_the_whole_plan_as_text() -> None:
    assert render(full_plan()) == RENDERED


def test_a_bare_plan_as_text() -> None:
    bare = Plan("e", [planned("data", False)], [], [], [])
    assert render(bare) == "\n".join(
        [
            "# Plan: e",
            "",
            "## Summary",
            "  stages: 0 to run, 1 cached",
            "  downloads: 0 to fetch",
            "  disk: at least 0.00 GB",
            "  time: not measured here yet (a Snakemake run times each training and inference "
            "job into logs/timings/)",
            "",
            "## Stages: 0 to run, 1 cached (Snakemake's dry run)",
            "  `dvc repro` runs the same stages, after its `resolve` stage (which writes the "
            "params files); old values are what a stage last ran with",
            "  cached data--e",
            "",
            "## Downloads",
            "",
            "## Disk",
            "  at least 0.00 GB",
            "",
            "## Servers",
            "  none",
            "",
            "## Compute and memory (estimate)",
        ]
    )


def test_downloads_of_stated_sizes_only() -> None:
    plan = full_plan(downloads=[Download("dataset", "d", "o/d@1", 2_000_000_000, "to fetch")])
    assert summary(plan)[1] == "  downloads: 1 to fetch, 2.00 GB stated"
    unstated = full_plan(downloads=[Download("dataset", "u", "o/u@1", None, "to fetch")])
    assert summary(unstated)[1] == "  downloads: 1 to fetch"


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            {"tracked": False},
            ["  not in params.yaml, so not in dvc.yaml: run it with "
             "`snakemake --cores 2 --config 'experiments=[e]'`"],
        ),
        (
            {"stale": ["sft--e", "grpo--e"]},
            ["  dvc.yaml is stale for sft--e, grpo--e: `dvc repro` stops at its `resolve` stage "
             "until `vlrl dvc-yaml`"],
        ),
        (
            {"preview": SimpleNamespace(why=WHY, snakemake_only=["sft--e"], unknown=["grpo--e"])},
            ["  `dvc repro` skips sft--e: Snakemake runs them for file times alone (content as "
             "dvc.lock records it); `snakemake --touch --cores 1` marks them current",
             "  whether `dvc repro` runs grpo--e is not known: a folder input is newer than their "
             "outputs (folders are not compared with dvc.lock here)"],
        ),
        (
            {"preview": SimpleNamespace(why=WHY, snakemake_only=[], unknown=["grpo--e"])},
            ["  whether `dvc repro` runs grpo--e is not known: a folder input is newer than their "
             "outputs (folders are not compared with dvc.lock here)"],
        ),
        (
            {"preview": None},
            ["  `dvc repro` runs the same stages, after its `resolve` stage (which writes the "
             "params files); old values are what a stage last ran with"],
        ),
    ],
)  # fmt: skip
def test_what_the_plan_says_of_dvc_repro(changes: dict, said: list[str]) -> None:
    text = render(full_plan(**changes)).splitlines()
    start = text.index("## Stages: 7 to run, 1 cached (Snakemake's dry run)") + 1
    assert text[start : start + len(said)] == said
    assert text[start + len(said)] == "  cached data--e"


def test_a_rule_is_grouped_only_from_four_routine_jobs() -> None:
    three = [planned("infer", True, "output missing", bench=f"b{i}") for i in range(3)]
    assert stage_lines(Plan("e", three, [], [], [])) == [
        line
        for i in range(3)
        for line in (f"  run    infer--e--b{i}", "           Snakemake: output missing")
    ]
    # a job of the rule with a reason of its own stays on its line; the rest are still four
    five = [*[planned("infer", True, "output missing", bench=f"b{i}") for i in range(4)],
            planned("infer", True, "output missing", bench="x")]  # fmt: skip
    why = {f"infer--e--b{i}": [f"output missing: results/e/b{i}"] for i in range(4)}
    why["infer--e--x"] = ["infer.max_new_tokens: 8 -> 16"]
    lines = stage_lines(Plan("e", five, [], [], [], preview=SimpleNamespace(why=why)))
    assert lines == [
        "  run    infer--e--x",
        "           infer.max_new_tokens: 8 -> 16",
        "  run    infer x 4: infer--e--b0, infer--e--b1, infer--e--b2, infer--e--b3",
        "           output missing or an input rebuilt (each)",
    ]
    # Snakemake's own reasons (no preview) are listed one by one
    assert stage_lines(Plan("e", five, [], [], []))[:2] == [
        "  run    infer--e--b0",
        "           Snakemake: output missing",
    ]
    # a job with no reason at all lists none
    assert stage_lines(Plan("e", [planned("data", True)], [], [], [])) == ["  run    data--e"]


def test_a_long_run_of_rebuilt_inputs_is_cut() -> None:
    reasons = [f"input s{i}: rebuilt by s{i}" for i in range(5)]
    report = planned("report", True)
    plan = Plan("e", [report], [], [], [], preview=SimpleNamespace(why={"report--e": reasons}))
    assert stage_lines(plan) == [
        "  run    report--e",
        *[f"           input s{i}: rebuilt by s{i}" for i in range(3)],
        "           … and 2 more inputs rebuilt",
    ]
    four = Plan("e", [report], [], [], [], preview=SimpleNamespace(why={"report--e": reasons[:4]}))
    assert stage_lines(four)[1:] == [f"           input s{i}: rebuilt by s{i}" for i in range(4)]


def test_the_plans_rows() -> None:
    found = rows(full_plan())
    assert found[0] == {"job": "data--e", "rule": "data", "runs": False, "why": "",
                        "gpu_hours": None, "wall_hours": None, "memory_gib": None,
                        "devices": None, "on_gpu": None}  # fmt: skip
    assert found[1]["why"] == "output missing"  # Snakemake's reason, no preview's
    assert found[2] == {"job": "grpo--e", "rule": "grpo", "runs": True,
                        "why": "grpo.learning_rate: 1e-06 -> 2e-06", "gpu_hours": 3.0,
                        "wall_hours": 1.5, "memory_gib": 2.0, "devices": 2,
                        "on_gpu": True}  # fmt: skip
    sft_infer = found[-1]
    assert sft_infer["job"] == "infer--e--sft--b0"
    assert (sft_infer["devices"], sft_infer["on_gpu"], sft_infer["gpu_hours"]) == (1, False, None)
    reasons = {"grpo--e": ["a", "b"]}
    joined = rows(full_plan(preview=SimpleNamespace(why=reasons), estimate=None))
    assert joined[2]["why"] == "a; b"
    assert joined[2]["gpu_hours"] is None


def test_lists_of_several_are_joined_with_commas() -> None:
    plan = full_plan(
        downloads=[
            Download("dataset", "u", "o/u@?", None, "UNPINNED: run `vlrl pin u` online first"),
            Download("dataset", "v", "local data/v", None, "USER-PROVIDED, missing: put it"),
        ],
        servers=[Server("score.judge", "a"), Server("grpo.trust.reward_model", "b")],
        preview=SimpleNamespace(why=WHY, snakemake_only=["sft--e", "grpo--e"],
                                unknown=["infer--e--sft--b0", "data--e"]),
    )  # fmt: skip
    text = summary(plan)
    assert text[1] == "  downloads: 2 to fetch; BLOCKED: u, v (see Downloads)"
    assert text[3] == "  servers: score.judge, grpo.trust.reward_model (see Servers)"
    agreement = render(plan).splitlines()
    assert any(line.startswith("  `dvc repro` skips sft--e, grpo--e: ") for line in agreement)
    assert any(
        line.startswith("  whether `dvc repro` runs infer--e--sft--b0, data--e is not known")
        for line in agreement
    )


def test_only_rebuilt_inputs_are_cut() -> None:
    own = ["input results/e/data changed", "config grpo.beta: 0.1 → 0.2"]
    rebuilt = [f"input s{i}: rebuilt by s{i}" for i in range(5)]
    plan = Plan("e", [planned("report", True)], [], [], [],
                preview=SimpleNamespace(why={"report--e": [*own, *rebuilt]}))  # fmt: skip
    assert stage_lines(plan)[1:] == [
        f"           {reason}" for reason in [*own, *rebuilt[:3], "… and 2 more inputs rebuilt"]
    ]


def test_the_time_of_a_rule_with_several_jobs() -> None:
    jobs = [planned("infer", True, bench=f"b{i}") for i in range(2)] + [planned("sft", True)]
    measured = {"infer--e--b0": 600.0, "infer--e--b1": 300.0, "sft--e": 60.0}
    assert measured_line(Plan("e", jobs, [], [], [], measured=measured)) == (
        "time: 16.0 min one after another, as last measured here for 3 of the 3 jobs to run "
        "(infer x 2 15.0, sft 1.0 min; logs/timings/)"
    )


def test_rows_without_a_preview() -> None:
    plan = Plan("e", [planned("sft", True, "output missing")], [], [], [])
    assert rows(plan)[0]["why"] == "output missing"
