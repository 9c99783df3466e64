"""The resume point is the newest complete checkpoint: saves cut short are skipped and removed
(vlrl.cluster.checkpoints; a real save killed half-way: tests/stages/test_grpo.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlrl.cluster.checkpoints import (
    DEEPSPEED_TAG,
    FINGERPRINT,
    IN_PROGRESS,
    TOPOLOGY,
    TRAINER_STATE,
    checkpoint_dirs,
    incomplete_reason,
    missing_rank_files,
    missing_rng_states,
    newest_complete,
    resume_point,
    set_aside,
    topology_label,
)
from vlrl.cluster.distributed import Topology


def _checkpoint(folder: Path, step: int, state: str | None = None, **files: str) -> Path:
    """``checkpoint-<step>`` as ``Trainer._save_checkpoint`` leaves it: weights, optimizer, and
    (written last) ``trainer_state.json`` unless ``state`` says otherwise ("" leaves it out)."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(b"weights")
    (path / "optimizer.pt").write_bytes(b"optimizer")
    if state is None:
        state = json.dumps({"global_step": step, "log_history": []})
    if state:
        (path / TRAINER_STATE).write_text(state)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def test_the_newest_complete_checkpoint_is_the_resume_point(tmp_path: Path, caplog) -> None:
    for step in (2, 10):
        _checkpoint(tmp_path, step)
    _checkpoint(tmp_path, 12, state="")  # killed before trainer_state.json
    _checkpoint(tmp_path, 14, state='{"global_step": 14, "log_hi')  # killed while writing it
    (tmp_path / "checkpoint-x").mkdir()  # not a checkpoint: left alone
    (tmp_path / "vlrl_fingerprint.txt").write_text("f")
    with caplog.at_level("WARNING", logger="vlrl.cluster.checkpoints"):
        assert newest_complete(tmp_path) == tmp_path / "checkpoint-10"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint-10",
        "checkpoint-2",
        "checkpoint-x",
        "vlrl_fingerprint.txt",
    ]
    assert f"checkpoint-12 is incomplete (it has no {TRAINER_STATE}" in caplog.text
    assert f"checkpoint-14 is incomplete (its {TRAINER_STATE} does not parse" in caplog.text
    assert "removing it" in caplog.text


def test_numeric_order_not_name_order(tmp_path: Path) -> None:
    for step in (9, 10, 100):
        _checkpoint(tmp_path, step)
    assert [p.name for p in checkpoint_dirs(tmp_path)] == [
        "checkpoint-9",
        "checkpoint-10",
        "checkpoint-100",
    ]
    assert newest_complete(tmp_path) == tmp_path / "checkpoint-100"


def test_without_remove_incomplete_ones_stay(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 1)
    _checkpoint(tmp_path, 2, state="")
    assert newest_complete(tmp_path, remove=False) == tmp_path / "checkpoint-1"
    assert (tmp_path / "checkpoint-2").is_dir()


def test_none_complete_or_no_folder(tmp_path: Path) -> None:
    assert newest_complete(tmp_path / "missing") is None
    _checkpoint(tmp_path, 3, state="")
    assert newest_complete(tmp_path) is None
    assert not (tmp_path / "checkpoint-3").exists()


@pytest.mark.parametrize(
    ("state", "files", "reason"),
    [
        ('{"global_step": 4}', {}, None),
        ("", {}, f"it has no {TRAINER_STATE}"),
        ("{", {}, "does not parse"),
        ("[4]", {}, "says step [4]"),
        ('{"global_step": 3}', {}, "says step 3"),  # another save's state copied in
        ('{"global_step": 4}', {IN_PROGRESS: "saving"}, f"it holds {IN_PROGRESS}"),
    ],
)
def test_what_makes_a_checkpoint_incomplete(
    tmp_path: Path, state: str, files: dict[str, str], reason: str | None
) -> None:
    path = _checkpoint(tmp_path, 4, state=state, **files)
    found = incomplete_reason(path)
    assert found is None if reason is None else reason in found


def test_deepspeed_needs_its_latest_tag_and_the_directory_it_names(tmp_path: Path) -> None:
    """DeepSpeed's save_checkpoint writes ``global_step<N>/`` and then ``latest``."""
    zero2 = {
        "mp_rank_00_model_states.pt": "x",
        "zero_pp_rank_0_mp_rank_00_optim_states.pt": "x",
        "zero_pp_rank_1_mp_rank_00_optim_states.pt": "x",
    }
    whole = _checkpoint(
        tmp_path,
        5,
        **{DEEPSPEED_TAG: "global_step5\n", **{f"global_step5/{k}": v for k, v in zero2.items()}},
    )
    no_tag = _checkpoint(tmp_path, 6, **{f"global_step6/{k}": v for k, v in zero2.items()})
    dangling = _checkpoint(tmp_path, 7, **{DEEPSPEED_TAG: "global_step7"})
    assert incomplete_reason(whole, deepspeed=True) is None
    assert "no DeepSpeed latest file" in incomplete_reason(no_tag, deepspeed=True)
    assert "names 'global_step7', which is not there" in incomplete_reason(dangling, True)
    assert incomplete_reason(no_tag) is None  # without DeepSpeed the tag is not looked for
    assert newest_complete(tmp_path, deepspeed=True) == whole
    assert [p.name for p in checkpoint_dirs(tmp_path)] == ["checkpoint-5"]


def test_a_latest_file_left_empty_by_a_kill_is_incomplete(tmp_path: Path) -> None:
    """A kill between DeepSpeed's open and write of ``latest`` leaves it empty (or blank): the
    tag it names is no directory, even when the save's tag directory is whole."""
    files = {
        "global_step5/mp_rank_00_model_states.pt": "x",
        "global_step5/zero_pp_rank_0_mp_rank_00_optim_states.pt": "x",
    }
    for content in ("", "\n"):
        path = _checkpoint(tmp_path / repr(content), 5, **{DEEPSPEED_TAG: content, **files})
        reason = incomplete_reason(path, deepspeed=True)
        assert reason == "its DeepSpeed latest names '', which is not there"
        assert newest_complete(path.parent, deepspeed=True) is None


@pytest.mark.parametrize(
    ("names", "ranks", "reason"),
    [
        # ZeRO-3: each rank's model and optimizer partitions
        (
            [
                "zero_pp_rank_{r}_mp_rank_00_model_states.pt",
                "bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt",
            ],
            2,
            None,
        ),
        (
            [
                "zero_pp_rank_{r}_mp_rank_00_model_states.pt",
                "zero_pp_rank_{r}_mp_rank_00_optim_states.pt",
            ],
            4,
            "optimizer states of rank 2",
        ),
        # ZeRO-2: one model file (rank 0's), each rank's optimizer partition
        (
            ["zero_pp_rank_{r}_mp_rank_00_optim_states.pt"],
            2,
            "the model states (mp_rank_00_model_states.pt)",
        ),
        (["mp_rank_00_model_states.pt"], 2, "every rank's optimizer states"),
    ],
)
def test_deepspeed_needs_every_ranks_files(
    tmp_path: Path, names: list[str], ranks: int, reason: str | None
) -> None:
    """rank 0 writes ``latest`` without waiting for the other ranks' files: each must be there."""
    files = {f"global_step3/{n.format(r=r)}": "x" for n in names for r in (0, 1)}
    files |= {f"rng_state_{r}.pth": "rng" for r in range(ranks)}
    path = _checkpoint(tmp_path, 3, **{DEEPSPEED_TAG: "global_step3", **files})
    found = incomplete_reason(path, deepspeed=True, ranks=ranks)
    assert found is None if reason is None else reason in found
    if reason is None:  # one rank's file gone: skipped (and removed)
        next((path / "global_step3").glob("*rank_1*optim*")).unlink()
        assert "optimizer states of rank 1" in incomplete_reason(path, True, ranks)
        assert newest_complete(tmp_path, deepspeed=True, ranks=ranks) is None
        assert not path.exists()


@pytest.mark.parametrize("deepspeed", [False, True])
def test_every_ranks_rng_states_must_be_there(tmp_path: Path, deepspeed: bool) -> None:
    """Each rank writes its own ``rng_state_<rank>.pth`` and rank 0 writes
    ``trainer_state.json`` without waiting: a checkpoint lacking one rank's is cut short."""
    ds = {DEEPSPEED_TAG: "global_step3"} if deepspeed else {}
    ds |= (
        {f"global_step3/zero_pp_rank_{r}_mp_rank_00_optim_states.pt": "x" for r in range(3)}
        | {"global_step3/mp_rank_00_model_states.pt": "x"}
        if deepspeed
        else {}
    )
    path = _checkpoint(tmp_path, 3, **ds, **{"rng_state_0.pth": "r", "rng_state_2.pth": "r"})
    reason = incomplete_reason(path, deepspeed, ranks=3)
    assert reason == "it lacks the RNG states of rank 1 (rng_state_1.pth)"
    assert incomplete_reason(path, deepspeed, ranks=None) is None  # rank count unknown
    (path / "rng_state_1.pth").write_text("r")
    assert incomplete_reason(path, deepspeed, ranks=3) is None
    # one process writes rng_state.pth
    single = _checkpoint(tmp_path / "one", 1)
    assert incomplete_reason(single, ranks=1) == "it lacks the RNG states (rng_state.pth)"
    (single / "rng_state.pth").write_text("r")
    assert incomplete_reason(single, ranks=1) is None
    assert newest_complete(tmp_path / "one", ranks=1) == single


def test_a_model_only_checkpoint_needs_no_rng_states(tmp_path: Path) -> None:
    """``save_only_model`` (the SFT stage's) saves neither optimizer nor RNG states."""
    path = _checkpoint(tmp_path, 2)
    (path / "optimizer.pt").unlink()
    assert incomplete_reason(path, ranks=4) is None


def test_checkpoints_of_another_config_are_cleared(tmp_path: Path) -> None:
    checkpoints = tmp_path / "grpo_checkpoints"
    (checkpoints / "checkpoint-3").mkdir(parents=True)
    (checkpoints / FINGERPRINT).write_text("old")
    assert resume_point(checkpoints, "new", enabled=True) is None
    assert not (checkpoints / "checkpoint-3").exists()
    assert (checkpoints / FINGERPRINT).read_text() == "new"
    (checkpoints / "checkpoint-3").mkdir()
    (checkpoints / "checkpoint-3" / "trainer_state.json").write_text('{"global_step": 3}')
    assert resume_point(checkpoints, "new", enabled=True).endswith("checkpoint-3")
    assert resume_point(checkpoints, "new", enabled=False) is None  # resume off: cleared


def test_checkpoints_of_another_topology_are_set_aside_not_resumed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After resources.grpo.gpus or nodes change, DeepSpeed would raise on every attempt to load
    the old world size's partitions ("DP world size ..."): the run starts again, the old
    checkpoints are kept beside, and the warning names both topologies."""
    checkpoints = tmp_path / "grpo_checkpoints"
    two = Topology(nodes=1, processes_per_node=2)
    assert resume_point(checkpoints, "fp", enabled=True, topo=two) is None
    assert (checkpoints / TOPOLOGY).read_text() == "1 node x 2 processes (world size 2)"
    _checkpoint(checkpoints, 3, **{"rng_state_0.pth": "r", "rng_state_1.pth": "r"})
    assert resume_point(checkpoints, "fp", enabled=True, topo=two).endswith("checkpoint-3")

    four = Topology(nodes=2, processes_per_node=2)
    assert resume_point(checkpoints, "fp", enabled=True, topo=four) is None
    aside = tmp_path / "grpo_checkpoints.2-ranks"
    assert (aside / "checkpoint-3" / TRAINER_STATE).is_file()
    assert (checkpoints / TOPOLOGY).read_text() == "2 nodes x 2 processes (world size 4)"
    assert not checkpoint_dirs(checkpoints) and (checkpoints / FINGERPRINT).read_text() == "fp"
    warning = caplog.text
    assert "written by 1 node x 2 processes (world size 2)" in warning
    assert "this run has 2 nodes x 2 processes (world size 4)" in warning
    assert str(aside) in warning
    # the same topology again: nothing moves
    assert resume_point(checkpoints, "fp", enabled=True, topo=four) is None
    assert checkpoints.is_dir() and not (tmp_path / "grpo_checkpoints.4-ranks").exists()


# ---------------------------------------------------------------- the decisions, one by one
def test_the_messages_name_every_missing_file_exactly(tmp_path: Path) -> None:
    tag = tmp_path / "global_step3"
    tag.mkdir()
    assert missing_rank_files(tag, 2) == "every rank's optimizer states"
    (tag / "zero_pp_rank_0_mp_rank_00_optim_states.pt").write_text("x")
    (tag / "zero_pp_rank_2_mp_rank_00_optim_states.pt").write_text("x")
    # no rank count given: every rank up to the highest seen (rank 1 is missing between)
    assert missing_rank_files(tag) == (
        "the optimizer states of rank 1, the model states (mp_rank_00_model_states.pt)"
    )
    (tag / "mp_rank_00_model_states.pt").write_text("x")
    assert missing_rank_files(tag) == "the optimizer states of rank 1"
    assert (
        missing_rank_files(tag, 4)
        == "the optimizer states of rank 1, the optimizer states of rank 3"
    )


def test_rng_states_are_needed_once_any_is_saved(tmp_path: Path) -> None:
    """No optimizer file (a save cut before it, or a model-only one) but one rank's RNG states:
    the others' are needed too; with none saved and no optimizer, none is needed."""
    path = _checkpoint(tmp_path, 3)
    (path / "optimizer.pt").unlink()
    assert missing_rng_states(path, 3) is None
    (path / "rng_state_1.pth").write_text("r")
    assert missing_rng_states(path, 3) == (
        "the RNG states of rank 0, 2 (rng_state_0.pth, rng_state_2.pth)"
    )
    # a DeepSpeed save keeps its optimizer in the tag directory, not optimizer.pt
    ds = _checkpoint(tmp_path / "ds", 3, **{DEEPSPEED_TAG: "global_step3"})
    (ds / "optimizer.pt").unlink()
    assert missing_rng_states(ds, 1) == "the RNG states (rng_state.pth)"


def test_newest_complete_checks_the_ranks_it_is_given(tmp_path: Path, caplog) -> None:
    two = _checkpoint(tmp_path, 2, **{"rng_state_0.pth": "r", "rng_state_1.pth": "r"})
    _checkpoint(tmp_path, 4, **{"rng_state_0.pth": "r"})  # rank 1's cut off
    with caplog.at_level("WARNING", logger="vlrl.cluster.checkpoints"):
        assert newest_complete(tmp_path, ranks=2, remove=False) == two
    assert caplog.messages == [
        f"checkpoint {tmp_path / 'checkpoint-4'} is incomplete (it lacks the RNG states of rank "
        "1 (rng_state_1.pth): its save was cut short); skipping it"
    ]
    assert (tmp_path / "checkpoint-4").is_dir()
    caplog.clear()
    with caplog.at_level("WARNING", logger="vlrl.cluster.checkpoints"):
        assert newest_complete(tmp_path, ranks=2) == two
    assert caplog.messages[0].endswith("its save was cut short); removing it")
    assert not (tmp_path / "checkpoint-4").exists()


def test_step_zero_sorts_first(tmp_path: Path) -> None:
    for step in (1, 0, 10):
        _checkpoint(tmp_path, step)
    (tmp_path / "checkpoint-5").write_text("a file, not a checkpoint")
    assert [p.name for p in checkpoint_dirs(tmp_path)] == [
        "checkpoint-0",
        "checkpoint-1",
        "checkpoint-10",
    ]


def test_topology_labels() -> None:
    assert topology_label(1, 1) == "1 node x 1 process (world size 1)"
    assert topology_label(1, 2) == "1 node x 2 processes (world size 2)"
    assert topology_label(3, 1) == "3 nodes x 1 process (world size 3)"


def test_resume_point_resumes_only_what_the_run_can_load(tmp_path: Path, caplog) -> None:
    """Under DeepSpeed with two ranks, a checkpoint without the tag file or one rank's RNG
    states is not a resume point: the one before it is, and the log says which."""
    checkpoints = tmp_path / "deep" / "er" / "grpo_checkpoints"  # parents made as needed
    two = Topology(nodes=1, processes_per_node=2)
    assert resume_point(checkpoints, "fp", enabled=True, deepspeed=True, topo=two) is None
    rng = {"rng_state_0.pth": "r", "rng_state_1.pth": "r"}
    zero = {f"global_step{{s}}/zero_pp_rank_{r}_mp_rank_00_optim_states.pt": "x" for r in (0, 1)}
    zero["global_step{s}/mp_rank_00_model_states.pt"] = "x"
    for step in (2, 4):
        files = {k.format(s=step): v for k, v in zero.items()}
        _checkpoint(checkpoints, step, **{DEEPSPEED_TAG: f"global_step{step}", **files, **rng})
    (checkpoints / "checkpoint-4" / "rng_state_1.pth").unlink()
    _checkpoint(checkpoints, 6, **rng)  # no DeepSpeed tag
    with caplog.at_level("INFO", logger="vlrl.cluster.checkpoints"):
        found = resume_point(checkpoints, "fp", enabled=True, deepspeed=True, topo=two)
    assert found == str(checkpoints / "checkpoint-2")
    assert f"grpo: resuming from {checkpoints / 'checkpoint-2'}" in caplog.messages
    assert [p.name for p in checkpoint_dirs(checkpoints)] == ["checkpoint-2"]


def test_a_folder_without_its_fingerprint_is_cleared_by_name(tmp_path: Path, caplog) -> None:
    """Checkpoints with no fingerprint beside them (an older vlrl, a copy) cannot be trusted."""
    checkpoints = tmp_path / "sft_checkpoints"
    _checkpoint(checkpoints, 3)
    with caplog.at_level("INFO", logger="vlrl.cluster.checkpoints"):
        assert resume_point(checkpoints, "fp", enabled=True, stage="sft") is None
    assert caplog.messages == [f"sft: clearing {checkpoints} (another configuration or resume off)"]
    assert not checkpoint_dirs(checkpoints) and (checkpoints / FINGERPRINT).read_text() == "fp"


def test_setting_aside_replaces_an_older_set_aside_folder(tmp_path: Path, caplog) -> None:
    folder = tmp_path / "grpo_checkpoints"
    _checkpoint(folder, 8)
    (folder / TOPOLOGY).write_text(topology_label(2, 2))
    stale = tmp_path / "grpo_checkpoints.4-ranks"
    _checkpoint(stale, 1)
    with caplog.at_level("WARNING", logger="vlrl.cluster.checkpoints"):
        assert set_aside(folder, topology_label(1, 1)) == stale
    assert [p.name for p in checkpoint_dirs(stale)] == ["checkpoint-8"]
    assert not folder.exists()
    assert caplog.messages == [
        f"the checkpoints in {folder} were written by 2 nodes x 2 processes (world size 4), and "
        "this run has 1 node x 1 process (world size 1): a checkpoint cannot be resumed under "
        "another topology (ZeRO partitions and RNG states are per rank), so this run starts "
        f"from step 0 and they are set aside in {stale}. To resume them instead, rerun with the "
        "resources (gpus, nodes) and processes that wrote them"
    ]
    # a record that names no world size (edited by hand, cut short) still moves them aside
    _checkpoint(folder, 9)
    (folder / TOPOLOGY).write_text("2 nodes x 2 proc")
    assert set_aside(folder, topology_label(1, 1)) == tmp_path / "grpo_checkpoints.other-topology"
