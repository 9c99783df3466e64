"""self_reward: Vision-SR1's image-free second pass, in a few real TRL steps on the tiny model."""

from __future__ import annotations

import pytest
from grpo_steps import logged, run_grpo, weights_changed

from vlrl.algorithms.self_reward import SelfRewardGRPOTrainer, second_pass_description
from vlrl.core.errors import ConfigError


@pytest.mark.parametrize(
    ("completion", "missing", "expected"),
    [
        ("<description>two red cubes</description><think>t</think>\\boxed{2}", "whole_response",
         "two red cubes"),
        ("<description> a </description><description>b</description>", "whole_response", "a"),
        # released: no <description> → the whole response (which can leak the boxed answer)
        ("<think>t</think>\\boxed{2}", "whole_response", "<think>t</think>\\boxed{2}"),
        ("<think>t</think>\\boxed{2}", "empty", ""),
        ("<description>d</description>", "empty", "d"),
    ],
)  # fmt: skip
def test_second_pass_description(completion, missing, expected):
    assert second_pass_description(completion, missing) == expected


@pytest.mark.slow
def test_real_steps_run_the_second_pass_without_images(
    length_reward, project, shapes_data, tiny_model_dir, monkeypatch
):
    seen: list[tuple[list, object]] = []
    original = SelfRewardGRPOTrainer._tokenize_prompts

    def spy(self, prompts):
        prompt_ids, images, multimodal = original(self, prompts)
        seen.append((prompts, images))
        return prompt_ids, images, multimodal

    monkeypatch.setattr(SelfRewardGRPOTrainer, "_tokenize_prompts", spy)
    summary = run_grpo(
        tiny_model_dir,
        shapes_data,
        [
            "grpo.algorithm=self_reward",
            "grpo.rewards={vision_sr1.format: 0.1, vision_sr1.accuracy: 0.9, "
            "vision_sr1.visual: 1.0, test.length: 1.0}",
        ],
    )
    assert summary["algorithm"] == "self_reward" and summary["steps"] == 2
    second = [(p, im) for p, im in seen if "Text description:" in str(p)]
    assert len(second) == 2  # one second pass per generation step
    for prompts, images in second:
        assert images is None  # no image in the second pass
        assert len(prompts) == 4 and all(len(p) == 1 and p[0]["role"] == "user" for p in prompts)
    for name in ("vision_sr1.format", "vision_sr1.accuracy", "vision_sr1.visual", "test.length"):
        values = logged(summary, f"rewards/{name}/mean")
        assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values), name
    assert all(v > 0 for v in logged(summary, "self_reward/second_pass_length"))
    assert weights_changed(tiny_model_dir)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["grpo.algorithm=self_reward"], "none of .*vision_sr1.visual"),
        (["grpo.rewards={vision_sr1.total: 1.0}"], "need the second pass"),
        (["grpo.self_reward={missing_description: drop}"], "missing_description"),
    ],
)
def test_config_errors_name_the_key(overrides, message, project):
    from vlrl.config import load_experiment

    with pytest.raises(ConfigError, match=message):
        load_experiment("tiny_shapes", overrides)


def test_second_pass_prompt_takes_the_description_as_decoded() -> None:
    """Released (verl/trainer/ray_trainer.py @4480e08, lines 673-679) builds the second-pass prompt
    from the raw decoded text; only its reward function normalises tag whitespace."""
    from vlrl.algorithms.self_reward import second_pass_prompts

    text = "<description>A chart: 2019 is 3 / 4 of 2020, x < 5.</description><think>t</think>"
    ((turn,),) = second_pass_prompts([text], ["How many?"])
    assert turn["content"].startswith("Text description: A chart: 2019 is 3 / 4 of 2020, x < 5.\n")
    spaced = "< description >two red cubes</ description > < think >t</ think > \\boxed{2}"
    ((turn,),) = second_pass_prompts([spaced], ["Q"])
    assert turn["content"].startswith(f"Text description: {spaced}\nQuestion: Q\n")
