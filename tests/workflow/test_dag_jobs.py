"""vlrl.workflow.dag on a small Snakefile of its own, in the test process: every field of each
job, the order of the jobs (rule, first wildcard, then topological), the cores and config
passed to Snakemake, the dry run's decisions, and the errors, with the working directory
restored each time."""

from __future__ import annotations

import base64
import json
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.core.errors import ConfigError
from vlrl.workflow import dag
from vlrl.workflow.dag import Job, Planned, dag_jobs, planned_jobs

SNAKEFILE = """\
TARGETS = ["out/b_1_z.txt", "out/b_1_a.txt", "out/b_2_z.txt", "out/b_1_y.txt", "out/c"]
if config.get("three"):
    TARGETS.append("out/b_3_z.txt")

wildcard_constraints:
    x=r"\\d+",


rule all:
    input:
        TARGETS,


rule a:
    output:
        "out/a_{x}.txt",
    log:
        "logs/a_{x}.log",
    params:
        config={"f.yaml": {"s": 1}},
        word="hi",
    resources:
        mem_mb=100,
    threads: 4
    benchmark:
        "bench/a_{x}.tsv"
    shell:
        "echo {wildcards.x} > {output}"


rule b:
    input:
        lambda wc: [f"out/a_{wc.x}.txt"] if wc.s == "a" else [],
    output:
        "out/b_{x}_{s}.txt",
    shell:
        "touch {output}"


rule c:
    output:
        directory("out/c"),
    shell:
        "mkdir -p {output}"
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of one Snakefile; the working directory elsewhere."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "Snakefile").write_text(SNAKEFILE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return project


def _plain(job: Job) -> Job:
    """``job`` without the machine's temporary folder among its resources."""
    return Job(
        **{**job.__dict__, "resources": {k: v for k, v in job.resources.items() if k != "tmpdir"}}
    )


def _b(x: str, s: str, inputs: list[str]) -> Job:
    return Job(
        rule="b",
        wildcards={"x": x, "s": s},
        input=inputs,
        output=[f"out/b_{x}_{s}.txt"],
        log=[],
        params={},
        shellcmd=f"touch out/b_{x}_{s}.txt",
        directories=frozenset(),
        resources={"_nodes": 1, "_cores": 1},
    )


def test_every_job_with_every_field_in_rule_then_first_wildcard_then_dag_order(
    root: Path,
) -> None:
    jobs = [_plain(job) for job in dag_jobs(root=root, cores=2)]
    assert jobs == [
        Job(
            rule="all",
            wildcards={},
            input=["out/b_1_z.txt", "out/b_1_a.txt", "out/b_2_z.txt", "out/b_1_y.txt", "out/c"],
            output=[],
            log=[],
            params={},
            shellcmd="",
            directories=frozenset(),
            resources={"_nodes": 1, "_cores": 1},
            benchmark=None,
        ),
        Job(
            rule="a",
            wildcards={"x": "1"},
            input=[],
            output=["out/a_1.txt"],
            log=["logs/a_1.log"],
            params={"config": {"f.yaml": {"s": 1}}, "word": "hi"},
            shellcmd="echo 1 > out/a_1.txt",
            directories=frozenset(),
            resources={"_nodes": 1, "mem_mb": 100, "mem": "100 MB", "mem_mib": 96, "_cores": 2},
            benchmark="bench/a_1.tsv",
        ),
        # x=1 first; within it, the jobs with no input (y before z) before the one after a_1
        _b("1", "y", []),
        _b("1", "z", []),
        _b("1", "a", ["out/a_1.txt"]),
        _b("2", "z", []),
        Job(
            rule="c",
            wildcards={},
            input=[],
            output=["out/c"],
            log=[],
            params={},
            shellcmd="mkdir -p out/c",
            directories=frozenset({"out/c"}),
            resources={"_nodes": 1, "_cores": 1},
            benchmark=None,
        ),
    ]
    assert Path.cwd() == root.parent / "elsewhere"


def test_cores_cap_the_threads_and_none_leaves_them(root: Path) -> None:
    def cores_of_a(**kwargs) -> list[int]:
        return [j.resources["_cores"] for j in dag_jobs(root=root, **kwargs) if j.rule == "a"]

    assert cores_of_a() == [1]
    assert cores_of_a(cores=2) == [2]
    assert cores_of_a(cores=None) == [4]


def test_the_config_reaches_the_snakefile(root: Path) -> None:
    jobs = dag_jobs(config={"three": True}, root=root)
    assert [j.wildcards for j in jobs if j.rule == "b"][-1] == {"x": "3", "s": "z"}
    assert len(jobs) == 8


def test_targets_select_part_of_the_dag(root: Path) -> None:
    jobs = dag_jobs(["out/b_1_a.txt"], root=root)
    assert [(j.rule, j.wildcards) for j in jobs] == [
        ("a", {"x": "1"}),
        ("b", {"x": "1", "s": "a"}),
    ]


def test_the_root_defaults_to_the_projects(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(root))
    assert [j.rule for j in dag_jobs(["out/c"])] == ["c"]


def test_a_relative_root_is_from_the_working_directory(root: Path) -> None:
    assert [j.rule for j in dag_jobs(["out/c"], root=Path("../project"))] == ["c"]


def test_the_dry_run_says_which_jobs_run_and_why(root: Path) -> None:
    out = root / "out"
    out.mkdir()
    for name, when in (("a_1.txt", 1000), ("b_1_a.txt", 2000), ("b_1_y.txt", 2000)):
        (out / name).write_text("x")
        os.utime(out / name, (when, when))
    (out / "b_1_z.txt").write_text("x")
    os.utime(out / "b_1_z.txt", (500, 500))
    planned = {
        (p.job.rule, tuple(p.job.wildcards.values())): p for p in planned_jobs(["all"], root=root)
    }
    assert planned[("a", ("1",))] == Planned(planned[("a", ("1",))].job, False, "", frozenset())
    assert planned[("b", ("1", "a"))].needed is False
    assert planned[("b", ("1", "y"))].needed is False
    assert planned[("b", ("2", "z"))].needed is True
    assert planned[("b", ("2", "z"))].reason == "Missing output files: out/b_2_z.txt"
    assert planned[("c", ())].reason == "Missing output files: out/c"

    os.utime(out / "a_1.txt", (3000, 3000))  # newer than b_1_a.txt, made from it
    again = {
        (p.job.rule, tuple(p.job.wildcards.values())): p for p in planned_jobs(["all"], root=root)
    }
    updated = again[("b", ("1", "a"))]
    assert (updated.needed, updated.reason) == (True, "Updated input files: out/a_1.txt")
    assert updated.updated == frozenset({"out/a_1.txt"})
    assert Path.cwd() == root.parent / "elsewhere"


def test_dag_jobs_ignore_what_exists(root: Path) -> None:
    (root / "out").mkdir()
    (root / "out" / "a_1.txt").write_text("x")
    assert [j.rule for j in dag_jobs(["out/a_1.txt"], root=root)] == ["a"]
    assert [p.needed for p in planned_jobs(["out/a_1.txt"], root=root)] == [False]


def test_planned_jobs_take_one_core(root: Path) -> None:
    (planned,) = planned_jobs(["out/a_1.txt"], root=root)
    assert planned.job.resources["_cores"] == 1  # the rule asks for 4 threads


CHECKPOINT = """\
def parts(wildcards):
    folder = checkpoints.split.get().output[0]
    return expand("out/part_{name}.txt", name=sorted(glob_wildcards(f"{folder}/{{name}}.txt").name))


rule all:
    input:
        parts,


checkpoint split:
    output:
        directory("out/split"),
    shell:
        "mkdir -p {output} && touch {output}/p1.txt {output}/p2.txt"


rule part:
    input:
        "out/split/{name}.txt",
    output:
        "out/part_{name}.txt",
    shell:
        "cp {input} {output}"
"""


def test_the_dag_does_not_depend_on_a_checkpoints_output(root: Path) -> None:
    """What exists changes the dry run's DAG after a checkpoint, not dag_jobs'."""
    (root / "Snakefile").write_text(CHECKPOINT)
    assert [j.rule for j in dag_jobs(root=root)] == ["all", "split"]
    split = root / "out" / "split"
    split.mkdir(parents=True)
    for name in ("p1", "p2"):
        (split / f"{name}.txt").write_text("x")
    assert [j.rule for j in dag_jobs(root=root)] == ["all", "split"]
    assert [(p.job.rule, p.job.wildcards, p.needed) for p in planned_jobs(["all"], root=root)] == [
        ("all", {}, True),
        ("part", {"name": "p1"}, True),
        ("part", {"name": "p2"}, True),
    ]


def _record(root: Path, kind: str, output: str, record: dict) -> None:
    """A record of Snakemake's file persistence (.snakemake/<kind>/<urlsafe base64 of the
    output>), as a run writes it."""
    key = base64.urlsafe_b64encode(output.encode()).decode()
    folder = root / ".snakemake" / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / key).write_text(json.dumps(record))


def test_outputs_a_killed_run_left_incomplete_do_not_stop_the_dry_run(root: Path) -> None:
    (root / "out").mkdir()
    (root / "out" / "a_1.txt").write_text("x")
    _record(root, "incomplete", "out/a_1.txt", {"external_jobid": None})
    (planned,) = planned_jobs(["out/a_1.txt"], root=root)
    assert (planned.job.rule, planned.needed) == ("a", False)


def test_only_file_times_make_a_job_rerun(root: Path) -> None:
    """As profiles/default/config.yaml: not the inputs, code or params Snakemake recorded."""
    (root / "out").mkdir()
    for name, when in (("a_1.txt", 1000), ("b_1_a.txt", 2000)):
        (root / "out" / name).write_text("x")
        os.utime(root / "out" / name, (when, when))
    _record(
        root,
        "metadata",
        "out/b_1_a.txt",
        {"rule": "b", "input": ["out/another.txt"], "record_format_version": 6},
    )
    planned = planned_jobs(["out/b_1_a.txt"], root=root)
    assert [(p.job.rule, p.needed) for p in planned] == [("a", False), ("b", False)]


def test_no_log_file_is_written(root: Path) -> None:
    dag_jobs(root=root)
    planned_jobs(["all"], root=root)
    assert list(root.rglob("*.snakemake.log")) == []


def test_no_snakefile_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        dag_jobs(root=tmp_path)
    assert str(info.value) == (
        f"{tmp_path.resolve() / 'Snakefile'}: no Snakefile; run from the project root or set "
        "VLRL_ROOT"
    )


def test_a_dag_snakemake_cannot_build_is_a_config_error_with_its_message(root: Path) -> None:
    with pytest.raises(ConfigError) as info:
        dag_jobs(["nope"], root=root)
    assert str(info.value).startswith(
        "Snakemake could not build the DAG for ['nope']: No rule to produce nope"
    )
    assert info.value.__cause__ is not None
    assert Path.cwd() == root.parent / "elsewhere"


def test_a_config_error_of_the_snakefile_is_raised_as_it_is(root: Path) -> None:
    (root / "Snakefile").write_text(
        'from vlrl.core.errors import ConfigError\nraise ConfigError("x.yaml: seed: bad")\n'
    )
    with pytest.raises(ConfigError) as info:
        dag_jobs(root=root)
    assert str(info.value) == "x.yaml: seed: bad"
    assert Path.cwd() == root.parent / "elsewhere"


def test_building_the_dag_prints_nothing(root: Path, capsys: pytest.CaptureFixture) -> None:
    dag_jobs(root=root)
    planned_jobs(["all"], root=root)
    assert capsys.readouterr() == ("", "")


def test_quiet_logging_silences_snakemake_and_restores_its_logger(
    capsys: pytest.CaptureFixture,
) -> None:
    logger = logging.getLogger("snakemake")
    before = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = True
    try:
        with dag._quiet_logging():
            assert (logger.level, logger.propagate) == (logging.ERROR, False)
            print("chatter")
        assert (logger.level, logger.propagate) == (logging.INFO, True)
        assert capsys.readouterr().out == ""
        with pytest.raises(RuntimeError), dag._quiet_logging():
            raise RuntimeError
        assert (logger.level, logger.propagate) == (logging.INFO, True)
    finally:
        logger.setLevel(before[0])
        logger.propagate = before[1]


# -------------------------------------------------------------------- on stand-in jobs
class _Stand(SimpleNamespace):
    __hash__ = object.__hash__  # in a set, as toposorted's levels


def _job(rule: str, **wildcards: str) -> SimpleNamespace:
    return _Stand(rule=SimpleNamespace(name=rule), wildcards_dict=wildcards)


def test_first_is_the_first_wildcards_value_or_empty() -> None:
    assert dag._first(_job("r", exp="e", checkpoint="c")) == "e"
    assert dag._first(_job("r")) == ""
    assert dag._first(_job("r", n=3)) == "3"


def test_a_level_is_ordered_by_rule_then_wildcards_by_name() -> None:
    level = {
        _job("score", exp="b", bench="x"),
        _job("infer", exp="b", bench="y"),
        _job("infer", exp="a", bench="z"),
        _job("infer", exp="a", bench="y"),
    }
    ordered = dag._by_wildcards(level)
    # the wildcards sorted by name: bench before exp
    assert [(j.rule.name, j.wildcards_dict["exp"], j.wildcards_dict["bench"]) for j in ordered] == [
        ("infer", "a", "y"),
        ("infer", "b", "y"),
        ("infer", "a", "z"),
        ("score", "b", "x"),
    ]


class _File(str):
    def __new__(cls, name: str, is_directory: bool = False) -> _File:
        file = super().__new__(cls, name)
        file.is_directory = is_directory
        return file


class _Items(dict):
    """Snakemake's Namedlist: ``items()`` gives the named entries."""


def test_a_job_is_read_as_text() -> None:
    job = SimpleNamespace(
        rule=SimpleNamespace(name="r"),
        wildcards_dict={"exp": "e", "n": 2},
        input=[_File("in.txt"), Path("p/in2")],
        output=[_File("out/dir", True), _File("out/file.txt")],
        log=[_File("log.txt")],
        params=_Items(config={"f": {"k": 1}}),
        shellcmd=None,
        resources=_Items(mem_mb=5, _cores=2),
        benchmark=_File("bench.tsv"),
    )
    assert dag._job(job) == Job(
        rule="r",
        wildcards={"exp": "e", "n": "2"},
        input=["in.txt", "p/in2"],
        output=["out/dir", "out/file.txt"],
        log=["log.txt"],
        params={"config": {"f": {"k": 1}}},
        shellcmd="",
        directories=frozenset({"out/dir"}),
        resources={"mem_mb": 5, "_cores": 2},
        benchmark="bench.tsv",
    )
    assert type(dag._job(job).benchmark) is str
    assert dag._job(SimpleNamespace(**{**job.__dict__, "benchmark": None})).benchmark is None
    assert dag._job(SimpleNamespace(**{**job.__dict__, "shellcmd": "run"})).shellcmd == "run"
