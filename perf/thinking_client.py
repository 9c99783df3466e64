"""Thinking-reward client throughput against a latency-injecting OpenAI-compatible server.

    .venv/bin/python perf/thinking_client.py [--n 64] [--latency 0.2] [--concurrency 16]

Starts the tests' fake server (:class:`FakeRewardModel` of ``tests/fake_openai_server.py``: a
FastAPI app under uvicorn on 127.0.0.1, a free port), which answers
``POST /v1/chat/completions`` after ``latency`` seconds, then times ``n`` requests through
:class:`vlrl.rewards.thinking.ThinkingReward` with concurrency 1 and with ``--concurrency``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_openai_server import FakeRewardModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    from vlrl.rewards.thinking import ThinkingRewardConfig, get_thinking_reward

    completions = [f"<think>step {i}</think><answer>{i}</answer>" for i in range(args.n)]
    prompts = [[{"role": "user", "content": f"Question {i}?"}] for i in range(args.n)]
    with FakeRewardModel() as server:
        server.state.latency_s = args.latency
        times = {}
        for concurrency in (1, args.concurrency):
            cfg = ThinkingRewardConfig(
                base_url=server.base_url, model="thinking-reward-model", concurrency=concurrency
            )
            reward = get_thinking_reward(cfg)
            start = time.perf_counter()
            scores = asyncio.run(reward(completions, prompts=prompts))
            times[concurrency] = time.perf_counter() - start
            assert scores == [0.7] * args.n and reward.failures == 0, (scores, reward.stats())
            print(
                f"concurrency={concurrency:>2}: {args.n} requests in {times[concurrency]:.2f} s "
                f"(server max in flight {server.state.max_in_flight})"
            )
            server.state.max_in_flight = 0
    ratio = times[1] / times[args.concurrency]
    print(f"speed-up concurrency={args.concurrency} vs 1: {ratio:.1f}x")


if __name__ == "__main__":
    main()
