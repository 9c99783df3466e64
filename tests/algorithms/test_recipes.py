"""Each paper's recipe (``config/experiments/tiny_shapes_<recipe>.yaml``) runs a few real GRPO
steps on the tiny model with its own prompt format, algorithm and reward set: every reward term
is logged within its range and the weights change.

The policy is first primed by the real ``sft`` stage (LLaMA-Factory) on 160 shapes records in the
recipe's prompt format, so its samples are sometimes well formed and the format-gated rewards
vary within a group (a randomly initialised model scores 0 everywhere and learns nothing).

Only the two recipes whose algorithm is not the default's plain GRPO run here (Vision-SR1's
self-reward, SophiaVL's Trust-GRPO): the priming costs about two minutes a recipe. The plain-GRPO
recipes (``tiny_shapes_vlm_r1_rec``, ``tiny_shapes_satori``) train as the default does, whose
learning ``make reproduce`` checks; their prompts earn their format rewards
(tests/items/test_prompts.py), their rewards are the released code's (tests/rewards), and
``make smoke`` runs every recipe's GRPO on its own data with its reward terms logged in range
(tests/pipeline/test_recipe_smoke.py).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fake_openai_server import FakeRewardModel
from grpo_steps import logged, run_grpo, weights_changed

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.rewards.sophiavl import THINKING_REWARD
from vlrl.stages import data as data_stage
from vlrl.stages import sft as sft_stage

REPO = Path(__file__).resolve().parents[2]

PRIMING = [
    "data.shapes.n_train=160",
    "data.shapes.n_val=4",
    "data.shapes.n_test=4",
    "sft.num_train_epochs=12",
    "sft.learning_rate=3e-3",
    "sft.per_device_train_batch_size=16",
    "sft.gradient_checkpointing=false",  # the same weights, less time
]
RECIPES = ["vision_sr1", "sophiavl"]
# What each recipe's terms may log: (low, high) of the per-step mean.
RANGES = {THINKING_REWARD: (0.0, 0.3)}  # α · trust · anneal · [0, 1]


@pytest.fixture(scope="session")
def primed(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path):
    """recipe → (SFT-primed model dir, its data dir), built on first use."""
    built: dict[str, tuple[Path, Path]] = {}

    def prime(recipe: str) -> tuple[Path, Path]:
        if recipe in built:
            return built[recipe]
        exp = f"tiny_shapes_{recipe}"
        root = tmp_path_factory.mktemp(f"primed-{recipe}")
        shutil.copytree(REPO / "config", root / "config")
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(root)
            mp.setenv("VLRL_ROOT", str(root))
            cli = REPO / ".venv-sft" / "bin" / "llamafactory-cli"
            if "VLRL_LLAMAFACTORY_CLI" not in os.environ and cli.is_file():
                mp.setenv("VLRL_LLAMAFACTORY_CLI", str(cli))
            cfg = load_experiment(exp, PRIMING)
            shutil.copytree(tiny_model_dir, paths.model_resource(cfg.base_model))
            data_stage.run(exp, cfg)
            sft_stage.run(exp, cfg)
        built[recipe] = (root / paths.sft_dir(exp), root / paths.data_dir(exp))
        return built[recipe]

    return prime


@pytest.mark.slow
@pytest.mark.recipes  # make recipes: out of make test and CI for CI's time limit
@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_runs_real_steps(recipe, primed, project, monkeypatch):
    model_dir, data_dir = primed(recipe)
    exp = f"tiny_shapes_{recipe}"
    overrides = [
        "grpo.max_steps=3",
        "grpo.per_device_train_batch_size=16",
        "grpo.num_generations=4",  # 4 prompts per step
        "grpo.max_completion_length=80",  # room for a whole primed response
        "grpo.learning_rate=1e-3",
    ]
    with FakeRewardModel() as server:
        server.state.scorer = lambda text: (len(text) % 11) / 10
        if recipe == "sophiavl":
            overrides.append(f"grpo.trust.reward_model.base_url='{server.base_url}'")
            overrides.append("grpo.trust.reward_model.cache_dir=null")
        summary = run_grpo(model_dir, data_dir, overrides, exp=exp)
    cfg = load_experiment(exp)
    assert summary["algorithm"] == cfg.grpo.algorithm and summary["steps"] == 3
    terms = list(cfg.grpo.rewards) + ([THINKING_REWARD] if recipe == "sophiavl" else [])
    for name in terms:
        low, high = RANGES.get(name, (0.0, 1.0))
        values = logged(summary, f"rewards/{name}/mean")
        assert len(values) == 3, name
        # None: no row of that step has the columns the reward reads (e.g. satori.bbox_iou on
        # count questions, which carry no boxes)
        scored = [v for v in values if v is not None]
        assert scored and all(low <= v <= high for v in scored), (name, values)
    assert any(v > 0 for v in logged(summary, "reward")), "no reward at all: priming failed"
    assert weights_changed(model_dir, exp=exp)
    if recipe == "sophiavl":
        assert server.state.requests == sum(logged(summary, "trust/queries"))
