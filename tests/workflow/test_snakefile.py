"""The Snakemake workflow: lint, dry runs of every experiment, profiles, config schema."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vlrl.workflow.check import params_problems

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCHEMA = ROOT / "config" / "schema" / "params.schema.yaml"


def snakemake(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [str(BIN / "snakemake"), *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def _experiments() -> list[str]:
    """Every experiment but the paper recipes and their smoke variants, whose DAGs
    tests/workflow/test_paper_recipes.py builds in one process (a Snakemake process each here
    costs seconds apiece)."""
    from test_paper_recipes import RECIPES

    listed = yaml.safe_load((ROOT / "params.yaml").read_text())["experiments"]
    files = sorted(p.stem for p in (ROOT / "config" / "experiments").glob("*.yaml"))
    papers = {*RECIPES, *(f"{r}_smoke" for r in RECIPES)}
    return sorted((set(listed) | set(files)) - papers)


def test_lint_is_clean():
    out = snakemake("--lint")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Lints for" not in out.stdout + out.stderr


def test_dry_run_default_target():
    out = snakemake("-n", "--quiet", "rules")
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("exp", _experiments())
def test_dry_run_each_experiment(exp):
    # --forceall: the whole DAG whatever this workspace has built (a built one has nothing to do)
    out = snakemake("-n", "--forceall", "--quiet", "rules", "--config", f"experiments=[{exp}]")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "report" in out.stdout + out.stderr


@pytest.mark.parametrize("profile", ["local", "slurm"])
def test_profiles_parse(profile):
    out = snakemake("-n", "--quiet", "rules", "--profile", f"profiles/{profile}")
    assert out.returncode == 0, out.stdout + out.stderr


def test_slurm_profile_leaves_the_sizes_to_the_experiments():
    """A job's GPUs, nodes, memory and time come from the experiment's resources (rules), not
    from the profile, which would override them for every experiment; GPUs never through
    slurm_extra (the plugin rejects --gres/--gpus there)."""
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert "set-resources" not in profile and "set-threads" not in profile
    assert profile["retries"] >= 1, "a GRPO job refused a requeue resumes in the retry"
    text = yaml.safe_dump(profile)
    assert "--gres" not in text and "--gpus" not in text


# ---------------------------------------------------------------------------------- schema
def _walk(schema: dict, where: str = "params.yaml"):
    for key, sub in schema.get("properties", {}).items():
        yield f"{where}.{key}", sub
        yield from _walk(sub, f"{where}.{key}")


def test_schema_describes_and_defaults_every_key():
    schema = yaml.safe_load(SCHEMA.read_text())
    assert schema["additionalProperties"] is False
    for where, sub in _walk(schema):
        assert sub.get("description"), f"{where} has no description"
        assert "default" in sub, f"{where} has no default"


def test_params_yaml_matches_schema():
    assert params_problems(yaml.safe_load((ROOT / "params.yaml").read_text())) == []


def test_schema_rejects_an_unknown_key():
    problems = params_problems({"experiments": ["tiny_shapes"], "seeds": ["x"]})
    assert len(problems) == 1 and "'seeds' was unexpected" in problems[0]


def test_a_mistyped_key_gets_a_suggestion_not_the_schema():
    """`experiment:` for `experiments:` is one line with a "did you mean", in vlrl check and in
    Snakemake (whose own validation printed the whole JSON schema)."""
    problems = params_problems({"experiment": ["tiny_shapes"]})
    assert problems == [
        "params.yaml: experiment: not a key of params.yaml; did you mean 'experiments'?"
    ]


def test_snakemake_rejects_an_unknown_params_key(tmp_path):
    for item in ("Snakefile", "rules", "config"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / item)
    (tmp_path / "params.yaml").write_text("experiments: [tiny_shapes]\nexperimnets: [oops]\n")
    out = snakemake("-n", cwd=tmp_path)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "params.yaml: experimnets: not a key of params.yaml; did you mean 'experiments'?" in text
    assert "$schema" not in text and "On instance" not in text  # not the JSON-schema dump


@pytest.mark.parametrize(
    ("cpu_threads", "held_cores"),
    # Snakemake prints no "threads:" line for a one-thread job.
    # sft, grpo and 6 infer jobs (3 checkpoints x shapes_test and shapes_test_blank)
    [("1", ["2"] * 8), ("3", ["4"] * 8), ("null", ["4"] * 8)],
)
def test_jobs_hold_the_experiments_cpu_threads(tmp_path, cpu_threads, held_cores):
    """sft and grpo hold cpu_threads cores (all cores when unset) per training process, each of
    the infer jobs per worker process (tiny_shapes: 2 of each), at most --cores."""
    for item in ("Snakefile", "rules", "config", "params.yaml", "workflow_scripts"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / item)
    exp_file = tmp_path / "config" / "experiments" / "tiny_shapes.yaml"
    text = exp_file.read_text()
    assert "\ncpu_threads: 1\n" in text
    exp_file.write_text(text.replace("\ncpu_threads: 1\n", f"\ncpu_threads: {cpu_threads}\n"))
    out = snakemake("-n", "--cores", "4", "--forceall", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    held = [line.split()[-1] for line in out.stdout.splitlines() if "threads:" in line]
    assert sorted(held) == held_cores, out.stdout
