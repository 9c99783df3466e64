"""``make mutate``'s driver (mutation/run.py): its targets exist, scores count what they claim,
and every mutant declared equivalent names a function that exists and says why."""

from __future__ import annotations

import fnmatch
import importlib.util
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("mutation_run", ROOT / "mutation" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_target_and_test_path_exists(run) -> None:
    assert set(run.TARGETS) == set(run.TESTS)
    for group, globs in run.TARGETS.items():
        for glob in globs:
            assert list((ROOT / "workflow_scripts").glob(glob)), f"{group}: {glob} matches nothing"
        for path in run.TESTS[group]:
            assert (ROOT / path).exists(), f"{group}: {path} does not exist"


def test_module_of(run) -> None:
    assert run.module_of("vlrl.rewards.common.x_format__mutmut_3") == "vlrl.rewards.common"
    assert run.module_of("vlrl.scoring.judge.xǁJudgeǁscore__mutmut_12") == "vlrl.scoring.judge"


def test_score_counts_killed_and_timeouts_over_all_but_equivalent(run, monkeypatch, capsys) -> None:
    monkeypatch.setattr(run, "equivalent", lambda: {"vlrl.a.x_f__mutmut_4": "why"})
    results = {
        "vlrl.a.x_f__mutmut_1": "killed",
        "vlrl.a.x_f__mutmut_2": "timeout",
        "vlrl.a.x_f__mutmut_3": "survived",
        "vlrl.a.x_f__mutmut_4": "survived",  # declared equivalent
        "vlrl.a.x_f__mutmut_5": "no tests",
    }
    counts = run.report(results)
    assert counts["vlrl.a"] == Counter(
        killed=1, timeout=1, survived=1, equivalent=1, **{"no tests": 1}
    )
    out = capsys.readouterr().out
    assert re.search(r"^vlrl\.a\s+5\s+2\s+1\s+1\s+1\s+50\.0%$", out, re.M), out
    assert "vlrl.a.x_f__mutmut_3: survived" in out and "mutmut_4" not in out.split("not killed")[1]


def test_equivalent_mutants_name_real_functions_and_say_why(run) -> None:
    for name, why in run.equivalent().items():
        module = run.module_of(name)
        path = ROOT / "workflow_scripts" / (module.replace(".", "/") + ".py")
        if not path.is_file():  # a package's mutants are those of its __init__.py
            path = path.with_suffix("") / "__init__.py"
        assert path.is_file(), f"{name}: no module {path}"
        function = name[len(module) + 1 :].partition("__mutmut_")[0]
        function = function.removeprefix("x_").split("ǁ")[-1]
        assert re.search(rf"def {re.escape(function)}\b", path.read_text()), name
        assert len(why.split()) >= 4, f"{name}: say why it is equivalent"


@pytest.mark.parametrize(
    "args, asked",
    [
        (["report"], [["run", "--max-children", "2"]]),
        (
            ["report", "--only", "vlrl.reporting.blind.*", "--only", "x.y*"],
            [["run", "--max-children", "2", "vlrl.reporting.blind.*", "x.y*"]],
        ),
        (
            ["report", "--survivors"],
            [["run", "--max-children", "2", "vlrl.b.x_f__mutmut_2", "vlrl.c.x_g__mutmut_1"]],
        ),
        (
            ["report", "--survivors", "--only", "vlrl.c.*"],
            [["run", "--max-children", "2", "vlrl.c.x_g__mutmut_1"]],
        ),
        (["report", "--survivors", "--only", "vlrl.a.*"], []),  # none left: nothing run
    ],
)
def test_the_mutants_each_run_asks_mutmut_for(run, monkeypatch, tmp_path, args, asked) -> None:
    from typer.testing import CliRunner

    last = {
        "vlrl.a.x_f__mutmut_1": "killed",
        "vlrl.b.x_f__mutmut_2": "survived",
        "vlrl.c.x_g__mutmut_1": "no tests",
        "vlrl.a.x_f__mutmut_3": "timeout",
    }
    calls: list[list[str]] = []
    prepared: list[bool] = []
    monkeypatch.setattr(run, "WORKSPACE", tmp_path)
    monkeypatch.setattr(run, "statuses", lambda workspace: last)
    monkeypatch.setattr(
        run, "prepare", lambda group, fresh, **kw: prepared.append(fresh) or tmp_path
    )
    monkeypatch.setattr(
        run,
        "_mutmut",
        lambda ws, *a, **kw: calls.append(list(a)) or type("R", (), {"returncode": 0}),
    )
    result = CliRunner().invoke(run.app, [*args, "--max-children", "2"])
    assert result.exit_code == 0, result.output
    assert calls == asked
    assert prepared == ([] if not asked else ["--survivors" not in args])


def test_a_part_of_a_group_runs_in_its_own_workspace_with_its_tests(run, monkeypatch, tmp_path):
    """--part and --tests: the group's file alone, its chosen tests, a workspace of its own; a
    survivors run then judges the mutants mutmut forgot when the tests changed."""
    from typer.testing import CliRunner

    before = {
        "vlrl.stages.infer.x_run__mutmut_1": "survived",
        "vlrl.stages.infer.x_f__mutmut_2": "killed",
    }
    after = {
        "vlrl.stages.infer.x_run__mutmut_1": "killed",
        "vlrl.stages.infer.x_f__mutmut_2": "not checked",
    }
    seen: list = []
    calls: list = []
    prepared: list = []
    monkeypatch.setattr(run, "WORKSPACE", tmp_path)
    monkeypatch.setattr(
        run, "statuses", lambda ws: seen.append(ws.name) or (after if calls else before)
    )
    monkeypatch.setattr(
        run, "prepare", lambda group, fresh, **kw: prepared.append((group, fresh, kw))
    )
    monkeypatch.setattr(
        run,
        "_mutmut",
        lambda ws, *a, **kw: calls.append((ws.name, *a)) or type("R", (), {"returncode": 0}),
    )
    args = ["stages", "--part", "vlrl/stages/infer.py", "--tests", "tests/stages/test_infer_run.py"]
    result = CliRunner().invoke(run.app, [*args, "--survivors", "--max-children", "1"])
    assert result.exit_code == 0, result.output
    part = {"part": ["vlrl/stages/infer.py"], "tests": ["tests/stages/test_infer_run.py"]}
    assert prepared == [("stages", False, part)]
    assert calls == [
        ("stages--infer", "run", "--max-children", "1", "vlrl.stages.infer.x_run__mutmut_1"),
        ("stages--infer", "run", "--max-children", "1", "vlrl.stages.infer.x_f__mutmut_2"),
    ]
    assert set(seen) == {"stages--infer"}


def test_a_part_outside_its_group_is_refused(run) -> None:
    import typer

    with pytest.raises(typer.BadParameter) as err:
        run.check_part("stages", ["vlrl/stages/infer.py", "vlrl/rewards/common.py"])
    assert (
        str(err.value)
        == "--part ['vlrl/rewards/common.py'] not in group stages's ['vlrl/stages/*']"
    )
    run.check_part("stages", ["vlrl/stages/infer.py"])  # in the group: no error


def test_every_module_is_in_a_group_or_says_why_not(run) -> None:
    package = ROOT / "workflow_scripts"
    modules = [p.relative_to(package).as_posix() for p in sorted((package / "vlrl").rglob("*.py"))]
    # mutmut matches only_mutate with fnmatch, whose * crosses folders (vlrl/scoring/* holds
    # vlrl/scoring/protocols/base.py)
    globs = [glob for globs in run.TARGETS.values() for glob in globs]
    grouped = {name for name in modules if any(fnmatch.fnmatch(name, g) for g in globs)}
    for name in modules:
        path = package / name
        if name in grouped or name in run.NOT_MUTATED:
            continue
        has_code = re.search(r"^\s*(async\s+)?def ", path.read_text(), re.M)
        assert path.name == "__init__.py" and not has_code, (
            f"{name} is in no mutation group (mutation/run.py TARGETS) and not in NOT_MUTATED"
        )
    for name, why in run.NOT_MUTATED.items():
        assert (package / name).is_file() and name not in grouped, name
        assert len(why.split()) >= 4, name


def test_a_parts_workspace_mutates_its_files_and_runs_its_tests(run, monkeypatch, tmp_path):
    monkeypatch.setattr(run, "WORKSPACE", tmp_path)
    part, tests = ["vlrl/reporting/blanked.py"], ["tests/reporting/test_blanked.py"]
    workspace = run.prepare("report", fresh=True, part=part, tests=tests)
    assert workspace == tmp_path / "report--blanked"
    config = (workspace / "pyproject.toml").read_text()
    assert 'only_mutate = ["src/vlrl/reporting/blanked.py"]\n' in config
    assert 'pytest_add_cli_args_test_selection = ["tests/reporting/test_blanked.py"]\n' in config
    assert (workspace / "src" / "vlrl" / "reporting" / "blanked.py").is_file()
