"""The vlrl command helps (issue 25 item 6): "did you mean" for a mistyped key or name, several
assignments after one ``--set``, readable placeholders in ``--help``, ``--version``, running
from a subfolder, and a warning when the environment runs another checkout's code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vlrl.benchmarks import load_benchmark
from vlrl.cli import app
from vlrl.config import ModelConfig, load_experiment_file
from vlrl.config.reading import load_yaml_model
from vlrl.core import paths
from vlrl.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The command may change directory (to the project root): monkeypatch restores it.
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("VLRL_ROOT", raising=False)


def vlrl(*args: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``vlrl args`` (whitespace folded: rich wraps)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


# --- did you mean ------------------------------------------------------------------------------


def test_a_mistyped_key_in_set_names_the_key_meant() -> None:
    code, _, err = vlrl("show", "tiny_shapes", "--set", "grpo.learing_rate=1e-5")
    assert code == 2
    assert "grpo.learing_rate: Extra inputs are not permitted" in err
    assert "did you mean 'grpo.learning_rate'?" in err


def test_a_mistyped_key_in_a_file_names_the_key_meant(tmp_path: Path) -> None:
    file = tmp_path / "mine.yaml"
    file.write_text(
        "extends: tiny_shapes\ngrpo:\n  learing_rate: 1.0e-5\nresources:\n  grpo:\n    gpu: 1\n"
    )
    with pytest.raises(ConfigError) as info:
        load_experiment_file(file)
    assert "grpo.learing_rate: Extra inputs are not permitted (got 1e-05); did you mean " in str(
        info.value
    )
    assert "did you mean 'resources.grpo.gpus'?" in str(info.value)


def test_a_mistyped_key_of_a_named_file_names_the_key_meant(tmp_path: Path) -> None:
    file = tmp_path / "m.yaml"
    file.write_text("builder: tiny\nparameter: 3\n")
    with pytest.raises(ConfigError, match=r"parameter: .*; did you mean 'parameters'\?"):
        load_yaml_model(file, ModelConfig)


def test_an_unknown_experiment_or_benchmark_names_the_one_meant() -> None:
    code, _, err = vlrl("show", "tiny_shape")
    assert code == 2 and err.endswith("did you mean 'tiny_shapes' or 'tiny_shapes_satori'?")
    with pytest.raises(ConfigError, match=r"did you mean 'shapes_test' or 'shapes_test_blank'\?$"):
        load_benchmark("shapes_tset")


# --- several --set -----------------------------------------------------------------------------


def test_one_set_takes_several_assignments() -> None:
    code, out, err = vlrl(
        "show", "tiny_shapes", "--only-set", "--set", "grpo.max_steps=3", "seed=2"
    )
    assert code == 0, err
    assert "seed = 2 (--set)" in out and "grpo.max_steps = 3 (--set)" in out
    # Repeated --set, -s, and both mixed, still work.
    code, out, _ = vlrl(
        "show", "tiny_shapes", "-s", "seed=4", "--set", "grpo.beta=0.5", "--only-set"
    )
    assert code == 0 and "seed = 4 (--set)" in out and "grpo.beta = 0.5 (--set)" in out


def test_positional_arguments_may_follow_the_assignments() -> None:
    # The refusal of --set on a tracked experiment lists every assignment read: no stage runs.
    code, _, err = vlrl(
        "infer", "tiny_shapes", "--set", "seed=2", "grpo.beta=1", "base", "shapes_test"
    )
    assert code == 2
    assert "tiny_shapes.yaml:seed=2' -S 'config/experiments/tiny_shapes.yaml:grpo.beta=1'" in err


# --- help and version --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["infer", "rescore", "show", "base-model", "pin"])
def test_help_shows_readable_placeholders(command: str) -> None:
    code, out, _ = vlrl(command, "--help")
    assert code == 0
    assert "list[" not in out and "{exp}" not in out
    assert re.search(r"EXPERIMENT|MODEL|NAME", out)


def test_set_help_says_it_takes_several() -> None:
    _, out, _ = vlrl("data", "--help")
    assert "KEY=VALUE..." in out and "--set grpo.max_steps=10 seed=1" in out


def test_version_names_the_package_the_checkout_and_its_commit() -> None:
    code, out, err = vlrl("--version")
    assert code == 0 and not err
    assert re.fullmatch(rf"vlrl \d+\.\d+\.\d+\S* \({re.escape(str(ROOT))}, commit [0-9a-f]+\)", out)


# --- the project root ----------------------------------------------------------------------------


def test_the_root_is_found_from_a_subfolder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT / "workflow_scripts" / "vlrl")
    assert paths.root() == ROOT
    code, out, err = vlrl("show", "tiny_shapes", "--only-set", "--set", "seed=3")
    assert code == 0, err
    assert "seed = 3 (--set)" in out


def test_outside_a_project_the_error_says_where_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.root() == tmp_path.resolve()
    code, _, err = vlrl("check")
    assert code == 2
    assert (
        f"hint: no folder at or above {tmp_path.resolve()} holds params.yaml and Snakefile" in err
    )
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    assert f"hint: VLRL_ROOT={tmp_path.resolve()} holds no params.yaml" in vlrl("check")[2]


def test_running_another_checkouts_code_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy of the project whose environment still imports this checkout's package.
    for name in ("params.yaml", "Snakefile"):
        (tmp_path / name).write_text("")
    (tmp_path / "workflow_scripts" / "vlrl").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "workflow_scripts")
    code, _, err = vlrl("show", "tiny_shapes")
    assert code == 2  # this copy has no config/
    assert err.count("warning:") == 1
    # resolved: where mutation/run.py runs the tests, workflow_scripts/ links to the package
    running = (ROOT / "workflow_scripts" / "vlrl").resolve()
    assert err.startswith(f"warning: vlrl runs the code in {running}")
    assert f"not this project's {tmp_path.resolve() / 'workflow_scripts' / 'vlrl'}" in err
    assert vlrl("--version")[2].startswith("warning: vlrl runs the code in")
