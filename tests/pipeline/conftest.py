"""Fixtures of the pipeline tests: the shrunk default experiment, built once per test session;
and their marker, ``pipeline`` (``make pipeline`` runs them, ``make test`` does not)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from filelock import FileLock
from scratch_project import Project

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``pipeline`` (the hook sees the whole session's items)."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.pipeline)


@pytest.fixture(scope="session")
def built_default(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Project:
    """The shrunk default after `dvc repro` in a fresh copy (as after `make run`); never edit
    it: take a :func:`built_copy`.

    Built once per test session, under xdist too: the first worker to need it builds it in the
    session's temporary folder that all workers share, the others wait for it and use it.
    """
    # xdist: <session>/popen-gwN per worker, so the parent is the session's own folder
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    root, log = shared / "built_default", shared / "built_default.log"
    with FileLock(str(shared / "built_default.lock")):
        if log.is_file():
            project = Project(root, existing=True)
        else:
            shutil.rmtree(root, ignore_errors=True)  # a build that failed in another worker
            root.mkdir()
            project = Project(root)
            project.shrink()
            log.write_text(project("dvc", "repro"))
    project.repro_log = log.read_text()
    return project


@pytest.fixture(scope="module")
def built_copy(built_default: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A copy of :func:`built_default` of the test module's own, to edit and run."""
    project = Project(tmp_path_factory.mktemp("built_copy"), copy_of=built_default)
    project.repro_log = built_default.repro_log
    return project
