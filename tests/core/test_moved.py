"""Old import paths (vlrl.core.moved): a stand-in module whose names are the new modules', a
warning naming where they went, the finder installed once; anything else imports as before."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from vlrl.core import moved


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch):
    """Forget the old modules imported so far, so each import here goes through the finder."""
    for name in moved.MOVED:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_module_moved_to_three_names_them_all(fresh) -> None:
    with pytest.warns(moved.MovedWarning) as caught:
        import vlrl.servers as old
    assert [str(w.message) for w in caught] == [
        "vlrl.servers moved to vlrl.serving.servers, vlrl.serving.commands and "
        "vlrl.serving.gpus: import it from there (the old path goes in the next release)"
    ]
    # the line that imports; under mutation testing, mutmut's trampoline, which calls the hook
    trampoline = sys.modules.get("mutmut.mutation.trampoline")
    assert caught[0].filename == (trampoline.__file__ if trampoline else __file__)
    assert isinstance(old, moved._StandIn) and old.__name__ == "vlrl.servers"
    assert old.__doc__ == (
        "Moved to vlrl.serving.servers, vlrl.serving.commands, vlrl.serving.gpus."
    )
    from vlrl.serving import commands, gpus, servers

    # each name from the first new module that defines it
    assert old.running is servers.running and old.serve_command is commands.serve_command
    assert old.stage_split is gpus.stage_split


def test_a_module_moved_to_one_names_it(fresh) -> None:
    with pytest.warns(moved.MovedWarning) as caught:
        old = importlib.import_module("vlrl.errors")
    assert str(caught[0].message) == (
        "vlrl.errors moved to vlrl.core.errors: import it from there (the old path goes in the "
        "next release)"
    )
    from vlrl.core import errors

    assert old.ConfigError is errors.ConfigError


def test_a_name_no_new_module_defines_is_an_attribute_error(fresh) -> None:
    with pytest.warns(moved.MovedWarning):
        old = importlib.import_module("vlrl.prompts")
    with pytest.raises(AttributeError) as caught:
        old.no_such_name  # noqa: B018
    assert str(caught.value) == (
        "module 'vlrl.prompts' moved to vlrl.items.prompts, vlrl.items.prompt_texts, which "
        "define no 'no_such_name'"
    )
    with pytest.raises(AttributeError) as dunder:
        old.__wrapped__  # noqa: B018
    assert str(dunder.value) == "__wrapped__"  # dunder lookups never reach the new modules


def test_other_modules_are_not_the_finders() -> None:
    finder = moved._Finder()
    assert finder.find_spec("vlrl.rewards") is None
    spec = finder.find_spec("vlrl.paths")
    assert spec is not None and spec.name == "vlrl.paths" and spec.loader is finder


def test_install_adds_the_finder_once(monkeypatch: pytest.MonkeyPatch) -> None:
    path = [f for f in sys.meta_path if not isinstance(f, moved._Finder)]
    monkeypatch.setattr(sys, "meta_path", path)
    with warnings.catch_warnings():
        moved.install()
        moved.install()
        assert sum(isinstance(f, moved._Finder) for f in sys.meta_path) == 1
        assert isinstance(sys.meta_path[-1], moved._Finder)
        assert any(
            action == "default" and category is moved.MovedWarning
            for action, _, category, _, _ in warnings.filters
        )


def test_current_names_the_new_modules_or_the_module_itself() -> None:
    assert moved.current("vlrl.servers") == (
        "vlrl.serving.servers",
        "vlrl.serving.commands",
        "vlrl.serving.gpus",
    )
    assert moved.current("vlrl.rewards") == ("vlrl.rewards",)
