"""Step time of each RL algorithm on the tiny model, in one run so they compare as ratios.

    OMP_NUM_THREADS=1 .venv/bin/python perf/algorithm_overhead.py [--steps 6]

Runs the grpo stage from the same tiny model on the same generated shapes data with
``grpo`` (TRL as is), ``self_reward`` (plus Vision-SR1's image-free second pass) and
``trust_grpo`` (plus the thinking reward model, here the tests' fake server of
``tests/fake_openai_server.py`` answering at once), and prints the median ``step_time`` TRL logs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "perf"))
sys.path.insert(0, str(REPO / "tests"))

from fake_openai_server import FakeRewardModel  # noqa: E402
from tiny_project import tiny_project  # noqa: E402

COMMON = [
    "sft.enabled=false",
    "grpo.logging_steps=1",
    "grpo.per_device_train_batch_size=32",
    "grpo.num_generations=8",
    "grpo.max_completion_length=32",
    "grpo.learning_rate=1e-4",
]
ALGORITHMS = {
    "grpo": ["grpo.rewards={common.format: 0.5, common.accuracy: 1.0}"],
    "self_reward": [
        "grpo.algorithm=self_reward",
        "grpo.rewards={vision_sr1.format: 0.1, vision_sr1.accuracy: 0.9, vision_sr1.visual: 1.0}",
    ],
    "trust_grpo": [
        "grpo.algorithm=trust_grpo",
        "grpo.rewards={common.accuracy: 1.0}",
        "grpo.trust={variant: paper, reward_model: {base_url: '%s', model: m, concurrency: 16}}",
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    from vlrl.config import load_experiment
    from vlrl.core import paths
    from vlrl.stages import grpo

    work = tiny_project("vlrl-bench-")
    times: dict[str, float] = {}
    with FakeRewardModel() as server:
        for name, overrides in ALGORITHMS.items():
            overrides = [o.replace("%s", server.base_url) for o in overrides]
            cfg = load_experiment(
                "tiny_shapes", [*COMMON, f"grpo.max_steps={args.steps}", *overrides]
            )
            shutil.rmtree(paths.grpo_dir("tiny_shapes"), ignore_errors=True)
            # the step times TRL logged (the stage keeps them out of its output)
            steps = grpo.run("tiny_shapes", cfg)["step_time"]
            times[name] = statistics.median(steps[1:] or steps)  # the first step warms up
    print(f"\n{'algorithm':<12} {'median step (s)':>16} {'vs grpo':>8}")
    for name, seconds in times.items():
        print(f"{name:<12} {seconds:>16.3f} {seconds / times['grpo']:>7.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
