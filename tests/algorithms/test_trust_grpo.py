"""trust_grpo: a few real TRL steps on the tiny model against a real local OpenAI-compatible
server (``tests/fake_openai_server.py::FakeRewardModel``: FastAPI + uvicorn on 127.0.0.1,
the real ``openai.AsyncOpenAI`` client)."""

from __future__ import annotations

import math

import pytest
from fake_openai_server import FakeRewardModel
from grpo_steps import logged, run_grpo, weights_changed

from vlrl.core.errors import ConfigError
from vlrl.rewards.sophiavl import THINKING_REWARD


@pytest.fixture
def server():
    with FakeRewardModel() as srv:
        # A score that differs between responses, so the trust factor has something to weigh.
        srv.state.scorer = lambda text: (len(text) % 11) / 10
        yield srv


def trust(server, variant: str, **extra: str) -> str:
    options = "".join(f", {k}: {v}" for k, v in extra.items())
    return (
        f"grpo.trust={{variant: {variant}{options}, reward_model: "
        f"{{base_url: '{server.base_url}', model: thinking-reward-model, concurrency: 4}}}}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["released", "paper"])
def test_real_steps_query_the_server_and_log_every_term(
    length_reward, variant, server, project, shapes_data, tiny_model_dir, monkeypatch
):
    summary = run_grpo(
        tiny_model_dir,
        shapes_data,
        [
            "grpo.algorithm=trust_grpo",
            "grpo.rewards={test.length: 1.0}",
            # the length reward sits in [0, 0.4]: lower the skip band so groups are not skipped
            trust(server, variant, skip_low=0.0),
        ],
    )
    assert summary["algorithm"] == "trust_grpo" and summary["steps"] == 2
    assert server.state.requests > 0
    queries = logged(summary, "trust/queries")
    assert queries and sum(queries) == server.state.requests
    terms = logged(summary, f"rewards/{THINKING_REWARD}/mean")
    assert terms and all(0.0 <= t <= 0.3 for t in terms)  # α · trust · anneal · [0, 1]
    assert all(0.0 <= v <= 1.0 for v in logged(summary, "rewards/test.length/mean"))
    assert all(math.exp(-1) <= v <= 1.0 for v in logged(summary, "trust/trust"))
    assert logged(summary, "trust/dropped_groups") == [0.0, 0.0]
    assert weights_changed(tiny_model_dir)


@pytest.mark.slow
def test_failed_calls_drop_groups_and_are_counted(
    length_reward, server, project, shapes_data, tiny_model_dir, monkeypatch
):
    server.state.fail_always = 500
    summary = run_grpo(
        tiny_model_dir,
        shapes_data,
        [
            "grpo.algorithm=trust_grpo",
            "grpo.rewards={test.length: 1.0}",
            trust(server, "paper").replace("concurrency: 4", "concurrency: 4, max_retries: 0"),
        ],
    )
    dropped = logged(summary, "trust/dropped_groups")
    assert dropped == [2.0, 2.0]  # 4 completions = 2 groups of 2 per step, all failed
    assert logged(summary, "trust/reward_model_failures")[-1] == 8.0
    # every group dropped: no reward reached the policy, so nothing was scored as 0 (the trainer
    # logs the empty mean as None)
    assert all(v is None or math.isnan(v) for v in logged(summary, "rewards/test.length/mean"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["grpo.algorithm=trust_grpo"], "grpo.trust"),
        (
            [
                "grpo.algorithm=trust_grpo",
                "grpo.trust={reward_model: {base_url: 'http://x/v1', model: m}}",
                "grpo.rewards={sophiavl.outcome: 1.0, sophiavl.thinking: 1.0}",
            ],
            "adds the thinking reward itself",
        ),
        (["grpo.rewards={sophiavl.thinking: 1.0}"], "grpo.reward_model"),
        (
            [
                "grpo.algorithm=trust_grpo",
                "grpo.trust={variant: trusting, reward_model: {base_url: 'http://x/v1', model: m}}",
            ],
            "grpo.trust.variant",
        ),
    ],
)
def test_config_errors_name_the_key(overrides, message, project):
    from vlrl.workflow.check import load_checked

    with pytest.raises(ConfigError, match=message):
        load_checked("tiny_shapes", overrides)
