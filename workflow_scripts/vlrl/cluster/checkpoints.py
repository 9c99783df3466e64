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
``checkpoint-is-incomplete.txt``; a directory holding it is incomplete too.

Torch-free: the stage picks its resume point before it imports torch.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "checkpoint"
"""transformers' ``PREFIX_CHECKPOINT_DIR``: checkpoints are ``checkpoint-<global step>``."""
TRAINER_STATE = "trainer_state.json"
"""transformers' ``TRAINER_STATE_NAME``, the file ``_save_checkpoint`` writes last."""
IN_PROGRESS = "checkpoint-is-incomplete.txt"
"""The sentinel of transformers' JIT (SIGTERM) checkpoint while it saves."""
DEEPSPEED_TAG = "latest"
"""The file in which DeepSpeed's ``save_checkpoint`` names its newest tag directory."""

_NAME = re.compile(rf"^{PREFIX}-(\d+)$")
_RANK_FILE = re.compile(r"^(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_(optim|model)_states\.pt$")
_MODEL_FILE = re.compile(r"^mp_rank_\d+_model_states\.pt$")


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
    whole_model = False
    for file in tag_dir.iterdir():
        match = _RANK_FILE.match(file.name)
        if match:
            (optim if match.group(3) == "optim" else model).add(int(match.group(1)))
        whole_model = whole_model or bool(_MODEL_FILE.match(file.name))
    if not optim:
        return "every rank's optimizer states"
    every = range(ranks if ranks is not None else max(optim | model) + 1)
    lacks = [f"the optimizer states of rank {r}" for r in every if r not in optim]
    if model:  # ZeRO-3: each rank's own
        lacks += [f"the model states of rank {r}" for r in every if r not in model]
    elif not whole_model:
        lacks.append("the model states (mp_rank_00_model_states.pt)")
    return ", ".join(lacks) or None


def incomplete_reason(path: Path, deepspeed: bool = False, ranks: int | None = None) -> str | None:
    """Why checkpoint directory ``path`` cannot be resumed (its save did not finish), or None
    when it is complete. ``ranks``: under DeepSpeed, the world size whose files it must hold
    (the run's; ZeRO's partitions are per rank), else those up to its highest rank's."""
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
    return None


def checkpoint_dirs(folder: Path) -> list[Path]:
    """The ``checkpoint-<N>`` directories of ``folder``, oldest step first."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and checkpoint_step(p) is not None]
    return sorted(found, key=lambda p: checkpoint_step(p) or 0)


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
