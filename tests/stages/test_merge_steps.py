"""The merge stage's own decisions, in process and in milliseconds: which model a LoRA adapter is
merged into, what it logs, how a full fine-tune is copied and when the result is refused
(vlrl.stages.merge). The real merge is exercised by test_merge.py; here transformers' and peft's
loaders are recorders."""

from __future__ import annotations

import logging
import os
import re
import sys
import types
from pathlib import Path

import pytest

from vlrl.config import load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import merge

EXP = "tiny_shapes"
OLD = 978_307_200  # 2001-01-01: a time long before any test runs


class Saved:
    """A loaded object whose save_pretrained writes ``files`` into the directory given."""

    def __init__(self, calls: list, name: str, files: tuple[str, ...]) -> None:
        self.calls, self.name, self.files = calls, name, files

    def merge_and_unload(self) -> Saved:
        self.calls.append(("merge_and_unload", self.name))
        return Saved(self.calls, "merged", self.files)

    def save_pretrained(self, out: str) -> None:
        self.calls.append(("save", self.name, out))
        for name in self.files:
            (Path(out) / name).write_text("{}")


class Loaders:
    """Stands in for AutoModelForImageTextToText, PeftModel and AutoProcessor: records what each
    loads; the merged model saves ``model_files``."""

    def __init__(self, model_files: tuple[str, ...] = ("config.json",)) -> None:
        self.calls: list[tuple] = []
        self.model_files = model_files

    def base(self, path: str) -> Saved:
        self.calls.append(("base", path))
        return Saved(self.calls, "base", ())

    def adapter(self, base: Saved, path: str) -> Saved:
        self.calls.append(("adapter", base.name, path))
        return Saved(self.calls, "peft", self.model_files)

    def processor(self, path: str) -> Saved:
        self.calls.append(("processor", path))
        return Saved(self.calls, "processor", ("preprocessor_config.json",))


@pytest.fixture()
def loaders(project: Path, monkeypatch: pytest.MonkeyPatch) -> Loaders:
    """The recorders, as the ``peft`` and ``transformers`` modules the stage imports (stand-ins
    in sys.modules for this test: neither heavy library is imported)."""
    recorder = Loaders()
    fake_peft = types.ModuleType("peft")
    fake_peft.PeftModel = types.SimpleNamespace(from_pretrained=recorder.adapter)
    fake_transformers = types.ModuleType("transformers")
    fake_transformers.AutoModelForImageTextToText = types.SimpleNamespace(
        from_pretrained=recorder.base
    )
    fake_transformers.AutoProcessor = types.SimpleNamespace(from_pretrained=recorder.processor)
    monkeypatch.setitem(sys.modules, "peft", fake_peft)
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers)
    return recorder


def _adapter() -> Path:
    """A GRPO output that is a LoRA adapter (its weights are never read: the loaders record)."""
    final = paths.grpo_final_dir(EXP)
    final.mkdir(parents=True)
    (final / "adapter_config.json").write_text("{}")
    return final


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.merge"]


def test_after_sft_the_adapter_is_merged_into_the_sft_model(
    loaders: Loaders, caplog: pytest.LogCaptureFixture
) -> None:
    _adapter()
    caplog.set_level(logging.INFO, logger="vlrl.stages.merge")
    merge.run(EXP, load_experiment(EXP, ["sft.enabled=true"]))
    assert loaders.calls[:3] == [
        ("base", "results/tiny_shapes/sft"),
        ("adapter", "base", "results/tiny_shapes/grpo/final"),
        ("merge_and_unload", "peft"),
    ]
    assert loaders.calls[4] == ("processor", "results/tiny_shapes/grpo/final")
    assert _messages(caplog) == [
        "merge: merging the LoRA adapter results/tiny_shapes/grpo/final "
        "into results/tiny_shapes/sft"
    ]
    out = paths.merged_model_dir(EXP)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "preprocessor_config.json"]


def test_without_sft_the_adapter_is_merged_into_the_base_model(
    loaders: Loaders, caplog: pytest.LogCaptureFixture
) -> None:
    _adapter()
    caplog.set_level(logging.INFO, logger="vlrl.stages.merge")
    merge.run(EXP, load_experiment(EXP, ["sft.enabled=false"]))
    assert loaders.calls[0] == ("base", "resources/models/tiny-qwen2.5-vl")
    assert _messages(caplog) == [
        "merge: merging the LoRA adapter results/tiny_shapes/grpo/final "
        "into resources/models/tiny-qwen2.5-vl"
    ]


def test_a_merged_model_without_config_is_refused(
    loaders: Loaders, monkeypatch: pytest.MonkeyPatch
) -> None:
    _adapter()
    loaders.model_files = ("model.safetensors",)
    with pytest.raises(StageError) as err:
        merge.run(EXP, load_experiment(EXP, ["sft.enabled=false"]))
    assert re.fullmatch(
        r"merge: no config\.json in the merged model results/tiny_shapes/model\.tmp-\w+",
        str(err.value),
    ), str(err.value)
    assert not paths.merged_model_dir(EXP).exists()
    assert not list(paths.results_dir(EXP).glob("model.tmp-*")), "the temporary dir is removed"


def _full_model(files: dict[str, str]) -> Path:
    """A GRPO output that is a full fine-tune, its files dated 2001."""
    final = paths.grpo_final_dir(EXP)
    (final / "sub").mkdir(parents=True)
    for name, text in files.items():
        (final / name).write_text(text)
        os.utime(final / name, (OLD, OLD))
    return final


def test_a_full_fine_tune_is_copied_with_fresh_times(
    loaders: Loaders, caplog: pytest.LogCaptureFixture
) -> None:
    _full_model({"config.json": '{"a": 1}', "sub/weights.bin": "w"})
    caplog.set_level(logging.INFO, logger="vlrl.stages.merge")
    merge.run(EXP, load_experiment(EXP, ["sft.enabled=false"]))
    out = paths.merged_model_dir(EXP)
    assert (out / "config.json").read_text() == '{"a": 1}'
    assert (out / "sub" / "weights.bin").read_text() == "w"
    # Snakemake must see the copies as newer than the grpo output they came from.
    for name in ("config.json", "sub/weights.bin"):
        assert (out / name).stat().st_mtime > OLD + 10 * 365 * 86400, name
    assert _messages(caplog) == ["merge: full fine-tune; copying results/tiny_shapes/grpo/final"]
    assert loaders.calls == [], "nothing is loaded for a copy"


def test_a_full_fine_tune_without_config_is_refused(loaders: Loaders) -> None:
    _full_model({"model.safetensors": "w"})
    with pytest.raises(StageError) as err:
        merge.run(EXP, load_experiment(EXP, ["sft.enabled=false"]))
    assert re.fullmatch(
        r"merge: no config\.json in the merged model results/tiny_shapes/model\.tmp-\w+",
        str(err.value),
    ), str(err.value)
    assert not paths.merged_model_dir(EXP).exists()
