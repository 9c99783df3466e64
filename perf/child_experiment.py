"""What a child experiment costs next to its parent: change one thing, rerun one thing.

    .venv/bin/python perf/child_experiment.py                    # the full default and its child
    .venv/bin/python perf/child_experiment.py --shrunk           # the tests' shrunk default

In a throwaway git + DVC copy of this checkout (tests/pipeline/scratch_project.py), times
``dvc repro`` of the parent (``tiny_shapes``) from scratch, then adds the committed child
``tiny_shapes_grpo_lr`` (``extends: tiny_shapes``, only ``grpo.learning_rate`` changed) to
params.yaml, runs ``vlrl dvc-yaml`` and times ``dvc repro`` again: the stages the child runs
(its own GRPO, merge, GRPO inference and scoring, report) and their wall time as a fraction of
the parent's. Prints a markdown table and writes ``<workdir>/child_experiment.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))

from scratch_project import SHRUNK_DEFAULT, Project  # noqa: E402

PARENT, CHILD = "tiny_shapes", "tiny_shapes_grpo_lr"


def timed_repro(project: Project) -> tuple[float, list[str]]:
    started = time.perf_counter()
    log = project("dvc", "repro")
    return time.perf_counter() - started, re.findall(r"Running stage '([^']+)'", log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shrunk", action="store_true", help="the tests' shrunk default")
    parser.add_argument("--workdir", type=Path, help="default: a new directory under /tmp")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="child_experiment_"))
    project = Project(workdir)
    if args.shrunk:
        project.set_values(f"config/experiments/{PARENT}.yaml", SHRUNK_DEFAULT)

    parent_s, parent_stages = timed_repro(project)
    project.set_values("params.yaml", {"experiments": [PARENT, CHILD]}, commit=False)
    project("vlrl", "dvc-yaml")
    child_s, child_stages = timed_repro(project)

    result = {
        "shrunk": args.shrunk,
        "parent": {"seconds": round(parent_s, 1), "stages": parent_stages},
        "child": {"seconds": round(child_s, 1), "stages": child_stages},
        "child_over_parent": round(child_s / parent_s, 3),
    }
    (workdir / "child_experiment.json").write_text(json.dumps(result, indent=2))
    print("| run | stages run | wall |")
    print("|---|---:|---:|")
    print(f"| {PARENT} from scratch | {len(parent_stages)} | {parent_s:.0f} s |")
    print(f"| then {CHILD} | {len(child_stages)} | {child_s:.0f} s |")
    print(f"\nchild / parent: {child_s / parent_s:.2f}; the child ran: {', '.join(child_stages)}")
    print(f"workdir: {workdir}")


if __name__ == "__main__":
    main()
