"""Which of a training run's checkpoints can be resumed: the newest complete one.

``transformers.trainer_utils.get_last_checkpoint`` returns the ``checkpoint-<N>`` directory with
the highest N whether or not its save finished, so a job killed while saving (SIGKILL at a time
limit, a node lost) leaves a directory that every later run resumes from and crashes on (no
``trainer_state.json``: the Trainer's reload fails).

``Trainer._save_checkpoint`` (huggingface/transformers v5.19.0, src/transformers/trainer.py)
writes a checkpoint in this order: the model (``save_model``), then the optimizer and scheduler
(under DeepSpeed: ``model_wrapped.save_checkpoint``, whose ``global_step<N>`` directory is written
before its ``latest`` tag file), the scaler and the RNG states, and last the trainer state,
``trainer_state.json`` (``state.save_to_json``); only then are older checkpoints rotated away. A
checkpoint is therefore complete when ``trainer_state.json`` is there and parses, says step N,
and, under DeepSpeed, ``latest`` names a directory that holds every rank's files. That last part
is needed because DeepSpeed (v0.19.8, ``DeepSpeedEngine.save_checkpoint``) has rank 0 write
``latest`` with no barrier after the other ranks' files: rank 1 may still be writing its
optimizer partition when rank 0 goes on to ``trainer_state.json``. A ZeRO tag directory holds
``zero_pp_rank_<r>_mp_rank_00_optim_states.pt`` for every rank r (``bf16_`` first under bf16),
and the module's states: one ``mp_rank_00_model_states.pt`` under ZeRO-1/2, one
``zero_pp_rank_<r>_mp_rank_00_model_states.pt`` per rank under ZeRO-3. transformers' own SIGTERM
checkpointing (``trainer_jit_checkpoint.py``) marks a save in progress with
``checkpoint-is-incomplete.txt``; a directory holding it is incomplete too. The RNG states race
the same way: each of several ranks writes its own ``rng_state_<rank>.pth``
(``Trainer._save_rng_state``) and rank 0 goes on to ``trainer_state.json`` without waiting, so a
checkpoint of a run of several ranks is complete only with every rank's file
(:func:`missing_rng_states`).

Torch-free: the stage picks its resume point before it imports torch.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

from vlrl.cluster.distributed import Topology

log = logging.getLogger(__name__)

PREFIX = "checkpoint"
"""transformers' ``PREFIX_CHECKPOINT_DIR``: checkpoints are ``checkpoint-<global step>``."""
TRAINER_STATE = "trainer_state.json"
"""transformers' ``TRAINER_STATE_NAME``, the file ``_save_checkpoint`` writes last."""
IN_PROGRESS = "checkpoint-is-incomplete.txt"
"""The sentinel of transformers' JIT (SIGTERM) checkpoint while it saves."""
DEEPSPEED_TAG = "latest"
"""The file in which DeepSpeed's ``save_checkpoint`` names its newest tag directory."""
FINGERPRINT = "vlrl_fingerprint.txt"
"""Beside a run's checkpoints: what a checkpoint must share with a run to be resumed by it."""
TOPOLOGY = "vlrl_topology.txt"
"""Beside a run's checkpoints: the topology that wrote them (:func:`topology_label`)."""

_NAME = re.compile(rf"^{PREFIX}-(\d+)$")
_RANK_FILE = re.compile(r"^(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_(optim|model)_states\.pt$")
_MODEL_FILE = re.compile(r"^mp_rank_\d+_model_states\.pt$")
_WORLD_SIZE = re.compile(r"\(world size (\d+)\)$")


def checkpoint_step(path: Path) -> int | None:
    """The global step in a checkpoint directory's name, or None for another name.

    >>> checkpoint_step(Path("out/checkpoint-12")), checkpoint_step(Path("out/checkpoint-x"))
    (12, None)
    """
    match = _NAME.match(path.name)
    return int(match.group(1)) if match else None


def missing_rank_files(tag_dir: Path, ranks: int | None = None) -> str | None:
    """What a DeepSpeed ZeRO tag directory (``global_step<N>``) lacks of the files of ranks
    ``0 .. ranks - 1`` (None: of every rank up to the highest one it has a file of), or None.

    >>> import tempfile
    >>> tag = Path(tempfile.mkdtemp())
    >>> for r in (0, 1):
    ...     _ = (tag / f"zero_pp_rank_{r}_mp_rank_00_model_states.pt").write_bytes(b"")
    >>> _ = (tag / "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt").write_bytes(b"")
    >>> missing_rank_files(tag)
    'the optimizer states of rank 1'
    >>> _ = (tag / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt").write_bytes(b"")
    >>> missing_rank_files(tag), missing_rank_files(tag, ranks=3)
    (None, 'the optimizer states of rank 2, the model states of rank 2')
    """
    optim: set[int] = set()
    model: set[int] = set()
    names = [file.name for file in tag_dir.iterdir()]
    for match in filter(None, map(_RANK_FILE.match, names)):
        (optim if match.group(3) == "optim" else model).add(int(match.group(1)))
    whole_model = any(_MODEL_FILE.match(name) for name in names)
    if not optim:
        return "every rank's optimizer states"
    every = range(ranks if ranks is not None else max(optim | model) + 1)
    lacks = [f"the optimizer states of rank {r}" for r in every if r not in optim]
    if model:  # ZeRO-3: each rank's own
        lacks += [f"the model states of rank {r}" for r in every if r not in model]
    elif not whole_model:
        lacks.append("the model states (mp_rank_00_model_states.pt)")
    return ", ".join(lacks) or None


def missing_rng_states(path: Path, ranks: int) -> str | None:
    """Which ranks' RNG states checkpoint ``path`` of a run of ``ranks`` processes lacks, or
    None. One process writes ``rng_state.pth``, several ``rng_state_<rank>.pth`` each; a
    checkpoint saved without its optimizer (``save_only_model``: no RNG states either) needs none.

    >>> import tempfile
    >>> ckpt = Path(tempfile.mkdtemp())
    >>> _ = (ckpt / "optimizer.pt").write_bytes(b"")
    >>> _ = (ckpt / "rng_state_0.pth").write_bytes(b"")
    >>> missing_rng_states(ckpt, 2), missing_rng_states(ckpt, 1)
    ('the RNG states of rank 1 (rng_state_1.pth)', 'the RNG states (rng_state.pth)')
    """
    saved_optimizer = (path / "optimizer.pt").exists() or (path / DEEPSPEED_TAG).exists()
    if not saved_optimizer and not any(path.glob("rng_state*.pth")):
        return None
    if ranks <= 1:
        return None if (path / "rng_state.pth").exists() else "the RNG states (rng_state.pth)"
    lacks = [r for r in range(ranks) if not (path / f"rng_state_{r}.pth").exists()]
    names = ", ".join(f"rng_state_{r}.pth" for r in lacks)
    ranks_text = ", ".join(map(str, lacks))
    return f"the RNG states of rank {ranks_text} ({names})" if lacks else None


def incomplete_reason(path: Path, deepspeed: bool = False, ranks: int | None = None) -> str | None:
    """Why checkpoint directory ``path`` cannot be resumed (its save did not finish), or None
    when it is complete. ``ranks``: the world size of the run that resumes it, whose files it
    must hold (each rank's RNG states; under DeepSpeed, each rank's ZeRO partitions); None: under
    DeepSpeed, those up to its highest rank's, and no RNG check."""
    if (path / IN_PROGRESS).exists():
        return f"it holds {IN_PROGRESS}"
    state_file = path / TRAINER_STATE
    if not state_file.is_file():
        return f"it has no {TRAINER_STATE}"
    try:
        state = json.loads(state_file.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return f"its {TRAINER_STATE} does not parse ({err})"
    if not isinstance(state, dict) or state.get("global_step") != checkpoint_step(path):
        found = state.get("global_step") if isinstance(state, dict) else state
        return f"its {TRAINER_STATE} says step {found!r}"
    if deepspeed:
        tag_file = path / DEEPSPEED_TAG
        if not tag_file.is_file():
            return f"it has no DeepSpeed {DEEPSPEED_TAG} file"
        tag = tag_file.read_text().strip()
        if not tag or not (path / tag).is_dir():
            return f"its DeepSpeed {DEEPSPEED_TAG} names {tag!r}, which is not there"
        missing = missing_rank_files(path / tag, ranks)
        if missing:
            return f"its DeepSpeed {tag} lacks {missing}"
    if ranks is not None:
        missing = missing_rng_states(path, ranks)
        if missing:
            return f"it lacks {missing}"
    return None


def topology_label(nodes: int, processes_per_node: int) -> str:
    """How a run's processes are laid out, as :data:`TOPOLOGY` records it.

    >>> topology_label(2, 8), topology_label(1, 1)
    ('2 nodes x 8 processes (world size 16)', '1 node x 1 process (world size 1)')
    """
    node_s = "node" if nodes == 1 else "nodes"
    process_s = "process" if processes_per_node == 1 else "processes"
    world = nodes * processes_per_node
    return f"{nodes} {node_s} x {processes_per_node} {process_s} (world size {world})"


def set_aside(folder: Path, topology: str) -> Path | None:
    """Move the checkpoints of ``folder`` aside when another topology wrote them; returns where
    they went, or None (the same topology, or none recorded).

    A checkpoint is not resumable under another world size: DeepSpeed's ZeRO partitions and
    each rank's RNG states are per rank (DeepSpeed raises on every attempt), and the batches
    each rank draws depend on the world size. So the run starts again, the old checkpoints kept
    beside (``<folder>.<world size>-ranks``, or ``<folder>.other-topology`` for a record that
    names none; replacing an older one of that name) for a rerun
    under their own topology, and a warning names both topologies.
    """
    record = folder / TOPOLOGY
    if not record.is_file() or (old := record.read_text().strip()) == topology:
        return None
    recorded = _WORLD_SIZE.search(old)
    world = f"{recorded.group(1)}-ranks" if recorded else "other-topology"
    aside = folder.with_name(f"{folder.name}.{world}")
    shutil.rmtree(aside, ignore_errors=True)
    folder.rename(aside)
    log.warning(
        "the checkpoints in %s were written by %s, and this run has %s: a checkpoint cannot be "
        "resumed under another topology (ZeRO partitions and RNG states are per rank), so this "
        "run starts from step 0 and they are set aside in %s. To resume them instead, rerun with "
        "the resources (gpus, nodes) and processes that wrote them",
        folder,
        old,
        topology,
        aside,
    )
    return aside


def checkpoint_dirs(folder: Path) -> list[Path]:
    """The ``checkpoint-<N>`` directories of ``folder``, oldest step first."""
    if not folder.is_dir():
        return []
    steps = [(checkpoint_step(p), p) for p in folder.iterdir() if p.is_dir()]
    return [p for _, p in sorted((step, p) for step, p in steps if step is not None)]


def newest_complete(
    folder: Path, deepspeed: bool = False, remove: bool = True, ranks: int | None = None
) -> Path | None:
    """The complete checkpoint of ``folder`` with the highest step, or None (``deepspeed``,
    ``ranks``: see :func:`incomplete_reason`).

    Every incomplete one is logged and, with ``remove``, deleted: resuming from an older step,
    the Trainer would save into a stale directory of the same name, and its rotation
    (``rotate_checkpoints``, by modification time) could keep the stale one and delete a good one.
    """
    newest = None
    for path in checkpoint_dirs(folder):
        reason = incomplete_reason(path, deepspeed, ranks)
        if reason is None:
            newest = path
            continue
        log.warning(
            "checkpoint %s is incomplete (%s: its save was cut short); %s",
            path,
            reason,
            "removing it" if remove else "skipping it",
        )
        if remove:
            shutil.rmtree(path)
    return newest


def resume_point(
    checkpoints: Path,
    fingerprint: str,
    enabled: bool,
    deepspeed: bool = False,
    topo: Topology | None = None,
    stage: str = "grpo",
) -> str | None:
    """The newest complete checkpoint of an interrupted run with the same fingerprint, or None
    (:func:`newest_complete`: one whose save was cut short, or lacks
    a file of one of the ranks of ``topo``, is removed).

    A checkpoint directory left by a different configuration is cleared rather than resumed;
    one written under another topology is set aside (:func:`set_aside`). ``stage`` names the
    stage in the log lines.
    """
    stamp = checkpoints / FINGERPRINT
    if checkpoints.is_dir() and (
        not enabled or not stamp.is_file() or stamp.read_text() != fingerprint
    ):
        log.info("%s: clearing %s (another configuration or resume off)", stage, checkpoints)
        shutil.rmtree(checkpoints)
    layout = topology_label(topo.nodes, topo.processes_per_node) if topo else None
    if layout:
        set_aside(checkpoints, layout)
    checkpoints.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint)
    if layout:
        (checkpoints / TOPOLOGY).write_text(layout)
    ranks = topo.world_size if topo else None
    last = newest_complete(checkpoints, deepspeed=deepspeed, ranks=ranks)
    if last is None:
        return None
    log.info("%s: resuming from %s", stage, last)
    return str(last)
