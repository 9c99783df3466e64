"""Fixtures of the pipeline tests: the shrunk default experiment, built once per test session."""

from __future__ import annotations

import pytest
from scratch_project import SHRUNK_DEFAULT, Project

EXP_FILE = "config/experiments/tiny_shapes.yaml"


@pytest.fixture(scope="session")
def built_default(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The shrunk default after `dvc repro` in a fresh copy (as after `make run`); never edit
    it: take a :func:`built_copy`."""
    project = Project(tmp_path_factory.mktemp("built_default"))
    project.set_values(EXP_FILE, SHRUNK_DEFAULT)
    project.repro_log = project("dvc", "repro")
    return project


@pytest.fixture(scope="module")
def built_copy(built_default: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A copy of :func:`built_default` of the test module's own, to edit and run."""
    project = Project(tmp_path_factory.mktemp("built_copy"), copy_of=built_default)
    project.repro_log = built_default.repro_log
    return project
