"""What the download stage hands each source and says of it, in process: the local copy, the
git archive and the hub snapshot recorded, then the conversion (vlrl.stages.download)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.config import DatasetConfig
from vlrl.core import paths
from vlrl.stages import download

COMMIT = "00112233445566778899aabbccddeeff00112233"
MANIFEST = {"files": {"a.jsonl": "sha", "b.png": "sha"}}


@pytest.fixture()
def sources(project: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Each source's fetch and the conversion recorded; each writes a file into the output."""
    import vlrl.data.formats
    import vlrl.hub

    rec = SimpleNamespace(calls=[])

    def fetch(name):
        def record(*args, **kwargs):
            rec.calls.append((name, args, kwargs))
            folder = next(a for a in args[1:] if isinstance(a, Path))  # the atomic output
            (folder / f"{name}.txt").write_text(name)
            return MANIFEST

        return record

    def convert_dataset(fmt, folder, **kwargs):
        rec.calls.append(("convert", (fmt, folder), kwargs))
        return {"test": 3}

    monkeypatch.setattr(download, "copy_local_dataset", fetch("local"))
    monkeypatch.setattr(download.git_source, "download_git_dataset", fetch("git"))
    monkeypatch.setattr(download.git_source, "resolve", lambda git, root: f"resolved {git}")
    monkeypatch.setattr(vlrl.hub, "download_dataset", fetch("hub"))
    monkeypatch.setattr(vlrl.data.formats, "convert_dataset", convert_dataset)
    return rec


def _run(name: str, caplog: pytest.LogCaptureFixture, **values) -> tuple[Path, list[str]]:
    with caplog.at_level(logging.INFO, logger="vlrl.stages.download"):
        download.run(name, DatasetConfig.model_validate(values))
    return paths.dataset_resource(name), caplog.messages


def test_a_local_dataset_is_copied_from_the_project_folder(
    sources: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    out, said = _run("mine", caplog, local="data/mine", allow_patterns=["*.jsonl"])
    ((name, (source, tmp, patterns), kwargs),) = sources.calls
    assert (name, source, patterns, kwargs) == (
        "local",
        paths.root() / "data/mine",
        ["*.jsonl"],
        {},
    )
    assert tmp.parent == out.parent and (out / "local.txt").is_file()
    assert said == [
        f"dataset mine: local files {paths.root() / 'data/mine'} → {out}",
        f"dataset mine ready in {out} (2 files)",
    ]


def test_a_git_dataset_is_archived_at_its_commit(
    sources: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    out, said = _run(
        "gitty", caplog, git="https://x.org/r.git", revision=COMMIT, allow_patterns=["d/*"]
    )
    ((name, (url, revision, tmp), kwargs),) = sources.calls
    assert tmp.parent == out.parent
    assert (name, url, revision, kwargs) == (
        "git",
        "resolved https://x.org/r.git",
        COMMIT,
        {"allow_patterns": ["d/*"]},
    )
    assert (out / "git.txt").is_file()
    assert said[0] == f"dataset gitty: git resolved https://x.org/r.git@{COMMIT} → {out}"


def test_a_hub_dataset_is_fetched_at_its_revision_then_converted(
    sources: SimpleNamespace, caplog: pytest.LogCaptureFixture
) -> None:
    out, said = _run(
        "hubby",
        caplog,
        repo_id="o/r",
        revision=COMMIT,
        repo_type="model",
        allow_patterns=["x/*"],
        format="mmstar",
        bad_rows="report",
        expected_rows={"test": 3},
    )
    (hub, convert) = sources.calls
    assert hub[0] == "hub" and hub[1][:2] == ("o/r", COMMIT)
    assert hub[2] == {"repo_type": "model", "allow_patterns": ["x/*"]}
    assert convert[0] == "convert" and convert[1][0] == "mmstar" and convert[1][1] == hub[1][2]
    assert convert[2] == {"bad_rows": "report", "expected_rows": {"test": 3}}
    assert said == [
        f"dataset hubby: model o/r@{COMMIT} → {out}",
        "dataset hubby: format mmstar → records {'test': 3}",
        f"dataset hubby ready in {out} (2 files)",
    ]
