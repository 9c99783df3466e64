"""The project's layout (vlrl.core.paths): every path a stage reads or writes, spelled out, so a
changed path is a failing test here before it is a stale dvc.lock; the config files under the
project root ($VLRL_ROOT, else the folder holding params.yaml and the Snakefile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.core import paths

RELATIVE = [
    (paths.model_resource, ("tiny",), "resources/models/tiny"),
    (paths.dataset_resource, ("refcoco",), "resources/datasets/refcoco"),
    (paths.results_dir, ("e",), "results/e"),
    (paths.data_dir, ("e",), "results/e/data"),
    (paths.sft_dir, ("e",), "results/e/sft"),
    (paths.grpo_dir, ("e",), "results/e/grpo"),
    (paths.grpo_curves_dir, ("e",), "results/e/grpo/dvclive/plots/metrics"),
    (paths.grpo_final_dir, ("e",), "results/e/grpo/final"),
    (paths.grpo_checkpoints_dir, ("e",), "results/e/grpo_checkpoints"),
    (paths.merged_model_dir, ("e",), "results/e/model"),
    (paths.predictions_file, ("e", "sft", "b"), "results/e/predictions/sft/b.jsonl"),
    (paths.scores_file, ("e", "grpo", "b"), "results/e/scores/grpo/b.json"),
    (paths.rescored_file, ("e", "p", "base", "b"), "results/e/rescored/p/base/b.json"),
    (paths.stage_params_file, ("e", "grpo"), "results/e/params/grpo.yaml"),
    (paths.model_params_file, ("tiny",), "resources/params/tiny.yaml"),
    (paths.dataset_params_file, ("refcoco",), "resources/params/datasets/refcoco.yaml"),
    (paths.metrics_file, ("e",), "results/e/metrics.json"),
    (paths.report_dir, ("e",), "reports/e"),
    (paths.log_file, ("infer", "e", "sft", "b"), "logs/infer/e/sft/b.log"),
    (paths.log_file, ("data", "e"), "logs/data/e.log"),
    (paths.server_log_dir, ("grpo", "e"), "logs/grpo/e"),
    (paths.server_log_dir, ("score", "e", "grpo", "b"), "logs/score/e/grpo/b"),
    (paths.data_dir, ("{exp}",), "results/{exp}/data"),  # Snakemake's wildcards
]


@pytest.mark.parametrize(("function", "args", "expected"), RELATIVE)
def test_outputs_are_relative_to_the_project_root(function, args, expected) -> None:
    path = function(*args)
    assert isinstance(path, Path) and not path.is_absolute() and path.as_posix() == expected


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (paths.experiment_file, "config/experiments/x.yaml"),
        (paths.model_file, "config/models/x.yaml"),
        (paths.benchmark_file, "config/benchmarks/x.yaml"),
        (paths.dataset_file, "config/datasets/x.yaml"),
        (paths.deepspeed_file, "config/deepspeed/x.json"),
    ],
)
def test_config_files_are_under_the_root(function, expected, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    assert function("x") == tmp_path / expected


@pytest.mark.parametrize(
    ("checkpoint", "expected"),
    [("base", "resources/models/tiny"), ("sft", "results/e/sft"), ("grpo", "results/e/model")],
)
def test_each_checkpoint_is_a_model_folder(checkpoint, expected) -> None:
    assert paths.checkpoint_model_dir("e", checkpoint, "tiny").as_posix() == expected


def test_an_unknown_checkpoint_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError) as caught:
        paths.checkpoint_model_dir("e", "rl", "tiny")
    assert str(caught.value) == "unknown checkpoint 'rl'; known: ['base', 'sft', 'grpo']"


def test_the_root_is_vlrl_root_else_the_nearest_folder_with_both_markers(
    tmp_path, monkeypatch
) -> None:
    project = tmp_path / "project"
    (project / "sub" / "deeper").mkdir(parents=True)
    (project / "params.yaml").write_text("")
    (project / "Snakefile").write_text("")
    (project / "sub" / "params.yaml").write_text("")  # one marker alone is not a root
    monkeypatch.delenv("VLRL_ROOT", raising=False)
    monkeypatch.chdir(project / "sub" / "deeper")
    assert paths.root() == project.resolve()
    assert paths.find_root(project / "sub" / "deeper") == project
    lone = tmp_path / "elsewhere"
    lone.mkdir()
    monkeypatch.chdir(lone)
    assert paths.find_root(lone) is None and paths.root() == lone.resolve()
    monkeypatch.setenv("VLRL_ROOT", str(project / "sub"))
    assert paths.root() == (project / "sub").resolve()


def test_the_user_cache_is_under_xdg_cache_home_else_the_homes_cache(monkeypatch, tmp_path):
    from vlrl.core import paths

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.user_cache() == tmp_path / "xdg" / "vlrl"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # set but empty: the home's, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.user_cache() == tmp_path / "home" / ".cache" / "vlrl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert paths.user_cache() == tmp_path / "home" / ".cache" / "vlrl"
