"""vlrl.reporting.provenance: what the report says about where its numbers come from holds no
path, time or commit, so a fresh clone reproduces it byte for byte."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from vlrl.benchmarks import load_benchmark
from vlrl.config import load_experiment
from vlrl.config.reads import declared_reads
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
