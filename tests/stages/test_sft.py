"""sft stage: the LLaMA-Factory files it writes, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlrl.config import SFTConfig, load_experiment
from vlrl.data.convert import SHAREGPT_DATASET_INFO, to_sharegpt
from vlrl.errors import StageError
from vlrl.prompts import PROMPTS
from vlrl.records import read_records
from vlrl.stages import sft


def test_train_args_on_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sft, "has_accelerator", lambda: False)
    args = sft.train_args(SFTConfig(extra={"logging_steps": 1}), tmp_path, tmp_path, tmp_path, 7)
    assert args["template"] == "qwen2_vl"
    assert (args["bf16"], args["use_cpu"]) == (False, True)  # bf16 on CPU raises in transformers
    assert args["seed"] == args["data_seed"] == 7
    assert args["logging_steps"] == 1  # extra keys pass through last
    assert "lora_rank" not in args


def test_lora_args(tmp_path: Path) -> None:
    args = sft.train_args(
        SFTConfig(finetuning_type="lora", lora_rank=4), tmp_path, tmp_path, tmp_path, 0
    )
    assert args["finetuning_type"] == "lora" and args["lora_rank"] == 4


def test_sharegpt_rows_match_llamafactory_format(shapes_data: Path) -> None:
    records = read_records(shapes_data / "train.jsonl")
    row = to_sharegpt(records[0], PROMPTS["think_answer"])
    user, assistant = row["messages"]
    # LLaMA-Factory needs one <image> per image (libraries.md §2)
    assert user["content"].count("<image>") == len(row["images"]) == 1
    # relative to the data directory (LLaMA-Factory's media_dir): the same in every checkout
    assert not Path(row["images"][0]).is_absolute()
    assert (shapes_data / row["images"][0]).is_file()
    assert PROMPTS["think_answer"].is_well_formed(assistant["content"])
    assert row["system"] == ""  # think_answer has none: LLaMA-Factory's template default applies
    assert set(SHAREGPT_DATASET_INFO["columns"]) == {"messages", "system", "images"}


def test_missing_inputs_named(project: Path) -> None:
    with pytest.raises(StageError, match=r"train\.jsonl"):
        sft.run("tiny_shapes", load_experiment("tiny_shapes"))
    assert not (project / "results/tiny_shapes/sft").exists()


def test_llamafactory_cli_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "llamafactory-cli"
    fake.write_text("")
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(fake))
    assert sft.llamafactory_cli() == str(fake)


def test_dataset_info_is_json_serialisable() -> None:
    json.dumps(SHAREGPT_DATASET_INFO)


def test_train_yaml_holds_no_absolute_path() -> None:
    args = sft.train_args(
        SFTConfig(),
        Path("resources/models/m"),
        Path("results/e/sft/vlrl_sft"),
        Path("results/e/sft"),
        0,
        media_dir=Path("results/e/data"),
    )
    assert args["media_dir"] == "results/e/data"
    assert not [v for v in args.values() if isinstance(v, str) and v.startswith("/")]


def test_drop_run_records_keeps_the_curve_not_the_times(tmp_path: Path) -> None:
    """What LLaMA-Factory 0.9.5 writes that varies from run to run (seen in two checkouts)."""
    (tmp_path / "README.md").write_text("base_model: /abs/path\n- name: sft.tmp-abc\n")
    (tmp_path / "training_args.bin").write_bytes(b"pickle")
    results = {"epoch": 2.0, "train_loss": 5.7, "train_runtime": 1.8, "train_steps_per_second": 4.3}
    for name in sft.RESULT_FILES:
        (tmp_path / name).write_text(json.dumps(results))
    state = {"global_step": 8, "log_history": [{"loss": 5.9, "step": 5}, {**results, "step": 8}]}
    (tmp_path / sft.TRAINER_STATE).write_text(json.dumps(state))
    row = {"current_steps": 5, "loss": 5.9, "elapsed_time": "0:00:01", "remaining_time": "0:00:00"}
    (tmp_path / sft.TRAINER_LOG).write_text(json.dumps(row) + "\n")

    times = sft.drop_run_records(tmp_path)

    assert times == {"train_runtime": 1.8, "train_steps_per_second": 4.3, "elapsed_time": "0:00:01"}
    assert not (tmp_path / "README.md").exists() and not (tmp_path / "training_args.bin").exists()
    kept = {"epoch": 2.0, "train_loss": 5.7}
    assert json.loads((tmp_path / "all_results.json").read_text()) == kept
    history = json.loads((tmp_path / sft.TRAINER_STATE).read_text())["log_history"]
    assert history == [{"loss": 5.9, "step": 5}, {**kept, "step": 8}]
    assert json.loads((tmp_path / sft.TRAINER_LOG).read_text()) == {"current_steps": 5, "loss": 5.9}
