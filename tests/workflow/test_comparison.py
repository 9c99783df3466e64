"""Comparing experiments as the README says (section "Comparing experiments"), in a fresh clone
(tests/pipeline/scratch_project.py's Project, with the committed metrics.json): its
`dvc exp show` prints the headline metrics, a row per commit or experiment run, and no
dependency hash, param nor other metric (`dvc params diff` names the params that changed);
its `dvc plots show` writes a page that draws without network, each reward
function's plots titled after the function, into a folder git ignores.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import re
import shlex
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from chromium import BROWSER, NO_BROWSER

from vlrl.config import load_experiment
from vlrl.core import paths

sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))
from scratch_project import Project

ROOT = Path(__file__).resolve().parents[2]
EXP = "tiny_shapes"


def readme_command(tool: str) -> list[str]:
    """The command of the README's "Comparing experiments" code block that starts with
    ``tool``, split as a shell would (its trailing comment dropped)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("### Comparing experiments")
    section = text[start : text.index("\n## ", start)]
    for line in section.splitlines():
        if line.startswith(f"    {tool}"):
            return shlex.split(re.split(r"\s+#", line[4:])[0])
    raise AssertionError(f"no `{tool}` in the README's code block of Comparing experiments")


def clone(root: Path) -> Project:
    """A fresh clone: the Project copy, with the committed .dvc/config (Project runs dvc init)."""
    project = Project(root)
    shutil.copy(ROOT / ".dvc" / "config", root / ".dvc" / "config")
    project("git", "commit", "-qam", ".dvc/config as committed", "--allow-empty")
    return project


def headline_columns(project: Project) -> list[str]:
    """``<benchmark>.<checkpoint>.accuracy`` of every committed metrics.json."""
    return [
        f"{bench}.{checkpoint}.accuracy"
        for path in sorted(project.root.glob("results/*/metrics.json"))
        for bench, checkpoints in json.loads(path.read_text()).items()
        for checkpoint in checkpoints
    ]


def as_after_a_grpo_rerun(project: Project, learning_rate: float) -> None:
    """The workspace as ``dvc exp run -S '<experiment file>:grpo.learning_rate=...'`` leaves it,
    without training: the new value in the experiment file, other numbers for the grpo
    checkpoint in metrics.json, and other hashes in dvc.lock for what the rerun rewrote and
    other stages read (grpo's params file, the GRPO run, the merged model, the grpo
    checkpoint's predictions and scores)."""
    experiment = f"config/experiments/{EXP}.yaml"
    project.set_values(experiment, {"grpo.learning_rate": learning_rate}, commit=False)
    metrics_file = project.root / paths.metrics_file(EXP)
    metrics = json.loads(metrics_file.read_text())
    for checkpoints in metrics.values():
        checkpoints["grpo"] = {k: v / 2 for k, v in checkpoints["grpo"].items()}
    metrics_file.write_text(json.dumps(metrics, indent=2))
    lock_file = project.root / "dvc.lock"
    lock = yaml.safe_load(lock_file.read_text())
    rewritten = (
        str(paths.stage_params_file(EXP, "grpo")),
        str(paths.grpo_dir(EXP)),
        str(paths.merged_model_dir(EXP)),
        f"{paths.results_dir(EXP)}/predictions/grpo/",
        f"{paths.results_dir(EXP)}/scores/grpo/",
    )
    for stage in lock["stages"].values():
        for entry in [*stage.get("deps", []), *stage.get("outs", [])]:
            if entry["path"].startswith(rewritten):
                entry["md5"] = "0" * 31 + "1" + (".dir" if entry["md5"].endswith(".dir") else "")
    lock_file.write_text(yaml.safe_dump(lock, sort_keys=False))


def test_exp_show_after_a_grpo_rerun_shows_the_accuracies_and_params_diff_the_change(
    tmp_path: Path,
) -> None:
    """The README's `dvc exp show` beside a rerun of GRPO with another learning rate: a row
    each, with each checkpoint's accuracy and nothing else (not the dependency hashes, the grpo
    checkpoint's other metrics, nor the experiment's description, which all showed before);
    its `dvc params diff` names the changed `grpo.learning_rate` with both values."""
    project = clone(tmp_path / "clone")
    as_after_a_grpo_rerun(project, 1e-4)
    command = [c for c in readme_command("dvc exp show") if c != "--md"]
    rows = list(csv.reader(io.StringIO(project(*command, "--csv"))))
    header, shown = rows[0], [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    headline = headline_columns(project)
    assert header == ["Experiment", "Created", *headline], f"`{shlex.join(command)}`: {header}"
    workspace, committed = shown  # the rerun, then HEAD (git's default branch)
    assert workspace["Created"] in ("", "-")  # the workspace has no commit time
    for column in (c for c in headline if ".grpo." in c):
        assert float(workspace[column]) == pytest.approx(float(committed[column]) / 2), column
    diff = project(*readme_command("dvc params diff"))
    changed = [line.split() for line in diff.splitlines() if "learning_rate" in line]
    assert changed and all(float(words[-1]) == 1e-4 for words in changed), diff


def test_exp_show_filters_the_names_dvc_prefixes_with_their_file() -> None:
    """With two experiments in params.yaml DVC names what two files share ``<file>:<name>``:
    the README's expressions still keep each accuracy and drop every other column: params
    (the description and extends too, which differ between two experiments), other metrics and
    the hashes (DVC's own filtering, on such columns)."""
    from dvc.commands.experiments.show import show_experiments
    from dvc.compare import TabularData

    kept = {
        "metrics": [
            "results/a/metrics.json:shapes_test.base.accuracy",
            "results/b/metrics.json:shapes_test.grpo.accuracy",
            "mmvet_b.sft.accuracy",
        ],
    }
    dropped = {
        "params": [
            "config/experiments/a.yaml:grpo.learning_rate",
            "config/experiments/b.yaml:resources.grpo.gpus",
            "config/experiments/b.yaml:description",
            "config/experiments/b.yaml:extends",
            "experiments",
            "resources.sft.mem_mb",
            "unknown.grpo.max_steps",
            "grpo.rewards.common.accuracy",
            "seed",
            "tiny.hidden_size",
        ],
        "metrics": [
            "results/a/metrics.json:shapes_test.grpo.ci_low",
            "results/b/metrics.json:shapes_test.sft.count",
            "mmvet_b.sft.fAcc",
        ],
        "deps": [
            "results/a/grpo",
            "resources/params/tiny-qwen2.5-vl.yaml",
            "workflow_scripts/vlrl",
            "Snakefile",
            "params.yaml",
            "rules",
        ],
    }
    columns = {kind: kept.get(kind, []) + dropped.get(kind, []) for kind in kept | dropped}
    names = [name for kind in columns.values() for name in kind]
    fixed = ["Experiment", "rev", "typ", "Created", "parent", "State", "Executor"]
    table = TabularData([*fixed, *names], fill_value="-")
    for row in range(2):  # every column differs between the rows: --only-changed keeps it
        table.append(["", f"r{row}", "baseline", "", "", "-", "-", *(f"{row}" for _ in names)])
    command = readme_command("dvc exp show")
    options = {
        flag: [value for f, value in itertools.pairwise(command) if f == flag]
        for flag in ("--keep", "--drop")
    }
    shown: list[str] = []
    table.render = lambda **_: shown.extend(table.keys())  # the columns left to print
    show_experiments(
        table, columns, keep=options["--keep"], drop=options["--drop"], only_changed=True
    )
    assert set(shown) & set(names) == {name for kind in kept.values() for name in kind}


@pytest.fixture(scope="module")
def plots(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A fresh clone after `make run`, as far as `dvc plots show` reads it: GRPO curves named as
    TRL logs them (a few; each reward function's mean and std), the .venv of `make setup`, then
    the README's `dvc plots show` run at its root."""
    project = clone(tmp_path_factory.mktemp("plots"))
    curves = project.root / paths.grpo_curves_dir(EXP)
    names = ["reward", "kl", "completions/mean_length", "entropy", "train/loss", "loss"]
    names += ["clip_ratio/low_min"]  # flat at zero in most runs: after the curves that matter
    for reward in load_experiment(EXP).grpo.rewards:
        names += [f"rewards/{reward}/mean", f"rewards/{reward}/std"]
    for name in names:
        column = name.rsplit("/", 1)[-1]
        (curves / name).parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"{step}\t{(step * 7 % 5) / 4}\n" for step in range(6))
        (curves / name).with_suffix(".tsv").write_text(f"step\t{column}\n{rows}")
    # The grpo stage's lock entry names a run that is not in this clone's DVC cache (`make run`
    # puts it there): without it DVC reads the curves from the workspace.
    lock = yaml.safe_load((project.root / "dvc.lock").read_text())
    del lock["stages"][f"grpo--{EXP}"]
    (project.root / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    (project.root / ".venv").symlink_to(Path(sys.prefix))
    assert readme_command("dvc plots show") == ["dvc", "plots", "show"]
    project("dvc", "plots", "show")
    return project


class _Sources(HTMLParser):
    """Every src and href of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [v for k, v in attrs if k in ("src", "href") and v]


def test_plots_page_loads_nothing_from_the_network(plots: Project) -> None:
    """The page's scripts are files beside it (DVC's own page loads vega from a CDN)."""
    page = plots.root / "dvc_plots" / "index.html"
    parser = _Sources()
    parser.feed(page.read_text())
    assert parser.found, "the page loads no script"
    remote = [s for s in parser.found if re.match(r"(https?:)?//", s)]
    assert not remote, f"{page} loads {remote}"
    missing = [s for s in parser.found if not (page.parent / s).is_file()]
    assert not missing, f"{page} loads files that are not there: {missing}"


def test_reward_plots_are_titled_after_their_function(plots: Project) -> None:
    """Each reward function's mean and std plots name the function and the statistic in the
    title and on the y axis (the axis said only `mean` or `std`), and no two plots share a
    title."""
    shown = json.loads(plots("dvc", "plots", "show", "--json"))["data"]
    titles = {plot_id: plot[0]["content"]["title"]["text"] for plot_id, plot in shown.items()}
    assert len(set(titles.values())) == len(titles), titles
    rewards = [i for i in shown if "/rewards/" in i]
    assert len(rewards) == 2 * len(load_experiment(EXP).grpo.rewards), list(shown)
    for plot_id in rewards:
        reward, statistic = Path(plot_id).parent.name, Path(plot_id).stem
        y_axis = json.dumps(shown[plot_id][0]["content"]["layer"][0]["encoding"]["y"]["title"])
        for where, text in (("title", titles[plot_id]), ("y axis", y_axis)):
            assert reward in text, f"{plot_id}: the {where} {text!r} does not name {reward}"
        assert {"mean": "mean", "std": "standard deviation"}[statistic] in titles[plot_id]
        assert statistic in y_axis


def test_the_curves_that_matter_come_first(plots: Project) -> None:
    """The total reward, each reward function, KL, completion length and entropy lead the page,
    in that order; the other curves (the clip ratios, loss) follow."""
    shown = list(json.loads(plots("dvc", "plots", "show", "--json"))["data"])
    stems = [re.sub(r"^.*/plots/metrics/|\.tsv$", "", plot_id) for plot_id in shown]
    rewards = [
        f"rewards/{r}/{s}" for r in load_experiment(EXP).grpo.rewards for s in ("mean", "std")
    ]
    lead = ["reward", *rewards, "kl", "completions/mean_length", "entropy"]
    assert stems[: len(lead)] == lead, stems
    assert "clip_ratio/low_min" in stems[len(lead) :]


def test_plots_page_is_ignored_by_git(plots: Project) -> None:
    status = plots("git", "status", "--porcelain", "--untracked-files=all")
    assert "dvc_plots" not in status, status


@pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)
def test_plots_page_draws_every_plot_offline_in_a_browser(plots: Project) -> None:
    """Chromium, every request for something other than a file refused: each plot is drawn
    (vega's canvas in its place), and nothing failed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    page_file = plots.root / "dvc_plots" / "index.html"
    expected = page_file.read_text().count("vegaEmbed(")
    refused: list[str] = []
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=BROWSER)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda err: errors.append(str(err)))

            def route(r) -> None:
                if r.request.url.startswith("file:"):
                    r.continue_()
                else:
                    refused.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(page_file.resolve().as_uri(), wait_until="load")
            drawn = "document.querySelectorAll('body > div[id] canvas').length"
            with contextlib.suppress(PlaywrightTimeout):  # the assertions say what was drawn
                page.wait_for_function(f"{drawn} >= {expected}", timeout=20_000)
            shown = page.evaluate(
                f"""() => ({{plots: document.querySelectorAll('body > div[id]').length,
                             drawn: {drawn}, text: document.body.innerText.slice(0, 300)}})"""
            )
        finally:
            browser.close()
    curves = list((plots.root / paths.grpo_curves_dir(EXP)).rglob("*.tsv"))
    assert expected == len(curves) and shown["plots"] == expected, shown
    assert shown["drawn"] == expected, shown
    assert not refused and not errors, (refused, errors)
