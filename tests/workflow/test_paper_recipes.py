"""The four papers' recipes (``config/experiments/<recipe>.yaml``): each validates, plans, cites
its published numbers, and has a smoke variant that changes only scale.

A smoke variant (``<recipe>_smoke.yaml``, run end to end in CI by
``tests/pipeline/test_recipe_smoke.py``) ``extends:`` its recipe. Its resolved config must equal
the recipe's everywhere outside :data:`SCALE`: the prompt, the rewards and their weights, the
algorithm and its settings, the loss, beta, the clip ratios, the group size, the learning-rate
schedule and the scoring protocols stay the recipe's, so a recipe cannot rot unnoticed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vlrl.config import load_experiment, load_model
from vlrl.workflow.check import experiment_problems

REPO = Path(__file__).resolve().parents[2]

RECIPES = [
    "vlm_r1_rec",
    "vlm_r1_rec_sft",
    "vlm_r1_ovd",
    "vlm_r1_math",
    "vision_sr1",
    "vision_sr1_cold_start",
    "vision_r1_regular",
    "vision_sr1_no_self_reward",
    "sophiavl_r1",
    "sophiavl_r1_paper",
    "satori",
    "satori_no_thinking",
]

SCALE = {
    # what the run is and where it runs
    "description": "a smoke variant says what it is",
    "extends": "the smoke extends its recipe",
    "reported": "the paper's hardware is the recipe's, not the smoke's",
    "base_model": "the tiny model",
    "cpu_threads": "one thread: the same numbers on any core count",
    "cpu_kernels": "CPU kernels",
    "resources": "CPU, no GPUs",
    "image_pixels": "the tiny model's pixel budget",
    # a fixture of the recipe's data, in its released layout
    "data": "a few rows of the recipe's data",
    # how long and how big
    "sft.num_train_epochs": "one epoch",
    "sft.max_steps": "a step of that epoch (a recipe that stops early still does)",
    "sft.per_device_train_batch_size": "a small batch",
    "sft.gradient_accumulation_steps": "no accumulation",
    "sft.cutoff_len": "short sequences",
    "sft.gradient_checkpointing": "memory is ample",
    "sft.deepspeed": "no DeepSpeed on CPU",
    "sft.image_max_pixels": "the tiny model's pixel budget",
    "sft.image_min_pixels": "the tiny model's pixel budget",
    "grpo.max_steps": "two steps",
    "grpo.per_device_train_batch_size": "one group per step",
    "grpo.gradient_accumulation_steps": "no accumulation",
    "grpo.steps_per_generation": "one optimizer step per rollout",
    "grpo.max_completion_length": "short answers",
    "grpo.gradient_checkpointing": "memory is ample",
    "grpo.deepspeed": "no DeepSpeed on CPU",
    "grpo.save_steps": "no checkpoints",
    "grpo.logging_steps": "every step logged",
    "grpo.image_max_pixels": "the tiny model's pixel budget",
    "grpo.image_min_pixels": "the tiny model's pixel budget",
    "grpo.trust.reward_model": "a reward-model server the stage starts",
    "infer.batch_size": "small batches",
    "infer.max_new_tokens": "short answers",
    "infer.checkpoints": "the trained model only",
    # evaluated on its own test split: the protocol of each benchmark it keeps stays the recipe's
    "benchmarks": "the smoke's own test split",
    "score.protocol": "checked apart: the recipe's, for the benchmarks the smoke evaluates",
    "score.judge": "no judge server in CI",
    "report.combined": "checked apart: the recipe's, of the benchmarks the smoke evaluates",
}
"""Keys a smoke variant may change, and why."""


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict) and node:
        found: dict[str, Any] = {}
        for key, value in node.items():
            found |= _leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return found
    return {prefix: node}


def _scale(key: str) -> bool:
    return any(key == s or key.startswith(s + ".") for s in SCALE)


def test_every_recipe_has_a_smoke_variant() -> None:
    experiments = {p.stem for p in (REPO / "config" / "experiments").glob("*.yaml")}
    for recipe in RECIPES:
        assert recipe in experiments, recipe
        assert f"{recipe}_smoke" in experiments, recipe
        assert load_experiment(f"{recipe}_smoke").extends == recipe


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_recipe_is_valid_and_cites_its_paper(recipe: str) -> None:
    cfg, problems = experiment_problems(recipe)
    assert problems == [], problems
    assert cfg.reported is not None and cfg.reported.source, recipe
    model = load_model(cfg.base_model)
    assert model.hf is not None, "a recipe trains the paper's base model, from the hub"
    text = (REPO / "config" / "experiments" / f"{recipe}.yaml").read_text()
    assert "@" in text or "arXiv" in text, "the file cites its sources (repository @ commit)"


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_smoke_variant_changes_only_scale(recipe: str) -> None:
    full = load_experiment(recipe)
    smoke = load_experiment(f"{recipe}_smoke")
    assert experiment_problems(f"{recipe}_smoke")[1] == []
    ours, theirs = _leaves(full.model_dump(mode="json")), _leaves(smoke.model_dump(mode="json"))
    differ = sorted(
        key
        for key in ours.keys() | theirs.keys()
        if not _scale(key) and ours.get(key, "<absent>") != theirs.get(key, "<absent>")
    )
    assert differ == [], {key: (ours.get(key), theirs.get(key)) for key in differ}
    kept = {b: p for b, p in full.score.protocol.items() if b in smoke.benchmarks}
    assert smoke.score.protocol == kept
    evaluated = set(smoke.benchmarks)
    combined = {n: c for n, c in full.report.combined.items() if set(c.benchmarks) <= evaluated}
    assert smoke.report.combined == combined
    assert smoke.base_model == "tiny-qwen2.5-vl" and smoke.resources.grpo.gpus == 0
    # a recipe that stops early keeps doing so at smoke scale (the stop runs in CI)
    assert (full.sft.max_steps is None) == (smoke.sft.max_steps is None)
    stops = full.grpo.schedule_steps is not None or full.grpo.schedule_epochs is not None
    assert stops == (
        smoke.grpo.schedule_steps is not None or smoke.grpo.schedule_epochs is not None
    )


def test_the_comparison_catches_a_change_outside_scale() -> None:
    """The check itself: a smoke that changed beta or a reward weight would fail it."""
    full = load_experiment("vlm_r1_rec")
    for override in ("grpo.beta=0.0", "grpo.rewards={vlm_r1.rec_iou: 1.0}", "prompt=think_answer"):
        smoke = load_experiment("vlm_r1_rec_smoke", [override])
        ours, theirs = _leaves(full.model_dump(mode="json")), _leaves(smoke.model_dump(mode="json"))
        assert any(
            not _scale(k) and ours.get(k) != theirs.get(k) for k in ours.keys() | theirs.keys()
        ), override


@pytest.mark.slow
def test_every_recipe_plans(project: Path) -> None:
    """``vlrl plan``: the stages, downloads (and what blocks them), servers and an estimate."""
    import shutil

    from vlrl.workflow import plan

    for item in ("Snakefile", "rules", "workflow_scripts"):
        src = REPO / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, project / item)
    for recipe in RECIPES:
        made = plan.make_plan(recipe)
        text = plan.render(made)
        assert made.to_run, recipe
        rules = {p.job.rule for p in made.jobs}
        assert {"data", "grpo" if load_experiment(recipe).grpo.enabled else "sft"} <= rules
        assert "report" in rules and "download" in rules, recipe
        assert made.estimate is not None and made.estimate.parameters, recipe
        assert "GPU-hours" in text or "gpu" in text.lower(), recipe
        assert "## Reported by the source" in text, recipe
    from recipe_fixtures import write_smoke_datasets

    write_smoke_datasets(project)
    for recipe in RECIPES:  # the smoke variants' DAGs (make smoke runs them)
        smoke = plan.make_plan(f"{recipe}_smoke")
        assert {"data", "report"} <= {p.job.rule for p in smoke.jobs}, recipe
        assert not [d for d in smoke.downloads if d.blocked], recipe
    ovd = plan.render(plan.make_plan("vlm_r1_ovd"))
    assert "USER-PROVIDED, missing: put its files in data/vlm_r1_ovd_d3" in ovd
    sr1 = plan.make_plan("vision_sr1_cold_start")
    _a_plan_you_can_read(sr1, plan.render(sr1))
    blocked = {d.name for d in sr1.downloads if d.blocked}
    assert {"vision_sr1_cold_9k", "vision_sr1_47k"} <= blocked  # unpinned: `vlrl pin` first
    assert any(s.key == "score.judge" and "generativelanguage" in s.how for s in sr1.servers)
    # vision_sr1 starts from the released cold start, whose revision `vlrl pin` writes first
    released = plan.make_plan("vision_sr1")
    assert "vision-sr1-cold-start-7b" in {d.name for d in released.downloads if d.blocked}
    assert "sft" not in {p.job.rule for p in released.jobs}


def _a_plan_you_can_read(made, text: str) -> None:
    """vision_sr1_cold_start's plan opens with a one-screen summary whose total is the sum of the
    stages it can estimate (not "unknown" because SFT's records are unknown), names what it
    cannot estimate, sizes memory with the 7B model's own shape, and groups the routine
    stages."""
    from vlrl.workflow.cost_model import GPU_HOURS

    summary = text.split("\n## Stages")[0].splitlines()
    assert summary[2] == "## Summary" and len(summary) <= 16, summary
    known = [s for s in made.estimate.stages if s.on_gpu and s.get_or_none(GPU_HOURS)]
    total = sum(s.get_or_none(GPU_HOURS) for s in known)
    compute = next(line for line in summary if "compute:" in line)
    assert f"at least {total:,.2f} GPU-hours" in compute and "unknown GPU-hours" not in text
    assert "not estimated: sft (records unknown" in compute and "infer x 27" in compute
    # its own stages and vision_sr1's, the parent its report compares with
    assert "stages: 109 to run (9 download, 2 data, 2 base_model, 1 sft, 2 grpo" in summary[3]
    assert "h 3584, L 28" in text and "Qwen2.5-VL-3B-Instruct's shape (assumed" not in text
    assert len(text.splitlines()) < 150, len(text.splitlines())  # was 500: 24 infer blocks
    assert "**infer x 27:" in text and "resolve: wrote" not in text
