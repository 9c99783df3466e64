"""Reward throughput on 10,000 mixed completions (format + IoU + math-verify + ROUGE).

    .venv/bin/python perf/reward_throughput.py [--n 10000] [--seed 0]

Prints completions per second for each reward and for the mix, measured in one run so the
numbers compare as ratios (these machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import random
import time

from vlrl.rewards import REGISTRY


def make_batch(n: int, seed: int) -> dict[str, list]:
    """Completions of four kinds (a quarter each): MC letters, numbers, boxes, captions."""
    rng = random.Random(seed)
    completions, answers, types, boxes = [], [], [], []
    words = ["red", "green", "blue", "circle", "square", "triangle", "a", "and", "small"]
    for i in range(n):
        kind = i % 4
        think = "<think>" + " ".join(rng.choices(words, k=rng.randint(5, 30))) + "</think>"
        if kind == 0:
            gold = rng.choice("ABCD")
            answers.append(gold), types.append("multiple_choice"), boxes.append([])
            completions.append(f"{think}<answer>{rng.choice('ABCD')}</answer>")
        elif kind == 1:
            gold = str(rng.randint(0, 50))
            answers.append(gold), types.append("numerical"), boxes.append([])
            pred = rng.choice([gold, str(rng.randint(0, 50)), f"\\frac{{{gold}}}{{1}}"])
            completions.append(f"{think}<answer> {pred} </answer>")
        elif kind == 2:
            x, y = rng.randint(0, 60), rng.randint(0, 60)
            box = [x, y, x + rng.randint(10, 40), y + rng.randint(10, 40)]
            answers.append(str(box)), types.append("grounding"), boxes.append([box])
            jitter = [v + rng.randint(-5, 5) for v in box]
            completions.append(f"{think}<answer>{jitter}</answer>")
        else:
            gold = " ".join(rng.choices(words, k=6))
            answers.append(gold), types.append("free_form"), boxes.append([])
            completions.append(f"{think}<answer>{' '.join(rng.choices(words, k=6))}</answer>")
    return {"completions": completions, "answer": answers, "problem_type": types, "boxes": boxes}


def timed(name: str, batch: dict[str, list]) -> float:
    start = time.perf_counter()
    values = REGISTRY[name](**batch)
    seconds = time.perf_counter() - start
    assert len(values) == len(batch["completions"])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    batch = make_batch(args.n, args.seed)
    rows = []
    for name in ("common.format", "common.accuracy", "vlm_r1.format", "vlm_r1.accuracy"):
        rows.append((name, timed(name, batch)))
    mixed = sum(s for _, s in rows)
    print(f"{args.n} mixed completions (MC / number / box / caption, a quarter each)")
    print(f"{'reward':<20} {'seconds':>8} {'completions/s':>14}")
    for name, seconds in rows:
        print(f"{name:<20} {seconds:8.2f} {args.n / seconds:14.0f}")
    print(f"{'all four':<20} {mixed:8.2f} {args.n / mixed:14.0f}")


if __name__ == "__main__":
    main()
