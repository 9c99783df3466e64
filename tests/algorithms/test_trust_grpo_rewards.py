"""TrustGRPOTrainer's reward step on its own, without a model or a server: the outcome columns
TRL computed are stubbed, the thinking reward model is a recording stand-in, and every value is
worked out by hand from the released rule (kxfan2002/SophiaVL-R1 @ a818494,
``verl/workers/reward/custom.py``). The real steps: ``test_trust_grpo.py`` (slow)."""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
from trl import GRPOTrainer

from vlrl.algorithms.trust import TrustRule
from vlrl.algorithms.trust_grpo import TrustGRPOTrainer
from vlrl.rewards.sophiavl import THINKING_REWARD

STEP = 10
DISCOUNT = 0.3 * math.exp(-STEP / 500)  # α·exp(−step/T), the released α and T


class Thinking:
    """The thinking reward model: a score per completion (None: a failed call), recorded."""

    def __init__(self, scores: dict[str, float | None], failures: int = 0):
        self.scores = scores
        self.failures = failures
        self.asked: list[tuple[list, list, list]] = []

    async def __call__(self, completions, prompts, images):
        self.asked.append((completions, prompts, images))
        return [self.scores[c] for c in completions]


def make_trainer(monkeypatch, columns, weights, thinking, group=4, training=True, index=0):
    """A TrustGRPOTrainer with only what its reward step reads; TRL's own reward step returns
    ``columns`` (rows: completions, columns: reward functions)."""

    def trl_rewards(self, *args):
        self.trl_args = args
        return columns.clone()

    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", trl_rewards)
    trainer = object.__new__(TrustGRPOTrainer)
    trainer.model = SimpleNamespace(training=training)
    trainer.num_generations, trainer.num_generations_eval = group, group // 2
    # as __init__ leaves them: the reward functions' weights, then the thinking column's 1
    trainer.reward_weights = torch.tensor([*weights, 1.0], dtype=columns.dtype)
    trainer.state = SimpleNamespace(global_step=STEP)
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    trainer.accelerator = SimpleNamespace(process_index=index, device=torch.device("cpu"))
    trainer.trust_rule = TrustRule()
    trainer.thinking = thinking
    return trainer


def inputs(n: int) -> list[dict]:
    return [{"images": [f"img{i}"]} for i in range(n)]


def test_the_thinking_term_is_added_per_group_as_released(monkeypatch):
    # two reward columns weighted 1 and 0.5: the outcome is their weighted sum (NaN skipped)
    # float64, so the terms are written in the columns' precision
    columns = torch.tensor(
        [
            [1.0, 0.0],  # group A: outcome 1.0, correct, queried
            [math.nan, 0.15],  # 0.075 (weighted): wrong, not queried (thinking 0)
            [0.4, 0.4],  # 0.6: correct, queried
            [0.3, 0.0],  # 0.3: wrong, queried
            [1.0, 0.0],  # group B: every outcome ≥ 0.9, skipped
            [0.8, 0.4],
            [0.9, 0.2],
            [1.0, 0.0],
        ],
        dtype=torch.float64,
    )
    completions = [f"c{i}" for i in range(8)]
    thinking = Thinking({"c0": 0.8, "c2": 0.4, "c3": 0.9}, failures=2)
    trainer = make_trainer(monkeypatch, columns, [1.0, 0.5], thinking)
    prompts = [f"p{i}" for i in range(8)]
    rows = inputs(8)

    rewards = trainer._calculate_rewards(rows, prompts, completions, "ids")

    assert trainer.trl_args == (rows, prompts, completions, "ids")  # TRL's own step, as given

    # only group A's outcomes ≥ 0.2 were asked, with their prompts and pictures
    assert thinking.asked == [
        (["c0", "c2", "c3"], ["p0", "p2", "p3"], [["img0"], ["img2"], ["img3"]])
    ]
    assert rewards.shape == (8, 3)
    assert torch.allclose(rewards[:, :2], columns, equal_nan=True)  # TRL's columns as they were
    # μc = (0.8 + 0.4) / 2 = 0.6 ≥ μw = (0 + 0.9) / 2: no trust factor, term = discount · score
    expected = [0.8 * DISCOUNT, 0.0, 0.4 * DISCOUNT, 0.9 * DISCOUNT, 0.0, 0.0, 0.0, 0.0]
    assert rewards[:, 2].tolist() == pytest.approx(expected, abs=1e-7)
    # exactly, in the columns' precision: the scores come back as float32 (gathered as a
    # tensor), the terms are not rounded again
    as_gathered = [float(torch.tensor(t, dtype=torch.float32)) for t in (0.8, 0.4, 0.9)]
    assert rewards[[0, 2, 3], 2].tolist() == [DISCOUNT * t for t in as_gathered]

    metrics = trainer._metrics["train"]
    assert metrics[f"rewards/{THINKING_REWARD}/mean"] == pytest.approx([sum(expected) / 8])
    assert metrics["trust/queries"] == [3.0]
    assert metrics["trust/thinking_raw"] == pytest.approx([(0.8 + 0.4 + 0.9) / 3])
    assert metrics["trust/discount"] == pytest.approx([DISCOUNT])  # the skipped group not in it
    assert metrics["trust/trust"] == [1.0]
    assert metrics["trust/gamma"] == pytest.approx([(1.0 + 0.5) / 2])  # γ 1, and 0.5 skipped
    assert metrics["trust/skipped_groups"] == [0.5]
    assert metrics["trust/dropped_groups"] == [0.0]
    assert metrics["trust/reward_model_failures"] == [2.0]
    assert trainer._metrics["eval"] == {}


def test_the_trust_factor_when_wrong_answers_think_better(monkeypatch):
    columns = torch.tensor([[1.0], [0.3], [0.3], [0.6]])
    thinking = Thinking({"a": 0.2, "b": 0.9, "c": 0.7, "d": 0.4})
    trainer = make_trainer(monkeypatch, columns, [1.0], thinking)
    rewards = trainer._calculate_rewards(inputs(4), list("pqrs"), list("abcd"), None)
    # μc = (0.2 + 0.4) / 2 = 0.3 < μw = (0.9 + 0.7) / 2 = 0.8: discount · exp(μc − μw)
    trust = math.exp(0.3 - 0.8)
    expected = [s * DISCOUNT * trust for s in (0.2, 0.9, 0.7, 0.4)]
    assert rewards[:, 1].tolist() == pytest.approx(expected, abs=1e-7)
    metrics = trainer._metrics["train"]
    assert metrics["trust/trust"] == pytest.approx([trust])
    assert metrics["trust/discount"] == pytest.approx([DISCOUNT * trust])
    assert metrics["trust/gamma"] == pytest.approx([math.exp(2 * (0.3 - 0.8))])


def test_a_failed_call_drops_its_whole_group_and_is_logged(monkeypatch, caplog):
    columns = torch.tensor([[1.0], [0.3], [0.0], [1.0], [0.3], [0.0], [1.0], [0.5], [0.6]])
    scores = {"a": 0.5, "b": None, "d": None, "e": 0.4, "g": 0.5, "h": 0.1, "i": 0.2}
    trainer = make_trainer(monkeypatch, columns, [1.0], Thinking(scores, failures=2), group=3)
    rewards = trainer._calculate_rewards(inputs(9), list("pqrstuvwx"), list("abcdefghi"), None)
    assert torch.isnan(rewards[:6]).all(), "every reward of the two dropped groups is NaN"
    assert rewards[6:, 0].tolist() == pytest.approx([1.0, 0.5, 0.6])
    # the group after them is scored: all correct, no trust factor
    assert rewards[6:, 1].tolist() == pytest.approx(
        [0.5 * DISCOUNT, 0.1 * DISCOUNT, 0.2 * DISCOUNT]
    )
    metrics = trainer._metrics["train"]
    assert metrics["trust/dropped_groups"] == [2.0]
    assert metrics["trust/queries"] == [7.0]
    assert metrics["trust/discount"] == pytest.approx([DISCOUNT])
    assert metrics["trust/thinking_raw"] == pytest.approx([(0.5 + 0.4 + 0.5 + 0.1 + 0.2) / 5])
    assert caplog.messages == [
        f"trust_grpo step {STEP}: 2 of 3 groups dropped (reward-model call failed)"
    ]


def test_a_step_without_queries_logs_no_means(monkeypatch):
    columns = torch.tensor([[1.0], [1.0], [0.0], [0.0], [0.95], [1.0]])
    trainer = make_trainer(monkeypatch, columns, [1.0], Thinking({}), group=2)
    rewards = trainer._calculate_rewards(inputs(6), list("pqrstu"), list("abcdef"), None)
    assert rewards[:, 1].tolist() == [0.0] * 6
    metrics = trainer._metrics["train"]
    assert metrics["trust/skipped_groups"] == [1.0]  # three of three
    assert metrics["trust/queries"] == [0.0]
    assert math.isnan(metrics["trust/thinking_raw"][0])
    assert math.isnan(metrics["trust/discount"][0]) and math.isnan(metrics["trust/trust"][0])
    assert metrics["trust/gamma"] == [0.5]


def test_in_evaluation_the_eval_group_size_and_metrics(monkeypatch):
    columns = torch.tensor([[1.0], [0.0], [1.0], [1.0]])
    trainer = make_trainer(monkeypatch, columns, [1.0], Thinking({"a": 0.5}), training=False)
    trainer._calculate_rewards(inputs(4), list("pqrs"), list("abcd"), None)
    metrics = trainer._metrics["eval"]
    # groups of 2 (num_generations_eval): [1, 0] is asked about its 1.0, [1, 1] is skipped
    assert metrics["trust/skipped_groups"] == [0.5] and metrics["trust/queries"] == [1.0]
    assert trainer._metrics["train"] == {}


def test_each_process_asks_only_about_its_own_completions():
    trainer = object.__new__(TrustGRPOTrainer)
    trainer.accelerator = SimpleNamespace(process_index=1, device=torch.device("cpu"))
    trainer.thinking = Thinking({"x": 0.25, "z": None})
    queried = [True, True, True, True, False, True]  # every process's, gathered: 3 each
    scores = trainer.query_local(inputs(3), list("pqr"), list("xyz"), queried)
    assert trainer.thinking.asked == [(["x", "z"], ["p", "r"], [["img0"], ["img2"]])]
    assert scores[0].item() == 0.25 and math.isnan(scores[1]) and math.isnan(scores[2])
    nothing = trainer.query_local(inputs(3), list("pqr"), list("xyz"), [True] * 3 + [False] * 3)
    assert torch.isnan(nothing).all() and len(trainer.thinking.asked) == 1
    # a row without "images" gives its "image"
    trainer.query_local([{"image": "one"}], ["p"], ["x"], [False, True])
    assert trainer.thinking.asked[-1][2] == ["one"]


def test_init_hands_trl_its_arguments_and_adds_a_thinking_column_of_weight_one(
    monkeypatch,
) -> None:
    """TRL's trainer gets every argument but the two Trust-GRPO ones; the reward weights get one
    more column, weight 1, after TRL's own (the reward functions' weights)."""
    seen = {}

    def trl_init(self, *args, **kwargs):
        seen.update(args=args, kwargs=kwargs)
        self.reward_weights = torch.tensor([2.0, 0.5])

    monkeypatch.setattr(GRPOTrainer, "__init__", trl_init)
    rule, thinking = TrustRule(alpha=0.1), Thinking({})
    trainer = TrustGRPOTrainer("model", trust_rule=rule, thinking=thinking, args="a", seed=3)
    assert seen == {"args": ("model",), "kwargs": {"args": "a", "seed": 3}}
    assert trainer.trust_rule is rule and trainer.thinking is thinking
    assert trainer.reward_weights.tolist() == [2.0, 0.5, 1.0]
