"""vlrl plan's measured time: what Snakemake's timings (logs/timings/) say the jobs took here."""

from __future__ import annotations

from pathlib import Path

from vlrl.workflow.dag import Job, Planned
from vlrl.workflow.plan import Plan, measured_seconds
from vlrl.workflow.plan_text import measured_line, summary

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def planned(rule: str, needed: bool, benchmark: str | None, **wildcards: str) -> Planned:
    job = Job(rule, wildcards, [], [], [], {}, "", frozenset(), benchmark=benchmark)
    return Planned(job, needed, "output missing" if needed else "")


def timing(project: Path, relative: str, seconds: float) -> str:
    path = project / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:00\t1\t1\t1\t1\t0\t0\t50\t{seconds}\n")
    return relative


def test_the_plan_says_what_the_jobs_took_when_snakemake_last_ran_them(project: Path) -> None:
    sft = timing(project, "logs/timings/sft/e.tsv", 120.0)
    infer = [timing(project, f"logs/timings/infer/e/{c}/b.tsv", 30.0) for c in ("base", "sft")]
    (project / "logs/timings/grpo").mkdir(parents=True)
    (project / "logs/timings/grpo/e.tsv").write_text("not a timing\n")
    jobs = [
        planned("data", True, None, exp="e"),
        planned("sft", True, sft, exp="e"),
        planned("grpo", True, "logs/timings/grpo/e.tsv", exp="e"),
        planned("infer", True, infer[0], exp="e", checkpoint="base", bench="b"),
        planned("infer", False, infer[1], exp="e", checkpoint="sft", bench="b"),
        planned("infer", True, "logs/timings/infer/e/grpo/b.tsv", exp="e", checkpoint="grpo",
                bench="b"),
    ]  # fmt: skip
    measured = measured_seconds(jobs)
    # untimed rule, unreadable file and no file yet are left out
    assert measured == {"sft--e": 120.0, "infer--e--base--b": 30.0, "infer--e--sft--b": 30.0}

    plan = Plan("e", jobs, [], [], [], measured=measured)
    line = measured_line(plan)
    # the jobs to run only: the cached SFT-model inference is not counted
    assert line == (
        "time: 2.5 min one after another, as last measured here for 2 of the 5 jobs to run "
        "(sft 2.0, infer 0.5 min; logs/timings/)"
    )
    assert f"  {line}" in summary(plan)
    cached = Plan("e", [j for j in jobs if not j.needed], [], [], [], measured=measured)
    assert "for 1 of the 1 jobs of the last run (infer 0.5 min" in measured_line(cached)
    assert measured_line(Plan("e", jobs, [], [], [])).startswith("time: not measured here yet")
