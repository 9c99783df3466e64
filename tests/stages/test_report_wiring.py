"""How the report stage's ``run`` wires the report's parts together, in process and in
milliseconds: every collaborator (the frames, combined numbers, published numbers, answer prior,
blanked images, tables, parent comparison, provenance, plots, curves, gallery, formatting,
declared reads and the template renderer) is a stand-in in ``vlrl.stages.report``'s namespace that
records what it is handed and answers a token naming the call, so each test checks: what each
collaborator gets (the experiment, the config's confidence, seed and SFT flag, its checkpoints and
benchmarks, and the filtered lists: results without the combined numbers, comparisons without the
blanked benchmarks, a gallery only when asked for and not of a ``blank_images_of`` benchmark,
curves only when GRPO is evaluated), the whole template context of each template, which files
it writes and what is in them, ``metrics.json``, and every line it logs, whole; on both sides
of each condition. The real collaborators are exercised end to end by test_report.py (whole
reports from scored synthetic predictions); against_parent and blind_csv by
test_report_steps.py."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlrl.config import load_experiment
from vlrl.stages import report

CODE_FILES = ["workflow_scripts/vlrl/stages/report.py", "workflow_scripts/vlrl/reporting/x.py"]
CODE_ROOT = Path("/code/root")
COLORS = [("base", "#1f77b4"), ("SFT", "#ff7f0e"), ("SFT+GRPO", "#d62728")]
FULL = [
    "seed=7",
    "description=A child of tiny_shapes, reported",
    "score.confidence=0.8",
    "score.bootstrap_resamples=123",
    "report.title=Shapes, reported",
    "report.gallery.n=4",
    "report.gallery.reasoning_chars=321",
    "report.published=[{reference: paper, rows: {base: row_b, grpo: row_g}}]",
    "report.combined={both: {benchmarks: [shapes_test, shapes_test_blank]}}",
]
BARE = [
    "seed=11",
    "description=Base only",
    "score.confidence=0.9",
    "score.bootstrap_resamples=77",
    "report.gallery.n=0",
    "report.gallery.reasoning_chars=55",
    "sft.enabled=false",
    "grpo.enabled=false",
]
FULL_FILES = [
    "accuracy.png", "blanked.csv", "blind.csv", "comparisons.csv", "comparisons.md",
    "grpo_curves.png", "index.html", "parent.csv", "published.csv", "results.csv", "results.md",
    "reward_curve.png",
]  # fmt: skip
BARE_FILES = [
    "accuracy.png", "comparisons.csv", "comparisons.md", "index.html", "published.csv",
    "results.csv", "results.md",
]  # fmt: skip
TEMPLATES = ["results.md.j2", "comparisons.md.j2", "index.html.j2"]


@dataclass
class Ev:
    """A stand-in of vlrl.reporting.frames.Evaluation: what run reads of one."""

    bench: str
    config: SimpleNamespace
    scores: dict
    judges: dict = field(default_factory=dict)

    def judged(self, checkpoint):
        return self.judges.get(checkpoint)


def _ev(bench, headline, blank_of=None, checkpoints=("base", "sft", "grpo"), judges=None):
    config = SimpleNamespace(blank_images_of=blank_of, headline=headline)
    return Ev(bench, config, {c: f"scores of {c}" for c in checkpoints}, judges or {})


EV_TEST = _ev("shapes_test", "accuracy", judges={"sft": "judge-m (prompt 2)"})
EV_BLANK = _ev("shapes_test_blank", "metric.blank", blank_of="shapes_test")
EVS = [EV_TEST, EV_BLANK]

R1 = {"benchmark": "shapes_test", "model": "base", "accuracy": 0.25, "ci_low": 0.125,
      "ci_high": 0.375, "n": 40, "unscored": 2}  # fmt: skip
R2 = {"benchmark": "shapes_test_blank", "model": "SFT", "accuracy": 0.5, "ci_low": 0.375,
      "ci_high": 0.625, "n": 40, "unscored": 0}  # fmt: skip
C1 = {"benchmark": "both", "model": "base", "accuracy": 0.375, "ci_low": 0.25, "ci_high": 0.5,
      "n": 80, "unscored": 2, "combines": "shapes_test shapes_test_blank"}  # fmt: skip
K1 = {"benchmark": "shapes_test", "comparison": "SFT − base", "diff": 0.125, "ci_low": 0.05,
      "ci_high": 0.2, "p_mcnemar": 0.01}  # fmt: skip
K2 = {"benchmark": "shapes_test_blank", "comparison": "SFT+GRPO − SFT", "diff": -0.025,
      "ci_low": -0.1, "ci_high": 0.05, "p_mcnemar": 0.5}  # fmt: skip
P1 = {"reference": "paper", "benchmark": "shapes_test", "published": 0.5, "extra": "left out"}
PARENT = [{"sentence": "the child gained 3 points", "benchmark": "shapes_test", "diff": 0.03,
           "extra": "left out"}]  # fmt: skip
PRIOR = [{"benchmark": "shapes_test", "accuracy": 0.3}]
BLANK = [{"blank": "shapes_test_blank", "benchmark": "shapes_test"}]
REWARD = SimpleNamespace(columns=["optimizer step", "reward"], name="reward frame")
KL = SimpleNamespace(columns=["optimizer step", "kl"], name="kl frame")
GROUNDING = [
    SimpleNamespace(
        problem_type="grounding",
        answers=[SimpleNamespace(reasoning="saw \ufffd", answer="[1, 2, 3, 4]")],
    ),
    SimpleNamespace(
        problem_type="grounding",
        answers=[SimpleNamespace(reasoning="none", answer="cut \ufffd")],
    ),
]
PLAIN = [
    SimpleNamespace(
        problem_type="numerical", answers=[SimpleNamespace(reasoning="1 2 3", answer="3")]
    )
]


def _snap(value):
    """A copy of a list or dict argument as it is at the call (run extends its results list)."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


class Stage:
    """The stand-ins' answers (set by each test) and the calls they recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.evaluations = EVS
        self.results = [R1, R2]
        self.combined = [C1]
        self.comparisons = [K1, K2]
        self.published = [P1]
        self.parent = PARENT
        self.prior = PRIOR
        self.blank = BLANK
        self.trained = {"reward": REWARD, "kl": KL}
        self.entries = {"shapes_test": GROUNDING, "shapes_test_blank": PLAIN}

    def record(self, name: str, answer):
        """A stand-in recording its calls; it answers ``answer`` (called with its arguments
        when callable)."""

        def stand_in(*args):
            self.calls.append((name, *map(_snap, args)))
            return answer(*args) if callable(answer) else answer

        return stand_in

    def named(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]


def token(name: str):
    """A stand-in answering what it was called with: the context shows both."""
    return lambda *args: (name, *args)


@pytest.fixture()
def stage(project: Path, monkeypatch: pytest.MonkeyPatch) -> Stage:
    st = Stage()
    rec = st.record
    stand_ins = {
        "frames": SimpleNamespace(
            load=rec("frames.load", lambda *_: st.evaluations),
            results_rows=rec("frames.results_rows", lambda *_: list(st.results)),
            comparison_rows=rec("frames.comparison_rows", lambda *_: st.comparisons),
            metrics_tree=rec("frames.metrics_tree", {"shapes_test": {"base": {"accuracy": 0.25}}}),
        ),
        "combined": SimpleNamespace(
            combined_rows=rec("combined.combined_rows", lambda *_: st.combined),
            combined_table=token("combined.combined_table"),
            parts=lambda row: row["combines"].split() if "combines" in row else [],
        ),
        "versus": SimpleNamespace(
            versus_rows=rec("versus.versus_rows", lambda *_: st.published),
            summary_columns=token("versus.summary_columns"),
            COLUMNS=["reference", "benchmark", "published"],
        ),
        "blind": SimpleNamespace(
            blind_rows=rec("blind.blind_rows", lambda *_: st.prior),
            blind_lines=lambda rows, confidence: [
                f"blind line: {r['benchmark']} at {confidence}" for r in rows
            ],
            blind_table=token("blind.blind_table"),
        ),
        "blanked": SimpleNamespace(
            blanked_rows=rec("blanked.blanked_rows", lambda *_: st.blank),
            blanked_lines=lambda rows: [f"blanked line: {r['blank']}" for r in rows],
            blanked_table=token("blanked.blanked_table"),
            gains_table=token("blanked.gains_table"),
            blanked_csv=rec("blanked.blanked_csv", [{"blank": "shapes_test_blank", "look": 0.2}]),
        ),
        "tables": SimpleNamespace(
            lead_lines=token("tables.lead_lines"),
            summary_table=token("tables.summary_table"),
            results_table=token("tables.results_table"),
            comparisons_table=token("tables.comparisons_table"),
            versus_table=token("tables.versus_table"),
            not_evaluated_table=token("tables.not_evaluated_table"),
        ),
        "experiments": SimpleNamespace(
            parent_table=token("experiments.parent_table"),
            COLUMNS=["benchmark", "diff", "sentence"],
        ),
        "provenance": SimpleNamespace(collect=token("provenance.collect")),
        "plots": SimpleNamespace(accuracy_png=rec("plots.accuracy_png", b"accuracy png")),
        "curves": SimpleNamespace(
            REWARD="reward",
            curves_dir=lambda exp: Path("dvclive") / exp,
            read_curves=rec("curves.read_curves", lambda *_: st.trained),
            plot_reward=rec("curves.plot_reward", b"reward png"),
            plot_curves=rec("curves.plot_curves", b"curves png"),
        ),
        "gallery": SimpleNamespace(
            build=rec("gallery.build", lambda exp, ev, *_: st.entries[ev.bench])
        ),
        "fmt": SimpleNamespace(
            level=token("fmt.level"),
            with_interval=lambda x, low, high: f"{x} [{low}, {high}]",
            signed=lambda x: f"{x:+}",
            signed_interval=lambda low, high: f"[{low:+}, {high:+}]",
            p_value=lambda p: f"{p}",
        ),
        "declared_reads": token("declared_reads"),
        "against_parent": rec("against_parent", lambda *_: st.parent),
        "blind_csv": rec("blind_csv", [{"benchmark": "shapes_test", "kind": "k", "diff": 0.3}]),
    }
    for name, stand_in in stand_ins.items():
        monkeypatch.setattr(report, name, stand_in)

    def render(template, **context):
        st.calls.append(("render", template, dict(context)))
        return f"<{template} rendered>"

    monkeypatch.setattr(report, "render", render)
    return st


def _run(exp: str, cfg, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=report.log.name)
    report.run(exp, cfg, CODE_FILES, CODE_ROOT)


def _files(exp: str) -> dict[str, str | bytes]:
    folder = Path("reports") / exp
    assert sorted(p.name for p in Path("reports").iterdir()) == [exp]  # no temporary left
    return {
        p.name: p.read_bytes() if p.suffix == ".png" else p.read_text()
        for p in sorted(folder.iterdir())
    }


def _contexts(st: Stage) -> dict[str, dict]:
    renders = st.named("render")
    assert [r[1] for r in renders] == TEMPLATES
    return {r[1]: r[2] for r in renders}


def _full_context(cfg) -> dict:
    results = [R1, R2, C1]
    return {
        "title": "Shapes, reported",
        "description": "A child of tiny_shapes, reported",
        "level": ("fmt.level", 0.8),
        "lead": ("tables.lead_lines", [K1], True, 0.8),
        "reward_png": b"reward png",
        "reward_axis": "optimizer step",
        "seed": 7,
        "resamples": 123,
        "summary": (
            "tables.summary_table",
            results,
            [P1],
            EVS,
            ("versus.summary_columns", EVS, [P1], {"both": ["shapes_test", "shapes_test_blank"]}),
        ),
        "benchmarks": [
            {
                "name": "shapes_test",
                "headline": "accuracy",
                "table": ("tables.results_table", results, EV_TEST),
            },
            {
                "name": "shapes_test_blank",
                "headline": "metric.blank",
                "table": ("tables.results_table", results, EV_BLANK),
            },
        ],
        "combined": [
            {
                "name": "both",
                "parts": ["shapes_test", "shapes_test_blank"],
                "table": ("combined.combined_table", results, "both"),
            }
        ],
        "comparisons": ("tables.comparisons_table", [K1, K2], 0.8),
        "blind_lines": ["blind line: shapes_test at 0.8"],
        "blind_table": ("blind.blind_table", PRIOR, 0.8),
        "blanked_lines": ["blanked line: shapes_test_blank"],
        "blanked_table": ("blanked.blanked_table", BLANK, 0.8),
        "gains_table": ("blanked.gains_table", BLANK, 0.8),
        "parent": "tiny_shapes",
        "parent_lines": ["the child gained 3 points"],
        "parent_table": ("experiments.parent_table", PARENT, 0.8),
        "has_published": True,
        "versus": ("tables.versus_table", [P1], 0.8),
        "not_evaluated": ("tables.not_evaluated_table", [P1]),
        "judged": True,
        "prov": (
            "provenance.collect",
            "child",
            cfg,
            ("declared_reads", "report"),
            EVS,
            CODE_FILES,
            CODE_ROOT,
        ),
        "accuracy_png": b"accuracy png",
        "curves_png": b"curves png",
        "curves_dir": "dvclive/child",
        "curve_names": ["reward", "kl"],
        "gallery": [{"name": "shapes_test", "entries": GROUNDING}],
        "gallery_boxes": True,
        "gallery_undecodable": True,
        "gallery_n": 4,
        "reasoning_chars": 321,
        "truth_color": "#2ca02c",
        "box_colors": COLORS,
    }


def test_a_full_report_hands_each_part_its_inputs_and_writes_every_file(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_experiment("tiny_shapes_grpo_lr", FULL)
    _run("child", cfg, caplog)

    results = [R1, R2, C1]
    combines = {"both": ["shapes_test", "shapes_test_blank"]}
    assert [c for c in stage.calls if c[0] != "render"] == [
        ("frames.load", "child", ["shapes_test", "shapes_test_blank"], ["base", "sft", "grpo"]),
        ("frames.results_rows", EVS, 0.8, True),
        ("combined.combined_rows", [R1, R2], combines, 0.8),
        ("frames.comparison_rows", "child", EVS, cfg.score, 7, True),
        ("versus.versus_rows", list(cfg.report.published), results, EVS, True, 0.8),
        ("against_parent", "child", cfg),
        ("blind.blind_rows", "child", EVS, cfg.score, 7, True),
        ("blanked.blanked_rows", "child", EVS, cfg.score, 7, True),
        ("curves.read_curves", Path("dvclive/child")),
        ("gallery.build", "child", EV_TEST, cfg.report.gallery, 7, True),
        ("curves.plot_reward", REWARD),
        ("plots.accuracy_png", [R1, R2], 0.8),
        ("curves.plot_curves", {"reward": REWARD, "kl": KL}),
        ("blind_csv", PRIOR),
        ("blanked.blanked_csv", BLANK),
        ("frames.metrics_tree", results),
    ]
    assert cfg.report.published[0].reference == "paper"
    assert cfg.report.gallery.n == 4
    assert cfg.score.confidence == 0.8 and cfg.score.bootstrap_resamples == 123
    contexts = _contexts(stage)
    expected = _full_context(cfg)
    for template in TEMPLATES:
        assert contexts[template] == expected, template

    assert _files("child") == {
        "accuracy.png": b"accuracy png",
        "blanked.csv": "blank,look\nshapes_test_blank,0.2\n",
        "blind.csv": "benchmark,kind,diff\nshapes_test,k,0.3\n",
        "comparisons.csv": (
            "benchmark,comparison,diff,ci_low,ci_high,p_mcnemar\n"
            "shapes_test,SFT − base,0.125,0.05,0.2,0.01\n"
            "shapes_test_blank,SFT+GRPO − SFT,-0.025,-0.1,0.05,0.5\n"
        ),
        "comparisons.md": "<comparisons.md.j2 rendered>",
        "grpo_curves.png": b"curves png",
        "index.html": "<index.html.j2 rendered>",
        "parent.csv": "benchmark,diff,sentence\nshapes_test,0.03,the child gained 3 points\n",
        "published.csv": "reference,benchmark,published\npaper,shapes_test,0.5\n",
        "results.csv": (
            "benchmark,model,accuracy,ci_low,ci_high,n,unscored,combines\n"
            "shapes_test,base,0.25,0.125,0.375,40,2,\n"
            "shapes_test_blank,SFT,0.5,0.375,0.625,40,0,\n"
            "both,base,0.375,0.25,0.5,80,2,shapes_test shapes_test_blank\n"
        ),
        "results.md": "<results.md.j2 rendered>",
        "reward_curve.png": b"reward png",
    }
    assert sorted(_files("child")) == FULL_FILES
    metrics = Path("results/child/metrics.json")
    assert json.loads(metrics.read_text()) == {"shapes_test": {"base": {"accuracy": 0.25}}}

    assert caplog.messages == [
        "report: shapes_test base: accuracy 0.25 [0.125, 0.375] (n=40, 2 unscored)",
        "report: shapes_test_blank SFT: accuracy 0.5 [0.375, 0.625] (n=40, 0 unscored)",
        "report: both base: accuracy 0.375 [0.25, 0.5] (n=80, 2 unscored)",
        "report: the child gained 3 points",
        "report: blind line: shapes_test at 0.8",
        "report: blanked line: shapes_test_blank",
        "report: shapes_test SFT − base: +0.125 pts [+0.05, +0.2], McNemar p 0.01",
        "report: shapes_test_blank SFT+GRPO − SFT: -0.025 pts [-0.1, +0.05], McNemar p 0.5",
        "report: wrote reports/child and results/child/metrics.json",
    ]


def _bare(stage: Stage) -> None:
    """Base only: no combined numbers, published rows, parent, prior, blanked rows, curves."""
    stage.evaluations = [
        _ev("shapes_test", "accuracy", checkpoints=["base"]),
        _ev("shapes_test_blank", "metric.blank", "shapes_test", checkpoints=["base"]),
    ]
    stage.results = [R1]
    stage.combined = []
    stage.comparisons = [K1]
    stage.published = []
    stage.parent = []
    stage.prior = []
    stage.blank = []


def _bare_context(cfg, evs) -> dict:
    return {
        "title": "tiny_shapes",
        "description": "Base only",
        "level": ("fmt.level", 0.9),
        "lead": ("tables.lead_lines", [K1], False, 0.9),
        "reward_png": None,
        "reward_axis": None,
        "seed": 11,
        "resamples": 77,
        "summary": (
            "tables.summary_table",
            [R1],
            [],
            evs,
            ("versus.summary_columns", evs, [], {}),
        ),
        "benchmarks": [
            {
                "name": "shapes_test",
                "headline": "accuracy",
                "table": ("tables.results_table", [R1], evs[0]),
            },
            {
                "name": "shapes_test_blank",
                "headline": "metric.blank",
                "table": ("tables.results_table", [R1], evs[1]),
            },
        ],
        "combined": [],
        "comparisons": ("tables.comparisons_table", [K1], 0.9),
        "blind_lines": [],
        "blind_table": ("blind.blind_table", [], 0.9),
        "blanked_lines": [],
        "blanked_table": ("blanked.blanked_table", [], 0.9),
        "gains_table": ("blanked.gains_table", [], 0.9),
        "parent": None,
        "parent_lines": [],
        "parent_table": ("experiments.parent_table", [], 0.9),
        "has_published": False,
        "versus": ("tables.versus_table", [], 0.9),
        "not_evaluated": ("tables.not_evaluated_table", []),
        "judged": False,
        "prov": (
            "provenance.collect",
            "tiny_shapes",
            cfg,
            ("declared_reads", "report"),
            evs,
            CODE_FILES,
            CODE_ROOT,
        ),
        "accuracy_png": b"accuracy png",
        "curves_png": None,
        "curves_dir": "dvclive/tiny_shapes",
        "curve_names": [],
        "gallery": [],
        "gallery_boxes": False,
        "gallery_undecodable": False,
        "gallery_n": 0,
        "reasoning_chars": 55,
        "truth_color": "#2ca02c",
        "box_colors": [("base", "#1f77b4")],
    }


def test_a_bare_report_of_the_base_model_writes_only_its_own_files(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    evs = stage.evaluations
    cfg = load_experiment("tiny_shapes", BARE)
    _run("tiny_shapes", cfg, caplog)

    assert [c for c in stage.calls if c[0] != "render"] == [
        ("frames.load", "tiny_shapes", ["shapes_test", "shapes_test_blank"], ["base"]),
        ("frames.results_rows", evs, 0.9, False),
        ("combined.combined_rows", [R1], {}, 0.9),
        ("frames.comparison_rows", "tiny_shapes", evs, cfg.score, 11, False),
        ("versus.versus_rows", [], [R1], evs, False, 0.9),
        ("against_parent", "tiny_shapes", cfg),
        ("blind.blind_rows", "tiny_shapes", evs, cfg.score, 11, False),
        ("blanked.blanked_rows", "tiny_shapes", evs, cfg.score, 11, False),
        ("plots.accuracy_png", [R1], 0.9),
        ("frames.metrics_tree", [R1]),
    ]
    contexts = _contexts(stage)
    for template in TEMPLATES:
        assert contexts[template] == _bare_context(cfg, evs), template
    assert _files("tiny_shapes") == {
        "accuracy.png": b"accuracy png",
        "comparisons.csv": (
            "benchmark,comparison,diff,ci_low,ci_high,p_mcnemar\n"
            "shapes_test,SFT − base,0.125,0.05,0.2,0.01\n"
        ),
        "comparisons.md": "<comparisons.md.j2 rendered>",
        "index.html": "<index.html.j2 rendered>",
        "published.csv": "reference,benchmark,published\n",  # the header, no rows
        "results.csv": (
            "benchmark,model,accuracy,ci_low,ci_high,n,unscored\n"
            "shapes_test,base,0.25,0.125,0.375,40,2\n"
        ),
        "results.md": "<results.md.j2 rendered>",
    }
    assert sorted(_files("tiny_shapes")) == BARE_FILES
    metrics = Path("results/tiny_shapes/metrics.json")
    assert json.loads(metrics.read_text()) == {"shapes_test": {"base": {"accuracy": 0.25}}}
    assert caplog.messages == [
        "report: shapes_test base: accuracy 0.25 [0.125, 0.375] (n=40, 2 unscored)",
        "report: shapes_test SFT − base: +0.125 pts [+0.05, +0.2], McNemar p 0.01",
        "report: wrote reports/tiny_shapes and results/tiny_shapes/metrics.json",
    ]


def test_grpo_without_sft_and_without_curves_reads_them_but_draws_none(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    evs = stage.evaluations = [
        _ev("shapes_test", "accuracy", checkpoints=["base", "grpo"]),
        _ev("shapes_test_blank", "metric.blank", "shapes_test", checkpoints=["base", "grpo"]),
    ]
    stage.trained = {}
    cfg = load_experiment("tiny_shapes", [*BARE, "grpo.enabled=true"])
    _run("tiny_shapes", cfg, caplog)

    assert stage.named("frames.load") == [
        ("frames.load", "tiny_shapes", ["shapes_test", "shapes_test_blank"], ["base", "grpo"])
    ]
    assert stage.named("curves.read_curves") == [
        ("curves.read_curves", Path("dvclive/tiny_shapes"))
    ]
    assert stage.named("curves.plot_curves") == stage.named("curves.plot_reward") == []
    expected = {
        **_bare_context(cfg, evs),
        "box_colors": [("base", "#1f77b4"), ("GRPO", "#d62728")],
    }
    for template, context in _contexts(stage).items():
        assert context == expected, template
    assert sorted(_files("tiny_shapes")) == BARE_FILES


def test_grpo_curves_without_the_total_reward_draw_no_reward_curve(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    evs = stage.evaluations
    stage.trained = {"kl": KL}
    cfg = load_experiment("tiny_shapes", [*BARE, "grpo.enabled=true", "sft.enabled=true"])
    _run("tiny_shapes", cfg, caplog)

    assert stage.named("curves.plot_curves") == [("curves.plot_curves", {"kl": KL})]
    assert stage.named("curves.plot_reward") == []
    expected = {
        **_bare_context(cfg, evs),
        "lead": ("tables.lead_lines", [K1], True, 0.9),
        "curves_png": b"curves png",
        "curve_names": ["kl"],
        "box_colors": COLORS,
    }
    for template, context in _contexts(stage).items():
        assert context == expected, template
    files = _files("tiny_shapes")
    assert sorted(files) == sorted([*BARE_FILES, "grpo_curves.png"])
    assert files["grpo_curves.png"] == b"curves png"


def test_a_child_with_nothing_in_common_with_its_parent_names_no_parent(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    cfg = load_experiment("tiny_shapes_grpo_lr", BARE)
    assert cfg.extends == "tiny_shapes"
    _run("child", cfg, caplog)

    assert stage.named("against_parent") == [("against_parent", "child", cfg)]
    for context in _contexts(stage).values():
        assert (context["parent"], context["parent_lines"]) == (None, [])
        assert context["parent_table"] == ("experiments.parent_table", [], 0.9)
    assert "parent.csv" not in _files("child")
    assert caplog.messages == [
        "report: shapes_test base: accuracy 0.25 [0.125, 0.375] (n=40, 2 unscored)",
        "report: shapes_test SFT − base: +0.125 pts [+0.05, +0.2], McNemar p 0.01",
        "report: wrote reports/child and results/child/metrics.json",
    ]


@pytest.mark.parametrize(
    ("prior", "blank", "written", "lines"),
    [
        (PRIOR, [], ["blind.csv"], ["report: blind line: shapes_test at 0.9"]),
        ([], BLANK, ["blanked.csv"], ["report: blanked line: shapes_test_blank"]),
    ],
    ids=["prior-only", "blanked-only"],
)
def test_the_prior_and_the_blanked_images_are_written_each_only_with_its_rows(
    stage: Stage, caplog: pytest.LogCaptureFixture, prior, blank, written, lines
) -> None:
    _bare(stage)
    stage.prior, stage.blank = prior, blank
    stage.comparisons = [K1, K2]
    _run("tiny_shapes", load_experiment("tiny_shapes", BARE), caplog)

    assert sorted(_files("tiny_shapes")) == sorted([*BARE_FILES, *written])
    assert stage.named("blind_csv") == ([("blind_csv", PRIOR)] if prior else [])
    assert stage.named("blanked.blanked_csv") == ([("blanked.blanked_csv", BLANK)] if blank else [])
    lead = [K1] if blank else [K1, K2]  # a blanked benchmark's gains are told beside its twin's
    for context in _contexts(stage).values():
        assert context["lead"] == ("tables.lead_lines", lead, False, 0.9)
    assert caplog.messages[1:-3] == lines


def test_the_gallery_shows_each_benchmark_but_a_blanked_twin_and_flags_no_boxes(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    evs = stage.evaluations = [
        _ev("shapes_test_blank", "metric.blank", "shapes_test", checkpoints=["base"]),
        _ev("shapes_test", "accuracy", checkpoints=["base"]),
    ]
    stage.entries = {"shapes_test": PLAIN, "shapes_test_blank": GROUNDING}
    cfg = load_experiment("tiny_shapes", [*BARE, "report.gallery.n=2"])
    _run("tiny_shapes", cfg, caplog)

    assert stage.named("gallery.build") == [
        ("gallery.build", "tiny_shapes", evs[1], cfg.report.gallery, 11, False)
    ]
    for context in _contexts(stage).values():
        assert context["gallery"] == [{"name": "shapes_test", "entries": PLAIN}]
        assert (context["gallery_boxes"], context["gallery_undecodable"]) == (False, False)
        assert context["gallery_n"] == 2


def test_a_judged_checkpoint_anywhere_marks_the_report_judged(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    _bare(stage)
    stage.evaluations = [
        _ev("shapes_test", "accuracy", checkpoints=["base"]),
        _ev("shapes_test_blank", "m", "shapes_test", ["base"], judges={"base": "judge (prompt 1)"}),
    ]
    _run("tiny_shapes", load_experiment("tiny_shapes", BARE), caplog)

    for context in _contexts(stage).values():
        assert context["judged"] is True
