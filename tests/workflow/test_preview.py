"""``vlrl plan``'s stage list is the preview of a run: after an edit it lists exactly the stages
`snakemake -n` and `dvc repro` run, each with why in the user's terms (the config key with its
old and new value, the code file, the input rebuilt first), old values being what the stage last
ran with, also after consecutive edits.

One shrunk copy of the default experiment is "built" without running anything: every job's
outputs are stand-in files, recorded by DVC (``dvc commit``) and older than their inputs for
Snakemake, so both tools see a built workspace in seconds (the preview reads no output).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))
from plans import add_comment, dvc_plan, edited, snakemake_plan
from scratch_project import Project

from vlrl.workflow import preview
from vlrl.workflow.dag import Job, Planned

EXP, BENCH = "tiny_shapes", "shapes_test"
EXP_FILE = f"config/experiments/{EXP}.yaml"
GRPO_AND_AFTER = {
    f"grpo--{EXP}",
    f"merge--{EXP}",
    f"infer--{EXP}--grpo--{BENCH}",
    f"score--{EXP}--grpo--{BENCH}",
    f"report--{EXP}",
}

STAND_IN_BUILD = """
import os, subprocess, time
from vlrl.workflow.dag import dag_jobs

jobs = dag_jobs(["all"])  # also writes the params files, as Snakemake does
for job in jobs:
    for out in job.output:
        if out in job.directories:
            os.makedirs(out, exist_ok=True)
            out = os.path.join(out, "stand-in")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as fh:
            fh.write(out)
subprocess.run(["dvc", "commit", "--force", "--quiet"], check=True)
# Snakemake decides by file times: inputs first, then each job's outputs in DAG order.
now, made = time.time(), {o for job in jobs for o in job.output}
for path in {i for job in jobs for i in job.input} - made:
    if os.path.exists(path):
        os.utime(path, (now - 600, now - 600))
for index, job in enumerate(jobs):
    for out in job.output:
        os.utime(out, (now - 300 + index, now - 300 + index))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = Project(tmp_path_factory.mktemp("preview"))
    project.shrink()
    project("python", "-c", STAND_IN_BUILD)
    project("git", "add", "-A")
    project("git", "commit", "-qm", "built")
    assert "Data and pipelines are up to date" in project("dvc", "status")
    return project


def previewed(project: Project) -> dict[str, list[str]]:
    """``{stage: reasons}`` of the stages `vlrl plan` lists to run (and it says that `dvc repro`
    runs the same)."""
    section = project("vlrl", "plan", EXP).split("## Downloads")[0]
    assert "`dvc repro` runs the same stages" in section, section
    runs: dict[str, list[str]] = {}
    current = None
    for line in section.splitlines():
        if line.startswith("  run "):
            current = line.split()[1]
            runs[current] = []
        elif line.startswith("  cached "):
            current = None
        elif current is not None and line.startswith("           "):
            runs[current].append(line.strip())
    return runs


def _set_learning_rate(value: float):
    def change(text: str) -> str:
        tree = yaml.safe_load(text)
        tree["grpo"]["learning_rate"] = value
        return yaml.safe_dump(tree, sort_keys=False)

    return change


@pytest.mark.slow
def test_the_preview_lists_what_both_tools_run_and_why(built: Project) -> None:
    """A config value of grpo and the code of score edited at once (one preview for both)."""
    module = "workflow_scripts/vlrl/stages/score.py"
    scores = {f"score--{EXP}--{c}--{BENCH}" for c in ("base", "sft")}
    with edited(built, EXP_FILE, _set_learning_rate(1e-4)), edited(built, module, add_comment):
        # `snakemake -n` rewrites grpo's params file: the value it held is gone from the disk
        smk, _ = snakemake_plan(built)
        shown = previewed(built)
        dvc, _ = dvc_plan(built)  # runs DVC's resolve stage: dvc.lock records the new values
        assert set(shown) == smk == dvc == GRPO_AND_AFTER | scores
        assert shown[f"grpo--{EXP}"] == ["config grpo.learning_rate: 0.0003 → 0.0001"]
        assert f"input results/{EXP}/grpo: rebuilt by grpo--{EXP}" in shown[f"merge--{EXP}"]
        for score in scores:
            assert shown[score] == [f"code {module} changed"]
        # a second edit before any run: the old value is still the one grpo last ran with
        exp_file = built.root / EXP_FILE
        exp_file.write_text(_set_learning_rate(1e-3)(exp_file.read_text()))
        shown = previewed(built)
        assert shown[f"grpo--{EXP}"] == ["config grpo.learning_rate: 0.0003 → 0.001"]


def test_the_baseline_is_the_text_whose_hash_dvc_lock_recorded() -> None:
    """Candidates that do not have the recorded hash are not taken for what the stage ran."""
    ran, later = "grpo:\n  beta: 0.04\n", "grpo:\n  beta: 0.1\n"
    recorded = hashlib.md5(ran.encode()).hexdigest()
    assert preview.Baselines({}, {"p.yaml": ran}).find("grpo", "x", "p.yaml", recorded) == ran
    no_record = preview.Baselines({}, {"p.yaml": later})
    no_record.sources = [dict]  # no dvc.lock, no commit
    assert no_record.find("grpo", "x", "p.yaml", recorded) is None
    assert preview.key_changes(ran, later) == ["grpo.beta: 0.04 → 0.1"]


def _planned(rule: str, inputs: list[str], updated: tuple[str, ...] = ()) -> Planned:
    job = Job(rule, {}, inputs, [f"out_{rule}"], [], {}, f"vlrl {rule}", frozenset())
    return Planned(job, True, "Updated input files", frozenset(updated))


def test_file_times_alone_are_snakemake_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job Snakemake runs for a newer file whose content dvc.lock records as it is (and the
    jobs after it) is one `dvc repro` skips; a newer folder, not compared, leaves it open."""
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    for name in ("in.txt", "out_a", "out_b", "out_c"):
        (tmp_path / name).write_text(name)
    (tmp_path / "folder").mkdir()
    md5 = hashlib.md5(b"in.txt").hexdigest()
    lock = {
        "a": {"deps": [{"path": "in.txt", "md5": md5}]},
        "b": {"deps": [{"path": "out_a", "md5": "0"}]},
        "c": {"deps": [{"path": "folder", "md5": "0.dir"}]},
    }
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({"stages": lock}))
    jobs = [
        _planned("a", ["in.txt"], ("in.txt",)),
        _planned("b", ["out_a"]),
        _planned("c", ["folder"], ("folder",)),
    ]
    found = preview.explain(jobs, {})
    assert (found.snakemake_only, found.unknown) == (["a", "b"], ["c"])
    assert found.why["b"] == ["input out_a: rebuilt by a"]
    (tmp_path / "in.txt").write_text("edited")
    found = preview.explain(jobs, {})
    assert (found.snakemake_only, found.why["a"]) == ([], ["input in.txt changed"])


# each reason, decided in this process -------------------------------------------------------
def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def job_of(rule: str, inputs: list[str], outputs: list[str], exp: str | None = "e",
           needed: bool = True, shell: str = "vlrl x", reason: str = "Missing output files",
           updated: tuple[str, ...] = ()) -> Planned:  # fmt: skip
    wildcards = {"exp": exp} if exp else {}
    job = Job(rule, wildcards, inputs, outputs, [], {}, shell, frozenset())
    return Planned(job, needed, reason, frozenset(updated))


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project root with a dvc.lock written by :func:`lock`."""
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    return tmp_path


def lock(root: Path, stages: dict) -> None:
    (root / "dvc.lock").write_text(yaml.safe_dump({"stages": stages}))


def write(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)


def test_the_reasons_of_a_stage_against_its_dvc_lock_record(scratch: Path) -> None:
    code = "workflow_scripts/vlrl/stages/x.py"
    write(scratch, "kept.txt", "edited.txt", "added.txt", code, "out")
    lock(scratch, {"x--e": {"deps": [
        {"path": "kept.txt", "md5": md5("kept.txt")},
        {"path": "edited.txt", "md5": md5("before")},
        {"path": code, "md5": md5("old code")},
        {"path": "dropped.txt", "md5": md5("dropped.txt")},
    ]}})  # fmt: skip
    item = job_of("x", ["kept.txt", "edited.txt", "added.txt", code], ["out"])
    found = preview.explain([item], {})
    assert found.why == {"x--e": [
        "input edited.txt changed",
        "input added.txt: new to the stage",
        f"code {code} changed",
        "input dropped.txt: no longer read",
    ]}  # fmt: skip
    assert (found.snakemake_only, found.unknown) == ([], [])


def test_a_missing_output_and_a_stage_dvc_has_never_run(scratch: Path) -> None:
    write(scratch, "in.txt", "out_b")
    jobs = [
        job_of("a", ["in.txt"], ["out_a1", "out_a2"]),
        job_of("b", ["in.txt"], ["out_b"], reason="Code has changed"),
    ]
    found = preview.explain(jobs, {})
    assert found.why == {
        "a--e": ["output missing: out_a1, out_a2"],  # no record: nothing more to say
        "b--e": ["Snakemake: Code has changed (dvc.lock has no record of a run of it)"],
    }
    assert (found.snakemake_only, found.unknown) == ([], [])


def test_jobs_that_do_not_run_or_run_no_command_are_not_explained(scratch: Path) -> None:
    write(scratch, "in.txt")
    jobs = [
        job_of("a", ["in.txt"], ["out_a"], needed=False),
        job_of("all", ["out_a"], [], exp=None, shell=""),
        job_of("b", ["in.txt"], ["out_b"]),
    ]
    assert list(preview.explain(jobs, {}).why) == ["b--e"]


def test_a_stage_with_nothing_changed_is_run_for_file_times_alone(scratch: Path) -> None:
    write(scratch, "in.txt", "out")
    lock(scratch, {"a--e": {"deps": [{"path": "in.txt", "md5": md5("in.txt")}]}})
    found = preview.explain([job_of("a", ["in.txt"], ["out"], reason="Updated input files")], {})
    assert found.why == {"a--e": ["Snakemake: Updated input files (no change against dvc.lock)"]}
    assert found.snakemake_only == ["a--e"]


def test_what_dvc_runs_wins_over_what_is_unknown_over_file_times(scratch: Path) -> None:
    """Each stage after one DVC runs is run by DVC; after an unknown one (and none DVC runs),
    unknown; a stage whose inputs two stages rebuild takes the strongest."""
    write(scratch, "same.txt", "edited.txt", "out_same", "out_edited", "out_both", "out_after")
    (scratch / "folder").mkdir()
    stages = {
        "same--e": {"deps": [{"path": "same.txt", "md5": md5("same.txt")}]},
        "edited--e": {"deps": [{"path": "edited.txt", "md5": md5("before")}]},
        "folder--e": {"deps": [{"path": "folder", "md5": "x.dir"}]},
        "both--e": {"deps": [{"path": "out_same"}, {"path": "out_folder"}]},
        "after--e": {"deps": [{"path": "out_both"}, {"path": "out_edited"}]},
    }  # fmt: skip
    lock(scratch, stages)
    write(scratch, "out_folder")
    jobs = [
        job_of("after", ["out_both", "out_edited"], ["out_after"]),  # listed first on purpose
        job_of("both", ["out_same", "out_folder"], ["out_both"]),
        job_of("same", ["same.txt"], ["out_same"], updated=("same.txt",)),
        job_of("edited", ["edited.txt"], ["out_edited"]),
        job_of("folder", ["folder"], ["out_folder"], updated=("folder",)),
    ]
    found = preview.explain(jobs, {})
    assert found.snakemake_only == ["same--e"]
    assert found.unknown == ["both--e", "folder--e"]
    assert found.why["folder--e"] == ["input folder: newer than the outputs (folders not "
                                      "compared here)"]  # fmt: skip
    assert found.why["both--e"] == [
        "input out_same: rebuilt by same--e",
        "input out_folder: rebuilt by folder--e",
    ]
    assert found.why["after--e"] == [
        "input out_both: rebuilt by both--e",
        "input out_edited: rebuilt by edited--e",
    ]
    # a folder that Snakemake did not find newer says nothing, and leaves it to file times
    jobs[-1] = job_of("folder", ["folder"], ["out_folder"])
    assert "folder--e" in preview.explain(jobs, {}).snakemake_only


def test_inputs_rebuilt_by_one_stage_are_named_together(scratch: Path) -> None:
    jobs = [
        job_of("a", [], ["o1", "o2"]),
        job_of("b", ["o1", "o2"], ["ob"]),
    ]
    assert preview.explain(jobs, {}).why["b--e"] == [
        "output missing: ob",
        "input o1, o2: rebuilt by a--e",
    ]


PARAMS = "results/e/params/grpo.yaml"
RAN, EDITED = "grpo:\n  beta: 0.04\n  lr: 1\n", "grpo:\n  beta: 0.1\n  lr: 1\n"


def config_reasons(root: Path, now: str | None, recorded: str | None,
                   before: dict[str, str]) -> list[str]:  # fmt: skip
    """The reasons of a grpo job whose params file is ``now`` and whose last run dvc.lock
    records with ``recorded``'s hash (None: no record of it)."""
    if now is not None:
        (root / PARAMS).parent.mkdir(parents=True, exist_ok=True)
        (root / PARAMS).write_text(now)
    write(root, "out")
    deps = [] if recorded is None else [{"path": PARAMS, "md5": md5(recorded)}]
    lock(root, {"grpo--e": {"deps": deps}})
    found = preview.explain([job_of("grpo", [PARAMS], ["out"], reason="Params changed")], before)
    return found.why["grpo--e"]


def test_a_config_value_changed_since_the_stage_ran(scratch: Path) -> None:
    assert config_reasons(scratch, EDITED, RAN, {PARAMS: RAN}) == ["config grpo.beta: 0.04 → 0.1"]
    # the same values written otherwise: the file changed, no value did
    assert config_reasons(scratch, "grpo: {beta: 0.04, lr: 1}\n", RAN, {PARAMS: RAN}) == [
        f"config: {PARAMS} changed"
    ]


def test_a_config_file_as_the_stage_ran_it_is_no_reason(scratch: Path) -> None:
    reasons = config_reasons(scratch, RAN, RAN, {PARAMS: EDITED})
    assert reasons == ["Snakemake: Params changed (no change against dvc.lock)"]


def test_a_config_change_whose_last_run_is_not_on_record(scratch: Path) -> None:
    (scratch / ".git").mkdir()  # no commit to read dvc.lock from
    unverified = "the values of its last run are not on record (dvc.lock keeps their hash)"
    # the params file as it was before the DAG build: compared with that, and said so
    assert config_reasons(scratch, EDITED, "grpo:\n  beta: 1\n", {PARAMS: RAN}) == [
        f"config grpo.beta: 0.04 → 0.1 (since {PARAMS} was last written; {unverified})"
    ]
    # nothing to compare with
    assert config_reasons(scratch, EDITED, "grpo:\n  beta: 1\n", {}) == [
        f"config: {PARAMS} differs from what the stage last ran with; {unverified}"
    ]
    assert config_reasons(scratch, EDITED, "grpo:\n  beta: 1\n", {PARAMS: EDITED}) == [
        f"config: {PARAMS} differs from what the stage last ran with; {unverified}"
    ]


def test_a_config_change_with_no_dvc_lock_record(scratch: Path) -> None:
    no_record = "dvc.lock has no record of its last run"
    assert config_reasons(scratch, EDITED, None, {PARAMS: RAN})[0] == (
        f"config grpo.beta: 0.04 → 0.1 (since {PARAMS} was last written; {no_record})"
    )
    assert config_reasons(scratch, EDITED, None, {PARAMS: EDITED}) == [
        "Snakemake: Params changed (no change against dvc.lock)"
    ]


def test_a_params_file_not_there_is_no_config_reason(scratch: Path) -> None:
    assert config_reasons(scratch, None, RAN, {PARAMS: RAN}) == [
        "Snakemake: Params changed (no change against dvc.lock)"
    ]


def test_the_stages_dvc_yaml_lacks_or_gives_other_deps(scratch: Path) -> None:
    jobs = [
        job_of("a", ["x", "y"], ["out_a"]),
        job_of("b", ["x"], ["out_b"]),
        job_of("c", ["x"], ["out_c"]),
        job_of("all", ["out_a"], [], exp=None, shell=""),
    ]
    assert preview.stale(jobs) == []  # no dvc.yaml: no DVC here
    (scratch / "dvc.yaml").write_text(
        yaml.safe_dump({"stages": {"a--e": {"deps": ["y", "x"]}, "b--e": {"deps": ["x", "z"]}}})
    )
    assert preview.stale(jobs) == ["b--e", "c--e"]
    (scratch / "dvc.yaml").write_text("")
    assert preview.stale(jobs) == ["a--e", "b--e", "c--e"]


def test_params_files_of_every_kind_are_snapshot(scratch: Path) -> None:
    from vlrl.core import paths

    files = [
        paths.stage_params_file("e", "grpo"),
        paths.model_params_file("m"),
        paths.dataset_params_file("d"),
    ]
    for index, path in enumerate(files):
        (scratch / path).parent.mkdir(parents=True, exist_ok=True)
        (scratch / path).write_text(f"v: {index}\n")
    assert preview.params_files() == sorted(files)
    assert preview.snapshot() == {str(p): f"v: {i}\n" for i, p in enumerate(files)}


def test_flat_keys_and_shown_values() -> None:
    assert preview.flat({}) == {}
    assert preview.flat({"a": {}}) == {"a": {}}
    assert preview.flat({"a": [1, {"b": 2}], 3: "x"}) == {"a": [1, {"b": 2}], "3": "x"}
    assert preview.key_changes("a: é\n", "b: [1]\n") == ['a: "é" → (unset)', "b: (unset) → [1]"]
    assert preview.key_changes("", "") == []


def test_the_baseline_rendered_from_the_values_dvc_lock_recorded(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dvc.lock's ``resolve`` stage records the experiment file's values: the params file they
    render is the one the stage ran with, also when the file on disk was rewritten since."""
    from vlrl.workflow import resolve

    monkeypatch.setenv("VLRL_ROOT", str(project))
    source = resolve.config_file("grpo", "tiny_shapes").relative_to(project).as_posix()
    values = yaml.safe_load((project / source).read_text())
    ran = resolve.render("grpo", "tiny_shapes", _experiment_values(values))
    baselines = preview.Baselines({"resolve": {"params": {source: values}}}, {})
    committed: list[str] = []
    baselines.sources[1] = lambda: committed.append("read") or {}
    assert baselines.find("grpo", "tiny_shapes", "p.yaml", md5(ran)) == ran
    assert committed == []  # found in the working dvc.lock: git not asked
    assert baselines.find("grpo", "tiny_shapes", "p.yaml", md5("other")) is None
    assert baselines.find("grpo", "tiny_shapes", "q.yaml", md5("other")) is None
    assert committed == ["read"]  # read once, kept
    # values that are not there, or no longer valid, render nothing
    assert preview._render("grpo", "tiny_shapes", {}) is None
    assert preview._render("grpo", "tiny_shapes", {source: {"grpo": {"beta": "x"}}}) is None


def _experiment_values(values: dict) -> dict:
    from vlrl.config import load_experiment

    del values  # the experiment as loaded (its extends: resolved), defaults filled in
    return load_experiment("tiny_shapes").model_dump(mode="json")


def test_the_committed_dvc_lock_is_read_from_git(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert preview._committed_lock() == {}  # not a git repository
    subprocess.run(["git", "init", "-q"], cwd=scratch, check=True)
    assert preview._committed_lock() == {}  # no commit yet
    lock(scratch, {"resolve": {"params": {"config/x.yaml": {"a": 1}}}})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "dvc.lock"], cwd=scratch, check=True)
    subprocess.run([*git, "commit", "-qm", "lock"], cwd=scratch, check=True)
    lock(scratch, {"resolve": {"params": {}}})  # the working copy has moved on
    elsewhere = scratch / "sub"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # git runs in the project root, wherever the caller is
    assert preview._committed_lock() == {"resolve": {"params": {"config/x.yaml": {"a": 1}}}}


def test_a_resource_stage_is_explained_by_its_own_params_file(project: Path) -> None:
    """The download of a dataset: its params file (results/ of no experiment) changed against
    the values dvc.lock's resolve stage recorded of its config file."""
    from vlrl.config import load_dataset
    from vlrl.core import paths as vlrl_paths
    from vlrl.workflow import resolve

    name = "vlm_r1_rec"
    source = f"config/datasets/{name}.yaml"
    values = yaml.safe_load((project / source).read_text())
    params = str(vlrl_paths.dataset_params_file(name))
    ran = resolve.render("download", name, load_dataset(name).model_dump(mode="json"))
    now = ran.replace(f"repo_id: {values['repo_id']}", "repo_id: other/repo")
    (project / params).parent.mkdir(parents=True, exist_ok=True)
    (project / params).write_text(now)
    (project / "out").write_text("x")
    lock(project, {
        "resolve": {"params": {source: values}},
        f"download--{name}": {"deps": [{"path": params, "md5": md5(ran)}]},
    })  # fmt: skip
    job = Job("download", {"dataset": name}, [params], ["out"], [], {}, "vlrl x", frozenset())
    found = preview.explain([Planned(job, True, "Params changed")], {})
    assert found.why == {
        f"download--{name}": [f'config repo_id: "{values["repo_id"]}" → "other/repo"']
    }


def test_every_reason_of_a_job_is_kept(scratch: Path) -> None:
    """A missing output and a changed value, inputs rebuilt first and inputs changed after
    them, and two folders found newer (each reason added, none replacing another)."""
    write(scratch, "late.txt")
    (scratch / PARAMS).parent.mkdir(parents=True)
    (scratch / PARAMS).write_text(EDITED)
    lock(scratch, {"grpo--e": {"deps": [
        {"path": PARAMS, "md5": md5(RAN)},
        {"path": "made", "md5": "0"},
        {"path": "late.txt", "md5": md5("before")},
    ]}})  # fmt: skip
    jobs = [
        job_of("make", [], ["made"], exp=None),
        job_of("grpo", ["made", PARAMS, "late.txt"], ["out"]),
    ]
    assert preview.explain(jobs, {PARAMS: RAN}).why["grpo--e"] == [
        "output missing: out",
        "config grpo.beta: 0.04 → 0.1",
        "input late.txt changed",
        "input made: rebuilt by make",
    ]
    write(scratch, "out_f")
    (scratch / "f1").mkdir()
    (scratch / "f2").mkdir()
    lock(
        scratch,
        {"f--e": {"deps": [{"path": "f1", "md5": "1.dir"}, {"path": "f2", "md5": "2.dir"}]}},
    )
    found = preview.explain([job_of("f", ["f1", "f2"], ["out_f"], updated=("f1", "f2"))], {})
    assert found.why["f--e"] == ["input f1, f2: newer than the outputs (folders not compared here)"]


def test_what_dvc_runs_reaches_the_end_of_a_chain_listed_backwards(scratch: Path) -> None:
    write(scratch, "in.txt", "o1", "o2", "o3")
    lock(scratch, {
        "a--e": {"deps": [{"path": "in.txt", "md5": md5("before")}]},
        "b--e": {"deps": [{"path": "o1"}]},
        "c--e": {"deps": [{"path": "o2"}]},
    })  # fmt: skip
    jobs = [
        job_of("c", ["o2"], ["o3"]),
        job_of("b", ["o1"], ["o2"]),
        job_of("a", ["in.txt"], ["o1"]),
    ]
    found = preview.explain(jobs, {})
    assert (found.snakemake_only, found.unknown) == ([], [])


def test_a_key_set_to_null_is_a_change() -> None:
    assert preview.key_changes("a: 1\n", "a: 1\nb: null\n") == ["b: (unset) → null"]
    assert preview.key_changes("a: 1\nb: null\n", "a: 1\n") == ["b: null → (unset)"]


def test_a_dvc_yaml_stage_without_deps_is_stale_for_a_job_with_inputs(scratch: Path) -> None:
    (scratch / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"a--e": {"cmd": "x"}}}))
    assert preview.stale([job_of("a", ["in"], ["out"])]) == ["a--e"]
    assert preview.stale([job_of("a", [], ["out"])]) == []


def test_the_baseline_is_rendered_from_the_recorded_values_not_todays(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values dvc.lock recorded that today's config files no longer hold (an experiment's GRPO
    beta, a dataset's repo) render the params file the stage ran with, and so the change."""
    from vlrl.config import load_dataset
    from vlrl.core import paths as vlrl_paths
    from vlrl.workflow import resolve

    monkeypatch.setenv("VLRL_ROOT", str(project))
    source = resolve.config_file("grpo", "tiny_shapes").relative_to(project).as_posix()
    values = yaml.safe_load((project / source).read_text())
    values.setdefault("grpo", {})["beta"] = 0.5
    ran = preview._render("grpo", "tiny_shapes", {source: values})
    assert "beta: 0.5\n" in ran and ran != resolve.render("grpo", "tiny_shapes")

    name = "vlm_r1_rec"
    source = f"config/datasets/{name}.yaml"
    values = yaml.safe_load((project / source).read_text())
    today = load_dataset(name)
    recorded = today.model_copy(update={"repo_id": "old/repo"})
    ran = resolve.render("download", name, recorded.model_dump(mode="json"))
    params = str(vlrl_paths.dataset_params_file(name))
    (project / params).parent.mkdir(parents=True, exist_ok=True)
    (project / params).write_text(resolve.render("download", name))  # today's values
    (project / "out").write_text("x")
    lock(project, {
        "resolve": {"params": {source: values | {"repo_id": "old/repo"}}},
        f"download--{name}": {"deps": [{"path": params, "md5": md5(ran)}]},
    })  # fmt: skip
    job = Job("download", {"dataset": name}, [params], ["out"], [], {}, "vlrl x", frozenset())
    found = preview.explain([Planned(job, True, "Params changed")], {})
    assert found.why == {f"download--{name}": [f'config repo_id: "old/repo" → "{today.repo_id}"']}
