"""``make mutate``: mutation testing of the modules where a silent bug changes a published number.

mutmut (pinned in ``envs/main.in``) plants one small bug at a time (``>=`` → ``>``, ``0.5`` →
``1.5``, a dropped argument…) in the target modules and runs the tests that cover the mutated
function; a mutant the tests do not notice *survives*. The score per module is the share of
mutants killed, not counting the ones listed as equivalent in ``mutation/equivalent/*.toml``
(mutants that cannot change behaviour, each with its reason; one file per module).

mutmut names a mutant by the module path it mutated relative to where it runs, and only strips
``src/``; the package lives in ``workflow_scripts/``, so each target group runs in a scratch
workspace, ``.mutate/<group>/`` (ignored by git), holding ``src/vlrl`` (a copy of the package),
``tests`` (a link) and a ``pyproject.toml`` written here. mutmut itself copies both into
``mutants/`` there and runs the tests in it, beside links to the checkout's configuration.

    python mutation/run.py                 # everything (about an hour on 2 cores)
    python mutation/run.py rewards         # one target group
    python mutation/run.py --report        # print the last run's scores and survivors again
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = ROOT / ".mutate"
EQUIVALENT = ROOT / "mutation" / "equivalent"

# Target groups: what is mutated (globs under the package) and the tests that may kill it. mutmut
# runs, for each mutant, only the selected tests that executed the mutated function.
TARGETS: dict[str, list[str]] = {
    "rewards": ["vlrl/rewards/*"],
    "scoring": ["vlrl/scoring/*"],
    "config": ["vlrl/config/*"],
    "stage_deps": ["vlrl/workflow/stage_deps.py"],
    "checkpoints": ["vlrl/cluster/checkpoints.py"],
    "preemption": ["vlrl/cluster/preemption.py", "vlrl/cluster/timelimit.py"],
    "distributed": [
        "vlrl/cluster/distributed.py",
        "vlrl/cluster/rank_exit.py",
        "vlrl/cluster/llamafactory_train.py",
        "vlrl/cluster/container.py",
    ],
    "sharing": ["vlrl/sharing.py"],
    "cores": ["vlrl/workflow/cores.py"],
    "server_gpus": ["vlrl/serving/gpus.py"],
    "launch": ["vlrl/cluster/launch.py", "vlrl/cluster/relay.py", "vlrl/cluster/threads.py"],
    "workflow": [
        f"vlrl/workflow/{name}.py" for name in ("preview", "handover", "resolve", "dvc_export")
    ],
    "plan": [f"vlrl/workflow/{name}.py" for name in ("plan", "plan_text", "cost", "cost_model")],
    "endpoints": ["vlrl/endpoints/*"],
    "items": ["vlrl/items/*"],
    "serving": [
        f"vlrl/serving/{name}.py" for name in ("commands", "servers", "served_models", "trl_vllm")
    ],
    "data": ["vlrl/data/convert.py", "vlrl/data/validate.py", "vlrl/data/formats/*"],
    "report": ["vlrl/reporting/*"],
    "stages": ["vlrl/stages/*"],
    "algorithms": ["vlrl/algorithms/*"],
    "generation": ["vlrl/generation/*"],
    "cli": ["vlrl/cli/*"],
    "core": [
        "vlrl/core/*",
        "vlrl/hub.py",
        "vlrl/git_source.py",
        "vlrl/benchmarks.py",
        "vlrl/__init__.py",
    ],
    "workflow_tools": [
        f"vlrl/workflow/{name}.py"
        for name in (
            "check",
            "compare",
            "dag",
            "pin",
            "reads",
            "rescoring",
            "show",
            "slurm_polling",
            "slurm_preempted",
        )
    ],
}
#: Modules in no group, and why (``tests/test_mutation.py`` checks that every other module of the
#: package is in one). A package's ``__init__.py`` that holds only its docstring has nothing to
#: mutate and needs no entry.
NOT_MUTATED: dict[str, str] = {
    "vlrl/data/shapes.py": "data generation: the synthetic shapes, checked byte for byte by the "
    "determinism and pipeline tests (a mutant changes every hash downstream)",
    "vlrl/models/tiny.py": "data generation: the tiny model built from a seed, checked as the "
    "shapes are",
}
TESTS: dict[str, list[str]] = {
    "rewards": ["tests/rewards"],
    "scoring": [
        "tests/scoring",
        "tests/data/formats",
        "tests/test_benchmarks.py",
        "tests/test_benchmark_adapters.py",
        "tests/reporting/test_render.py",
    ],
    "config": [
        "tests/test_config.py",
        "tests/test_config_extends.py",
        "tests/test_config_bounds.py",
        "tests/test_config_errors.py",
        "tests/test_config_merging.py",
        "tests/test_config_keys.py",
        "tests/test_config_reads.py",
    ],
    "stage_deps": ["tests/workflow/test_stage_deps.py", "tests/workflow/test_stage_deps_edges.py"],
    "checkpoints": ["tests/cluster/test_checkpoints.py"],
    "preemption": ["tests/cluster/test_preemption.py", "tests/cluster/test_timelimit.py"],
    "distributed": [
        "tests/cluster/test_distributed.py",
        "tests/cluster/test_container.py",
        "tests/cluster/test_rank_exit.py",
        "tests/cluster/test_llamafactory_train.py",
    ],
    "sharing": ["tests/test_sharing.py"],
    "cores": ["tests/workflow/test_cores.py"],
    "server_gpus": ["tests/serving/test_gpus.py", "tests/algorithms/test_grpo_servers.py"],
    "launch": [
        "tests/cluster/test_launch.py",
        "tests/cluster/test_relay.py",
        "tests/cluster/test_threads.py",
    ],
    "workflow": [
        "tests/workflow/test_preview.py",
        "tests/workflow/test_resolve.py",
        "tests/workflow/test_dvc_export.py",
        "tests/workflow/test_handover_records.py",
    ],
    "plan": [
        "tests/workflow/test_plan.py",
        "tests/workflow/test_plan_text.py",
        "tests/workflow/test_cost.py",
        "tests/workflow/test_cost_figures.py",
        "tests/workflow/test_cost_model.py",
        "tests/workflow/test_paper_recipes.py",
    ],
    "endpoints": [
        "tests/endpoints",
        "tests/test_endpoints.py",
        "tests/generation/test_openai.py",
        "tests/scoring/test_judge_client.py",
        "tests/serving/test_server_identity.py",
    ],
    "items": [
        "tests/items",
        "tests/data/formats",
        "tests/test_benchmark_adapters.py",
        "tests/scoring",
        "tests/stages/test_score.py",
        "tests/stages/test_data.py",
        "tests/reporting/test_gallery.py",
        "tests/rewards/test_vlm_r1.py",
        "tests/algorithms/test_trl_setup.py",
    ],
    "serving": [
        "tests/serving",
        "tests/scoring/test_judge.py",
        "tests/scoring/test_judging.py",
        "tests/endpoints/test_client.py",
        "tests/algorithms/test_trl_setup.py",
    ],
    "data": [
        "tests/data",
        "tests/stages/test_data.py",
        "tests/stages/test_sft.py",
        "tests/items/test_prompts.py",
        "tests/items/test_prompts_released.py",
        "tests/test_benchmark_adapters.py",
    ],
    "report": ["tests/reporting", "tests/stages/test_report.py"],
    "stages": [
        "tests/stages",
        "tests/algorithms/test_recipes.py",
        "tests/algorithms/test_schedule.py",
        "tests/workflow/test_cost.py",
    ],
    "algorithms": ["tests/algorithms"],
    "generation": ["tests/generation", "tests/stages/test_infer.py"],
    "cli": ["tests/cli"],
    "core": [
        "tests/core",
        "tests/test_hub.py",
        "tests/test_git_source.py",
        "tests/test_benchmarks.py",
        "tests/test_benchmark_adapters.py",
        "tests/stages/test_download.py",
    ],
    "workflow_tools": [
        "tests/workflow/test_check.py",
        "tests/workflow/test_pin.py",
        "tests/workflow/test_show.py",
        "tests/workflow/test_slurm_preempted.py",
        "tests/workflow/test_plan.py",
        "tests/workflow/test_check_rules.py",
        "tests/workflow/test_compare_args.py",
        "tests/workflow/test_dag_jobs.py",
        "tests/workflow/test_pin_units.py",
        "tests/workflow/test_reads.py",
        "tests/workflow/test_rescoring_rows.py",
        "tests/workflow/test_show_origins.py",
        "tests/workflow/test_slurm_preempted_wrap.py",
        "tests/workflow/test_slurm_polling.py",
    ],
}
# Pipeline tests (training, whole DAGs) are too slow to run per mutant; unit tests cover these
# modules.
PYTEST_ARGS = ["-p", "no:cacheprovider", "-m", "not slow", "-o", "addopts=", "-q"]

PER_TEST_TIMEOUT_S = 60

# Checkout files the tests read, linked into the workspace.
LINKED = ["params.yaml", "Snakefile", "config", "rules", "envs", "profiles", "dvc.yaml", "dvc.lock"]
# and the side environments tests run code in: LLaMA-Factory's (the SFT frames), sympy's LaTeX
# parser's (SATORI's OlympiadBench judge)
LINKED += [".venv-sft", ".venv-latex"]

# mutmut's statuses of a mutant the tests caught: a failing test, a timeout, or a worker the
# kernel killed ("segfault": SIGSEGV or SIGKILL, e.g. the OOM killer's for a mutant looping while
# it fills a list), which ended its tests as a timeout does.
CAUGHT = ("killed", "timeout", "segfault")

STATUS_LINE = re.compile(r"^\s+(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")

app = typer.Typer(add_completion=False)


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def workspace_of(group: str, part: list[str] | None = None) -> Path:
    """``.mutate/<group>/``, or for a part of the group ``.mutate/<group>--<its files' stems>/``.

    >>> workspace_of("stages", ["vlrl/stages/infer.py"]).name
    'stages--infer'
    """
    if not part:
        return WORKSPACE / group
    return WORKSPACE / f"{group}--{'-'.join(Path(p).stem for p in part)}"


def check_part(group: str, part: list[str]) -> None:
    """Each file of ``part`` must be one of the group's (its globs, matched as mutmut does)."""
    outside = [p for p in part if not any(fnmatch.fnmatch(p, g) for g in TARGETS[group])]
    if outside:
        raise typer.BadParameter(f"--part {outside} not in group {group}'s {TARGETS[group]}")


def prepare(
    group: str, fresh: bool, part: list[str] | None = None, tests: list[str] | None = None
) -> Path:
    """Write the group's workspace (:func:`workspace_of`): the package copy, the tests link and
    mutmut's configuration; ``part`` (files of the group) and ``tests`` narrow what is mutated
    and what runs against it."""
    workspace = workspace_of(group, part)
    selection = tests or TESTS[group]
    if fresh and workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    package = workspace / "src" / "vlrl"
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(
        ROOT / "workflow_scripts" / "vlrl", package, ignore=shutil.ignore_patterns("__pycache__")
    )
    tests = workspace / "tests"
    if not tests.exists():
        tests.symlink_to(ROOT / "tests")
    # mutmut runs the tests in mutants/, which must look like a checkout: the files that make it
    # the project root (vlrl.core.paths.ROOT_MARKERS) and the configuration, folders linked and
    # files copied;
    # workflow_scripts/ as a link to the mutated package, so tests that find the source there read
    # the mutants.
    mutants = workspace / "mutants"
    mutants.mkdir(exist_ok=True)
    for name, target in [*((n, ROOT / n) for n in LINKED), ("workflow_scripts", Path("src"))]:
        link = mutants / name
        if target.is_file():
            # a copy, not a link: a mutant that writes the file (a dvc.yaml, through dvclive)
            # must not write the checkout's
            if link.is_symlink():
                link.unlink()
            shutil.copy2(target, link)
            continue
        if link.is_symlink():
            continue
        if link.is_dir():  # a run's test (under a mutant) wrote there: the link again
            shutil.rmtree(link)
        elif link.exists():
            link.unlink()
        link.symlink_to(target)
    # mutmut puts mutants/ on sys.path: the plugin that empties caches between tests
    shutil.copy2(ROOT / "mutation" / "fresh_caches.py", mutants / "fresh_caches.py")
    only = [f"src/{glob}" for glob in part or TARGETS[group]]
    missing = [path for path in selection if not (ROOT / path).exists()]
    if missing:
        raise typer.BadParameter(f"mutation/run.py TESTS names missing test paths: {missing}")
    (workspace / "pyproject.toml").write_text(
        "# Written by mutation/run.py; edit TARGETS/TESTS there.\n"
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {_toml_list(only)}\n"
        f"pytest_add_cli_args = {_toml_list(PYTEST_ARGS)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(selection)}\n"
        "use_git_change_detection = false\n"
        "[tool.pytest.ini_options]\n"
        'markers = ["slow", "reproduction", "smoke", "gpu", "network", "model_server", "spawns"]\n'
        'filterwarnings = ["ignore::DeprecationWarning"]\n'
    )
    return workspace


def _mutmut(workspace: Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VLRL_ROOT"}
    # the plugin that empties caches between tests (mutation/fresh_caches.py), copied beside
    env["PYTEST_PLUGINS"] = "fresh_caches"
    # mutmut stops a mutant by CPU time; one that waits on a socket or a lock would hang: a test
    # over PER_TEST_TIMEOUT_S fails (pytest-timeout), which kills the mutant. Environment, not
    # pytest_add_cli_args: mutmut would discard every result when those change.
    # Tests that start a real model server take seconds each, per mutant: the fake endpoint's
    # tests (tests/scoring/test_judge_endpoint.py) cover the same paths.
    # Tests marked spawns run the package in spawned workers: mutmut's trampolines there read its
    # configuration from the working directory, a test's scratch project, and the worker dies
    # before it starts, which leaves a multiprocessing pool waiting for ever (and the stats run
    # ends with exit status 1 and no message, as the generation group's first run did).
    # The thread method: a mutant's test blocked in C code (a lock inherited through mutmut's
    # fork) never runs the signal method's handler, and takes no CPU time either.
    env["PYTEST_ADDOPTS"] = (
        f"--timeout {PER_TEST_TIMEOUT_S} --timeout-method thread "
        "-k 'not model_server and not spawns'"
    )
    # mutmut forks each mutant's run from a process that ran every test once: a thread pool
    # started there (torch's OpenMP one, by the tiny model's tests) is gone in the child, which
    # then waits on it for ever at its first parallel op. One thread: no pool to lose.
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = "1"
    mutmut = Path(sys.executable).with_name("mutmut")
    return subprocess.run(
        [str(mutmut), *args], cwd=workspace, env=env, text=True, capture_output=capture
    )


def statuses(workspace: Path) -> dict[str, str]:
    """Every mutant of a group's last run and its status (killed, survived, no tests…)."""
    out = _mutmut(workspace, "results", "--all", "true", capture=True)
    if out.returncode:
        raise typer.Exit(f"mutmut results failed:\n{out.stderr}")
    return {
        m["name"]: m["status"] for line in out.stdout.splitlines() if (m := STATUS_LINE.match(line))
    }


def equivalent() -> dict[str, str]:
    """Mutants that cannot change behaviour, name → why (``mutation/equivalent/*.toml``: a table
    per mutant, ``["vlrl.m.x_f__mutmut_3"]`` with ``why = "…"``)."""
    found: dict[str, str] = {}
    for path in sorted(EQUIVALENT.glob("*.toml")):
        for name, entry in tomllib.loads(path.read_text()).items():
            if not isinstance(entry, dict) or not str(entry.get("why", "")).strip():
                raise typer.BadParameter(f'{path}: [{name!r}] needs why = "…"')
            found[name] = entry["why"]
    return found


def module_of(mutant: str) -> str:
    """``vlrl.rewards.common.x_f__mutmut_3`` → ``vlrl.rewards.common``."""
    parts = mutant.split(".")
    for i, part in enumerate(parts):
        if part.startswith(("x_", "xǁ")):
            return ".".join(parts[:i])
    return mutant.rpartition(".")[0]


def report(results: dict[str, str], show_survivors: bool = True) -> dict[str, Counter]:
    """Print the score per module and the surviving mutants; returns the counts."""
    known = equivalent()
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors: list[str] = []
    for name, status in sorted(results.items()):
        status = "equivalent" if name in known and status == "survived" else status
        counts[module_of(name)][status] += 1
        if status in ("survived", "no tests"):
            survivors.append(f"{name}: {status}")
    print(f"{'module':42} {'mutants':>7} {'killed':>6} {'surv.':>5} {'untested':>8} "
          f"{'equiv.':>6} {'score':>6}")  # fmt: skip
    total: Counter = Counter()
    for module, c in sorted(counts.items()):
        total.update(c)
        print(_row(module, c))
    print(_row("all", total))
    if show_survivors and survivors:
        print(f"\n{len(survivors)} mutants not killed (see one with "
              "`cd .mutate/GROUP && ../../.venv/bin/mutmut show NAME`):")  # fmt: skip
        print("\n".join(survivors))
    return counts


def _row(module: str, c: Counter) -> str:
    killed = sum(c[status] for status in CAUGHT)
    judged = sum(c.values()) - c["equivalent"] - c["skipped"] - c["not checked"]
    score = f"{100 * killed / judged:5.1f}%" if judged else "  -  "
    return (
        f"{module:42} {sum(c.values()):7d} {killed:6d} {c['survived']:5d} {c['no tests']:8d} "
        f"{c['equivalent']:6d} {score:>6}"
    )


def _last(workspace: Path, keep: Callable[[str], bool], only: list[str] | None) -> list[str]:
    """The last run's mutants whose status ``keep`` accepts, within the ``only`` patterns."""
    return [
        name
        for name, status in statuses(workspace).items()
        if keep(status) and (not only or any(fnmatch.fnmatch(name, p) for p in only))
    ]


def _judge(workspace: Path, max_children: int, names: list[str]) -> None:
    """Run mutmut on ``names`` (all of the workspace's mutants when empty)."""
    run = _mutmut(workspace, "run", "--max-children", str(max_children), *names)
    if run.returncode:
        raise typer.Exit(run.returncode)


@app.command()
def main(
    groups: Annotated[
        list[str] | None, typer.Argument(help=f"target groups (default all): {list(TARGETS)}")
    ] = None,
    report_only: Annotated[
        bool, typer.Option("--report", help="only print the last run's results")
    ] = False,
    fresh: Annotated[
        bool, typer.Option(help="start over (--no-fresh goes on from the last run)")
    ] = True,
    survivors: Annotated[
        bool,
        typer.Option(
            "--survivors",
            help="test again only the last run's mutants not killed (after adding tests)",
        ),
    ] = False,
    max_children: Annotated[int, typer.Option(help="mutants tested at once")] = os.cpu_count() or 2,
    only: Annotated[
        list[str] | None,
        typer.Option(
            help="test only the mutants whose names match this pattern (fnmatch, repeatable: "
            "'vlrl.reporting.blind.*'); with --no-fresh a group is measured a part at a time"
        ),
    ] = None,
    part: Annotated[
        list[str] | None,
        typer.Option(
            help="mutate only this file of the group (repeatable: vlrl/stages/infer.py), in a "
            "workspace of its own (.mutate/<group>--<stem>/); with --tests, a module is "
            "measured with the tests that reach it, in minutes"
        ),
    ] = None,
    tests: Annotated[
        list[str] | None,
        typer.Option(help="run these test paths instead of the group's (repeatable)"),
    ] = None,
) -> None:
    """Run mutmut on the target groups and print the score per module."""
    groups = groups or list(TARGETS)
    unknown = [g for g in groups if g not in TARGETS]
    if unknown:
        raise typer.BadParameter(f"unknown target group(s) {unknown}; known: {list(TARGETS)}")
    if part and len(groups) != 1:
        raise typer.BadParameter("--part names files of one group")
    results: dict[str, str] = {}
    for group in groups:
        if part:
            check_part(group, part)
        workspace = workspace_of(group, part)
        if not report_only:
            again = (
                _last(workspace, lambda status: status not in CAUGHT, only)
                if survivors
                else list(only or [])
            )
            if survivors and not again:
                print(f"{group}: no mutant left to test again")
            else:
                prepare(group, fresh=fresh and not survivors, part=part, tests=tests)
                _judge(workspace, max_children, again)
                # mutmut forgets the results of the mutants whose tests changed (a test added
                # reaches their function): a survivors run judges those again too
                unjudged = _last(workspace, lambda s: s == "not checked", only) if survivors else []
                if unjudged:
                    _judge(workspace, max_children, unjudged)
        if (workspace / "mutants").is_dir():
            results.update(statuses(workspace))
    report(results)


if __name__ == "__main__":
    app()
