"""vlrl.workflow.pin in the test process: which file and repository ``vlrl pin`` resolves, each
refusal's message, the hub's and git's answers (stand-ins for both), the rewrite of the
``unpinned:`` entry, and the note written with the commit."""

from __future__ import annotations

import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import huggingface_hub
import pytest
from huggingface_hub import constants

from vlrl import git_source
from vlrl.core.errors import ConfigError, StageError
from vlrl.workflow import pin

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for kind in ("datasets", "models"):
        (tmp_path / "config" / kind).mkdir(parents=True)
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(root: Path, kind: str, name: str, text: str) -> Path:
    path = root / "config" / kind / f"{name}.yaml"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------ _target
def test_an_unpinned_hub_dataset_is_its_repo_and_type(root: Path) -> None:
    path = _write(root, "datasets", "d", "repo_id: o/d\nrepo_type: model\nunpinned: why\n")
    assert pin._target("d") == (path, "o/d", "model")


def test_an_unpinned_git_dataset_is_its_url(root: Path) -> None:
    path = _write(root, "datasets", "g", "git: https://example.org/r.git\nunpinned: why\n")
    assert pin._target("g") == (path, "https://example.org/r.git", "git")


def test_a_local_dataset_has_nothing_to_pin(root: Path) -> None:
    path = _write(root, "datasets", "l", "local: data/here\n")
    with pytest.raises(ConfigError) as info:
        pin._target("l")
    assert str(info.value) == f"{path}: dataset 'l' is local (data/here): nothing to pin"


def test_a_pinned_dataset_is_refused(root: Path) -> None:
    path = _write(root, "datasets", "p", f"repo_id: o/p\nrevision: '{SHA}'\n")
    with pytest.raises(ConfigError) as info:
        pin._target("p")
    assert str(info.value) == f"{path}: already pinned at {SHA}"


def test_a_dataset_comes_before_a_model_of_the_same_name(root: Path) -> None:
    path = _write(root, "datasets", "x", "repo_id: o/data\nunpinned: why\n")
    _write(root, "models", "x", "builder: hf\nhf: {repo_id: o/model, unpinned: why}\n")
    assert pin._target("x") == (path, "o/data", "dataset")


def test_an_unpinned_hub_model_is_its_repo(root: Path) -> None:
    path = _write(root, "models", "m", "builder: hf\nhf: {repo_id: o/m, unpinned: why}\n")
    assert pin._target("m") == (path, "o/m", "model")


def test_a_locally_built_model_has_nothing_to_pin(root: Path) -> None:
    path = _write(root, "models", "tiny", "builder: tiny\n")
    with pytest.raises(ConfigError) as info:
        pin._target("tiny")
    assert str(info.value) == f"{path}: model 'tiny' is built locally: nothing to pin"


def test_a_pinned_model_is_refused(root: Path) -> None:
    path = _write(root, "models", "m", f"builder: hf\nhf: {{repo_id: o/m, revision: '{SHA}'}}\n")
    with pytest.raises(ConfigError) as info:
        pin._target("m")
    assert str(info.value) == f"{path}: already pinned at {SHA}"


def test_an_unknown_name_lists_the_known_ones(root: Path) -> None:
    _write(root, "datasets", "zeta", "local: z\n")
    _write(root, "models", "alpha", "builder: tiny\n")
    _write(root, "datasets", "mid", "local: m\n")
    (root / "config" / "models" / "notes.txt").write_text("")
    with pytest.raises(ConfigError) as info:
        pin._target("nope")
    assert str(info.value) == "no dataset or model 'nope'; known: ['alpha', 'mid', 'zeta']"


# ----------------------------------------------------------------------- current_commit
class _Api:
    """A stand-in of huggingface_hub.HfApi: records what it is asked, answers ``info``."""

    asked: ClassVar[list[tuple]] = []
    answer: ClassVar[object] = None

    def repo_info(self, repo_id, repo_type=None):
        self.asked.append((repo_id, repo_type))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> type[_Api]:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "HfApi", _Api)
    _Api.asked = []
    _Api.answer = SimpleNamespace(sha=SHA)
    return _Api


def test_the_hub_is_asked_for_the_repositorys_commit(hub: type[_Api]) -> None:
    assert pin.current_commit("o/r", "dataset") == SHA
    assert hub.asked == [("o/r", "dataset")]


def test_offline_the_hub_is_not_asked(hub: type[_Api], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError) as info:
        pin.current_commit("o/r", "model")
    assert str(info.value) == (
        "vlrl pin asks the hub for the current commit: it needs the network; run it with "
        "HF_HUB_OFFLINE=0 (the Makefile sets 1 for runs)"
    )
    assert hub.asked == []


def test_a_hub_that_fails_is_named(hub: type[_Api]) -> None:
    hub.answer = OSError("connection refused")
    with pytest.raises(ConfigError) as info:
        pin.current_commit("o/r", "model")
    assert str(info.value) == "o/r: the hub did not answer with its commit: connection refused"
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize(
    "sha",
    [None, 123, SHA.upper(), SHA[:-1], SHA + "0", "x" + SHA, "main"],
)
def test_an_answer_without_a_full_commit_sha_is_refused(hub: type[_Api], sha) -> None:
    hub.answer = SimpleNamespace(sha=sha)
    with pytest.raises(ConfigError) as info:
        pin.current_commit("o/r", "dataset")
    assert str(info.value) == f"o/r: the hub answered no commit sha (got {sha!r})"


def test_an_answer_with_no_sha_at_all_is_refused(hub: type[_Api]) -> None:
    hub.answer = SimpleNamespace()
    with pytest.raises(ConfigError, match=r"^o/r: the hub answered no commit sha \(got None\)$"):
        pin.current_commit("o/r", "dataset")


@pytest.fixture
def git(monkeypatch: pytest.MonkeyPatch, root: Path) -> list[str]:
    """git_source's network calls stood in for: the URLs asked for their HEAD."""
    asked: list[str] = []

    def remote_head(url: str) -> str:
        asked.append(url)
        if url.endswith("gone"):
            raise StageError(f"cannot read the HEAD commit of {url}")
        return SHA

    monkeypatch.setattr(git_source, "offline", lambda: False)
    monkeypatch.setattr(git_source, "remote_head", remote_head)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # git does not ask the hub
    return asked


def test_a_git_repository_is_asked_for_its_head_from_the_project_root(
    git: list[str], root: Path
) -> None:
    assert pin.current_commit("data/upstream", "git") == SHA
    assert git == [str(root / "data" / "upstream")]


def test_a_git_repository_that_cannot_be_read_is_a_config_error(git: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        pin.current_commit("https://example.org/gone", "git")
    assert str(info.value) == "cannot read the HEAD commit of https://example.org/gone"
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_offline_no_git_repository_is_asked(
    git: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_source, "offline", lambda: True)
    with pytest.raises(ConfigError) as info:
        pin.current_commit("https://example.org/r", "git")
    assert str(info.value) == (
        "vlrl pin asks the git repository for its HEAD commit: it needs the network; run it "
        "with HF_HUB_OFFLINE=0 and VLRL_OFFLINE unset (the Makefile sets 1 for runs)"
    )
    assert git == []


# ------------------------------------------------------------------------------ rewrite
def test_rewrite_replaces_the_entry_and_its_continuation_lines() -> None:
    text = "repo_id: a/b\nunpinned: >-\n  first line\n\n  after a blank\nformat: x\n"
    assert pin.rewrite(text, SHA, "the note") == (
        f"repo_id: a/b\n# the note\nrevision: '{SHA}'\nformat: x\n"
    )


def test_rewrite_of_a_nested_entry_keeps_its_indent_and_the_sections_next_key() -> None:
    text = "builder: hf\nhf:\n  repo_id: a/b\n  unpinned: >-\n    why\n  other: 1\nparameters: 3\n"
    assert pin.rewrite(text, SHA, "n") == (
        f"builder: hf\nhf:\n  repo_id: a/b\n  # n\n  revision: '{SHA}'\n  other: 1\nparameters: 3\n"
    )


def test_rewrite_of_a_last_entry_with_no_final_newline() -> None:
    assert pin.rewrite("repo_id: a/b\nunpinned: why", SHA, "n") == (
        f"repo_id: a/b\n# n\nrevision: '{SHA}'\n"
    )


def test_rewrite_of_an_entry_at_the_top() -> None:
    assert pin.rewrite("unpinned: why\nrepo_id: a/b\n", SHA, "n") == (
        f"# n\nrevision: '{SHA}'\nrepo_id: a/b\n"
    )


def test_rewrite_needs_an_unpinned_entry() -> None:
    with pytest.raises(ConfigError, match=r"^no unpinned: entry to replace$"):
        pin.rewrite("repo_id: a/b\n# unpinned: in a comment\nwas_unpinned: x\n", SHA, "n")


# ---------------------------------------------------------------------------------- pin
@pytest.fixture
def today(monkeypatch: pytest.MonkeyPatch) -> str:
    day = datetime.date(2024, 3, 9)
    monkeypatch.setattr(pin, "datetime", SimpleNamespace(date=SimpleNamespace(today=lambda: day)))
    return "2024-03-09"


def test_pin_writes_the_hubs_commit_with_a_dated_note(
    root: Path, hub: type[_Api], today: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = _write(root, "datasets", "d", "# kept\nrepo_id: o/d\nunpinned: why\nformat: x\n")
    with caplog.at_level("INFO", logger="vlrl.workflow.pin"):
        assert pin.pin("d") == pin.Pinned(path, "o/d", SHA)
    assert path.read_text() == (
        "# kept\nrepo_id: o/d\n# Pinned by `vlrl pin d` on 2024-03-09: the commit of the hub's "
        f"default branch then.\nrevision: '{SHA}'\nformat: x\n"
    )
    assert hub.asked == [("o/d", "dataset")]
    assert caplog.messages == [f"{path}: o/d pinned at {SHA}"]


def test_pin_of_a_git_dataset_says_it_took_the_heads_commit(
    root: Path, git: list[str], today: str
) -> None:
    path = _write(root, "datasets", "g", "git: https://example.org/r\nunpinned: why\n")
    assert pin.pin("g") == pin.Pinned(path, "https://example.org/r", SHA)
    assert path.read_text() == (
        "git: https://example.org/r\n# Pinned by `vlrl pin g` on 2024-03-09: the commit of the "
        f"git repository's HEAD then.\nrevision: '{SHA}'\n"
    )
