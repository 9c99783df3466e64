"""Atomic writes leave either the complete output or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.core.files import TMP_MARK, atomic_dir, atomic_file, read_jsonl, write_jsonl


def test_failed_dir_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("killed midway")
    assert list(tmp_path.iterdir()) == []


def test_failed_rewrite_keeps_previous(tmp_path: Path) -> None:
    with atomic_dir(tmp_path / "out") as tmp:
        (tmp / "v.txt").write_text("1")
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "out") as tmp:
        (tmp / "v.txt").write_text("2")
        raise RuntimeError
    assert (tmp_path / "out/v.txt").read_text() == "1"


def test_stale_temporaries_are_cleared(tmp_path: Path) -> None:
    stale = tmp_path / f"out{TMP_MARK}abc"  # what a killed process leaves behind
    stale.mkdir()
    with atomic_dir(tmp_path / "out") as tmp:
        (tmp / "v.txt").write_text("1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_failed_file_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError), atomic_file(tmp_path / "x.json") as fh:
        fh.write("{")
        raise ValueError
    assert list(tmp_path.iterdir()) == []


def test_jsonl_round_trip_and_bad_line(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [{"a": 1}, {"b": "é"}])
    assert read_jsonl(tmp_path / "a.jsonl") == [{"a": 1}, {"b": "é"}]
    (tmp_path / "b.jsonl").write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match=r"b\.jsonl:2"):
        read_jsonl(tmp_path / "b.jsonl")


def test_read_jsonl_names_the_line_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')  # Latin-1 é
    with pytest.raises(ValueError, match=r"c\.jsonl:2: not valid UTF-8 \(byte 0xe9 at column 11\)"):
        read_jsonl(path)


def test_jsonl_keeps_unicode_as_written_and_skips_blank_lines(tmp_path: Path) -> None:
    """Non-ASCII text is written as UTF-8, not escaped (the records stay readable); a blank
    line between rows is skipped, not the end of the file."""
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"q": "Größe × 2 — 三角形"}, {"q": "b"}])
    assert path.read_text(encoding="utf-8") == '{"q": "Größe × 2 — 三角形"}\n{"q": "b"}\n'
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_a_file_is_hashed_whole_across_its_read_blocks(tmp_path: Path) -> None:
    import hashlib

    from vlrl.core.files import sha256_file

    data = bytes(range(256)) * (3 * 4096 + 1)  # 3 MiB + 256 bytes: four 1 MiB reads
    (tmp_path / "big").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(tmp_path / "big") == hashlib.sha256(data).hexdigest()
    assert sha256_file(str(tmp_path / "empty")) == hashlib.sha256(b"").hexdigest()


def test_the_dataset_manifest_lists_the_source_then_each_file_in_order(tmp_path: Path) -> None:
    import hashlib
    import json

    from vlrl.core.files import DATASET_MANIFEST, write_dataset_manifest

    (tmp_path / "b.txt").write_bytes(b"12345")
    (tmp_path / "a.txt").write_bytes(b"")
    source = {"repo_id": "x/y", "revision": "abc"}
    manifest = write_dataset_manifest(str(tmp_path), ["b.txt", "a.txt"], source)
    expected = {
        "repo_id": "x/y",
        "revision": "abc",
        "files": {
            "b.txt": {"size": 5, "sha256": hashlib.sha256(b"12345").hexdigest()},
            "a.txt": {"size": 0, "sha256": hashlib.sha256(b"").hexdigest()},
        },
    }
    assert manifest == expected and list(manifest["files"]) == ["b.txt", "a.txt"]
    assert (tmp_path / DATASET_MANIFEST).read_text() == json.dumps(expected, indent=2) + "\n"


def test_json_is_written_indented_in_the_given_key_order(tmp_path: Path) -> None:
    from vlrl.core.files import write_json

    write_json(str(tmp_path / "d" / "x.json"), {"b": 1, "a": [1, "é"]})
    assert (tmp_path / "d" / "x.json").read_text() == (
        '{\n  "b": 1,\n  "a": [\n    1,\n    "\\u00e9"\n  ]\n}\n'
    )


def test_published_outputs_get_ordinary_permissions_under_the_umask(tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "f").write_text("1")
        with atomic_file(tmp_path / "f.txt") as fh:
            fh.write("1")
        assert os.umask(0o022) == 0o022, "the umask is left as it was"
    finally:
        os.umask(old)
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o644


def test_a_stale_temporary_file_is_cleared(tmp_path: Path) -> None:
    (tmp_path / f"out.txt{TMP_MARK}abc").write_text("half")
    with atomic_file(tmp_path / "out.txt") as fh:
        fh.write("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_stale_entry_that_cannot_be_removed_or_is_gone_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a link to a folder: rmtree refuses links; another process's temporary, gone meanwhile
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"out{TMP_MARK}link").symlink_to(tmp_path / "elsewhere")
    with atomic_dir(tmp_path / "out") as tmp:
        (tmp / "v.txt").write_text("1")
    gone = tmp_path / f"x.txt{TMP_MARK}gone"
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter([gone]))
    with atomic_file(tmp_path / "x.txt") as fh:
        fh.write("1")
    assert (tmp_path / "x.txt").read_text() == "1"
