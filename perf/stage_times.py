"""Per-stage wall and CPU time of an experiment (default: the tiny default), stage by stage.

    .venv/bin/python perf/stage_times.py                       # the whole tiny_shapes DAG
    .venv/bin/python perf/stage_times.py --set sft.num_train_epochs=1 \\
        --set grpo.max_steps=20                                      # a quick probe (~1/6 of it)
    .venv/bin/python perf/stage_times.py --workdir /tmp/st --stages infer,score \\
        --match sft/ --set infer.batch_size=256                      # rerun some jobs of a run

Runs the commands the DAG runs (``vlrl data``, ``base-model``, ``sft``, ``grpo``, ``merge``,
``infer``/``score`` per checkpoint and benchmark, ``report``), one after another as ``dvc repro``
does, in a scratch project: ``--workdir`` (default: a new directory under /tmp) gets copies of
this checkout's ``config/`` and ``params.yaml`` and no ``dvc.yaml`` (so ``--set`` is allowed),
``VLRL_ROOT`` points at it and every stage runs there, so nothing under this checkout's
``results/``, ``resources/`` or ``reports/`` is touched. ``--set`` overrides go to every
experiment stage. ``--stages`` picks stages and ``--match`` jobs (``infer sft/shapes_test``);
the outputs of the others must already be in the workdir.

Each stage's time includes its process start-up (imports of torch, transformers, TRL, and
LLaMA-Factory's own start for ``sft``), which is part of what ``dvc repro`` pays. CPU time is the
user + system time of the stage and every process it waited for (LLaMA-Factory included); on a
shared machine wall time is inflated by other jobs, CPU time much less, and the load average
before and after each stage is recorded so a disturbed row can be spotted. Compare variants as
ratios of runs made back to back.

Prints a markdown table and writes ``<workdir>/stage_times.json``; each stage's output (its log)
is in ``<workdir>/logs/stage_times/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("data", "base_model", "sft", "grpo", "merge", "infer", "score", "report")
# Lines of a stage's log worth keeping next to its time (the stages' own run-time reports).
NOTES = re.compile(r"INFO .*(run times|median step|done in|records in|accuracy|items, backend)")


def vlrl_command() -> list[str]:
    local = ROOT / ".venv" / "bin" / "vlrl"
    if local.is_file():
        return [str(local)]
    found = shutil.which("vlrl")
    if not found:
        sys.exit("stage_times: no .venv/bin/vlrl and no vlrl on PATH (run `make setup`)")
    return [found]


def prepare(workdir: Path) -> None:
    """Copy config/ and params.yaml into ``workdir`` (kept when already there)."""
    if workdir.resolve() == ROOT:
        sys.exit(
            "stage_times: --workdir must not be this checkout (its outputs would be overwritten)"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / "config").is_dir():
        shutil.copytree(ROOT / "config", workdir / "config")
    if not (workdir / "params.yaml").is_file():
        shutil.copy(ROOT / "params.yaml", workdir / "params.yaml")
    if (workdir / "dvc.yaml").exists():
        sys.exit(f"stage_times: {workdir}/dvc.yaml exists; --set would be refused there")


def jobs(experiment: str, stages: list[str], overrides: list[str]) -> list[tuple[str, list[str]]]:
    """(name, vlrl arguments) for each stage run, in DAG order."""
    from vlrl.config import load_experiment  # reads VLRL_ROOT, set by main()

    cfg = load_experiment(experiment, overrides or None)
    sets = [a for o in overrides for a in ("--set", o)]
    out: list[tuple[str, list[str]]] = []
    for stage in stages:
        if stage == "base_model":
            out.append((stage, ["base-model", cfg.base_model]))
        elif stage in ("infer", "score"):
            for checkpoint in cfg.checkpoints:
                for bench in cfg.benchmarks:
                    out.append(
                        (
                            f"{stage} {checkpoint}/{bench}",
                            [stage, experiment, checkpoint, bench, *sets],
                        )
                    )
        elif (stage == "sft" and not cfg.sft.enabled) or (
            stage in ("grpo", "merge") and not cfg.grpo.enabled
        ):
            continue
        else:
            out.append((stage, [stage, experiment, *sets]))
    return out


def run_stage(name: str, command: list[str], workdir: Path, env: dict[str, str]) -> dict:
    log_path = workdir / "logs" / "stage_times" / (re.sub(r"[^\w.-]+", "_", name) + ".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log_path.open("w") as log:
        rc = subprocess.run(
            command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT
        ).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = log_path.read_text(errors="replace")
    notes = [
        " ".join(line.split("INFO", 1)[1].split())
        for line in text.splitlines()
        if NOTES.search(line)
    ]
    row = {
        "stage": name,
        "command": " ".join(["vlrl", *command[1:]]),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "rc": rc,
        "notes": notes[-3:],
        "log": str(log_path),
    }
    if rc != 0:
        print(text[-3000:], file=sys.stderr)
        sys.exit(f"stage_times: {name} exited with {rc}; log: {log_path}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="tiny_shapes")
    parser.add_argument("--workdir", type=Path, help="scratch project (default: new dir in /tmp)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma list of {STAGES}")
    parser.add_argument(
        "--match", default="", help="run only the jobs whose name matches this regex ('grpo/')"
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        sys.exit(f"stage_times: unknown stages {unknown}; known: {STAGES}")
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="vlrl-stage-times-"))).resolve()
    prepare(workdir)
    env = {
        **os.environ,
        "VLRL_ROOT": str(workdir),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "HF_HUB_OFFLINE": "1",
        "COLUMNS": "400",  # one log record per line (rich wraps at 80 columns off a terminal)
        "VLRL_LLAMAFACTORY_CLI": os.environ.get(
            "VLRL_LLAMAFACTORY_CLI", str(ROOT / ".venv-sft" / "bin" / "llamafactory-cli")
        ),
    }
    os.environ["VLRL_ROOT"] = str(workdir)
    vlrl = vlrl_command()
    if "report" in stages:
        # The report names the base model's resolved params (its provenance), which DVC's first
        # stage writes; here without checking a dvc.yaml (the workdir has none).
        done = subprocess.run(
            [*vlrl, "resolve", "--no-check"], cwd=workdir, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.exit(f"stage_times: vlrl resolve failed:\n{done.stderr[-3000:]}")
    rows = []
    print(f"workdir {workdir}; overrides {args.overrides or 'none'}", flush=True)
    print(
        "| stage | wall s | CPU s | load before/after | notes |\n|---|---|---|---|---|", flush=True
    )
    for name, vlrl_args in jobs(args.experiment, stages, args.overrides):
        if not re.search(args.match, name):
            continue
        row = run_stage(name, [*vlrl, *vlrl_args], workdir, env)
        rows.append(row)
        note = "; ".join(row["notes"])[:160]
        print(
            f"| {name} | {row['wall_s']:.1f} | {row['cpu_s']:.1f} | "
            f"{row['load_before']:.1f}/{row['load_after']:.1f} | {note} |",
            flush=True,
        )
    total_wall = sum(r["wall_s"] for r in rows)
    total_cpu = sum(r["cpu_s"] for r in rows)
    print(f"| **total** | **{total_wall:.1f}** | **{total_cpu:.1f}** | | |")
    result = {
        "experiment": args.experiment,
        "overrides": args.overrides,
        "workdir": str(workdir),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "cpus": os.cpu_count(),
        "stages": rows,
        "total_wall_s": round(total_wall, 2),
        "total_cpu_s": round(total_cpu, 2),
    }
    (workdir / "stage_times.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {workdir / 'stage_times.json'}")


if __name__ == "__main__":
    main()
