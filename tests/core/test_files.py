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
