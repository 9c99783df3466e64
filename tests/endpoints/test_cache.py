"""The reply cache of every endpoint (vlrl.endpoints.cache): its keys, its files, its bound."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from vlrl.endpoints import cache as cache_module
from vlrl.endpoints.cache import EndpointCache

BODY = {"n": 1, "messages": [{"content": "é"}]}


def _keys(count: int) -> list[str]:
    return [EndpointCache.key("http://h/v1", "m", "v1", {"n": i}) for i in range(count)]


def _filled(tmp_path: Path, count: int, max_entries: int = 100) -> tuple[EndpointCache, list]:
    """A cache holding ``count`` entries, the first written least recently used."""
    cache = EndpointCache(tmp_path / "cache", max_entries=max_entries)
    keys = _keys(count)
    for key in keys:
        cache.put(key, {"reply": "r"})
    return cache, keys


def test_keys_are_stable_across_versions() -> None:
    """A key is the sha256 of a fixed recipe, so the caches of earlier runs stay hits; a change
    to the recipe must be a deliberate one (and change these)."""
    key = EndpointCache.key("http://user:secret@h:1/v1/", "m", "v1", BODY)
    assert key == "d2035046863190f60c2d49c3a6e7ad153077e5b1377c49b560ae4f654cb0f2c8"
    served = EndpointCache.key("http://h/v1", "m", "v1", {"n": 1}, "serve:vllm:m@01")
    assert served == "d3b82beb67f0a668e0d9a30d8db0cdfc7140040065318988f3bd7634945cd06c"


def test_a_key_reads_values_not_their_spelling() -> None:
    """The URL's credentials and trailing slash, and the order of the body's keys, do not
    change what is asked."""
    key = EndpointCache.key("http://h:1/v1", "m", "v1", {"messages": BODY["messages"], "n": 1})
    assert key == EndpointCache.key("http://user:secret@h:1/v1/", "m", "v1", BODY)


def test_a_cache_holds_at_least_one_entry() -> None:
    assert EndpointCache("unused", max_entries=1).max_entries == 1
    with pytest.raises(ValueError) as err:
        EndpointCache("unused", max_entries=0)
    assert str(err.value) == "EndpointCache: max_entries must be at least 1, not 0"


def test_an_entry_is_a_readable_json_file_in_its_keys_shard(tmp_path: Path) -> None:
    cache = EndpointCache(tmp_path / "cache")
    key = EndpointCache.key("http://h/v1", "m", "v1", BODY)
    cache.put(key, {"reply": "é"})
    path = tmp_path / "cache" / key[:2] / f"{key}.json"
    assert path.read_text(encoding="utf-8") == f'{{\n "key": "{key}",\n "reply": "é"\n}}\n'
    assert cache.get(key) == {"key": key, "reply": "é"}


def test_an_unreadable_or_foreign_entry_is_a_miss(tmp_path: Path, caplog) -> None:
    cache, (key, other) = _filled(tmp_path, 2)
    path = tmp_path / "cache" / key[:2] / f"{key}.json"
    path.write_text("{half")
    with caplog.at_level(logging.WARNING, logger="vlrl.endpoints.cache"):
        assert cache.get(key) is None
    assert caplog.messages == [
        f"endpoint cache: ignoring unreadable {path}: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)"
    ]
    (tmp_path / "cache" / other[:2] / f"{other}.json").write_text("[1]")
    assert cache.get(other) is None


def test_an_entry_pruned_by_another_process_while_read_is_still_a_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, (key,) = _filled(tmp_path, 1)

    def pruned_meanwhile(path: Path) -> None:
        raise FileNotFoundError(path)

    monkeypatch.setattr(cache_module, "_touch", pruned_meanwhile)
    assert cache.get(key)["reply"] == "r"


def test_an_entry_is_stamped_with_the_fine_clock(tmp_path: Path, monkeypatch) -> None:
    """Entries written within one tick of the kernel's coarse clock stay ordered for pruning."""
    path = tmp_path / "entry.json"
    path.write_text("{}")
    monkeypatch.setattr(time, "time_ns", lambda: 1_234_567_890_123_456_789)
    cache_module._touch(path)
    assert path.stat().st_mtime_ns == 1_234_567_890_123_456_789


def test_a_failed_write_leaves_nothing_and_a_killed_one_a_part_pruning_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = EndpointCache(tmp_path / "cache")
    key = _keys(1)[0]
    shard = tmp_path / "cache" / key[:2]
    with pytest.raises(TypeError):
        cache.put(key, {"reply": object()})
    assert list(shard.iterdir()) == []  # no entry, no temporary file
    # a writer killed between its write and its rename (the cleanup never runs)
    with monkeypatch.context() as killed:
        killed.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(KeyboardInterrupt))
        killed.setattr(os, "unlink", lambda path: None)
        with pytest.raises(KeyboardInterrupt):
            cache.put(key, {"reply": "r"})
    (part,) = shard.iterdir()
    assert part.name.startswith(f".{key}.") and part.name.endswith(".part"), part.name
    assert cache.get(key) is None
    cache.prune()
    assert part.exists()  # a writer may still be at it
    old = time.time() - EndpointCache.STALE_PART_S - 60
    os.utime(part, (old, old))
    cache.prune()
    assert not part.exists()


def test_rewriting_an_entry_does_not_count_it_twice(tmp_path: Path, monkeypatch) -> None:
    cache = EndpointCache(tmp_path / "cache", max_entries=3)
    pruned: list[int | None] = []
    monkeypatch.setattr(cache, "prune", lambda keep=None: pruned.append(keep) or 0)
    key, *others = _keys(4)
    for _ in range(4):
        cache.put(key, {"reply": "again"})
    cache.put(others[0], {"reply": "r"})
    cache.put(others[1], {"reply": "r"})
    assert (len(cache), pruned) == (3, [])
    cache.put(others[2], {"reply": "r"})  # the fourth entry: above the bound
    assert pruned == [None]


def test_pruning_keeps_the_most_recently_used_nine_tenths(tmp_path: Path, caplog) -> None:
    cache, keys = _filled(tmp_path, 20, max_entries=20)
    assert cache.get(keys[0]) is not None  # used last now
    with caplog.at_level(logging.INFO, logger="vlrl.endpoints.cache"):
        assert cache.prune() == 2
    assert caplog.messages == [
        f"endpoint cache {tmp_path / 'cache'}: removed 2 least recently used"
    ]
    assert len(cache) == 18
    assert cache.get(keys[0]) is not None
    assert cache.get(keys[1]) is None and cache.get(keys[2]) is None
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="vlrl.endpoints.cache"):
        assert cache.prune(keep=30) == 0
    assert caplog.messages == []  # nothing removed, nothing said
    assert cache.prune(keep=15) == 3


def test_pruning_what_another_process_pruned_meanwhile_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, keys = _filled(tmp_path, 3)
    listed = cache._entries()
    (tmp_path / "cache" / keys[0][:2] / f"{keys[0]}.json").unlink()  # gone before its stat
    monkeypatch.setattr(cache, "_entries", lambda: listed)
    unlink = os.unlink
    gone = str(tmp_path / "cache" / keys[1][:2] / f"{keys[1]}.json")

    def second_gone_before_its_unlink(path) -> None:
        if str(path) == gone:
            unlink(path)
            raise FileNotFoundError(path)
        unlink(path)

    monkeypatch.setattr(os, "unlink", second_gone_before_its_unlink)
    assert cache.prune(keep=0) == 1  # only the third was this process's to remove
    assert list((tmp_path / "cache").glob("*/*.json")) == []


def test_a_part_file_gone_before_its_age_is_read_is_no_error(tmp_path: Path, monkeypatch) -> None:
    cache, (key,) = _filled(tmp_path, 1)
    ghost = tmp_path / "cache" / key[:2] / f".{key}.x.part"

    class Listing(type(cache.path)):
        def glob(self, pattern):
            return iter([ghost])  # listed, then removed by its writer's rename

    cache.path = Listing(cache.path)
    assert cache.prune() == 0


def test_only_the_trailing_slash_is_taken_off_an_endpoint_url() -> None:
    assert EndpointCache.key("http://h/apiX/", "m", "v1", {}) != EndpointCache.key(
        "http://h/api", "m", "v1", {}
    )


def test_a_write_that_fails_after_its_rename_says_why(tmp_path: Path, monkeypatch) -> None:
    """The entry is in place but could not be stamped: the caller learns why, not that the
    temporary file (renamed already) is gone."""
    cache = EndpointCache(tmp_path / "cache")

    def unstampable(path: Path) -> None:
        raise PermissionError(f"cannot stamp {path.name}")

    monkeypatch.setattr(cache_module, "_touch", unstampable)
    with pytest.raises(OSError) as err:
        cache.put(_keys(1)[0], {"reply": "r"})
    assert type(err.value) is PermissionError
