"""``vlrl show``'s summary of what a recipe trains: start, horizon and the prompt as the model
sees it, for every paper recipe."""

from __future__ import annotations

import pytest

from vlrl.core import paths
from vlrl.workflow import show

RECIPES = sorted(
    p.stem
    for p in paths.experiment_file("x").parent.glob("*.yaml")
    if not p.stem.startswith(("tiny_", "qwen2.5")) and not p.stem.endswith("_smoke")
)


def test_every_paper_recipe_is_listed() -> None:
    assert {"vlm_r1_rec", "vision_sr1", "sophiavl_r1", "satori", "vlm_r1_rec_sft"} <= set(RECIPES)


@pytest.mark.parametrize("recipe", RECIPES)
def test_show_says_what_the_recipe_trains(recipe: str) -> None:
    text = show.render(recipe)
    summary = text.split("# as trained:\n", 1)[1]
    assert "# prompt " in summary and "#   user: " in summary
    cfg = show.selected(recipe)[0]
    if cfg.grpo.enabled:
        assert f"stops at step {cfg.grpo.max_steps} of a schedule of " in summary
    if cfg.sft.enabled:
        assert f"#   sft: from {cfg.base_model}; " in summary


def test_the_horizon_and_image_position_are_the_released_ones() -> None:
    rec = show.render("vlm_r1_rec").split("# as trained:\n", 1)[1]
    assert "stops at step 600 of a schedule of 2.0 epochs" in rec
    rec_sft = show.render("vlm_r1_rec_sft").split("# as trained:\n", 1)[1]
    assert (
        "#   sft: from qwen2.5-vl-3b-instruct; stops at step 600 of a schedule of 2.0 " in rec_sft
    )
    assert "#   user: '<image>{question} First output" in rec
    sr1 = show.render("vision_sr1").split("# as trained:\n", 1)[1]
    assert "#   grpo: from vision-sr1-cold-start-7b; stops at step 368" in sr1  # the released one
    retrained = show.render("vision_sr1_cold_start").split("# as trained:\n", 1)[1]
    assert "#   grpo: from the sft output of qwen2.5-vl-7b-instruct" in retrained
    assert "#   user: '{question}<image> You are tasked" in sr1
    sophia = show.render("sophiavl_r1").split("# as trained:\n", 1)[1]
    assert "#   system: 'You FIRST think" in sophia and "final answer. The reasoning" in sophia
