"""Stage ``download``: fetch one dataset, pinned, into ``resources/datasets/<name>/``.

``config/datasets/<name>.yaml`` names a hub repository, a 40-hex revision and the files it
needs (:class:`vlrl.config.DatasetConfig`); :func:`vlrl.hub.download_dataset` fetches them
through the huggingface_hub cache and writes a checksum manifest beside them. The output
directory appears complete or not at all. With ``HF_HUB_OFFLINE=1`` a snapshot missing from the
cache fails at once, naming the repo, the revision and the ``hf download`` command that fetches
it.

With a ``format`` (a module of :mod:`vlrl.data.formats`), the fetched files are then converted
into canonical records, ``records/<split>.jsonl`` with their images under ``records/images/``,
inside the same atomic output; a bad raw row fails the stage, naming its file, row and field
(or, with ``bad_rows: report``, is listed in ``records/rejected.jsonl``).

A dataset with ``local`` (user-provided files, e.g. data never released) is copied from that
folder instead, with the same manifest. One with ``git`` (a benchmark published only as a git
repository) gets the files of its pinned commit through a bare cache repository
(:func:`vlrl.git_source.download_git_dataset`), the same manifest recording the URL and commit;
offline, a commit missing from that cache fails at once, naming the commands that seed it. A hub
or git dataset whose revision is not pinned (``unpinned``) is never fetched: the stage stops,
saying to run ``vlrl pin <dataset>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from vlrl import git_source
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_dir
from vlrl.hub import copy_local_dataset

if TYPE_CHECKING:
    from vlrl.config import DatasetConfig

log = logging.getLogger(__name__)

#: Keys of the dataset config (config/datasets/<name>.yaml) this stage reads: its params. Not
#: ``description``: rewording it fetches nothing new.


def run(dataset: str, cfg: DatasetConfig | None = None) -> None:
    """Fetch dataset ``dataset`` with its config (default: loaded from
    ``config/datasets/<dataset>.yaml``)."""
    from vlrl.hub import download_dataset

    if cfg is None:
        from vlrl.config import load_dataset

        cfg = load_dataset(dataset)
    out = paths.dataset_resource(dataset)
    if cfg.local is None and cfg.revision is None:
        raise StageError(
            f"dataset {dataset}: {cfg.repo_id or cfg.git} has no pinned revision "
            f"({paths.dataset_file(dataset)}: unpinned: {cfg.unpinned}); a run never downloads "
            f"an unpinned revision. Run `vlrl pin {dataset}` once, online: it writes the current "
            "commit (the hub's, or the git repository's HEAD) into the file."
        )
    with atomic_dir(out) as tmp:
        if cfg.local is not None:
            source = paths.root() / cfg.local
            log.info("dataset %s: local files %s → %s", dataset, source, out)
            manifest = copy_local_dataset(source, tmp, cfg.allow_patterns)
        elif cfg.git is not None:
            url = git_source.resolve(cfg.git, paths.root())
            log.info("dataset %s: git %s@%s → %s", dataset, url, cfg.revision, out)
            manifest = git_source.download_git_dataset(
                url, cfg.revision, tmp, allow_patterns=cfg.allow_patterns
            )
        else:
            log.info(
                "dataset %s: %s %s@%s → %s", dataset, cfg.repo_type, cfg.repo_id, cfg.revision, out
            )
            manifest = download_dataset(
                cfg.repo_id,
                cfg.revision,
                tmp,
                repo_type=cfg.repo_type,
                allow_patterns=cfg.allow_patterns,
            )
        if cfg.format is not None:
            from vlrl.data.formats import convert_dataset

            counts = convert_dataset(
                cfg.format, tmp, bad_rows=cfg.bad_rows, expected_rows=cfg.expected_rows
            )
            log.info("dataset %s: format %s → records %s", dataset, cfg.format, counts)
    log.info("dataset %s ready in %s (%d files)", dataset, out, len(manifest["files"]))
