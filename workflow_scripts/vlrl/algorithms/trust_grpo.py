"""``trust_grpo``: SophiaVL-R1's Trust-GRPO on TRL's GRPOTrainer (kxfan2002/SophiaVL-R1 @
a818494, ``verl/workers/reward/custom.py``).

The configured rewards (``grpo.rewards``, e.g. ``sophiavl.outcome``) are the outcome score; this
trainer adds one reward column, ``sophiavl.thinking``, holding the trust-weighted, annealed
thinking term of :func:`vlrl.algorithms.trust.combine`, so TRL's group normalisation sees
``outcome + term`` as in the released ``score_i = answer_score_i + discount · thinking_i``.

The override is of ``GRPOTrainer._calculate_rewards`` (a private method; ``trl`` is pinned to
1.16.0 in ``envs/``). It runs on every process: the outcome matrix is gathered, each process
queries the reward model for its own completions that :func:`~vlrl.algorithms.trust.select_queries`
picks, and the scores are gathered back so every process computes the same terms.

A failed reward-model call (``reward_model.on_failure: missing``) drops its whole group: every
reward of the group becomes NaN, which TRL treats as unscorable (advantage 0). The count is logged
as ``trust/dropped_groups``; nothing is scored silently.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import torch
from accelerate.utils import gather
from trl import GRPOTrainer

from vlrl.algorithms.trust import TrustRule, combine, select_queries
from vlrl.rewards.sophiavl import THINKING_REWARD
from vlrl.rewards.thinking import ThinkingReward

log = logging.getLogger(__name__)


class TrustGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose reward adds SophiaVL's trust-weighted thinking reward."""

    def __init__(self, *args: Any, trust_rule: TrustRule, thinking: ThinkingReward, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.trust_rule = trust_rule
        self.thinking = thinking
        # One more reward column with weight 1 (the term is already weighted by the discount).
        # It is not a reward function, so it is not in reward_func_names: it is logged here.
        self.reward_weights = torch.cat([self.reward_weights, torch.ones(1)])

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        n_funcs = rewards_per_func.shape[1]
        weights = self.reward_weights[:n_funcs].to(rewards_per_func.device)
        outcome = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        groups = outcome.view(-1, group_size).tolist()
        queried = [q for group in groups for q in select_queries(group, self.trust_rule)]

        local = self.query_local(inputs, prompts, completions, queried)
        thinking = gather(local).tolist()

        step = self.state.global_step
        column = torch.zeros_like(outcome)
        stats = {"discount": [], "trust": [], "gamma": [], "skipped": 0, "dropped": 0}
        for g, group in enumerate(groups):
            rows = slice(g * group_size, (g + 1) * group_size)
            scores = [None if math.isnan(t) else t for t in thinking[rows]]
            result = combine(group, scores, step, self.trust_rule)
            stats["gamma"].append(result.gamma_logged)
            if result.skipped:
                stats["skipped"] += 1
            elif result.dropped:
                stats["dropped"] += 1
                rewards_per_func[rows] = torch.nan
                column[rows] = torch.nan
                continue
            else:
                stats["discount"].append(result.discount)
                stats["trust"].append(result.trust)
            column[rows] = torch.tensor(result.terms, dtype=column.dtype)

        raw = [t for t, q in zip(thinking, queried, strict=True) if q and not math.isnan(t)]
        metrics = self._metrics[mode]
        metrics[f"rewards/{THINKING_REWARD}/mean"].append(torch.nanmean(column).item())
        metrics["trust/queries"].append(float(sum(queried)))
        metrics["trust/thinking_raw"].append(sum(raw) / len(raw) if raw else math.nan)
        metrics["trust/discount"].append(_mean(stats["discount"]))
        metrics["trust/trust"].append(_mean(stats["trust"]))
        metrics["trust/gamma"].append(_mean(stats["gamma"]))
        metrics["trust/skipped_groups"].append(stats["skipped"] / len(groups))
        metrics["trust/dropped_groups"].append(float(stats["dropped"]))
        metrics["trust/reward_model_failures"].append(float(self.thinking.failures))
        if stats["dropped"]:
            log.warning(
                "trust_grpo step %d: %d of %d groups dropped (reward-model call failed)",
                step,
                stats["dropped"],
                len(groups),
            )
        return torch.cat([rewards_per_func, column.unsqueeze(1)], dim=1)

    def query_local(
        self, inputs: list[dict[str, Any]], prompts: list, completions: list, queried: list[bool]
    ) -> torch.Tensor:
        """Thinking scores for this process's completions: NaN where not queried or failed."""
        start = self.accelerator.process_index * len(prompts)
        picked = [i for i in range(len(prompts)) if queried[start + i]]
        scores = torch.full((len(prompts),), torch.nan, device=self.accelerator.device)
        if not picked:
            return scores
        images = [inputs[i].get("images", inputs[i].get("image")) for i in picked]
        results = asyncio.run(
            self.thinking(
                [completions[i] for i in picked],
                prompts=[prompts[i] for i in picked],
                images=images,
            )
        )
        for i, score in zip(picked, results, strict=True):
            if score is not None:
                scores[i] = score
        return scores


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan
