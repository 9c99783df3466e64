"""``vlrl pin <name>``: resolve an unpinned hub or git revision once, online, and write it into
the config, so that every later run downloads exactly that commit.

Some sources have no public commit to cite (a dataset release whose hub history could not be
read from here). Their config says so (``unpinned: <why>``, no ``revision``) and the download
stages refuse to fetch them. This command asks the hub (the real ``huggingface_hub`` client, at
``HF_ENDPOINT``) for the current commit of the repository's default branch, or, for a dataset
from a git repository (``git:``), the ``git`` command for its HEAD's commit (``git ls-remote
<url> HEAD``), and rewrites the file: the ``unpinned:`` entry becomes ``revision: <sha>``, with a
comment saying when and how it was resolved. The rest of the file, comments included, is kept as
written.
"""

from __future__ import annotations

import datetime
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from vlrl.config.base import COMMIT_SHA
from vlrl.core import paths
from vlrl.core.errors import ConfigError, StageError
from vlrl.core.files import atomic_file

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pinned:
    """What ``vlrl pin`` did: the file, the repository and the commit written."""

    file: Path
    repo_id: str
    revision: str


def _target(name: str) -> tuple[Path, str, str]:
    """``(file, repo_id, repo_type)`` of dataset or model ``name`` (datasets first); a git
    dataset's is ``(file, url, "git")``."""
    from vlrl.config import load_dataset, load_model

    dataset, model = paths.dataset_file(name), paths.model_file(name)
    if dataset.is_file():
        cfg = load_dataset(name)
        if cfg.local is not None:
            raise ConfigError(f"{dataset}: dataset {name!r} is local ({cfg.local}): nothing to pin")
        if cfg.revision is not None:
            raise ConfigError(f"{dataset}: already pinned at {cfg.revision}")
        if cfg.git is not None:
            return dataset, cfg.git, "git"
        return dataset, str(cfg.repo_id), cfg.repo_type
    if model.is_file():
        cfg = load_model(name)
        if cfg.hf is None:
            raise ConfigError(f"{model}: model {name!r} is built locally: nothing to pin")
        if cfg.hf.revision is not None:
            raise ConfigError(f"{model}: already pinned at {cfg.hf.revision}")
        return model, cfg.hf.repo_id, "model"
    known = sorted(p.stem for p in (*dataset.parent.glob("*.yaml"), *model.parent.glob("*.yaml")))
    raise ConfigError(f"no dataset or model {name!r}; known: {known}")


def current_commit(repo_id: str, repo_type: str) -> str:
    """The commit the hub's default branch of ``repo_id`` points at now; for ``repo_type``
    ``"git"``, the commit of the HEAD of the git repository at URL ``repo_id``.

    Raises:
        ConfigError: offline (``HF_HUB_OFFLINE``), or the hub (or git) cannot be reached or does
            not know the repository.
    """
    from huggingface_hub import HfApi, constants

    if repo_type == "git":
        from vlrl import git_source

        if git_source.offline():
            raise ConfigError(
                "vlrl pin asks the git repository for its HEAD commit: it needs the network; run "
                "it with HF_HUB_OFFLINE=0 and VLRL_OFFLINE unset (the Makefile sets 1 for runs)"
            )
        try:
            return git_source.remote_head(git_source.resolve(repo_id, paths.root()))
        except StageError as exc:
            raise ConfigError(str(exc)) from None
    if constants.HF_HUB_OFFLINE:
        raise ConfigError(
            "vlrl pin asks the hub for the current commit: it needs the network; run it with "
            "HF_HUB_OFFLINE=0 (the Makefile sets 1 for runs)"
        )
    try:
        info = HfApi().repo_info(repo_id, repo_type=repo_type)
    except Exception as exc:  # huggingface_hub raises many kinds (HTTP, connection, not found)
        raise ConfigError(f"{repo_id}: the hub did not answer with its commit: {exc}") from None
    sha = getattr(info, "sha", None)
    if not isinstance(sha, str) or not re.fullmatch(COMMIT_SHA[1:-1], sha):
        raise ConfigError(f"{repo_id}: the hub answered no commit sha (got {sha!r})")
    return sha


def rewrite(text: str, revision: str, note: str) -> str:
    """``text`` (a config file) with its ``unpinned:`` entry (and the lines that continue it)
    replaced by ``revision: <sha>`` and a comment keeping ``note``.

    >>> print(rewrite("repo_id: a/b\\nunpinned: >-\\n  no commit page\\nformat: x\\n", "f" * 40,
    ...               "pinned"), end="")
    repo_id: a/b
    # pinned
    revision: 'ffffffffffffffffffffffffffffffffffffffff'
    format: x
    """
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)unpinned:", line)
        if match is None:
            continue
        indent = match.group(1)
        end = index + 1
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > len(indent)
        ):
            end += 1
        # quoted: a sha of digits alone would read as a YAML integer
        new = [f"{indent}# {note}\n", f"{indent}revision: '{revision}'\n"]
        return "".join(lines[:index] + new + lines[end:])
    raise ConfigError("no unpinned: entry to replace")


def pin(name: str) -> Pinned:
    """Resolve and write the revision of unpinned dataset or model ``name``.

    Raises:
        ConfigError: ``name`` is unknown, local, already pinned, or the hub cannot answer.
    """
    file, repo_id, repo_type = _target(name)
    sha = current_commit(repo_id, repo_type)
    today = datetime.date.today().isoformat()
    where = "the git repository's HEAD" if repo_type == "git" else "the hub's default branch"
    note = f"Pinned by `vlrl pin {name}` on {today}: the commit of {where} then."
    new = rewrite(file.read_text(), sha, note)
    with atomic_file(file) as handle:
        handle.write(new)
    log.info("%s: %s pinned at %s", file, repo_id, sha)
    return Pinned(file, repo_id, sha)
