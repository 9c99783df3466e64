"""Process start-up with and without installed bytecode (the .pyc files `make setup` writes with
``uv pip install --compile-bytecode``).

    .venv/bin/python perf/startup.py [--repeat 3]

Every stage, tool and training rank is a new Python process that imports large packages (torch,
transformers, Snakemake, DVC, LLaMA-Factory). Without .pyc files, and where the shell forbids
writing them (``PYTHONDONTWRITEBYTECODE=1``), each process compiles every module it imports.
This times the same commands both ways in one run: "compiled" reads the installed .pyc files,
"source" points ``PYTHONPYCACHEPREFIX`` at an empty directory, so nothing is found and nothing
is written (the state of an install without ``--compile-bytecode``). Run it from the project
root after `make setup`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "snakemake -n": [".venv/bin/snakemake", "-n", "--cores", "1", "--quiet"],
    "dvc status": [".venv/bin/dvc", "status"],
    "import torch, transformers, trl": [
        ".venv/bin/python",
        "-c",
        "import torch, transformers, trl",
    ],
    "import llamafactory (sft env)": [
        ".venv-sft/bin/python",
        "-c",
        "from llamafactory.train.tuner import run_exp",
    ],
}


def seconds(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"}
    print(f"{'command':34} {'source (s)':>11} {'compiled (s)':>13} {'ratio':>6}")
    for name, command in COMMANDS.items():
        cold, warm = [], []
        for _ in range(args.repeat):  # interleaved: the machine's load hits both alike
            with tempfile.TemporaryDirectory() as empty:
                cold.append(seconds(command, {**base, "PYTHONPYCACHEPREFIX": empty}))
            warm.append(seconds(command, base))
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"{name:34} {c:11.2f} {w:13.2f} {c / w:6.1f}")


if __name__ == "__main__":
    main()
