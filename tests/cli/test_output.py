"""Output that survives pipes and logs (issue 39 item 3): the table commands print whole rows
into a pipe (rich cut them to 80 columns off a terminal: `vlrl protocols | grep standard10` found
nothing), take ``--format csv|json|md``, and a log record is one line."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vlrl.scoring.protocols import PROTOCOLS

ROOT = Path(__file__).resolve().parents[2]


def piped(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    """``vlrl args`` with stdout and stderr pipes (no terminal), from the checkout, ``COLUMNS``
    set (rich lays out to it off a terminal)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "vlrl.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_protocols_in_a_pipe_are_whole_rows() -> None:
    out = piped("protocols")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "mmmu_pro_standard10" in line]
    # one line per protocol that lists the benchmark, its name in the same line, nothing cut
    assert {line.split()[1] for line in lines} >= {"vlmevalkit_2505", "vlrl"}, lines
    assert "…" not in out.stdout
    assert all(len(line) > 120 for line in lines)  # wider than the 80 columns of a pipe


@pytest.mark.parametrize("fmt", ["csv", "json", "md"])
def test_protocols_in_each_format(fmt: str) -> None:
    out = piped("protocols", "--format", fmt)
    assert out.returncode == 0, out.stderr
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out.stdout)))
    elif fmt == "json":
        rows = json.loads(out.stdout)
    else:
        rows = [line for line in out.stdout.splitlines()[2:] if line.startswith("|")]
    assert len(rows) == len(PROTOCOLS)
    if fmt != "md":
        assert {r["protocol"] for r in rows} == set(PROTOCOLS)
        vlrl = next(r for r in rows if r["protocol"] == "vlrl")
        assert "shapes_test*" in vlrl["benchmarks"]


def test_show_as_json_has_every_key_with_its_origin() -> None:
    out = piped("show", "tiny_shapes_grpo_lr", "--only-set", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["key"]: r for r in json.loads(out.stdout)}
    assert set(rows) == {"description", "extends", "grpo.learning_rate"}  # what differs
    assert rows["grpo.learning_rate"]["value"] == 1e-4
    file, _, line = rows["grpo.learning_rate"]["origin"].rpartition(":")
    assert line.isdigit()
    assert (ROOT / file).resolve() == (
        ROOT / "config/experiments/tiny_shapes_grpo_lr.yaml"
    ).resolve()
    if not (ROOT / "config").is_symlink():  # where mutation/run.py runs the tests, it is a link
        assert file == "config/experiments/tiny_shapes_grpo_lr.yaml"  # relative to the root


def test_a_log_record_is_one_line_in_a_file() -> None:
    """Off a terminal the log is plain: time, level, message, however long the message."""
    out = piped("dvc-yaml", "--check", columns=40)
    assert out.returncode == 0, out.stderr
    (line,) = [line for line in out.stderr.splitlines() if "dvc.yaml" in line]
    assert " INFO " in line and line.endswith("is up to date with the Snakemake DAG"), line
    assert str(ROOT / "dvc.yaml") in line  # the path whole, not split across lines


def test_plan_rows_as_csv() -> None:
    out = piped("plan", "tiny_shapes", "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert {r["job"] for r in rows} >= {"grpo--tiny_shapes", "report--tiny_shapes"}
    grpo = next(r for r in rows if r["job"] == "grpo--tiny_shapes")
    assert grpo["on_gpu"] == "False" and grpo["devices"] == "2"
