"""dvc.yaml is generated from the Snakemake DAG: it is not stale, and its stages are right."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vlrl.config import load_experiment, load_model
from vlrl.core import paths
from vlrl.core.errors import VlrlError
from vlrl.reporting import provenance
from vlrl.workflow import dvc_export, stage_deps
from vlrl.workflow.dag import dag_jobs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXP = "tiny_shapes"


@pytest.fixture(scope="module")
def tiny() -> dict:
    """dvc.yaml content for tiny_shapes alone, built from the DAG in memory."""
    return dvc_export.build(dag_jobs(config={"experiments": [EXP]}, root=ROOT))


def test_committed_dvc_yaml_is_not_stale():
    committed = (ROOT / "dvc.yaml").read_text()
    assert dvc_export.render(ROOT) == committed, (
        "dvc.yaml differs from the Snakemake DAG; regenerate it with `vlrl dvc-yaml`"
    )


def test_check_mode_names_the_stale_file(tmp_path, monkeypatch):
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.setattr(dvc_export, "render", lambda root=None: "stages:\n  data--x: {}\n")
    with pytest.raises(VlrlError, match=r"dvc.yaml is stale.*vlrl dvc-yaml"):
        dvc_export.main(check_only=True, root=tmp_path)
    dvc_export.main(root=tmp_path)  # writes it
    assert (tmp_path / "dvc.yaml").read_text() == "stages:\n  data--x: {}\n"
    assert (tmp_path / "dvc.yaml").stat().st_mode & 0o777 == 0o644
    dvc_export.main(check_only=True, root=tmp_path)  # now up to date


def test_tiny_shapes_stage_names(tiny):
    cfg = load_experiment(EXP)
    evals = [f"{c}--{b}" for c in cfg.checkpoints for b in cfg.benchmarks]
    expected = [
        "resolve",
        f"data--{EXP}",
        f"base_model--{cfg.base_model}",
        f"sft--{EXP}",
        f"grpo--{EXP}",
        f"merge--{EXP}",
        *(f"infer--{EXP}--{e}" for e in evals),
        *(f"score--{EXP}--{e}" for e in evals),
        f"report--{EXP}",
    ]
    assert cfg.sft.enabled and cfg.grpo.enabled, "the embedded default runs every stage"
    assert list(tiny["stages"]) == expected


def _outs(stage: dict, kind: str = "outs") -> list[str]:
    return [next(iter(o)) for o in stage.get(kind, [])]


def _params(stage: dict) -> dict[str, list[str]]:
    return {k: v for entry in stage.get("params", []) for k, v in entry.items()}


def test_tiny_shapes_stage_contents(tiny):
    cfg = load_experiment(EXP)
    stages = tiny["stages"]
    model_dir = str(paths.model_resource(cfg.base_model))
    data_dir = str(paths.data_dir(EXP))
    vlrl = paths.LAUNCHER

    def params_file(stage: str) -> str:
        return str(paths.stage_params_file(EXP, stage))

    resolve = stages["resolve"]
    assert resolve["cmd"] == f"{vlrl} resolve"
    assert _params(resolve) == {
        f"config/experiments/{EXP}.yaml": None,
        f"config/models/{cfg.base_model}.yaml": None,
    }
    written = _outs(resolve)
    assert str(paths.model_params_file(cfg.base_model)) in written
    assert params_file("sft") in written and params_file("report") in written
    assert all(
        o == {"cache": False, "persist": True} for entry in resolve["outs"] for o in entry.values()
    ), "DVC must not delete them before the run: a rewritten file reruns a stage in Snakemake"
    # The report also reads the resolved params of the base model (its provenance).
    provenance_inputs = provenance.inputs(cfg.base_model, [])
    for name, stage in stages.items():
        if name != "resolve":
            assert "params" not in stage, "a stage's config is its params file, a dep"
            extra = provenance_inputs if name.startswith("report--") else []
            resolved = [dep for dep in stage["deps"] if dep in written and dep not in extra]
            assert len(resolved) == 1, name
            assert all(dep in stage["deps"] for dep in extra), name

    data = stages[f"data--{EXP}"]
    assert data["cmd"] == f"{vlrl} data {EXP}"
    assert _outs(data) == [data_dir]
    assert data["outs"][0][data_dir] == {"persist": False}
    assert params_file("data") in data["deps"]
    assert data["deps"] == [*stage_deps.code_files("data"), params_file("data")]
    assert "workflow_scripts/vlrl/stages/data.py" in data["deps"]

    model = stages[f"base_model--{cfg.base_model}"]
    assert model["cmd"] == f"{vlrl} base-model {cfg.base_model}"
    assert _outs(model) == [model_dir]
    assert str(paths.model_params_file(cfg.base_model)) in model["deps"]
    load_model(cfg.base_model)

    sft = stages[f"sft--{EXP}"]
    assert sft["cmd"] == f"{vlrl} sft {EXP}"
    assert sft["deps"][:2] == [data_dir, model_dir]
    assert params_file("sft") in sft["deps"]

    grpo = stages[f"grpo--{EXP}"]
    assert grpo["deps"][:2] == [data_dir, str(paths.sft_dir(EXP))]
    assert "workflow_scripts/vlrl/rewards/common.py" in grpo["deps"]

    merge = stages[f"merge--{EXP}"]
    assert str(paths.grpo_dir(EXP)) in merge["deps"]
    assert _outs(merge) == [str(paths.merged_model_dir(EXP))]
    assert not [d for d in merge["deps"] if "rewards" in d or "stages/grpo" in d]

    bench = cfg.benchmarks[0]
    for checkpoint, model_out in [
        ("base", model_dir),
        ("sft", str(paths.sft_dir(EXP))),
        ("grpo", str(paths.merged_model_dir(EXP))),
    ]:
        infer = stages[f"infer--{EXP}--{checkpoint}--{bench}"]
        assert infer["cmd"] == f"{vlrl} infer {EXP} {checkpoint} {bench}"
        assert model_out in infer["deps"]
        assert data_dir in infer["deps"]
        assert f"config/benchmarks/{bench}.yaml" in infer["deps"]
        assert _outs(infer) == [str(paths.predictions_file(EXP, checkpoint, bench))]
        assert params_file("infer") in infer["deps"]
        score = stages[f"score--{EXP}--{checkpoint}--{bench}"]
        assert score["deps"][0] == str(paths.predictions_file(EXP, checkpoint, bench))
        assert _outs(score) == [str(paths.scores_file(EXP, checkpoint, bench))]
        assert "workflow_scripts/vlrl/rewards/common.py" not in score["deps"]

    report = stages[f"report--{EXP}"]
    assert report["cmd"] == f"{vlrl} report {EXP}"
    scores = [str(paths.scores_file(EXP, c, b)) for c in cfg.checkpoints for b in cfg.benchmarks]
    assert report["deps"][: len(scores)] == scores
    assert "workflow_scripts/vlrl/stages/score.py" not in report["deps"]
    assert _outs(report) == [str(paths.report_dir(EXP))]
    assert report["metrics"] == [{str(paths.metrics_file(EXP)): {"cache": False}}]
    assert params_file("report") in report["deps"]

    folder = f"results/{EXP}/grpo/dvclive/plots/metrics"
    lead = [
        {f"{folder}/{name}.tsv": {"x": "step", "title": f"{EXP}: {title}"}}
        for name, title in dvc_export.LEADING.items()
    ]
    assert tiny["plots"] == [
        lead[0],
        *dvc_export.reward_plots(EXP),
        *lead[1:],
        {folder: {"x": "step"}},
    ]


def test_no_stage_writes_into_another_stages_output(tiny):
    outs = [o for s in tiny["stages"].values() for o in [*_outs(s), *_outs(s, "metrics")]]
    for a in outs:
        for b in outs:
            assert a == b or not a.startswith(b + "/"), f"{a} lies inside {b}"


def test_dvc_parses_the_generated_stages(tmp_path):
    """DVC accepts the names (no '@': DVC reserves it) and the stage schema."""
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    subprocess.run(["dvc", "init", "--no-scm", "-q"], cwd=tmp_path, env=env, check=True)
    out = subprocess.run(
        ["dvc", "stage", "list", "--name-only"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    committed = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    assert out.stdout.split() == list(committed["stages"])
