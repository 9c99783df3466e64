"""What a GRPO run logged (vlrl.algorithms.history): the curves dvclive writes, each row at its
optimizer step, and the run times kept out of them; without a trainer."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest

from vlrl.algorithms.history import split_log_history, write_curves


def test_run_times_leave_the_rows_and_are_collected():
    rows, times = split_log_history(
        [
            {"loss": 0.5, "step_time": 1.5, "step": 2},
            {"loss": 0.4, "step": 4},
            {"loss": 0.3, "step_time": 2.5, "step": 6},
            {"train_loss": 0.4, "train_runtime": 9.0, "train_samples_per_second": 3.0, "step": 6},
        ]
    )
    assert rows == [
        {"loss": 0.5, "step": 2},
        {"loss": 0.4, "step": 4},
        {"loss": 0.3, "step": 6},
        {"train_loss": 0.4, "step": 6},
    ]
    assert times == {
        "step_time": [1.5, 2.5],
        "train_runtime": 9.0,
        "train_samples_per_second": 3.0,
    }
    assert split_log_history([]) == ([], {"step_time": []})


def _tsv(path) -> list[dict[str, str]]:
    with open(path) as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


@pytest.fixture(autouse=True)
def _outside_any_dvc_project(tmp_path, monkeypatch):
    """dvclive looks for a DVC project from the working directory: the checkout's must never be
    found (a mutant writing a dvc.yaml would write the checkout's)."""
    monkeypatch.chdir(tmp_path)


def test_curves_are_written_at_each_rows_optimizer_step(tmp_path):
    args = SimpleNamespace(to_dict=lambda: {"learning_rate": 0.001, "seed": 3})
    history = [
        {"reward": 0.25, "loss": 1.0, "step": 2},
        {"reward": 0.5, "loss": 0.5, "per_rank": [0.4, 0.6], "step": 4},  # a list: no metric
        {"rewards/test.length/mean": 0.75, "reward": 0.75},  # no step: its index
    ]
    write_curves(tmp_path / "live", args, history)
    metrics = tmp_path / "live" / "plots" / "metrics"
    reward = _tsv(metrics / "reward.tsv")
    assert [(r["step"], r["reward"]) for r in reward] == [
        ("2", "0.25"),
        ("4", "0.5"),
        ("2", "0.75"),
    ]
    loss = _tsv(metrics / "loss.tsv")
    assert [(r["step"], r["loss"]) for r in loss] == [("2", "1.0"), ("4", "0.5")]
    # TRL's names as dvclive's HF callback writes them: a slash is a folder
    assert [r["mean"] for r in _tsv(metrics / "rewards" / "test.length" / "mean.tsv")] == ["0.75"]
    assert sorted(p.name for p in metrics.rglob("*.tsv")) == ["loss.tsv", "mean.tsv", "reward.tsv"]
    summary = json.loads((tmp_path / "live" / "metrics.json").read_text())
    assert summary == {
        "loss": 0.5,
        "reward": 0.75,
        "step": 2,
        "rewards": {"test.length": {"mean": 0.75}},
    }
    params = (tmp_path / "live" / "params.yaml").read_text()
    assert "learning_rate: 0.001" in params and "seed: 3" in params
    assert not (tmp_path / "dvc.yaml").exists() and not (tmp_path / "live" / "dvc.yaml").exists()


def test_eval_rows_get_dvclives_names_and_a_rerun_starts_over(tmp_path):
    args = SimpleNamespace(to_dict=lambda: {})
    live = tmp_path / "live"
    write_curves(live, args, [{"reward": 0.1, "step": 1}, {"eval_reward": 0.2, "step": 1}])
    # dvclive's Hugging Face names: eval_x is eval/x
    assert [r["reward"] for r in _tsv(live / "plots" / "metrics" / "eval" / "reward.tsv")] == [
        "0.2"
    ]
    write_curves(live, args, [{"reward": 0.3, "step": 1}])  # a rerun replaces, never appends
    assert [r["reward"] for r in _tsv(live / "plots" / "metrics" / "reward.tsv")] == ["0.3"]


def test_inside_a_dvc_project_no_dvc_yaml_is_written(tmp_path, monkeypatch):
    from dvc.repo import Repo

    Repo.init(str(tmp_path), no_scm=True).close()
    monkeypatch.chdir(tmp_path)
    write_curves(tmp_path / "live", SimpleNamespace(to_dict=lambda: {}), [{"reward": 0.1}])
    assert (tmp_path / "live" / "plots" / "metrics" / "reward.tsv").is_file()
    assert sorted(p.name for p in tmp_path.glob("*.yaml")) == []  # the plots are declared elsewhere


def test_inside_a_git_and_dvc_project_no_experiment_is_saved(tmp_path, monkeypatch):
    """Under ``dvc repro`` the GRPO stage runs in the project's git + DVC repository: the
    curves must not become a DVC experiment of their own (dvclive's default saves one)."""
    from dvc.repo import Repo
    from git_repo import run_git

    run_git(tmp_path, "init", "-q")
    Repo.init(str(tmp_path)).close()
    run_git(tmp_path, "add", "-A")
    run_git(tmp_path, "commit", "-qm", "project")
    monkeypatch.chdir(tmp_path)
    write_curves(tmp_path / "live", SimpleNamespace(to_dict=lambda: {}), [{"reward": 0.1}])
    assert (tmp_path / "live" / "plots" / "metrics" / "reward.tsv").is_file()
    assert run_git(tmp_path, "for-each-ref", "refs/exps") == ""
    assert run_git(tmp_path, "log", "--format=%s") == "project"
