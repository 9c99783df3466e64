"""The base_model stage's own decisions, in process and in milliseconds: what the tiny builder
and the hub download are given, what is logged, the refusal of an unpinned revision, and what
the tiny tokenizer's corpus is made of (vlrl.stages.base_model). The real build is exercised by
test_base_model.py; here the builder, the download and the corpus' parts are recorders."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from vlrl.config import load_model
from vlrl.config.data import HubModelConfig
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.stages import base_model

HF = "qwen2.5-vl-3b-instruct"
SHA = "66285546d2b821cf421d4f5eb2576359d3770cd3"


@pytest.fixture()
def builders(project: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    """Recorders for the tiny builder and the hub download; each writes a config.json."""
    import vlrl.hub
    import vlrl.models.tiny

    calls: list = []

    def build_tiny_model(tiny, corpus, out, *, seed):
        calls.append(("tiny", tiny, corpus, Path(out).parent, seed))
        (Path(out) / "config.json").write_text("{}")

    def download_model(repo_id, revision, out):
        calls.append(("hf", repo_id, revision, Path(out).parent))
        (Path(out) / "config.json").write_text("{}")

    monkeypatch.setattr(vlrl.models.tiny, "build_tiny_model", build_tiny_model)
    monkeypatch.setattr(vlrl.hub, "download_model", download_model)
    monkeypatch.setattr(base_model, "tiny_corpus", lambda: ["the corpus"])
    return calls


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "vlrl.stages.base_model"]


def test_the_tiny_builder_gets_its_config_corpus_and_seed(
    builders: list, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vlrl.stages.base_model")
    base_model.run("tiny-qwen2.5-vl")
    assert builders == [
        (
            "tiny",
            load_model("tiny-qwen2.5-vl").tiny,
            ["the corpus"],
            Path("resources/models"),
            0,
        )
    ]
    assert [p.name for p in Path("resources/models/tiny-qwen2.5-vl").iterdir()] == ["config.json"]
    assert _messages(caplog) == [
        "base model tiny-qwen2.5-vl: builder tiny → resources/models/tiny-qwen2.5-vl",
        "base model tiny-qwen2.5-vl ready in resources/models/tiny-qwen2.5-vl",
    ]


def test_a_hub_model_is_downloaded_at_its_pinned_revision(
    builders: list, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vlrl.stages.base_model")
    base_model.run(HF)
    assert builders == [("hf", "Qwen/Qwen2.5-VL-3B-Instruct", SHA, Path("resources/models"))]
    assert (paths.model_resource(HF) / "config.json").is_file()
    assert _messages(caplog) == [
        f"base model {HF}: builder hf → resources/models/{HF}",
        f"base model {HF} ready in resources/models/{HF}",
    ]


def test_an_unpinned_revision_is_never_downloaded(project: Path, builders: list) -> None:
    cfg = load_model(HF)
    unpinned = HubModelConfig(repo_id="Org/Model", unpinned="no public commit")
    with pytest.raises(StageError) as err:
        base_model.run(HF, cfg.model_copy(update={"hf": unpinned}))
    assert str(err.value) == (
        f"base model {HF}: Org/Model has no pinned revision "
        f"({project}/config/models/{HF}.yaml: hf.unpinned: no public commit); a run never "
        f"downloads an unpinned revision. Run `vlrl pin {HF}` once, online."
    )
    assert builders == []
    assert not paths.model_resource(HF).exists()


def test_the_tiny_corpus_weighs_instructions_and_chat_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vlrl.data.shapes
    import vlrl.models.tiny

    seeds: list = []

    def text_corpus(*, seed, formats):
        seeds.append((seed, formats))
        return ["scene"]

    monkeypatch.setattr(vlrl.data.shapes, "text_corpus", text_corpus)
    monkeypatch.setattr(vlrl.models.tiny, "CHAT_TEMPLATE_TEXTS", ["chat"])
    monkeypatch.setattr(base_model, "instruction_texts", lambda: ["do", "it"])
    assert base_model.tiny_corpus(seed=5) == ["scene"] + ["do", "it"] * 20 + ["chat"] * 200
    assert base_model.tiny_corpus() == ["scene"] + ["do", "it"] * 20 + ["chat"] * 200
    formats = (
        "think_answer",
        "rec_json",
        "od_json",
        "see_think_boxed",
        "caption_bbox_answer",
        "sophiavl_think",
    )
    assert seeds == [(5, formats), (0, formats)]
