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


# ------------------------------------------------- the trainer's reward step, without a model
class _Decoder:
    """The processing class: token ids back to text (an id is a character's code)."""

    @staticmethod
    def batch_decode(ids, skip_special_tokens):
        assert skip_special_tokens
        return ["".join(map(chr, row)) for row in ids]


def _trainer(monkeypatch, missing="whole_response", training=True):
    """A SelfRewardGRPOTrainer with only what its reward step reads; TRL's tokenizer and
    generation are stand-ins that record what they are given."""
    from collections import defaultdict
    from types import SimpleNamespace

    import torch
    from trl import GRPOTrainer

    from vlrl.config import SelfRewardSettings

    calls = SimpleNamespace(tokenized=[], generated=[], scored=[])

    def tokenize(self, prompts):
        calls.tokenized.append(prompts)
        return [[7] * (i + 1) for i in range(len(prompts))], None, {"multi": "modal"}

    def generate(self, prompt_ids, images, multimodal, num_generations):
        calls.generated.append((prompt_ids, images, multimodal, num_generations))
        calls.grad = torch.is_grad_enabled()
        answers = [f"ans{i}" + "!" * i for i in range(len(prompt_ids))]
        return [[ord(c) for c in a] for a in answers], None

    def rewards(self, inputs, prompts, completions, ids):
        calls.scored.append([dict(row) for row in inputs])
        calls.trl_args = (prompts, completions, ids)
        return "TRL's rewards"

    monkeypatch.setattr(GRPOTrainer, "_tokenize_prompts", tokenize, raising=False)
    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", generate, raising=False)
    monkeypatch.setattr(GRPOTrainer, "_calculate_rewards", rewards)
    trainer = object.__new__(SelfRewardGRPOTrainer)
    trainer.self_reward = SelfRewardSettings(missing_description=missing)
    trainer.processing_class = _Decoder()
    trainer.model = SimpleNamespace(training=training)
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    return trainer, calls


def test_the_second_pass_answers_each_description_then_trl_scores(monkeypatch):
    import torch

    trainer, calls = _trainer(monkeypatch)
    rows = [{"problem": "<image>How many?", "answer": "2"}, {"problem": "Color?", "answer": "red"}]
    completions = [
        [{"role": "assistant", "content": "<description>two cubes</description><think>t</think>"}],
        "<think>no description</think>\\boxed{red}",
    ]
    assert torch.is_grad_enabled()
    assert trainer._calculate_rewards(rows, ["p0", "p1"], completions, "ids") == "TRL's rewards"
    assert calls.trl_args == (["p0", "p1"], completions, "ids")
    (prompts,) = calls.tokenized
    assert [p[0]["content"].splitlines()[:2] for p in prompts] == [
        ["Text description: two cubes", "Question: How many?"],
        ["Text description: <think>no description</think>\\boxed{red}", "Question: Color?"],
    ]
    assert all(len(p) == 1 and p[0]["role"] == "user" for p in prompts)
    # one image-free sample per completion, without gradients
    ((prompt_ids, images, multimodal, n),) = calls.generated
    assert (prompt_ids, images, multimodal, n) == ([[7], [7, 7]], None, {"multi": "modal"}, 1)
    assert calls.grad is False
    # TRL's reward functions see each row's second-pass answer
    (scored,) = calls.scored
    assert [row["self_reward_responses"] for row in scored] == ["ans0", "ans1!"]
    metrics = trainer._metrics["train"]
    assert metrics["self_reward/description_missing"] == [0.5]
    assert metrics["self_reward/second_pass_length"] == [(4 + 5) / 2]
    assert trainer._metrics["eval"] == {}


def test_an_empty_description_when_asked_and_metrics_of_evaluation(monkeypatch):
    trainer, calls = _trainer(monkeypatch, missing="empty", training=False)
    rows = [{"problem": "Q", "answer": "1"}] * 3
    trainer._calculate_rewards(
        rows, ["p"] * 3, ["\\boxed{1}", "x", "<description>d</description>"], None
    )
    assert [p[0]["content"].splitlines()[0] for p in calls.tokenized[0]] == [
        "Text description: ",
        "Text description: ",
        "Text description: d",
    ]
    assert trainer._metrics["eval"]["self_reward/description_missing"] == [2 / 3]
    assert trainer._metrics["train"] == {}


def test_a_dataset_without_the_question_column_is_named(monkeypatch):
    trainer, calls = _trainer(monkeypatch)
    with pytest.raises(KeyError, match="self_reward needs the dataset column 'problem'"):
        trainer.second_pass([{"question": "Q"}], ["x"])
    assert calls.tokenized == []


def test_by_default_a_response_without_description_is_sent_whole():
    from vlrl.algorithms.self_reward import second_pass_prompts

    text = "<think>t</think>\\boxed{2}"
    assert second_pass_description(text) == text
    ((turn,),) = second_pass_prompts([text], ["Q"])
    assert turn["content"].startswith(f"Text description: {text}\nQuestion: Q\n")


def test_init_hands_trl_its_arguments_and_keeps_the_settings(monkeypatch) -> None:
    from trl import GRPOTrainer

    seen = {}
    monkeypatch.setattr(GRPOTrainer, "__init__", lambda self, *a, **kw: seen.update(a=a, kw=kw))
    settings = object()
    trainer = SelfRewardGRPOTrainer("model", settings=settings, args="a", seed=3)
    assert seen == {"a": ("model",), "kw": {"args": "a", "seed": 3}}
    assert trainer.self_reward is settings
