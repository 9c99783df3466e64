"""The sft stage's own decisions, each in process and in milliseconds: the LLaMA-Factory
arguments it writes, which CLI it runs, the files and variables it hands LLaMA-Factory, when it
stops and what a run keeps (vlrl.stages.sft). LLaMA-Factory's training itself is exercised by
the slow tests of test_sft.py and tests/pipeline; here its launch is a recorder."""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vlrl.cluster.threads import KERNEL_VARIABLES, MACHINE_KERNEL_VARIABLES
from vlrl.config import SFTConfig, load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.items.records import Record
from vlrl.stages import sft

EXP = "tiny_shapes"
MAX_STEPS_ENV = "VLRL_SFT_MAX_STEPS"  # vlrl.cluster.llamafactory_train.MAX_STEPS


# train_args -------------------------------------------------------------------------------------
def _cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sft, "has_accelerator", lambda: False)


def _gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sft, "has_accelerator", lambda: True)


def test_full_fine_tuning_on_cpu_with_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key of the yaml for the schema's defaults, on a machine without CUDA: full
    fine-tuning for 2 epochs, no sample limit, no LoRA or DeepSpeed key, and the media directory
    the data directory itself."""
    _cpu(monkeypatch)
    args = sft.train_args(SFTConfig(), Path("m/base"), Path("d/info"), Path("o/sft"), 11)
    assert args == {
        "model_name_or_path": "m/base",
        "trust_remote_code": False,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": "full",
        "freeze_vision_tower": False,
        "freeze_multi_modal_projector": False,
        "image_max_pixels": None,
        "image_min_pixels": None,
        "dataset": "vlrl_train",
        "dataset_dir": "d/info",
        "media_dir": "d/info",
        "template": "qwen2_vl",
        "cutoff_len": 1024,
        "disable_gradient_checkpointing": False,
        "overwrite_cache": True,
        "preprocessing_num_workers": 1,
        "dataloader_num_workers": 0,
        "output_dir": "o/sft",
        "overwrite_output_dir": True,
        "save_strategy": "no",
        "save_only_model": True,
        "logging_steps": 5,
        "plot_loss": False,
        "report_to": "none",
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-5,
        "num_train_epochs": 2.0,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.0,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "seed": 11,
        "data_seed": 11,
        "bf16": False,
        "use_cpu": True,
        "flash_attn": "sdpa",
    }


def test_lora_on_a_gpu_with_every_setting_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """LoRA of rank 16 on every linear layer, the vision tower and projector frozen, a sample
    limit, no gradient checkpointing, bf16 on the GPU with LLaMA-Factory's choice of attention,
    and extra keys (vlrl's own overridable ones and one the schema does not model) last."""
    _gpu(monkeypatch)
    cfg = SFTConfig(
        finetuning_type="lora",
        lora_rank=16,
        freeze_vision_tower=True,
        max_samples=300,
        num_train_epochs=3.5,
        max_steps=7,
        learning_rate=2e-4,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=4,
        processes=4,
        lr_scheduler_type="linear",
        warmup_ratio=0.1,
        weight_decay=0.01,
        max_grad_norm=0.5,
        cutoff_len=4096,
        gradient_checkpointing=False,
        image_max_pixels=802816,
        image_min_pixels=3136,
        box_frame="model_input",
        extra={"logging_steps": 1, "report_to": "wandb", "neftune_noise_alpha": 5},
    )
    args = sft.train_args(
        cfg, Path("models/q"), Path("out/sft/vlrl_sft"), Path("out/sft"), 3, Path("out/data")
    )
    assert args == {
        "model_name_or_path": "models/q",
        "trust_remote_code": False,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": "lora",
        "freeze_vision_tower": True,
        "freeze_multi_modal_projector": True,
        "image_max_pixels": 802816,
        "image_min_pixels": 3136,
        "dataset": "vlrl_train",
        "dataset_dir": "out/sft/vlrl_sft",
        "media_dir": "out/data",
        "template": "qwen2_vl",
        "cutoff_len": 4096,
        "disable_gradient_checkpointing": True,
        "overwrite_cache": True,
        "preprocessing_num_workers": 1,
        "dataloader_num_workers": 0,
        "output_dir": "out/sft",
        "overwrite_output_dir": True,
        "save_strategy": "no",
        "save_only_model": True,
        "logging_steps": 1,
        "plot_loss": False,
        "report_to": "wandb",
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 4,
        "learning_rate": 2e-4,
        "num_train_epochs": 3.5,  # the schedule; max_steps is vlrl's stop, not LLaMA-Factory's
        "lr_scheduler_type": "linear",
        "warmup_ratio": 0.1,
        "weight_decay": 0.01,
        "max_grad_norm": 0.5,
        "seed": 3,
        "data_seed": 3,
        "bf16": True,
        "use_cpu": False,
        "flash_attn": "auto",
        "max_samples": 300,
        "lora_rank": 16,
        "lora_target": "all",
        "neftune_noise_alpha": 5,
    }


def test_deepspeed_names_the_stages_config_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZeRO-3: the yaml names config/deepspeed/zero3.json of the project it runs in; the rest is
    as without DeepSpeed."""
    _cpu(monkeypatch)
    plain = sft.train_args(SFTConfig(), Path("m"), Path("d"), Path("o"), 0)
    args = sft.train_args(SFTConfig(deepspeed="zero3"), Path("m"), Path("d"), Path("o"), 0)
    deepspeed = Path(args.pop("deepspeed"))
    assert args == plain
    assert deepspeed.name == "zero3.json"
    assert deepspeed.resolve() == (project / "config" / "deepspeed" / "zero3.json").resolve()
    zero2 = sft.train_args(SFTConfig(deepspeed="zero2"), Path("m"), Path("d"), Path("o"), 0)
    assert Path(zero2["deepspeed"]).resolve() == (project / "config/deepspeed/zero2.json").resolve()


def test_the_deepspeed_path_is_relative_like_every_other_path(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module's promise: the train yaml names paths relative to the project root, so that
    every checkout hashes the output the same (vision_sr1_cold_start sets sft.deepspeed)."""
    _cpu(monkeypatch)
    args = sft.train_args(SFTConfig(deepspeed="zero3"), Path("m"), Path("d"), Path("o"), 0)
    assert args["deepspeed"] == "config/deepspeed/zero3.json"


def test_lora_rank_is_written_for_lora_only(monkeypatch: pytest.MonkeyPatch) -> None:
    _cpu(monkeypatch)
    full = sft.train_args(SFTConfig(lora_rank=32), Path("m"), Path("d"), Path("o"), 0)
    assert "lora_rank" not in full and "lora_target" not in full
    lora = sft.train_args(
        SFTConfig(finetuning_type="lora", lora_rank=32), Path("m"), Path("d"), Path("o"), 0
    )
    assert (lora["lora_rank"], lora["lora_target"]) == (32, "all")


def test_extra_keys_vlrl_derives_from_the_sft_section_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _cpu(monkeypatch)
    cfg = SFTConfig(extra={"learning_rate": 1.0, "cutoff_len": 8, "logging_steps": 1, "x": 2})
    with pytest.raises(StageError) as err:
        sft.train_args(cfg, Path("m"), Path("d"), Path("o"), 0)
    assert str(err.value) == (
        "sft.extra: ['cutoff_len', 'learning_rate'] are set by vlrl from the sft section; "
        "set the sft keys instead"
    )
    # lora_rank is vlrl's under LoRA only; under full fine-tuning it is the user's to pass
    lora = SFTConfig(finetuning_type="lora", extra={"lora_rank": 4})
    with pytest.raises(StageError) as err:
        sft.train_args(lora, Path("m"), Path("d"), Path("o"), 0)
    assert str(err.value) == (
        "sft.extra: ['lora_rank'] are set by vlrl from the sft section; set the sft keys instead"
    )
    full = sft.train_args(SFTConfig(extra={"lora_rank": 4}), Path("m"), Path("d"), Path("o"), 0)
    assert full["lora_rank"] == 4


def test_every_overridable_key_may_be_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    _cpu(monkeypatch)
    extra = {
        "logging_steps": 2,
        "report_to": "tensorboard",
        "plot_loss": True,
        "save_strategy": "steps",
        "save_only_model": False,
        "preprocessing_num_workers": 4,
        "dataloader_num_workers": 2,
        "overwrite_cache": False,
        "bf16": True,
        "use_cpu": False,
        "flash_attn": "fa2",
        "trust_remote_code": True,
    }
    args = sft.train_args(SFTConfig(extra=extra), Path("m"), Path("d"), Path("o"), 0)
    assert {k: args[k] for k in extra} == extra


# llamafactory_cli ---------------------------------------------------------------------------------
@pytest.fixture()
def no_cli(project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> Path:
    """No $VLRL_LLAMAFACTORY_CLI, no .venv-sft in the project, a PATH without llamafactory-cli;
    returns an empty folder on that PATH."""
    monkeypatch.delenv("VLRL_LLAMAFACTORY_CLI", raising=False)
    bin_dir = tmp_path_factory.mktemp("path-bin")
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_without_any_cli_the_stage_says_how_to_get_one(no_cli: Path) -> None:
    with pytest.raises(StageError) as err:
        sft.llamafactory_cli()
    assert str(err.value) == (
        "llamafactory-cli not found: run `make setup` (creates .venv-sft) "
        "or set VLRL_LLAMAFACTORY_CLI"
    )


def test_the_cli_on_path_is_the_last_resort(no_cli: Path, project: Path) -> None:
    on_path = _executable(no_cli / "llamafactory-cli")
    assert sft.llamafactory_cli() == str(on_path)
    venv = _executable(project / ".venv-sft" / "bin" / "llamafactory-cli")
    assert sft.llamafactory_cli() == str(project.resolve() / ".venv-sft/bin/llamafactory-cli")
    assert venv.is_file()


def test_the_projects_sft_venv_comes_before_path(
    no_cli: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _executable(no_cli / "llamafactory-cli")
    _executable(project / ".venv-sft" / "bin" / "llamafactory-cli")
    # a variable naming no file (or a folder) is passed over, not trusted
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(project / "nowhere" / "llamafactory-cli"))
    assert sft.llamafactory_cli() == str(project.resolve() / ".venv-sft/bin/llamafactory-cli")
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(project))
    assert sft.llamafactory_cli() == str(project.resolve() / ".venv-sft/bin/llamafactory-cli")


def test_the_variable_comes_first(no_cli: Path, project: Path, monkeypatch) -> None:
    _executable(no_cli / "llamafactory-cli")
    _executable(project / ".venv-sft" / "bin" / "llamafactory-cli")
    chosen = project / "elsewhere" / "llamafactory-cli"
    chosen.parent.mkdir()
    chosen.write_text("")  # a file is enough: it is run through its python or as it is
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(chosen))
    assert sft.llamafactory_cli() == str(chosen)


# drop_run_records and _write_json ----------------------------------------------------------------
def test_results_are_written_sorted_indented_and_ending_in_a_newline(tmp_path: Path) -> None:
    (tmp_path / "train_results.json").write_text(
        json.dumps({"train_loss": 1.5, "epoch": 2.0, "train_runtime": 3.0, "total_flos": 7})
    )
    times = sft.drop_run_records(tmp_path)
    assert times == {"train_runtime": 3.0}
    assert (tmp_path / "train_results.json").read_text() == (
        '{\n  "epoch": 2.0,\n  "total_flos": 7,\n  "train_loss": 1.5\n}\n'
    )
    assert not (tmp_path / "all_results.json").exists()  # none is made up


def test_a_trainer_state_without_a_log_history_gets_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 3, "epoch": 1.0}))
    assert sft.drop_run_records(tmp_path) == {}
    assert (tmp_path / "trainer_state.json").read_text() == (
        '{\n  "epoch": 1.0,\n  "global_step": 3,\n  "log_history": []\n}\n'
    )


def test_the_trainer_log_keeps_one_row_a_line_in_its_own_characters(tmp_path: Path) -> None:
    rows = [
        {"current_steps": 5, "loss": 2.5, "elapsed_time": "0:00:01", "note": "größe"},
        {},  # blank lines are skipped, not rows
        {"current_steps": 10, "loss": 1.25, "elapsed_time": "0:00:03", "remaining_time": "0"},
    ]
    text = "\n".join(json.dumps(r, ensure_ascii=False) if r else "  " for r in rows) + "\n"
    (tmp_path / "trainer_log.jsonl").write_text(text, encoding="utf-8")
    assert sft.drop_run_records(tmp_path) == {"elapsed_time": "0:00:03"}  # the last row's
    assert (tmp_path / "trainer_log.jsonl").read_text(encoding="utf-8") == (
        '{"current_steps": 5, "loss": 2.5, "note": "größe"}\n{"current_steps": 10, "loss": 1.25}\n'
    )


def test_an_empty_output_gives_no_times(tmp_path: Path) -> None:
    assert sft.drop_run_records(tmp_path) == {}
    assert list(tmp_path.iterdir()) == []


# boxes_in_training_frame --------------------------------------------------------------------------
class ImageProcessors:
    """Stands in for transformers' AutoImageProcessor and vlrl's llamafactory_input_size."""

    def __init__(self, frame: list[int]) -> None:
        self.frame = frame
        self.loaded: list[Path] = []
        self.sized: list[tuple] = []
        self.processor = object()

    def from_pretrained(self, model_dir):
        self.loaded.append(model_dir)
        return self.processor

    def input_size(self, image_processor, width, height, min_pixels, max_pixels):
        assert image_processor is self.processor
        self.sized.append((width, height, min_pixels, max_pixels))
        return self.frame


@pytest.fixture()
def processors(monkeypatch: pytest.MonkeyPatch) -> ImageProcessors:
    """transformers itself is not imported (seconds): the stage's import finds the stand-in."""
    stand_in = ImageProcessors([50, 100])
    fake = types.ModuleType("transformers")
    fake.AutoImageProcessor = SimpleNamespace(from_pretrained=stand_in.from_pretrained)
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(sft, "llamafactory_input_size", stand_in.input_size)
    return stand_in


def _record(rid: str, **fields) -> Record:
    base = {
        "id": rid,
        "images": ["a.png"],
        "problem": "Where is the red one?",
        "answer": "[0, 0, 1, 1]",
        "problem_type": "grounding",
        "data_source": "t",
    }
    return Record(**{**base, **fields})


def test_boxes_move_into_the_frame_of_the_first_image(
    processors: ImageProcessors, tmp_path: Path
) -> None:
    """The model directory's image processor and the sft section's pixel bounds size the frame;
    each box of a record is scaled from its first image's size into it."""
    boxed = _record(
        "b", boxes=[[10, 20, 30, 40], [0, 0, 200, 100]], image_sizes=[[200, 100], [7, 7]]
    )
    plain = _record("p")
    cfg = SFTConfig(image_min_pixels=1000, image_max_pixels=9000)
    moved = sft.boxes_in_training_frame([plain, boxed], tmp_path / "model", cfg)
    assert processors.loaded == [tmp_path / "model"]
    assert processors.sized == [(200, 100, 1000, 9000)]
    assert moved[0] is plain
    assert moved[1].boxes == [[2.5, 20.0, 7.5, 40.0], [0.0, 0.0, 50.0, 100.0]]
    assert moved[1].model_copy(update={"boxes": boxed.boxes}) == boxed
    assert boxed.boxes == [[10, 20, 30, 40], [0, 0, 200, 100]]  # the input is left as it was


def test_a_boxed_record_without_image_sizes_is_named(
    processors: ImageProcessors, tmp_path: Path
) -> None:
    records = [_record("fine"), _record("r7", boxes=[[1, 1, 2, 2]])]
    with pytest.raises(StageError) as err:
        sft.boxes_in_training_frame(records, tmp_path, SFTConfig())
    assert str(err.value) == (
        "sft: record r7 has boxes but no image_sizes, which sft.box_frame: model_input needs "
        "to move them into the model's frame"
    )


# run ----------------------------------------------------------------------------------------------
def _row(i: int, **fields) -> dict:
    return {
        "id": f"r{i}",
        "images": ["img.png"],
        "problem": "How many?",
        "answer": "2",
        "problem_type": "numerical",
        "data_source": "t",
        "reasoning": "two shapes",
        **fields,
    }


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


class Launcher:
    """Stands in for sft.run_group (LLaMA-Factory's launch): records the command, environment and
    output stream it was given and the files of the work folder then, writes what a finished
    training leaves into the command's ``output_dir=`` and returns ``returncode``."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.returncode = 0
        self.writes: dict[str, str] = {"config.json": "{}", "model.safetensors": ""}

    def __call__(self, cmd, env, stdout):
        overrides = dict(
            a.split("=", 1) for a in cmd if a.startswith(("output_dir=", "dataset_dir="))
        )
        out, work = Path(overrides["output_dir"]), Path(overrides["dataset_dir"])
        files = {p.name: p.read_text(encoding="utf-8") for p in work.iterdir()}
        self.calls.append({"cmd": cmd, "env": env, "stdout": stdout, "out": out, "files": files})
        for name, text in self.writes.items():
            (out / name).write_text(text)
        return self.returncode

    @property
    def call(self) -> dict:
        (call,) = self.calls
        return call


@pytest.fixture()
def stage(project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> Launcher:
    """tiny_shapes' inputs in place (six train records with a reasoning target, the base model's
    config), a stand-in CLI outside the project, no CUDA device, no variable of the launch or the
    CPU kernels in the environment, and a recorder for the launch."""
    for name in (
        MAX_STEPS_ENV,
        "HF_HUB_OFFLINE",
        "DS_ACCELERATOR",
        "SLURM_JOB_ID",
        *KERNEL_VARIABLES,
        *MACHINE_KERNEL_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
    data = sft.sharing.data_dir(EXP)
    data.mkdir(parents=True)
    from PIL import Image

    Image.new("RGB", (8, 6)).save(data / "img.png")
    _write_rows(data / "train.jsonl", [_row(i) for i in range(6)])
    model = paths.model_resource("tiny-qwen2.5-vl")
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    cli = tmp_path_factory.mktemp("sft-env") / "bin" / "llamafactory-cli"
    cli.parent.mkdir()
    cli.write_text("")  # no python beside it: run as it is
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(cli))
    _cpu(monkeypatch)
    launcher = Launcher()
    monkeypatch.setattr(sft, "run_group", launcher)
    return launcher


def _cli() -> str:
    return os.environ["VLRL_LLAMAFACTORY_CLI"]


def _exp(*overrides: str):
    return load_experiment(EXP, ["sft.processes=1", "sft.num_train_epochs=1.5", *overrides])


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.sft"]


FINAL = Path("results/tiny_shapes/sft")


def test_a_disabled_stage_refuses_to_run(stage: Launcher) -> None:
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp("sft.enabled=false"))
    assert str(err.value) == (
        "experiment tiny_shapes: sft.enabled is false; the workflow should not run sft"
    )
    assert not stage.calls


def test_each_missing_input_is_named(stage: Launcher) -> None:
    train = Path("results/tiny_shapes/data/train.jsonl")
    config = Path("resources/models/tiny-qwen2.5-vl/config.json")
    config.unlink()
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert str(err.value) == (
        f"sft: input {config} is missing; run the data / base_model stages first"
    )
    train.unlink()
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert (
        str(err.value) == f"sft: input {train} is missing; run the data / base_model stages first"
    )
    assert not stage.calls and not FINAL.exists()


def test_one_process_trains_the_records_into_the_output(
    stage: Launcher, caplog: pytest.LogCaptureFixture
) -> None:
    """One process: the CLI itself, on the work folder's yaml, into the temporary output; the
    launch's variables on top of this process's; the files LLaMA-Factory trains from kept."""
    before = dict(os.environ)
    with caplog.at_level(logging.INFO, logger="vlrl.stages.sft"):
        times = sft.run(EXP, _exp("seed=5"))
    call = stage.call
    out = call["out"]
    assert out.parent.resolve() == FINAL.parent.resolve() and out.name.startswith("sft")
    assert not out.exists()  # published as the output
    cli = _cli()
    assert call["cmd"] == [
        cli,
        "train",
        f"{out}/vlrl_sft/train.yaml",
        f"output_dir={out}",
        f"dataset_dir={out}/vlrl_sft",
    ]
    assert call["env"] == {
        **before,
        "DISABLE_VERSION_CHECK": "1",
        "WANDB_DISABLED": "true",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    assert call["stdout"] is sys.stderr
    assert sorted(call["files"]) == ["dataset_info.json", "train.yaml", "vlrl_train.json"]
    assert times == {}
    assert sorted(p.name for p in FINAL.iterdir()) == [
        "config.json",
        "model.safetensors",
        "vlrl_sft",
    ]
    work = FINAL / "vlrl_sft"
    assert {p.name: p.read_text() for p in work.iterdir()} == call["files"]
    text = call["files"]["train.yaml"]
    assert text.startswith("model_name_or_path: resources/models/tiny-qwen2.5-vl\n")
    saved = yaml.safe_load(text)
    assert {
        k: saved[k] for k in ("dataset_dir", "media_dir", "output_dir", "seed", "data_seed")
    } == {
        "dataset_dir": "results/tiny_shapes/sft/vlrl_sft",  # the final folders, not the temporary
        "media_dir": "results/tiny_shapes/data",
        "output_dir": "results/tiny_shapes/sft",
        "seed": 5,
        "data_seed": 5,
    }
    assert (saved["num_train_epochs"], saved["dataset"]) == (1.5, "vlrl_train")
    assert list(saved)[:4] == ["model_name_or_path", "trust_remote_code", "stage", "do_train"]
    assert _messages(caplog) == [
        f"sft: 6 samples, 1.5 epochs, 1 process(es): {shlex.join(call['cmd'])}",
        "sft: CPU kernel settings passed to LLaMA-Factory: none",
        "sft: run times (kept out of results/tiny_shapes/sft): {}",
        "sft: wrote results/tiny_shapes/sft",
    ]


def test_the_dataset_files_llamafactory_reads(stage: Launcher) -> None:
    from vlrl.items.prompts import PROMPTS
    from vlrl.items.records import read_records

    train = Path("results/tiny_shapes/data/train.jsonl")
    _write_rows(train, [_row(0, problem="Wie viele Würfel?"), _row(1)])
    sft.run(EXP, _exp())
    files = stage.call["files"]
    assert files["dataset_info.json"] == json.dumps(
        {
            "vlrl_train": {
                "file_name": "vlrl_train.json",
                "formatting": "sharegpt",
                "columns": {"messages": "messages", "system": "system", "images": "images"},
                "tags": {
                    "role_tag": "role",
                    "content_tag": "content",
                    "user_tag": "user",
                    "assistant_tag": "assistant",
                },
            }
        },
        indent=2,
    )
    assert "Wie viele Würfel?" in files["vlrl_train.json"]  # as it is, not \u-escaped
    rows = json.loads(files["vlrl_train.json"])
    assert rows == [sft.to_sharegpt(r, PROMPTS["think_answer"]) for r in read_records(train)]
    assert [row["images"] for row in rows] == [["img.png"], ["img.png"]]


def test_the_teachers_records_come_before_the_train_split(stage: Launcher) -> None:
    _write_rows(Path("results/tiny_shapes/data/sft_train.jsonl"), [_row(7), _row(8), _row(9)])
    sft.run(EXP, _exp())
    assert len(json.loads(stage.call["files"]["vlrl_train.json"])) == 3


def test_max_samples_limits_the_records_read(stage: Launcher) -> None:
    sft.run(EXP, _exp("sft.max_samples=4"))
    assert len(json.loads(stage.call["files"]["vlrl_train.json"])) == 4
    assert yaml.safe_load(stage.call["files"]["train.yaml"])["max_samples"] == 4


def test_boxes_move_into_the_model_frame_only_when_asked(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = []

    def boxes_in_training_frame(records, model_dir, cfg):
        given.append(([r.id for r in records], model_dir, cfg))
        return [r.model_copy(update={"reasoning": "moved"}) for r in records[:2]]

    monkeypatch.setattr(sft, "boxes_in_training_frame", boxes_in_training_frame)
    sft.run(EXP, _exp())
    assert not given and len(json.loads(stage.call["files"]["vlrl_train.json"])) == 6
    cfg = _exp("sft.box_frame=model_input")
    sft.run(EXP, cfg)
    assert given == [
        ([f"r{i}" for i in range(6)], Path("resources/models/tiny-qwen2.5-vl"), cfg.sft)
    ]
    assert given[0][2] is cfg.sft
    rows = json.loads(stage.calls[-1]["files"]["vlrl_train.json"])
    assert len(rows) == 2 and all("moved" in row["messages"][1]["content"] for row in rows)


def _without_reasoning(n: int, total: int) -> list[str]:
    rows = [_row(i, reasoning=None if i % 2 else "") for i in range(n)]
    rows += [_row(i) for i in range(n, total)]
    _write_rows(Path("results/tiny_shapes/data/train.jsonl"), rows)
    return [r["id"] for r in rows[:n]]


def test_records_without_reasoning_stop_the_stage_naming_twenty(stage: Launcher) -> None:
    ids = _without_reasoning(21, 23)
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert str(err.value) == (
        "sft: 21 of 23 records in results/tiny_shapes/data/train.jsonl have no reasoning "
        f"target: {', '.join(ids[:20])} and 1 more. Fill them in, or set "
        "sft.missing_reasoning: drop"
    )
    assert not stage.calls and not list(Path("results/tiny_shapes").glob("sft*"))


def test_twenty_records_without_reasoning_are_all_named(stage: Launcher) -> None:
    ids = _without_reasoning(20, 22)
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert str(err.value) == (
        "sft: 20 of 22 records in results/tiny_shapes/data/train.jsonl have no reasoning "
        f"target: {', '.join(ids)}. Fill them in, or set sft.missing_reasoning: drop"
    )


def test_a_sources_own_answer_needs_no_reasoning(stage: Launcher) -> None:
    rows = [_row(0, reasoning=None, response="<think>x</think><answer>2</answer>"), _row(1)]
    rows.append(
        _row(
            2,
            reasoning=None,
            turns=[
                {"role": "user", "content": "<image>How many?"},
                {"role": "assistant", "content": "2"},
            ],
        )
    )
    _write_rows(Path("results/tiny_shapes/data/train.jsonl"), rows)
    sft.run(EXP, _exp())
    assert len(json.loads(stage.call["files"]["vlrl_train.json"])) == 3
    assert not (FINAL / "vlrl_sft" / "dropped.json").exists()


def test_records_without_reasoning_dropped_are_counted_and_logged(
    stage: Launcher, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _without_reasoning(2, 5)
    with caplog.at_level(logging.INFO, logger="vlrl.stages.sft"):
        sft.run(EXP, _exp("sft.missing_reasoning=drop"))
    assert len(json.loads(stage.call["files"]["vlrl_train.json"])) == 3
    assert stage.call["files"]["dropped.json"] == (
        '{\n  "ids": [\n    "r0",\n    "r1"\n  ],\n  "missing_reasoning": 2\n}\n'
    )
    assert ids == ["r0", "r1"]
    assert "sft: dropped 2 records without a reasoning target" in _messages(caplog)
    assert (FINAL / "vlrl_sft" / "dropped.json").is_file()


def test_no_record_left_to_train_on_is_an_error(stage: Launcher) -> None:
    _without_reasoning(3, 3)
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp("sft.missing_reasoning=drop"))
    assert str(err.value) == (
        "sft: no record in results/tiny_shapes/data/train.jsonl has a reasoning target"
    )
    assert not stage.calls and not list(Path("results/tiny_shapes").glob("sft*"))


def test_max_steps_is_said_in_the_yaml_and_passed_to_the_ranks(
    stage: Launcher, caplog: pytest.LogCaptureFixture
) -> None:
    stage.writes["trainer_state.json"] = json.dumps({"global_step": 3, "log_history": []})
    with caplog.at_level(logging.INFO, logger="vlrl.stages.sft"):
        sft.run(EXP, _exp("sft.max_steps=3", "sft.processes=2"))
    call = stage.call
    assert call["files"]["train.yaml"].startswith(
        "# vlrl stops this run after step 3 of its schedule (sft.max_steps): "
        "VLRL_SFT_MAX_STEPS=3 python -m vlrl.cluster.llamafactory_train train <this file>\n"
        "model_name_or_path: resources/models/tiny-qwen2.5-vl\n"
    )
    assert "max_steps" not in yaml.safe_load(call["files"]["train.yaml"])
    assert call["env"][MAX_STEPS_ENV] == "3"
    assert _messages(caplog)[0] == (
        f"sft: 6 samples, 1.5 epochs (stopping after step 3), 2 process(es): "
        f"{shlex.join(call['cmd'])}"
    )


def test_without_max_steps_an_inherited_stop_is_not_passed_on(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_STEPS_ENV, "2")
    sft.run(EXP, _exp())
    assert MAX_STEPS_ENV not in stage.call["env"]
    assert not stage.call["files"]["train.yaml"].startswith("#")


def test_several_processes_on_one_node_go_through_torchrun(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LLaMA-Factory's own torchrun launch, found beside the CLI; an offline setting the caller
    made is kept."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    sft.run(EXP, _exp("sft.processes=2"))
    env = stage.call["env"]
    launch = {k: env[k] for k in ("FORCE_TORCHRUN", "NNODES", "NPROC_PER_NODE", "NODE_RANK")}
    assert launch == {"FORCE_TORCHRUN": "1", "NNODES": "1", "NPROC_PER_NODE": "2", "NODE_RANK": "0"}
    assert env["MASTER_ADDR"] == "127.0.0.1"
    assert env["PATH"] == f"{os.path.dirname(_cli())}:/usr/bin:/bin"
    assert env["HF_HUB_OFFLINE"] == "0"
    assert stage.call["cmd"][:2] == [_cli(), "train"]


def test_without_a_path_the_launch_finds_torchrun_beside_the_cli(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PATH")
    sft.run(EXP, _exp("sft.processes=2"))
    assert stage.call["env"]["PATH"] == os.path.dirname(_cli())


def test_several_nodes_meet_at_the_jobs_rendezvous(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two nodes of two processes with three threads each: one srun task per node, sized 6 CPUs,
    at the Slurm job's rendezvous."""
    from vlrl.cluster.distributed import Rendezvous

    asked = []

    def rendezvous_for(topo):
        asked.append(topo)
        return Rendezvous("node01", 29555, "4242")

    monkeypatch.setattr(sft, "rendezvous_for", rendezvous_for)
    cfg = _exp(
        "sft.processes=2", "cpu_threads=3", "resources.sft.nodes=2", "resources.sft.mem_mb=9000"
    )
    sft.run(EXP, cfg)
    (topo,) = asked
    assert (topo.nodes, topo.processes_per_node, topo.cpus_per_node) == (2, 2, 6)
    call = stage.call
    out = call["out"]
    assert call["cmd"] == [
        "srun",
        "--jobid=4242",
        "--nodes=2",
        "--ntasks=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=6",
        "--mem=9000",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
        sys.executable,
        "-m",
        "vlrl.cluster.relay",
        "--",
        "bash",
        "-c",
        'NODE_RANK="$SLURM_NODEID" exec "$0" "$@"',
        _cli(),
        "train",
        f"{out}/vlrl_sft/train.yaml",
        f"output_dir={out}",
        f"dataset_dir={out}/vlrl_sft",
    ]
    env = call["env"]
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["NNODES"]) == ("node01", "29555", "2")


def test_deepspeed_gets_the_variables_of_the_sft_environment(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = []

    def deepspeed_env(cuda, prefix, env):
        given.append((cuda, prefix, dict(env)))
        return {"DS_ACCELERATOR": "cpu", "TORCH_EXTENSIONS_DIR": "/ext"}

    monkeypatch.setattr(sft, "deepspeed_env", deepspeed_env)
    sft.run(EXP, _exp())
    assert not given and "DS_ACCELERATOR" not in stage.calls[-1]["env"]
    sft.run(EXP, _exp("sft.deepspeed=zero2"))
    (cuda, prefix, env) = given[0]
    assert (cuda, prefix) == (False, str(Path(_cli()).parent.parent))
    assert env["DISABLE_VERSION_CHECK"] == "1"  # the launch's variables, for "values set win"
    launched = stage.calls[-1]["env"]
    assert (launched["DS_ACCELERATOR"], launched["TORCH_EXTENSIONS_DIR"]) == ("cpu", "/ext")
    assert yaml.safe_load(stage.calls[-1]["files"]["train.yaml"])["deepspeed"].endswith(
        "config/deepspeed/zero2.json"
    )


def test_the_cpu_kernel_settings_are_logged(
    stage: Launcher, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MKL_DEBUG_CPU_TYPE", "5")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    with caplog.at_level(logging.INFO, logger="vlrl.stages.sft"):
        sft.run(EXP, _exp())
    assert _messages(caplog)[1] == (
        "sft: CPU kernel settings passed to LLaMA-Factory: "
        "{'ATEN_CPU_CAPABILITY': 'default', 'MKL_DEBUG_CPU_TYPE': '5'}"
    )


def test_a_failed_training_leaves_no_output(stage: Launcher) -> None:
    stage.returncode = 3
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert str(err.value) == "sft: llamafactory-cli train exited with 3 (see the log above)"
    assert not list(Path("results/tiny_shapes").glob("sft*"))


@pytest.mark.parametrize(
    ("writes", "missing"),
    [({"config.json": "{}"}, "model.safetensors"), ({"model.safetensors": ""}, "config.json")],
)
def test_a_training_that_wrote_no_model_is_an_error(
    stage: Launcher, writes: dict, missing: str
) -> None:
    stage.writes = writes
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp())
    assert str(err.value) == (
        f"sft: LLaMA-Factory finished but wrote no {missing} in {stage.call['out']}"
    )
    assert not list(Path("results/tiny_shapes").glob("sft*"))


def test_sharded_weights_are_a_model(stage: Launcher) -> None:
    stage.writes = {"config.json": "{}", "model-00001-of-00002.safetensors": ""}
    sft.run(EXP, _exp())
    assert (FINAL / "model-00001-of-00002.safetensors").is_file()


def test_a_run_that_did_not_stop_at_max_steps_is_an_error(stage: Launcher) -> None:
    stage.writes["trainer_state.json"] = json.dumps({"global_step": 5})
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp("sft.max_steps=3"))
    out = stage.call["out"]
    assert str(err.value) == (
        "sft: sft.max_steps is 3 but LLaMA-Factory trained 5 steps "
        f"({shlex.join([_cli(), 'train', f'{out}/vlrl_sft/train.yaml'])} does not stop the run)"
    )
    assert not list(Path("results/tiny_shapes").glob("sft*"))


def test_a_run_without_a_trainer_state_is_not_taken_for_stopped(stage: Launcher) -> None:
    with pytest.raises(StageError) as err:
        sft.run(EXP, _exp("sft.max_steps=3"))
    assert str(err.value) == (
        "sft: sft.max_steps is 3 but LLaMA-Factory trained an unknown number of steps "
        f"({shlex.join(stage.call['cmd'][:3])} does not stop the run)"
    )


def test_the_run_times_go_to_the_log_not_the_output(
    stage: Launcher, caplog: pytest.LogCaptureFixture
) -> None:
    stage.writes.update(
        {
            "README.md": "base_model: /abs",
            "all_results.json": json.dumps({"train_runtime": 1.5, "train_loss": 0.5}),
            "trainer_log.jsonl": json.dumps({"loss": 0.5, "elapsed_time": "0:00:02"}) + "\n",
        }
    )
    with caplog.at_level(logging.INFO, logger="vlrl.stages.sft"):
        times = sft.run(EXP, _exp())
    assert times == {"train_runtime": 1.5, "elapsed_time": "0:00:02"}
    assert not (FINAL / "README.md").exists()
    assert json.loads((FINAL / "all_results.json").read_text()) == {"train_loss": 0.5}
    assert _messages(caplog)[-2:] == [
        'sft: run times (kept out of results/tiny_shapes/sft): {"train_runtime": 1.5, '
        '"elapsed_time": "0:00:02"}',
        "sft: wrote results/tiny_shapes/sft",
    ]
