"""Inference throughput of the ``hf`` backend: the default batch size against batch size 2.

    .venv/bin/python perf/infer_throughput.py [--items 32] [--batch-sizes 16 2]

Needs ``make run`` first (or ``dvc repro``): it generates with the embedded default's SFT model
(``results/tiny_shapes/sft``) on the first ``--items`` of its held-out shapes split, the way the
infer stage does (the experiment's prompt, ``infer`` settings and seed, pinned CPU threads),
once per batch size, and prints items/s and the speed-up of each batch size over the last one.
"""

from __future__ import annotations

import argparse
import time

from PIL import Image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="tiny_shapes")
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 2])
    args = parser.parse_args()

    from vlrl.cluster.threads import pin_cpu_threads
    from vlrl.config import load_experiment
    from vlrl.core import paths
    from vlrl.data.convert import to_conversation
    from vlrl.generation.hf import HFGenerator
    from vlrl.items.prompts import get_prompt
    from vlrl.items.records import read_records

    cfg = load_experiment(args.experiment)
    pin_cpu_threads(cfg.cpu_threads)
    data = paths.data_dir(args.experiment)
    records = read_records(data / "test.jsonl", args.items)
    fmt = get_prompt(cfg.prompt)
    conversations = [to_conversation(r, fmt) for r in records]
    images = [[Image.open(data / p).convert("RGB") for p in r.images] for r in records]
    model = paths.sft_dir(args.experiment)
    rates = {}
    for size in args.batch_sizes:
        generator = HFGenerator(str(model), cfg.infer.model_copy(update={"batch_size": size}), 0)
        generator.generate(conversations[:size], images[:size])  # warm-up
        start = time.perf_counter()
        for i in range(0, len(records), size):
            generator.generate(conversations[i : i + size], images[i : i + size])
        seconds = time.perf_counter() - start
        rates[size] = len(records) / seconds
        n = len(records)
        print(f"batch size {size:>3}: {n} items in {seconds:6.2f} s, {rates[size]:.1f}/s")
    last = args.batch_sizes[-1]
    for size in args.batch_sizes[:-1]:
        print(f"speed-up batch {size} vs {last}: {rates[size] / rates[last]:.2f}x")


if __name__ == "__main__":
    main()
