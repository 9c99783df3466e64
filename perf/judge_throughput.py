"""LLM-judge throughput against a latency-injecting OpenAI-compatible server; a re-run's cost.

    .venv/bin/python perf/judge_throughput.py [--n 64] [--latency 0.2] [--concurrency 8]

Starts the tests' fake server (``tests/fake_openai_server.py``: FastAPI under uvicorn on
127.0.0.1), which answers every chat completion with the verdict ``1`` after ``latency``
seconds, then judges ``n`` items through :class:`vlrl.scoring.judge.Judge` (the score stage's
judge, its persistent cache in a temporary directory):

1. concurrency 1, empty cache;
2. concurrency ``--concurrency``, another empty cache;
3. the same again on the cache of run 2 (a re-run of the score stage): the calls it makes.

Prints the wall time of each, the speed-up of 2 over 1, and the server's request counts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_openai_server import FakeRewardModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    from vlrl.config import JudgeConfig
    from vlrl.scoring.judge import Judge, JudgeRequest
    from vlrl.scoring.judge_prompts import prompt_for

    prompt = prompt_for("numerical")
    requests = [
        JudgeRequest(f"q{i}", f"What is {i} + 1?", str(i + 1), f"{i + 1}.0", prompt)
        for i in range(args.n)
    ]
    with FakeRewardModel() as server, tempfile.TemporaryDirectory() as tmp:
        server.state.latency_s = args.latency
        server.state.replier = lambda body: "1"
        rows = []
        for label, concurrency, cache in (
            ("one at a time", 1, "serial"),
            (f"concurrency {args.concurrency}", args.concurrency, "concurrent"),
            (f"re-run, concurrency {args.concurrency}", args.concurrency, "concurrent"),
        ):
            cfg = JudgeConfig(base_url=server.base_url, model="judge", concurrency=concurrency)
            judge = Judge(cfg, Path(tmp) / cache)
            before = server.state.requests
            start = time.perf_counter()
            outcomes = judge.judge(requests)
            seconds = time.perf_counter() - start
            assert [o.verdict for o in outcomes] == [1] * args.n, judge.errors
            calls = server.state.requests - before
            rows.append((label, seconds, calls, judge.stats.cache_hits, server.state.max_in_flight))
            server.state.max_in_flight = 0
    print(f"{args.n} items, server latency {args.latency} s")
    for label, seconds, calls, hits, in_flight in rows:
        print(
            f"{label:<28} {seconds:6.2f} s  server requests {calls:>3}  cache hits {hits:>3}  "
            f"max in flight {in_flight}"
        )
    print(f"speed-up concurrency {args.concurrency} vs 1: {rows[0][1] / rows[1][1]:.1f}x")


if __name__ == "__main__":
    main()
