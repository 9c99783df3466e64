"""Keeping DVC's books in step with Snakemake's (vlrl.workflow.handover), with the real dvc on a
scratch DVC project; the whole loop on the default, both tools at rest after every documented
workflow, is tests/pipeline/test_handover.py."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from vlrl.core.errors import VlrlError
from vlrl.workflow import handover

PARAMS = [f"results/tiny_shapes/params/{s}.yaml" for s in ("data", "sft", "grpo")]
DVC = Path(sys.executable).parent / "dvc"
"""The project's dvc, beside this interpreter (the hand-over runs DVC with it too)."""


def _dvc_project(project: Path, stages: dict) -> Path:
    """``project`` (the scratch copy of config/ and params.yaml) made a DVC project whose
    dvc.yaml has ``resolve`` and ``stages``."""
    subprocess.run([DVC, "init", "--no-scm", "-q"], cwd=project, check=True)
    resolve = {"cmd": "vlrl resolve", "outs": [{p: {"cache": False}} for p in PARAMS]}
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"resolve": resolve, **stages}}))
    return project


def _job(rule: str, exp: str, inputs: list[str], outputs: list[str]) -> SimpleNamespace:
    """A Snakemake job as the Snakefile's onsuccess handler gets it."""
    return SimpleNamespace(
        rule=SimpleNamespace(name=rule), wildcards_dict={"exp": exp}, input=inputs, output=outputs
    )


def _locked(root: Path) -> dict:
    return yaml.safe_load((root / "dvc.lock").read_text())["stages"]


def test_the_runs_stages_are_recorded_in_dvc_lock_without_touching_a_file(
    project: Path, caplog
) -> None:
    stage = {"cmd": "make y", "deps": ["x"], "outs": [{"y": {}}], "metrics": [{"m.json": {}}]}
    root = _dvc_project(project, {"make--e": stage})
    for name, text in (("x", "in\n"), ("y", "out\n"), ("m.json", "{}\n")):
        (root / name).write_text(text)
    before = (root / "y").stat().st_mtime_ns
    jobs = [_job("make", "e", ["x"], ["y", "m.json"]), _job("all", "e", ["y"], [])]
    with caplog.at_level(logging.INFO, logger="vlrl.workflow.handover"):
        assert handover.after_snakemake(jobs, root) == ["resolve", "make--e"]
    locked = _locked(root)
    assert set(locked) == {"resolve", "make--e"}
    assert [out["path"] for out in locked["make--e"]["outs"]] == ["m.json", "y"]
    assert [dep["path"] for dep in locked["make--e"]["deps"]] == ["x"]
    assert (root / "y").stat().st_mtime_ns == before  # --no-relink: the output left alone
    assert all((root / p).is_file() for p in PARAMS)  # the resolved configs written first
    assert caplog.messages[-1] == "handover: recorded 2 stages in dvc.lock"


def test_stages_dvc_yaml_lacks_are_named_and_left_out(project: Path, caplog) -> None:
    root = _dvc_project(project, {})
    with caplog.at_level(logging.WARNING, logger="vlrl.workflow.handover"):
        assert handover.to_dvc(["ghost", "resolve", "ghost"], root) == ["resolve", "resolve"]
    assert caplog.messages == [
        "handover: dvc.yaml has no stage ['ghost'] (an experiment given with --config, not in "
        "params.yaml; else run `vlrl dvc-yaml`); DVC does not track them"
    ]
    assert set(_locked(root)) == {"resolve"}


def test_outside_a_dvc_project_nothing_is_recorded(project: Path, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="vlrl.workflow.handover"):
        assert handover.after_snakemake([_job("make", "e", [], ["y"])], project) == []
        assert handover.to_dvc(["make--e"], project) == []
    assert caplog.messages == [f"handover: {project} is not a DVC project; nothing to record"] * 2
    (project / "dvc.yaml").write_text("stages: {}\n")  # a dvc.yaml alone is no DVC project
    assert handover.to_dvc(["make--e"]) == []  # the project root by default
    assert not (project / "dvc.lock").exists()


def test_a_stale_dvc_yaml_is_regenerated_first_and_its_failure_is_an_error(
    project: Path, caplog
) -> None:
    """A job dvc.yaml does not describe (here it cannot be regenerated: the scratch project has
    no Snakefile) makes the handover run `vlrl dvc-yaml`, whose failure names it."""
    root = _dvc_project(project, {"make--e": {"cmd": "make y", "deps": ["x"], "outs": [{"y": {}}]}})
    jobs = [_job("make", "e", ["x", "new.py"], ["y"])]
    with (
        caplog.at_level(logging.WARNING, logger="vlrl.workflow.handover"),
        pytest.raises(VlrlError) as err,
    ):
        handover.after_snakemake(jobs, root)
    assert str(err.value) == (
        "handover: vlrl dvc-yaml failed (2):\n"
        f"error: {root}/Snakefile: no Snakefile; run from the project root or set VLRL_ROOT\n"
    )
    assert caplog.messages == [
        "handover: dvc.yaml does not describe ['make--e']: running `vlrl dvc-yaml`"
    ]
    assert not (root / "dvc.lock").exists()


def test_a_stage_is_stale_when_its_deps_or_outs_differ(tmp_path: Path) -> None:
    (tmp_path / "dvc.yaml").write_text(
        yaml.safe_dump(
            {"stages": {"a": {"deps": ["x"], "outs": [{"y": {}}], "metrics": [{"m": {}}]}}}
        )
    )
    assert handover.stale_stages({"a": ({"x"}, {"y", "m"})}, tmp_path) == []
    assert handover.stale_stages({"a": ({"x"}, {"y"})}, tmp_path) == ["a"]  # the metrics too
    assert handover.stale_stages({"a": (set(), {"y", "m"})}, tmp_path) == ["a"]
    assert handover.stale_stages({"b": (set(), set())}, tmp_path) == ["b"]
    (tmp_path / "dvc.yaml").write_text("")
    assert handover.stale_stages({"a": ({"x"}, {"y", "m"})}, tmp_path) == ["a"]


def test_the_commit_records_what_dvcs_own_command_records(tmp_path: Path) -> None:
    """One pass of DVC's commit steps (handover._commit) against `dvc commit --force
    --no-relink` of the same stages, one at a time, on two copies of one project: the same
    dvc.lock, the same cache, the workspace's files left alone by both."""
    stages = {
        "make--a": {"cmd": "a", "deps": ["x", "d"], "outs": [{"y": {}}, {"e": {}}]},
        "make--b": {"cmd": "b", "deps": ["y"], "outs": [{"z": {"cache": False}}]},
        "make--c": {"cmd": "c", "deps": ["z", "y"], "metrics": [{"m.json": {"cache": False}}]},
        "left--out": {"cmd": "d", "deps": ["x"], "outs": [{"w": {}}]},
    }
    names = ["resolve", "make--c", "make--a", "make--b"]
    roots = []
    for copy in ("ours", "dvcs"):
        root = tmp_path / copy
        (root / "config").mkdir(parents=True)
        _dvc_project(root, stages)
        for name in ("x", "y", "z", "m.json", "d/one", "d/two/three", "e/f", *PARAMS):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(f"{name}\n")
        roots.append(root)
    times = {p: p.stat().st_mtime_ns for p in roots[0].rglob("*") if ".dvc" not in p.parts}
    pipeline = (roots[0] / "dvc.yaml").read_text()
    handover._commit(roots[0], names)
    assert (roots[0] / "dvc.yaml").read_text() == pipeline  # dvc.lock alone is written
    subprocess.run(
        [DVC, "commit", "--force", "--no-relink", "-q", *names], cwd=roots[1], check=True
    )
    assert (roots[0] / "dvc.lock").read_text() == (roots[1] / "dvc.lock").read_text()
    assert set(_locked(roots[0])) == set(names)
    cached = [sorted(p.relative_to(r) for p in (r / ".dvc" / "cache").rglob("*")) for r in roots]
    assert cached[0] == cached[1] and cached[0]
    assert {p: p.stat().st_mtime_ns for p in times} == times


def test_the_handover_works_in_the_project_root_from_anywhere(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snakemake's onsuccess may run with another working directory: dvc and `vlrl dvc-yaml`
    run in the project root, the one given or (none given) $VLRL_ROOT's."""
    root = _dvc_project(project, {"make--e": {"cmd": "make y", "deps": ["x"], "outs": [{"y": {}}]}})
    for name in ("x", "y"):
        (root / name).write_text(name)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    jobs = [_job("make", "e", ["x"], ["y"])]
    assert handover.after_snakemake(jobs) == ["resolve", "make--e"]
    assert set(_locked(root)) == {"resolve", "make--e"}
    # `vlrl dvc-yaml` too (it finds the project from its working directory here)
    # the root given, while this process's project is another one: resolved in the root given
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path_factory.mktemp("other-project")))
    (root / "dvc.lock").unlink()
    for name in PARAMS:
        (root / name).unlink()
    assert handover.after_snakemake(jobs, root) == ["resolve", "make--e"]
    assert set(_locked(root)) == {"resolve", "make--e"}
    assert all((root / name).is_file() for name in PARAMS)
    params = (root / "params.yaml").read_text()
    (root / "params.yaml").write_text("experiments: [no_such_recipe]\n")
    with pytest.raises(VlrlError, match=r"^handover: vlrl resolve failed \(2\):\nerror: .*no_such"):
        handover.to_dvc(["make--e"], root)
    (root / "params.yaml").write_text(params)
    monkeypatch.delenv("VLRL_ROOT")
    stale = [_job("make", "e", ["x", "new.py"], ["y"])]
    with pytest.raises(VlrlError, match=f"error: {root}/Snakefile: no Snakefile"):
        handover.after_snakemake(stale, root)


def test_a_failed_dvc_commit_is_named(project: Path) -> None:
    root = _dvc_project(project, {"make--e": {"cmd": "make y", "deps": ["x"], "outs": [{"y": {}}]}})
    with pytest.raises(VlrlError) as err:  # neither x nor y exists: nothing to commit
        handover.to_dvc(["make--e"], root)
    assert str(err.value).startswith("handover: dvc commit failed (")


def test_a_failed_steps_error_output_is_cut_to_its_last_2000_characters(tmp_path: Path) -> None:
    noisy = "import sys; sys.stderr.write('a' * 1000 + 'b' * 2000); sys.exit(3)"
    with pytest.raises(VlrlError) as err:
        handover._run([sys.executable, "-c", noisy], tmp_path, "the step")
    assert str(err.value) == "handover: the step failed (3):\n" + "b" * 2000


def test_a_dvc_yaml_stage_without_deps_or_outs() -> None:
    assert handover._tracked({"cmd": "x"}) == (set(), set())
    assert handover._tracked({"cmd": "x", "metrics": [{"m": {}}]}) == (set(), {"m"})
