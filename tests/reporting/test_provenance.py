"""vlrl.reporting.provenance: what the report says about where its numbers come from holds no
path, time or commit, so a fresh clone reproduces it byte for byte."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pydantic import BaseModel

from vlrl.benchmarks import load_benchmark
from vlrl.config import load_experiment
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.items.predictions import JudgeMetadata, ScoredItem, Scores
from vlrl.reporting import provenance
from vlrl.reporting.frames import Evaluation
from vlrl.workflow import resolve, stage_deps

REPO = Path(__file__).resolve().parents[2]
TIME = re.compile(r"\d{1,2}:\d{2}(:\d{2})?|\b20\d{2}-\d{2}-\d{2}\b")


def _collect(project: Path, benches=("shapes_test", "refcoco_val")) -> dict:
    shutil.copytree(REPO / "envs", project / "envs")
    cfg = load_experiment("tiny_shapes", [f"benchmarks=[{', '.join(benches)}]"])
    evaluations = [Evaluation(b, load_benchmark(b), {}) for b in benches]
    _resolve(cfg.base_model, [e.config.dataset for e in evaluations if e.config.dataset])
    return _provenance(cfg, evaluations)


def _provenance(cfg, evaluations: list[Evaluation]) -> dict:
    """The provenance, given the report's code files as `vlrl report` gives them (vlrl.cli)."""
    root = stage_deps.source_root().parent
    code = stage_deps.code_files("report", root)
    return provenance.collect("tiny_shapes", cfg, declared_reads("report"), evaluations, code, root)


def _resolve(model: str, datasets: list[str]) -> None:
    """Write the params files the provenance reads (the rule's input function does)."""
    resolve.ensure("base_model", model)
    for name in datasets:
        resolve.ensure("download", name)


def _strings(tree) -> list[str]:
    if isinstance(tree, dict):
        return [s for k, v in tree.items() for s in (str(k), *_strings(v))]
    if isinstance(tree, list | tuple):
        return [s for v in tree for s in _strings(v)]
    return [str(tree)]


def test_no_absolute_path_time_or_host(project):
    found = _collect(project)
    import socket

    for text in _strings(found):
        assert not text.startswith("/") and str(project) not in text and str(REPO) not in text
        assert not TIME.search(text), text
        assert socket.gethostname() not in text
    assert "git log -1 -- dvc.lock" in found["commit"]


def test_model_data_libraries_and_code(project):
    found = _collect(project)
    assert found["model"]["source"].startswith("built locally")
    refcoco = found["data"][1]
    assert (refcoco["repo_id"], refcoco["revision"]) == (
        "omlab/VLM-R1",  # VLM-R1's own released evaluation files (the standard val split)
        "e5b48b7c5ed7e407f89924b225a6c6c5ebc356af",
    )
    assert refcoco["subsample"] == {"n": 2000, "seed": 42}
    assert found["data"][0]["repo_id"] is None, "the experiment's own data"
    versions = {
        (r["environment"].split()[0], r["library"]): r["version"] for r in found["libraries"]
    }
    assert versions[("sft", "llamafactory")] == "0.9.5"
    assert versions[("main", "trl")] == "1.16.0"
    assert "workflow_scripts/vlrl/reporting/templates/index.html.j2" in found["code"]["files"]
    assert re.fullmatch(r"[0-9a-f]{64}", found["code"]["sha256"])
    # the workflow lists the report's code; the report runs none of it (no arrow up)
    assert not [f for f in found["code"]["files"] if f.startswith("workflow_scripts/vlrl/workflow")]
    assert found["config"]["score"]["confidence"] == 0.95
    assert set(found["config"]) == set(declared_reads("report"))
    _resolve("qwen2.5-vl-3b-instruct", [])
    assert (
        provenance.model_info("qwen2.5-vl-3b-instruct")["repo_id"] == "Qwen/Qwen2.5-VL-3B-Instruct"
    )


def test_the_fingerprint_follows_every_byte(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.j2").write_text("{{ x }}\n")
    before = provenance.fingerprint(["a.py", "b.j2"], tmp_path)
    assert provenance.fingerprint(["a.py", "b.j2"], tmp_path) == before
    (tmp_path / "b.j2").write_text("{{ x }} \n")
    assert provenance.fingerprint(["a.py", "b.j2"], tmp_path) != before


def test_the_rule_inputs_are_the_resolved_params_of_model_and_datasets(project):
    found = provenance.inputs("tiny-qwen2.5-vl", ["refcoco", "refcoco", "mme"])
    assert found == [
        "resources/params/tiny-qwen2.5-vl.yaml",
        "resources/params/datasets/refcoco.yaml",
        "resources/params/datasets/mme.yaml",
    ]
    _resolve("tiny-qwen2.5-vl", ["refcoco", "mme"])
    assert all((project / f).is_file() for f in found)


def test_without_envs_the_pins_are_unknown(project):
    cfg = load_experiment("tiny_shapes")
    _resolve(cfg.base_model, [])
    found = _provenance(cfg, [])
    sft = [r for r in found["libraries"] if r["environment"].startswith("sft")]
    assert sft and all(r["version"] == "unknown (no envs/sft.txt)" for r in sft)


# ---------------------------------------------------------------------------------- each part
def _write(project: Path, relative: Path | str, data: dict) -> None:
    (project / relative).parent.mkdir(parents=True, exist_ok=True)
    (project / relative).write_text(yaml.safe_dump(data))


def test_a_missing_params_file_names_itself_and_the_command_that_writes_it(project):
    with pytest.raises(StageError, match=r"resources/params/nope\.yaml does not exist; run `vlrl"):
        provenance.model_info("nope")


def test_a_hub_model_shows_its_repository_and_revision_a_built_one_says_so(project):
    hub = {"builder": "hf", "hf": {"repo_id": "Org/M", "revision": "abc"}}
    _write(project, paths.model_params_file("hub"), hub)
    _write(project, paths.model_params_file("empty"), {"builder": "hf"})
    _write(project, paths.model_params_file("tiny"), {"builder": "tiny", "hf": hub["hf"]})
    _write(project, paths.model_params_file("blank"), {})
    assert provenance.model_info("hub") == {
        "name": "hub", "source": "hub", "repo_id": "Org/M", "revision": "abc"
    }  # fmt: skip
    local = {"source": "built locally (builder: tiny, random init)", "repo_id": None}
    for name in ("empty", "tiny", "blank"):
        assert provenance.model_info(name) == {"name": name, **local, "revision": None}


def test_data_rows_name_the_dataset_file_subsample_and_revision(project):
    _write(project, paths.dataset_params_file("mme"), {"repo_id": "lmms/MME", "revision": "r1"})
    mme = Evaluation("mme", load_benchmark("mme"), {})
    own = Evaluation("shapes_test", load_benchmark("shapes_test"), {})
    assert provenance.data_info([mme, own]) == [
        {"benchmark": "mme", "dataset": "mme", "file": "records/test.jsonl", "subsample": None,
         "repo_id": "lmms/MME", "git": None, "revision": "r1"},
        {"benchmark": "shapes_test",
         "dataset": "the experiment's own data (test split of the data stage)",
         "file": None, "subsample": None, "repo_id": None, "git": None, "revision": None},
    ]  # fmt: skip


def test_a_git_datasets_row_names_its_url_and_commit(project):
    url, sha = "https://github.com/o/bench", "e" * 40
    _write(
        project, paths.dataset_params_file("mme"), {"repo_id": None, "git": url, "revision": sha}
    )
    mme = Evaluation("mme", load_benchmark("mme"), {})
    assert provenance.data_info([mme]) == [
        {"benchmark": "mme", "dataset": "mme", "file": "records/test.jsonl", "subsample": None,
         "repo_id": None, "git": url, "revision": sha},
    ]  # fmt: skip


def test_resolved_reads_nested_keys_as_plain_values():
    class Inner(BaseModel):
        x: int = 1

    cfg = SimpleNamespace(a=SimpleNamespace(b=[Inner(), {"k": Inner(x=2)}]), c=3)
    assert provenance.resolved(cfg, ("a.b", "c")) == {"a.b": [{"x": 1}, {"k": {"x": 2}}], "c": 3}


def test_pins_read_names_lower_cased_without_extras_markers_or_comments(tmp_path, caplog):
    lines = ["# header", "Foo_Bar==1.0", "baz[x,y]==2.0 ; python_version > '3'", "  qux==3#c"]
    lines += ["unpinned>=1", "-e ./local", "dots.name-x==4.0rc1"]
    (tmp_path / "r.txt").write_text("\n".join(lines) + "\n")
    assert provenance.pins(tmp_path / "r.txt") == {
        "foo_bar": "1.0", "baz": "2.0", "qux": "3", "dots.name-x": "4.0rc1"
    }  # fmt: skip
    with caplog.at_level("WARNING"):
        assert provenance.pins(tmp_path / "none.txt") == {}
    assert "none.txt does not exist" in caplog.text


def test_libraries_show_installed_versions_warn_on_a_pin_mismatch_and_the_sft_pins(
    tmp_path, caplog
):
    numpy = importlib.metadata.version("numpy")
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "main.txt").write_text(f"numpy=={numpy}\nscipy==0.0.1\n")
    (tmp_path / "envs" / "sft.txt").write_text("llamafactory==9.9\ntorch==1.0\n")
    with caplog.at_level("WARNING"):
        rows = provenance.libraries(tmp_path)
    by = {(r["environment"], r["library"]): r["version"] for r in rows}
    assert by[("main (installed)", "numpy")] == numpy
    assert by[("main (installed)", "scipy")] == importlib.metadata.version("scipy")
    assert "scipy" in caplog.text and "envs/main.txt pins 0.0.1" in caplog.text
    assert "numpy" not in caplog.text, "a version that is the pin is not a warning"
    assert by[("sft (envs/sft.txt)", "llamafactory")] == "9.9"
    assert by[("sft (envs/sft.txt)", "torch")] == "1.0"
    assert by[("sft (envs/sft.txt)", "peft")] == "not pinned"
    assert [r["library"] for r in rows] == [*provenance.LIBRARIES, *provenance.SFT_LIBRARIES]


def test_a_library_that_is_not_installed_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "LIBRARIES", ("numpy", "no-such-library-here"))
    rows = provenance.libraries(tmp_path)
    assert rows[1] == {
        "environment": "main (installed)", "library": "no-such-library-here",
        "version": "not installed",
    }  # fmt: skip


def test_judges_rows_say_rules_or_the_judge_and_what_became_of_its_failures(project):
    def scores(judge, correct):
        items = [
            ScoredItem(id=str(i), task="t", problem_type="free_form", extracted="x",
                       correct=c, score=c, method="judge")
            for i, c in enumerate(correct)
        ]  # fmt: skip
        return Scores(experiment="e", checkpoint="c", benchmark="b", protocol="p", n=1,
                      accuracy=0, ci_low=0, ci_high=0, per_task={}, headline="accuracy",
                      metrics={}, confidence=0.95, generation_failures=0, judge=judge,
                      items=items)  # fmt: skip

    judge = {"model": "j", "base_url": "http://x", "mode": "api", "prompt_version": "v1"}
    judge |= {"calls": 5, "cache_hits": 2, "failures": 1}
    ev = Evaluation(
        "mmvet",
        load_benchmark("mmvet"),
        {
            "base": scores(None, [1, 0]),
            "sft": scores(JudgeMetadata(**judge, on_failure="unscored"), [1, None, None]),
            "grpo": scores(JudgeMetadata(**judge), [0]),
        },
    )
    base, sft, grpo = provenance.judges([ev], sft_enabled=False)
    assert base == {
        "benchmark": "mmvet", "model": "base", "protocol": "p", "judge": None, "base_url": None,
        "mode": None, "prompt_version": None, "calls": None, "cache_hits": None,
        "failures": None, "on_failure": None, "unscored": 0,
    }  # fmt: skip
    assert sft == {
        "benchmark": "mmvet", "model": "SFT", "protocol": "p", "judge": "j",
        "base_url": "http://x", "mode": "api", "prompt_version": "v1", "calls": 5,
        "cache_hits": 2, "failures": 1, "on_failure": "left unscored", "unscored": 2,
    }  # fmt: skip
    assert grpo["model"] == "GRPO" and grpo["on_failure"] == "failures"


def test_the_fingerprint_is_sha256_of_each_path_and_content_in_order(tmp_path):
    (tmp_path / "a").write_bytes(b"1")
    (tmp_path / "b").write_bytes(b"22")
    expected = hashlib.sha256(b"a\x001\x00b\x0022\x00").hexdigest()
    assert provenance.fingerprint(["a", "b"], tmp_path) == expected
    assert provenance.fingerprint(["b", "a"], tmp_path) != expected
    assert provenance.code("report", ["a", "b"], tmp_path) == {
        "stage": "report", "files": ["a", "b"], "sha256": expected
    }  # fmt: skip


def test_collect_names_the_experiment_its_files_and_the_commit(project):
    cfg = load_experiment("tiny_shapes")
    _resolve(cfg.base_model, [])
    (project / "f.py").write_text("x")
    found = provenance.collect("tiny_shapes", cfg, ("seed",), [], ["f.py"], project)
    assert found["experiment"] == "tiny_shapes"
    assert found["experiment_file"] == "config/experiments/tiny_shapes.yaml"
    assert found["config"] == {"seed": 0}
    assert found["params_file"] == "results/tiny_shapes/params/report.yaml"
    assert found["model"]["name"] == cfg.base_model and found["data"] == []
    assert found["judges"] == [] and found["code"]["files"] == ["f.py"]
    assert found["commit"] == provenance.COMMIT


def test_a_settings_model_is_shown_as_json_values():
    class Settings(BaseModel):
        path: Path
        pair: tuple[int, int]

    plain = provenance._plain([Settings(path=Path("a/b"), pair=(1, 2))])
    assert plain == [{"path": "a/b", "pair": [1, 2]}]
    assert type(plain[0]["path"]) is str and type(plain[0]["pair"]) is list


def test_a_missing_pins_file_is_one_whole_warning(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="vlrl.reporting.provenance"):
        provenance.pins(tmp_path / "none.txt")
    assert caplog.messages == [
        f"report: {tmp_path / 'none.txt'} does not exist: its pins are shown as unknown"
    ]


def test_a_pin_mismatch_is_one_whole_warning(tmp_path, caplog, monkeypatch):
    scipy = importlib.metadata.version("scipy")
    monkeypatch.setattr(provenance, "LIBRARIES", ("scipy",))
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "main.txt").write_text("scipy==0.0.1\n")
    (tmp_path / "envs" / "sft.txt").write_text("torch==1.0\n")
    with caplog.at_level("WARNING", logger="vlrl.reporting.provenance"):
        provenance.libraries(tmp_path)
    assert caplog.messages == [f"report: scipy {scipy} is installed, envs/main.txt pins 0.0.1"]


def test_the_judges_and_code_of_a_run_with_sft_name_its_grpo_model_sft_grpo(project):
    cfg = load_experiment("tiny_shapes")
    assert cfg.sft.enabled
    _resolve(cfg.base_model, [])
    (project / "f.py").write_text("x")
    scores = Scores(experiment="e", checkpoint="grpo", benchmark="b", protocol="p", n=0,
                    accuracy=0, ci_low=0, ci_high=0, per_task={}, headline="accuracy",
                    metrics={}, confidence=0.95, generation_failures=0, judge=None,
                    items=[])  # fmt: skip
    ev = Evaluation("shapes_test", load_benchmark("shapes_test"), {"grpo": scores})
    found = provenance.collect("tiny_shapes", cfg, ("seed",), [ev], ["f.py"], project)
    assert [j["model"] for j in found["judges"]] == ["SFT+GRPO"]
    assert provenance.judges([ev], sft_enabled=True)[0]["model"] == "SFT+GRPO"
    assert found["code"]["stage"] == "report"
