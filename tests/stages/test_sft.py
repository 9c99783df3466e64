"""sft stage: the LLaMA-Factory files it writes, and its errors."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import session_processes
from schedules import linear_rates

from vlrl.config import SFTConfig, load_experiment
from vlrl.core.errors import StageError
from vlrl.data.convert import SHAREGPT_DATASET_INFO, to_sharegpt
from vlrl.items.prompts import PROMPTS
from vlrl.items.records import read_records
from vlrl.stages import sft

VLRL = Path(sys.executable).parent / "vlrl"


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
    # LLaMA-Factory needs one <image> per image (0.9.5 data/mm_plugin.py _validate_messages)
    assert user["content"].count("<image>") == len(row["images"]) == 1
    # relative to the data directory (LLaMA-Factory's media_dir): the same in every checkout
    assert not Path(row["images"][0]).is_absolute()
    assert (shapes_data / row["images"][0]).is_file()
    assert PROMPTS["think_answer"].is_well_formed(assistant["content"])
    assert row["system"] == ""  # think_answer has none: LLaMA-Factory's template default applies
    assert set(SHAREGPT_DATASET_INFO["columns"]) == {"messages", "system", "images"}


def test_boxes_are_taught_in_the_frame_the_model_sees(tiny_model_dir: Path) -> None:
    """``sft.box_frame: model_input``: a 300x97 picture within 12544 px is shrunk by
    LLaMA-Factory to 196x63 and by the tiny model's processor to 196x56, the frame whose pixels
    the target box is written in."""
    from vlrl.items.records import Record

    rec = Record(
        id="r1", images=["a.png"], problem="the red one", answer="[30, 10, 150, 90]",
        problem_type="grounding", data_source="t", boxes=[[30, 10, 150, 90]],
        image_sizes=[[300, 97]],
    )  # fmt: skip
    cfg = SFTConfig(image_min_pixels=3136, image_max_pixels=112 * 112)
    (moved,) = sft.boxes_in_training_frame([rec], tiny_model_dir, cfg)
    assert moved.boxes == [pytest.approx([19.6, 10 / 97 * 56, 98.0, 90 / 97 * 56])]
    row = to_sharegpt(moved, PROMPTS["rec_baseline"])
    assert row["messages"][1]["content"] == '{"bbox_2d": [20, 6, 98, 52]}'
    # a record without a box is left as it is; one without its picture's size is named
    plain = rec.model_copy(update={"boxes": [], "id": "r2"})
    assert sft.boxes_in_training_frame([plain], tiny_model_dir, cfg) == [plain]
    unsized = rec.model_copy(update={"image_sizes": None, "id": "r3"})
    with pytest.raises(StageError, match="record r3 has boxes but no image_sizes"):
        sft.boxes_in_training_frame([unsized], tiny_model_dir, cfg)


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


@pytest.fixture()
def some_without_reasoning(project: Path, tiny_model_dir: Path, shapes_data: Path) -> list[str]:
    """The tiny model and shapes data in place, two train records without a reasoning target."""
    from vlrl.core import paths
    from vlrl.core.files import read_jsonl, write_jsonl

    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    data = paths.data_dir("tiny_shapes")
    shutil.copytree(shapes_data, data)
    rows = read_jsonl(data / "train.jsonl")
    rows[3]["reasoning"], rows[7]["reasoning"] = None, ""
    write_jsonl(data / "train.jsonl", rows)
    return [rows[3]["id"], rows[7]["id"]]


def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for llamafactory-cli that writes the files a finished training leaves (the
    real one runs in tests/pipeline); it records the dataset it was given."""
    script = tmp_path / "fake-llamafactory-cli"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case $a in output_dir=*) out=${a#output_dir=};; '
        "dataset_dir=*) data=${a#dataset_dir=};; esac; done\n"
        'echo {} > "$out/config.json"; : > "$out/model.safetensors"\n'
        'cp "$data/vlrl_train.json" "$out/trained_on.json"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(script))
    return script


def test_records_without_reasoning_stop_the_stage_by_id(
    some_without_reasoning: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(tmp_path, monkeypatch)
    with pytest.raises(StageError, match="2 of 40 records") as caught:
        sft.run("tiny_shapes", load_experiment("tiny_shapes"))
    for rid in some_without_reasoning:
        assert rid in str(caught.value)
    assert "sft.missing_reasoning: drop" in str(caught.value)
    assert not list(Path("results/tiny_shapes").glob("sft*"))


def test_records_without_reasoning_dropped_and_counted(
    some_without_reasoning: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(tmp_path, monkeypatch)
    sft.run("tiny_shapes", load_experiment("tiny_shapes", ["sft.missing_reasoning=drop"]))
    out = Path("results/tiny_shapes/sft")
    assert len(json.loads((out / "trained_on.json").read_text())) == 38
    dropped = json.loads((out / sft.WORK / "dropped.json").read_text())
    assert dropped == {"missing_reasoning": 2, "ids": some_without_reasoning}


@pytest.mark.slow
def test_killed_sft_stops_llamafactory_and_leaves_no_output(
    project: Path, tiny_model_dir: Path, shapes_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (Snakemake cancelling the job, a cluster time limit) stops LLaMA-Factory too and
    removes the half-written output; the rerun trains."""
    from vlrl.core import paths

    repo = Path(__file__).resolve().parents[2]
    cli = repo / ".venv-sft" / "bin" / "llamafactory-cli"
    monkeypatch.setenv("VLRL_LLAMAFACTORY_CLI", str(cli))

    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    cmd = [str(VLRL), "sft", "tiny_shapes", "--set", "sft.num_train_epochs=200"]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline and not list(Path("results/tiny_shapes").glob("sft*/*.jsonl")):
        time.sleep(0.2)  # LLaMA-Factory is training: it has logged a step (trainer_log.jsonl)
    assert proc.poll() is None, f"vlrl sft exited early with {proc.returncode}"
    assert any("llamafactory_train" in c for c in session_processes(proc.pid, wait_s=0))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert not session_processes(proc.pid), "LLaMA-Factory outlived the killed stage"
    assert not list(Path("results/tiny_shapes").glob("sft*")), "a killed run left its output"

    sft.run("tiny_shapes", load_experiment("tiny_shapes", ["sft.num_train_epochs=1"]))
    assert (Path("results/tiny_shapes/sft") / "config.json").is_file()


def test_a_stand_in_cli_runs_as_it_is_and_a_real_one_under_vlrls_callbacks(tmp_path: Path) -> None:
    stand_in = tmp_path / "bin" / "llamafactory-cli"
    stand_in.parent.mkdir()
    stand_in.write_text("")
    assert sft.train_command(str(stand_in)) == [str(stand_in), "train"]
    (tmp_path / "bin" / "python").write_text("")
    python = str(tmp_path / "bin" / "python")
    assert sft.train_command(str(stand_in)) == [
        python,
        *("-m", "vlrl.cluster.llamafactory_train", "train"),
    ]


def test_a_cli_that_does_not_stop_the_run_is_caught(
    project: Path, tiny_model_dir: Path, shapes_data: Path, tmp_path: Path, monkeypatch
) -> None:
    """sft.max_steps through a stand-in that ignores it (trains its whole schedule): the stage
    fails by name instead of passing the longer run off as the stopped one."""
    from vlrl.core import paths

    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))
    script = fake_cli(tmp_path, monkeypatch)
    script.write_text(
        script.read_text() + 'echo \'{"global_step": 10}\' > "$out/trainer_state.json"\n'
    )
    with pytest.raises(StageError, match=r"sft.max_steps is 3 but LLaMA-Factory trained 10 steps"):
        sft.run("tiny_shapes", load_experiment("tiny_shapes", ["sft.max_steps=3"]))
    assert not list(Path("results/tiny_shapes").glob("sft*"))


@pytest.fixture()
def real_llamafactory(
    project: Path, tiny_model_dir: Path, shapes_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vlrl.core import paths

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv(
        "VLRL_LLAMAFACTORY_CLI", str(repo / ".venv-sft" / "bin" / "llamafactory-cli")
    )
    shutil.copytree(tiny_model_dir, paths.model_resource("tiny-qwen2.5-vl"))
    shutil.copytree(shapes_data, paths.data_dir("tiny_shapes"))


STOPPED = [
    "sft.per_device_train_batch_size=4",  # x 2 processes: 8 of the 40 records a step
    "sft.num_train_epochs=2",  # a schedule of 10 steps
    "sft.lr_scheduler_type=linear",
    "sft.learning_rate=0.001",
    "sft.extra={logging_steps: 1}",
]


@pytest.mark.slow
def test_sft_stops_at_max_steps_with_the_rates_of_the_whole_schedule(
    real_llamafactory: None,
) -> None:
    """Two processes (the torchrun LLaMA-Factory starts, whose ranks run vlrl's entry): the run
    stops after step 3 of its 10, each step at the 10-step schedule's rate."""
    cfg = load_experiment("tiny_shapes", [*STOPPED, "sft.processes=2", "sft.max_steps=3"])
    sft.run("tiny_shapes", cfg)
    state = json.loads((Path("results/tiny_shapes/sft") / sft.TRAINER_STATE).read_text())
    rates = [h["learning_rate"] for h in state["log_history"] if "learning_rate" in h]
    assert (state["global_step"], state["max_steps"]) == (3, 10)
    saved = (Path("results/tiny_shapes/sft") / sft.WORK / "train.yaml").read_text()
    assert saved.startswith("# vlrl stops this run after step 3 of its schedule (sft.max_steps)")
    assert rates == pytest.approx(linear_rates(0.001, 10, 3), rel=1e-6)


@pytest.mark.slow
def test_a_schedule_shorter_than_max_steps_is_refused_by_name(
    real_llamafactory: None, capfd: pytest.CaptureFixture[str]
) -> None:
    # 4 of the 40 records a step: 0.1 of an epoch of 10 steps plans 1
    overrides = ["sft.processes=1", "sft.num_train_epochs=0.1", "sft.max_steps=2"]
    cfg = load_experiment("tiny_shapes", [*STOPPED, *overrides])
    with pytest.raises(StageError, match="llamafactory-cli train exited with"):
        sft.run("tiny_shapes", cfg)
    assert (
        "sft.num_train_epochs plans 1 steps, fewer than sft.max_steps (2)" in capfd.readouterr().err
    )
    assert not list(Path("results/tiny_shapes").glob("sft*"))
