"""DeepSpeed ZeRO on the paths a recipe takes, run for real on the CPU (``make engines``).

One scratch git + DVC copy of the project, every rule in the GPU set's CPU twin
(``VLRL_VENV=.venv-gpu-cpu``; SFT in .venv-sft's LLaMA-Factory), two experiments at toy scale:

- ``tiny_engines_deepspeed``: SFT under ZeRO-2, then GRPO under ZeRO-3, killed (SIGKILL to every
  process of the run, Snakemake and the ranks) once its first checkpoint is complete, and
  resumed from it by the rerun; then merge and infer of the merged model;
- ``tiny_engines_deepspeed_zero3_sft``: SFT under ZeRO-3, then GRPO under ZeRO-2, whose
  checkpoints are copied aside while it runs (the stage removes them when it ends).

Two ranks each, on DeepSpeed's CPU accelerator with gloo (:func:`vlrl.cluster.distributed.
deepspeed_env`). What only a GPU can show: NCCL, bf16 ZeRO partitions, CPU/NVMe offload, memory
per rank, speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from scratch_project import ROOT, Project

from vlrl.cluster import checkpoints as ckpt

pytestmark = [pytest.mark.slow, pytest.mark.engines]

ENGINES = ROOT / ".venv-gpu-cpu"
EXP = "tiny_engines_deepspeed"  # SFT ZeRO-2, GRPO ZeRO-3 (killed and resumed)
SWAP = "tiny_engines_deepspeed_zero3_sft"  # SFT ZeRO-3, GRPO ZeRO-2
RANKS = 2
STEPS = 3
DEADLINE_S = 1800


def saved(checkpoint: Path) -> bool:
    """The test's own view of a finished save (not vlrl's): trainer_state.json at the step of
    the name, ``latest`` naming its tag directory, and each rank's RNG state, which transformers
    writes after that rank's DeepSpeed files."""
    try:
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        tag = (checkpoint / "latest").read_text().strip()
    except (OSError, ValueError):
        return False
    return (
        state.get("global_step") == int(checkpoint.name.split("-")[1])
        and bool(tag)
        and (checkpoint / tag).is_dir()
        and all((checkpoint / f"rng_state_{r}.pth").is_file() for r in range(RANKS))
    )


def stage_processes(root: Path, *words: str) -> list[int]:
    """The live processes working in ``root`` whose command line holds every one of ``words``
    (a stage's launcher, torchrun and its ranks)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
            cwd = Path(os.readlink(cmdline.parent / "cwd"))
        except OSError:
            continue
        text = b" ".join(args).decode(errors="replace")
        if cwd == root.resolve() and all(word in text for word in words):
            found.append(int(cmdline.parent.name))
    return found


@contextlib.contextmanager
def frozen(pids: list[int]):
    """SIGSTOP ``pids`` for the block's time, then SIGCONT them."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def loads(checkpoint: Path) -> bool:
    """Every rank's RNG state of a copied checkpoint reads back whole (not caught mid-write)."""
    import torch

    try:
        for rank in range(RANKS):
            torch.load(checkpoint / f"rng_state_{rank}.pth", weights_only=False)
    except Exception:  # a file cut short: torch raises several kinds
        return False
    return True


class Capture(threading.Thread):
    """Copies each checkpoint a GRPO stage of ``exp`` saves under ``folder``, with the stage's
    processes stopped while it copies: a toy run saves, rotates and removes its checkpoints
    within a second, faster than a copy taken while it runs could be relied on."""

    def __init__(self, root: Path, exp: str, dest: Path) -> None:
        super().__init__(daemon=True)
        self.root, self.exp, self.dest = root, exp, dest
        self.folder = root / "results" / exp / "grpo_checkpoints"
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for path in self.folder.glob("checkpoint-*") if self.folder.is_dir() else []:
                copy = self.dest / path.name
                if copy.exists() or not saved(path):
                    continue
                with frozen(stage_processes(self.root, "vlrl.stages.grpo", self.exp)):
                    try:
                        shutil.copytree(path, copy)
                    except (OSError, shutil.Error):  # removed before the processes stopped
                        shutil.rmtree(copy, ignore_errors=True)
                if copy.exists() and not loads(copy):  # caught mid-write: the next look retries
                    shutil.rmtree(copy)
            time.sleep(0.05)


def descendants(root: int) -> list[int]:
    """``root`` and the live processes under it (zombies left out), parents first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        todo += children.get(pid, [])
    return found


def kill_tree(root: int) -> None:
    """SIGKILL ``root`` and every process under it: Snakemake, its job's shell, the stage,
    torchrun and its ranks (each job in a session and the ranks in a process group of their
    own), as a lost node would. Stopped first, so none is orphaned out of sight."""
    stopped: set[int] = set()
    while True:
        pids = set(descendants(root)) - stopped
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= pids
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not (ENGINES / "bin" / "vlrl").is_file():
        pytest.skip(f"{ENGINES} is missing: `make setup-gpu-cpu` installs the GPU set's CPU twin")
    tmp = tmp_path_factory.mktemp("engines-deepspeed")
    project = Project(tmp / "project")
    (project.root / "params.yaml").write_text(yaml.safe_dump({"experiments": [EXP, SWAP]}))
    project.env |= {"VLRL_VENV": str(ENGINES)}
    project("vlrl", "check")
    results = project.root / "results"
    capture = Capture(project.root, SWAP, tmp / "captured" / SWAP)
    capture.start()

    # SFT ZeRO-2 and GRPO ZeRO-3 of EXP, killed once GRPO's first checkpoint is saved
    first = results / EXP / "grpo_checkpoints" / "checkpoint-1"
    with open(tmp / "killed_run.log", "w") as out:
        proc = subprocess.Popen(
            ["snakemake", "--cores", "2", "--no-hooks", f"results/{EXP}/grpo"],
            cwd=project.root,
            env=project.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.time() + DEADLINE_S
        while time.time() < deadline and proc.poll() is None and not saved(first):
            time.sleep(0.05)
        running = proc.poll() is None
        kill_tree(proc.pid)
        proc.wait()
    killed_log = (tmp / "killed_run.log").read_text()
    assert running and saved(first), (
        f"GRPO saved no checkpoint to kill it after:\n{killed_log[-4000:]}"
    )
    killed = tmp / "killed"
    shutil.copytree(results / EXP / "grpo_checkpoints", killed)
    shutil.copy(project.root / "logs" / "grpo" / f"{EXP}.log", tmp / "killed_grpo.log")

    # the rest: EXP's GRPO resumed, merged and evaluated; SWAP's SFT ZeRO-3 and GRPO ZeRO-2
    project("snakemake", "--unlock", "--cores", "1")
    # --no-hooks: no hand-over to DVC (its `dvc commit` takes a minute; tested elsewhere)
    out = project("snakemake", "--cores", "2", "--rerun-incomplete", "--no-hooks")
    capture.done.set()
    capture.join()
    return {
        "project": project,
        "out": out,
        "killed": killed,
        "killed_log": killed_log + (tmp / "killed_grpo.log").read_text(),
        "captured": tmp / "captured" / SWAP,
        "tmp": tmp,
    }


def log(project: Project, *parts: str) -> str:
    """A stage's log, unwrapped (rich wraps its lines at 80 columns in a file)."""
    text = (project.root / "logs" / Path(*parts)).read_text()
    return re.sub(r"\s*\n\s+", " ", text)


def parameters(model_dir: Path) -> dict[str, tuple[int, ...]]:
    """Parameter shapes of a model directory as transformers loads it (in .venv)."""
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(str(model_dir))
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


@pytest.fixture(scope="module")
def base_shapes(ran) -> dict[str, tuple[int, ...]]:
    return parameters(ran["project"].root / "resources" / "models" / "tiny-qwen2.5-vl")


@pytest.mark.parametrize(("exp", "stage"), [(EXP, 2), (SWAP, 3)])
def test_sft_ran_under_zero_with_two_ranks(ran, base_shapes, exp: str, stage: int) -> None:
    project = ran["project"]
    text = log(project, "sft", f"{exp}.log")
    for rank in range(RANKS):
        assert f"Process rank: {rank}, world size: {RANKS}, device: cpu" in text
    # DeepSpeed's CPU accelerator: its shared-memory comm op, loaded by each rank
    assert text.count("deepspeed_shm_comm_op built successfully") == RANKS
    zero3 = "Detected DeepSpeed ZeRO-3: activating zero.init() for this model"
    assert (zero3 in text) == (stage == 3)
    sft = project.root / "results" / exp / "sft"
    train = yaml.safe_load((sft / "vlrl_sft" / "train.yaml").read_text())
    assert train["deepspeed"].endswith(f"config/deepspeed/zero{stage}.json")
    # the whole model, gathered from the ranks' partitions (a ZeRO-3 shard would be empty)
    assert parameters(sft) == base_shapes


@pytest.mark.parametrize(("exp", "stage"), [(EXP, 3), (SWAP, 2)])
def test_grpo_ran_under_zero_with_two_ranks(ran, exp: str, stage: int) -> None:
    text = log(ran["project"], "grpo", f"{exp}.log")
    assert "DeepSpeed info: version=0.19.8" in text
    assert f"zero_optimization_stage ...... {stage}" in text
    assert f"dp_world_size={RANKS}" in text
    summary = json.loads(
        (ran["project"].root / "results" / exp / "grpo" / "train_summary.json").read_text()
    )
    assert summary["steps"] == STEPS


def test_grpo_checkpoints_hold_the_real_zero_layouts(ran) -> None:
    zero3 = ran["killed"] / "checkpoint-1"
    assert (zero3 / "latest").read_text().strip() == "global_step1"
    tag = zero3 / "global_step1"
    for rank in range(RANKS):
        assert (tag / f"zero_pp_rank_{rank}_mp_rank_00_model_states.pt").is_file()
        assert list(tag.glob(f"*zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"))
    assert (zero3 / "zero_to_fp32.py").is_file()
    zero2 = sorted(ran["captured"].glob("checkpoint-*"), key=ckpt.checkpoint_step)
    assert zero2, "no ZeRO-2 checkpoint of the GRPO run was captured"
    step = ckpt.checkpoint_step(zero2[0])
    tag = zero2[0] / f"global_step{step}"
    assert (zero2[0] / "latest").read_text().strip() == tag.name
    assert (tag / "mp_rank_00_model_states.pt").is_file()
    for rank in range(RANKS):
        assert list(tag.glob(f"*zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"))
    assert not list(tag.glob("zero_pp_rank_*_model_states.pt"))  # ZeRO-2: one model file
    assert (zero2[0] / "zero_to_fp32.py").is_file()
    for checkpoint in (zero3, zero2[0]):
        assert ckpt.incomplete_reason(checkpoint, deepspeed=True, ranks=RANKS) is None


def test_killed_grpo_resumed_from_its_checkpoint(ran) -> None:
    project = ran["project"]
    kept = [p for p in ckpt.checkpoint_dirs(ran["killed"]) if saved(p)]
    assert kept, ran["killed_log"][-3000:]
    resumed = ckpt.checkpoint_step(kept[-1])
    assert 1 <= resumed < STEPS
    summary = json.loads(
        (project.root / "results" / EXP / "grpo" / "train_summary.json").read_text()
    )
    assert summary["resumed_from"].endswith(f"grpo_checkpoints/checkpoint-{resumed}")
    assert summary["steps"] == STEPS
    text = re.sub(r"\s+", "", (project.root / "logs" / "grpo" / f"{EXP}.log").read_text())
    checkpoint = f"results/{EXP}/grpo_checkpoints/checkpoint-{resumed}"
    assert f"grpo:resumingfrom{checkpoint}" in text
    # DeepSpeed's own reload of the ZeRO-3 partitions (strict: a missing key would fail it)
    tag = f"{checkpoint}/global_step{resumed}"
    for what in ("model", "optim"):
        assert f"EndLoadcheckpointfrom{tag}/zero_pp_rank_0_mp_rank_00_{what}_states.pt" in text
    assert f"loading{RANKS}zeropartitioncheckpointsforrank0" in text
    # the trainer's state came back from the checkpoint: the history of the steps before it too
    steps = [h["step"] for h in summary["log_history"] if "loss" in h]
    assert steps == list(range(1, STEPS + 1)), summary["log_history"]


def test_an_incomplete_zero_checkpoint_is_skipped(ran, tmp_path: Path) -> None:
    """On copies of the real ZeRO-3 checkpoint: an empty ``latest`` (rank 0 cut short while
    writing it) or a rank's file missing (a rank cut short while saving) is not resumed."""
    for damage in ("empty latest", "rank 1 model", "rank 1 optimizer"):
        folder = tmp_path / damage.replace(" ", "_")
        shutil.copytree(ran["killed"] / "checkpoint-1", folder / "checkpoint-1")
        checkpoint = folder / "checkpoint-1"
        assert ckpt.newest_complete(folder, deepspeed=True, remove=False, ranks=RANKS) == checkpoint
        tag = checkpoint / "global_step1"
        if damage == "empty latest":
            (checkpoint / "latest").write_text("")
        elif damage == "rank 1 model":
            (tag / "zero_pp_rank_1_mp_rank_00_model_states.pt").unlink()
        else:
            next(tag.glob("*zero_pp_rank_1_mp_rank_00_optim_states.pt")).unlink()
        reason = ckpt.incomplete_reason(checkpoint, deepspeed=True, ranks=RANKS)
        assert reason and ("latest" in reason or "rank 1" in reason), (damage, reason)
        assert ckpt.newest_complete(folder, deepspeed=True, ranks=RANKS) is None
        assert not checkpoint.exists()  # removed, not resumed


def test_merge_of_the_zero3_grpo_output_is_the_whole_model(ran, base_shapes) -> None:
    project = ran["project"]
    merged = project.root / "results" / EXP / "model"
    shapes = parameters(merged)
    assert shapes == base_shapes
    assert all(all(n > 0 for n in shape) for shape in shapes.values())
    rows = (
        project.root / "results" / EXP / "predictions" / "grpo" / "shapes_test.jsonl"
    ).read_text()
    rows = [json.loads(line) for line in rows.splitlines()]
    assert len(rows) == 4 and all(isinstance(r["response"], str) for r in rows)
