"""vlrl.workflow.reads: the view that records which config keys a stage reads, and which of
those no ``READS`` declaration covers."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from vlrl.workflow.reads import WHOLE, RecordingConfig, covered, undeclared


class Inner(BaseModel):
    size: int = 3
    name: str = "inner"


class Outer(BaseModel):
    seed: int = 7
    inner: Inner = Inner()

    @property
    def doubled(self) -> int:
        return 2 * self.inner.size

    def helper(self) -> str:
        return "helped"


def test_a_field_read_is_recorded_by_its_key() -> None:
    seen: set[str] = set()
    view = RecordingConfig(Outer(), seen)
    assert view.seed == 7
    assert seen == {"seed"}


def test_a_sub_model_comes_back_wrapped_and_only_its_leaves_are_recorded() -> None:
    seen: set[str] = set()
    view = RecordingConfig(Outer(), seen)
    inner = view.inner
    assert isinstance(inner, RecordingConfig)
    assert seen == set()
    assert inner.size == 3
    assert seen == {"inner.size"}


def test_a_property_is_evaluated_on_the_view_recording_the_fields_it_reads() -> None:
    seen: set[str] = set()
    assert RecordingConfig(Outer(inner=Inner(size=5)), seen).doubled == 10
    assert seen == {"inner.size"}


def test_another_attribute_reads_the_whole_object() -> None:
    seen: set[str] = set()
    view = RecordingConfig(Outer(), seen)
    assert view.helper() == "helped"
    assert seen == {WHOLE}
    assert WHOLE == "<whole config>"


def test_another_attribute_of_a_sub_model_reads_that_section() -> None:
    seen: set[str] = set()
    dumped = RecordingConfig(Outer(), seen).inner.model_dump()
    assert dumped == {"size": 3, "name": "inner"}
    assert seen == {"inner"}


def test_a_dunder_attribute_is_the_targets_and_records_nothing() -> None:
    seen: set[str] = set()
    target = Outer(seed=1)
    view = RecordingConfig(target, seen)
    assert view.__pydantic_fields_set__ == {"seed"}
    assert seen == set()


def test_the_view_is_read_only_naming_the_dotted_key() -> None:
    view = RecordingConfig(Outer(), set())
    with pytest.raises(AttributeError) as info:
        view.inner.size = 4
    assert str(info.value) == "config is read-only in a stage (tried to set inner.size)"
    with pytest.raises(AttributeError) as info:
        view.seed = 4
    assert str(info.value) == "config is read-only in a stage (tried to set seed)"


def test_repr_names_the_target() -> None:
    assert repr(RecordingConfig(Inner(), set())) == "RecordingConfig(Inner(size=3, name='inner'))"


def test_a_section_or_the_key_itself_covers_a_key() -> None:
    assert covered("sft.enabled", ["grpo", "sft"])
    assert covered("seed", ["grpo", "seed"])
    assert not covered("sft", ["sft.enabled"])
    assert not covered("sftx.enabled", ["sft"])  # a prefix of the name is not a section
    assert not covered("seed", [])


def test_undeclared_lists_the_uncovered_keys_sorted_once_each() -> None:
    seen = ["zeta", "sft.enabled", "alpha", "zeta", "grpo.beta", "grpo"]
    assert undeclared(seen, iter(["sft", "grpo.beta"])) == ["alpha", "grpo", "zeta"]
    assert undeclared(["a"], ["a"]) == []
