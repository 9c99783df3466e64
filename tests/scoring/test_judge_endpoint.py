"""The graded and binary judge paths end to end against a fake OpenAI-compatible endpoint.

No model server: ``tests/fake_openai_server.py`` (FastAPI under uvicorn on 127.0.0.1, the
``endpoint`` fixture) answers each request with the reply the test assigns to its candidate, so
the real client path runs (``openai.AsyncOpenAI``, retries, cache) and the server records the
real request: the judge model's name, the decoding parameters and the prompt holding the
question, the reference and the candidate.

What is pinned, in :class:`vlrl.scoring.judge.Judge` and through the score and report stages:

- graded prompt (MM-Vet's grader, :func:`vlrl.scoring.judge_prompts.parse_mmvet_score`): the
  grade is the score; an item is correct only when graded 1.0 (checked just below, at and just
  above 1.0, and at both sides of 0.0, the bottom of the range); a grade outside [0, 1] or a
  reply that is no grade is a failure; accuracy is the share graded 1.0, the benchmark's
  ``score`` the mean grade, and the report's paired comparisons count those verdicts;
- binary prompts: each accepted verdict form (:func:`~vlrl.scoring.judge_prompts.parse_verdict`)
  and replies that are none;
- a failure (a reply that does not parse, HTTP 500 after the retries, a timeout) has no score
  and no verdict: by default (``score.judge.on_failure: unscored``) the item is unscored, left
  out of n and of every accuracy, neither right nor wrong; in ``fallback`` mode it keeps its rule
  verdict; a graded benchmark whose every call fails is an error, never a score of 0.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from endpoint_cases import OPTIONS
from scipy.stats import binomtest

from vlrl.config import JudgeConfig, load_experiment
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.scoring.judge import Judge, judge_request
from vlrl.scoring.judge_prompts import mmvet_query
from vlrl.stages import report, score
from vlrl.workflow import resolve, stage_deps

REPO = Path(__file__).resolve().parents[2]
EXP = "tiny_shapes"
JUDGE_MODEL = "judge-m"
_CANDIDATE = re.compile(r"<Candidate Begin>(.*?)<Candidate End>", re.DOTALL)
_EXTRACTED = re.compile(r"Answer: <start>\n(.*?)\n<end>\nYour output: ", re.DOTALL)


def user_text(body: dict) -> str:
    """The one user message the judge sends."""
    (message,) = body["messages"]
    assert message["role"] == "user"
    return message["content"]


def candidate_of(body: dict) -> str:
    """The candidate a request asks about: the third cell of a graded prompt's last table row,
    or the last ``<Candidate Begin>…<Candidate End>`` of a binary prompt, or the last answer of
    LogicVista's extractor (the few-shot examples come before it)."""
    text = user_text(body)
    found = _CANDIDATE.findall(text)
    if found:
        return found[-1]
    if text.endswith("Your output: "):  # LogicVista's extractor: the last example's answer
        return _EXTRACTED.findall(text)[-1]
    return text.rsplit("\n", 1)[1].split(" | ")[2]


def replying(endpoint, replies: dict[str, str]) -> None:
    """Make ``endpoint`` answer each candidate with its reply in ``replies``."""
    # A request of an earlier test still in flight may arrive after this: it gets a non-verdict.
    endpoint.state.replier = lambda body: replies.get(candidate_of(body), "(not this test's)")


def judge_cfg(base_url: str, **options) -> JudgeConfig:
    return JudgeConfig(base_url=base_url, model=JUDGE_MODEL, **{**OPTIONS, **options})


# ------------------------------------------------------------------------ the graded judge
# reply → (score, verdict), or None: a failure. MM-Vet's scale is 0.0-1.0; correct iff 1.0.
GRADES: list[tuple[str, tuple[float, int] | None]] = [
    ("1.0", (1.0, 1)),  # at the threshold
    ("1", (1.0, 1)),
    ("1.00", (1.0, 1)),
    ("1.0 because both elements are there", (1.0, 1)),  # the first token, as the authors read
    ("1.0\n", (1.0, 1)),
    ("0.999", (0.999, 0)),  # just below the threshold
    ("0.9", (0.9, 0)),
    ("0.5", (0.5, 0)),  # half right is not right
    ("0.01", (0.01, 0)),  # just above the bottom
    ("0.0", (0.0, 0)),  # at the bottom
    ("0", (0.0, 0)),
    ("1.001", None),  # just above the top of the scale
    ("1.1", None),
    ("-0.01", None),  # just below the bottom
    ("nan", None),
    ("inf", None),
    ("correct", None),
    ("The score is 1.0", None),
    (" 1.0", None),  # the authors' split(" ") leaves an empty first token
    ("", None),
]


def graded_requests() -> list:
    """One MM-Vet request per case of :data:`GRADES` (candidate ``x=<i>``)."""
    return [
        judge_request(
            f"g{i}", f"What is x in equation {i}?", "-1<AND>-5", "free_form", [], f"x={i}", "mmvet"
        )
        for i in range(len(GRADES))
    ]


def check_outcomes(outcomes, cases) -> None:
    """Each outcome is its case's (score, verdict), or a failure with no score and no verdict
    whose reply is kept and whose error says it did not parse."""
    for outcome, (reply, expected) in zip(outcomes, cases, strict=True):
        assert outcome.reply == reply, reply
        if expected is None:
            assert (outcome.score, outcome.verdict) == (None, None), reply
            assert outcome.error.startswith("unparsable: "), (reply, outcome.error)
        else:
            assert outcome.error is None, (reply, outcome.error)
            assert outcome.score == pytest.approx(expected[0], abs=1e-12), reply
            assert outcome.verdict == expected[1], reply
            assert type(outcome.verdict) is int


def test_graded_judge_scores_each_grade_and_is_correct_only_at_1(endpoint, tmp_path):
    requests = graded_requests()
    replying(endpoint, {r.candidate: reply for r, (reply, _) in zip(requests, GRADES, strict=True)})
    judge = Judge(judge_cfg(endpoint.base_url, temperature=0.0), tmp_path / "cache")
    outcomes = judge.judge(requests)
    check_outcomes(outcomes, GRADES)
    failures = sum(expected is None for _, expected in GRADES)
    assert (judge.stats.calls, judge.stats.failures) == (len(GRADES), failures)
    assert endpoint.state.requests == len(GRADES)  # an unparsable grade is not asked again

    # The server saw the real requests: the judge model, the authors' budget and temperature,
    # and the authors' table row of the question, the reference and the candidate.
    by_candidate = {candidate_of(body): body for body in endpoint.state.bodies}
    for request in requests:
        body = by_candidate[request.candidate]
        assert body["model"] == JUDGE_MODEL
        assert (body["max_tokens"], body["temperature"]) == (3, 0.0)
        text = user_text(body)
        assert text == mmvet_query(request.question, "-1<AND>-5", request.candidate)
        assert text.endswith(f"\n{request.question} | -1 <AND> -5 | {request.candidate} | ")

    # Only parsed grades are cached; read back, they mean the same.
    assert len(list((tmp_path / "cache").rglob("*.json"))) == len(GRADES) - failures
    again = Judge(judge_cfg(endpoint.base_url), tmp_path / "cache").judge(requests)
    for first, second, (reply, expected) in zip(outcomes, again, GRADES, strict=True):
        assert second.cached == (expected is not None), reply
        assert (second.score, second.verdict) == (first.score, first.verdict), reply
    assert endpoint.state.requests == len(GRADES) + failures  # only the failures asked again


# ------------------------------------------------------------------------ the binary judge
# reply → (score, verdict), or None: a failure. The verdict is the last non-empty line.
VERDICTS: list[tuple[str, tuple[float, int] | None]] = [
    ("1", (1.0, 1)),
    ("0", (0.0, 0)),
    (" 1 \n\n", (1.0, 1)),
    ("1.", (1.0, 1)),
    ("Verdict: 0", (0.0, 0)),
    ("verdict=1", (1.0, 1)),
    ("Final verdict: 1", (1.0, 1)),
    ("Answer: 0", (0.0, 0)),
    ("Judgement: 1", (1.0, 1)),
    ("Judgment 0", (0.0, 0)),
    ("Grade: 1", (1.0, 1)),
    ("**1**", (1.0, 1)),
    ("`0`", (0.0, 0)),
    ('"1"', (1.0, 1)),
    ("\\boxed{0}", (0.0, 0)),
    ("Final answer: \\boxed{1}", (1.0, 1)),
    ("<think>it says 0, wrong</think>1", (1.0, 1)),
    ("The candidate names the same option.\n1", (1.0, 1)),
    ("The candidate is wrong.\nVerdict: 0", (0.0, 0)),
    ("", None),
    ("correct", None),
    ("yes", None),
    ("2", None),
    ("10", None),
    ("0.5", None),
    ("1.0", None),  # a grade is not a binary verdict
    ("0 or 1", None),
    ("1\nI am not sure", None),  # the verdict must be the last line
    ("Verdict: 1 because it matches", None),
    ("<think>1</think>", None),  # a verdict only inside the reasoning
]


def test_binary_judge_reads_each_verdict_form_and_nothing_else(endpoint, tmp_path):
    types = ["multiple_choice", "numerical", "yes_no", "free_form", "ocr"]
    requests = [
        judge_request(
            f"b{i}", f"Question {i}?", "B", types[i % len(types)], ["red", "blue"], f"cand {i}"
        )
        for i in range(len(VERDICTS))
    ]
    replying(
        endpoint, {r.candidate: reply for r, (reply, _) in zip(requests, VERDICTS, strict=True)}
    )
    judge = Judge(judge_cfg(endpoint.base_url), tmp_path / "cache")
    outcomes = judge.judge(requests)
    check_outcomes(outcomes, VERDICTS)
    failures = sum(expected is None for _, expected in VERDICTS)
    assert judge.stats.failures == failures and len(judge.errors) == failures
    assert len(list((tmp_path / "cache").rglob("*.json"))) == len(VERDICTS) - failures

    by_candidate = {candidate_of(body): body for body in endpoint.state.bodies}
    assert len(by_candidate) == len(VERDICTS)
    for request in requests:
        body = by_candidate[request.candidate]
        assert body["model"] == JUDGE_MODEL
        assert (body["max_tokens"], body["temperature"]) == (16, 0.0)  # the config's defaults
        text = user_text(body)
        assert f"<Question Begin>{request.question}<Question End>" in text
        assert f"<Reference Begin>{request.reference}<Reference End>" in text
        assert text.endswith(f"<Candidate Begin>{request.candidate}<Candidate End>\nVerdict:")
        if request.prompt.name == "multiple_choice":  # the option's text beside its letter
            assert request.reference == "B. blue" and "Options: A. red  B. blue" in text


# ------------------------------------------------------------------------- failed calls
@pytest.mark.parametrize("graded", [True, False], ids=["graded", "binary"])
@pytest.mark.parametrize(
    ("how", "kind", "options"),
    [
        (500, "http_status: InternalServerError (HTTP 500) after 2 attempt(s)", {}),
        ("slow", "timeout: APITimeoutError after 2 attempt(s)", {"timeout_s": 0.3}),
    ],
    ids=["HTTP 500", "timeout"],
)
def test_a_failed_call_is_no_score_and_no_verdict(endpoint, tmp_path, graded, how, kind, options):
    if how == "slow":
        endpoint.state.latency_s = 1.0
    else:
        endpoint.state.fail_always = how
    endpoint.state.reply = "1.0" if graded else "1"  # what it would say, did it answer in time
    prompt = "mmvet" if graded else None
    requests = [judge_request("a", "Q?", "3", "numerical", [], "three", prompt)]
    judge = Judge(judge_cfg(endpoint.base_url, **options), tmp_path / "cache")
    (outcome,) = judge.judge(requests)
    assert (outcome.score, outcome.verdict) == (None, None)
    assert outcome.error.startswith(kind), outcome.error
    assert judge.errors == [f"a: {outcome.error}"]
    # Retried once (OPTIONS: max_retries 1). Counted by the client: a loaded machine may time a
    # request out before the server has even read it.
    assert (judge.stats.calls, judge.stats.attempts, judge.stats.failures) == (1, 2, 1)
    assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("graded", [True, False], ids=["graded", "binary"])
def test_a_transient_500_is_retried_and_then_scored(endpoint, graded):
    endpoint.state.fail_next = [500]
    endpoint.state.reply = "0.9" if graded else "1"
    prompt = "mmvet" if graded else None
    (outcome,) = Judge(judge_cfg(endpoint.base_url)).judge(
        [judge_request("a", "Q?", "3", "numerical", [], "three", prompt)]
    )
    assert (outcome.score, outcome.verdict, outcome.error) == (
        (0.9, 0, None) if graded else (1.0, 1, None)
    )
    assert endpoint.state.requests == 2


# ------------------------------------------------------------- the score and report stages
def stage_cfg(base_url: str, *overrides: str):
    """tiny_shapes with the fake judge; ``score.judge.on_failure`` left at its default."""
    return load_experiment(
        EXP,
        [
            f"score.judge.base_url={base_url}",
            f"score.judge.model={JUDGE_MODEL}",
            "score.judge.max_retries=1",
            "score.judge.backoff_s=0.01",
            *overrides,
        ],
    )


def write_predictions(checkpoint: str, bench: str, rows: list[dict]) -> None:
    path = paths.predictions_file(EXP, checkpoint, bench)
    path.parent.mkdir(parents=True, exist_ok=True)
    common = {"options": [], "boxes": [], "images": [], "model": "m", "checkpoint": checkpoint}
    path.write_text("".join(json.dumps({**common, **row}) + "\n" for row in rows))


def scores_of(checkpoint: str, bench: str) -> dict:
    return json.loads(paths.scores_file(EXP, checkpoint, bench).read_text())


def wilson_95(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


# Per checkpoint, the judge's reply on each MM-Vet item ("#" marks a reply that is no grade).
# Every checkpoint answers the same items, so the report pairs them.
MMVET_GRADES = {
    "base": ["1.0", "0.9", "0.5", "1", "0.0", "0.999", "1.0", "#correct", "0.2", "1.0"],
    "sft": ["0.5", "0.5", "0.5", "0.5", "0.5", "0.5", "0.5", "0.5", "0.5", "0.5"],
    "grpo": ["1.0", "1.0", "0.9", "1.0", "1.0", "1.001", "0.999", "0.8", "1.0", "0.0"],
}
MMVET_TASKS = ["rec", "ocr,math", "rec", "know", "rec", "ocr,math", "rec", "know", "rec", "gen"]


def mmvet_rows(checkpoint: str) -> list[dict]:
    return [
        {
            "id": f"v1_{i}",
            "task": MMVET_TASKS[i],
            "problem_type": "free_form",
            "problem": f"What is x in equation {i}?",
            "answer": "-1<AND>-5",
            "prompt": f"What is x in equation {i}?",
            "response": f"<think>solving</think><answer>x = {checkpoint} {i}</answer>",
        }
        for i in range(len(MMVET_GRADES[checkpoint]))
    ]


def grade_reply(grade: str) -> str:
    return grade.removeprefix("#")


def grade_value(grade: str) -> float | None:
    """The grade an item gets (None: unscored), written out independently of the parser."""
    if grade.startswith("#") or not 0.0 <= float(grade) <= 1.0:
        return None
    return float(grade)


@pytest.fixture
def mmvet_project(project, endpoint):
    """The scratch project, the pinned environments (the report's provenance reads them), and
    the fake judge grading each MM-Vet item as :data:`MMVET_GRADES` says."""
    shutil.copytree(REPO / "envs", project / "envs")
    replies = {
        f"x = {checkpoint} {i}": grade_reply(grade)
        for checkpoint, grades in MMVET_GRADES.items()
        for i, grade in enumerate(grades)
    }
    replying(endpoint, replies)
    return project


def test_mmvet_stage_scores_grades_accuracy_and_paired_comparisons(mmvet_project, endpoint):
    cfg = stage_cfg(endpoint.base_url, "benchmarks=[mmvet]", "report.gallery.n=0")
    assert cfg.score.judge.on_failure == "unscored" and cfg.score.confidence == 0.95
    resolve.ensure("base_model", cfg.base_model)  # the report's provenance reads these
    resolve.ensure("download", "mmvet")
    for checkpoint in cfg.checkpoints:
        write_predictions(checkpoint, "mmvet", mmvet_rows(checkpoint))
        score.run(EXP, cfg, checkpoint, "mmvet")

    correct: dict[str, dict[str, int | None]] = {}
    for checkpoint in cfg.checkpoints:
        data = scores_of(checkpoint, "mmvet")
        grades = [grade_value(g) for g in MMVET_GRADES[checkpoint]]
        assert data["protocol"] == "mmvet_official"
        assert data["judge"]["model"] == JUDGE_MODEL
        assert data["judge"]["prompt_version"] == "mmvet-v1"
        assert data["judge"]["failures"] == grades.count(None)
        correct[checkpoint] = {}
        for item, grade, raw in zip(data["items"], grades, MMVET_GRADES[checkpoint], strict=True):
            assert item["method"] == "judge" and item["judge_reply"] == grade_reply(raw)
            if grade is None:  # unscored: neither right nor wrong
                assert (item["correct"], item["score"]) == (None, None), raw
                assert item["judge_error"].startswith("unparsable: "), raw
            else:
                assert item["score"] == pytest.approx(grade, abs=1e-12), raw
                assert item["correct"] == int(grade == 1.0), raw
            correct[checkpoint][item["id"]] = item["correct"]
        scored = [g for g in grades if g is not None]
        right = sum(g == 1.0 for g in scored)
        unscored = len(grades) - len(scored)  # the file leaves the key out when it is 0
        assert (data["n"], data.get("unscored", 0)) == (len(scored), unscored)
        assert data["accuracy"] == pytest.approx(right / len(scored), abs=1e-12)
        assert (data["ci_low"], data["ci_high"]) == pytest.approx(
            wilson_95(right, len(scored)), abs=1e-12
        )
        assert data["metrics"]["score"]["value"] == pytest.approx(np.mean(scored), abs=1e-12)
        assert data["metrics"]["accuracy"]["value"] == pytest.approx(right / len(scored))

    # Spelled out, so a mis-set threshold cannot move the expectation along with the code.
    assert [sum(v or 0 for v in correct[c].values()) for c in cfg.checkpoints] == [4, 0, 5]
    assert [scores_of(c, "mmvet")["n"] for c in cfg.checkpoints] == [9, 10, 9]
    assert scores_of("base", "mmvet")["metrics"]["score"]["value"] == pytest.approx(6.599 / 9)

    # The report pairs the verdicts on the items both checkpoints scored.
    root = stage_deps.source_root().parent  # the stage's code files, as `vlrl report` gives them
    report.run(EXP, cfg, stage_deps.code_files("report", root), root)
    comparisons = pd.read_csv(paths.report_dir(EXP) / "comparisons.csv").set_index("comparison")
    expected = {  # a − b: (n paired, excluded, a_only, b_only), counted by hand from the grades
        "SFT − base": (9, 1, 0, 4),
        "SFT+GRPO − SFT": (9, 1, 5, 0),
        "SFT+GRPO − base": (8, 2, 3, 2),
    }
    for name, (n, excluded, a_only, b_only) in expected.items():
        row = comparisons.loc[name]
        a, b = correct[row["a"]], correct[row["b"]]
        paired = [k for k in a if a[k] is not None and b[k] is not None]
        assert (row["n"], row["excluded"]) == (n, excluded) == (len(paired), 10 - len(paired))
        assert (row["a_only"], row["b_only"]) == (a_only, b_only)
        assert row["diff"] == pytest.approx((a_only - b_only) / n, abs=1e-12)
        p = binomtest(a_only, a_only + b_only).pvalue if a_only + b_only else 1.0
        assert row["p_mcnemar"] == pytest.approx(p, abs=1e-12)


def test_mmvet_stage_with_every_call_failing_is_an_error_never_a_score(mmvet_project, endpoint):
    endpoint.state.fail_always = 500
    cfg = stage_cfg(endpoint.base_url)
    write_predictions("grpo", "mmvet", mmvet_rows("grpo"))
    with pytest.raises(StageError, match=r"none of the 10 items .* could be scored"):
        score.run(EXP, cfg, "grpo", "mmvet")
    assert not paths.scores_file(EXP, "grpo", "mmvet").exists()


# Binary: id, task, problem_type, answer, options, response, the judge's reply (None: not judged)
# fmt: off
BINARY_ITEMS = [
    ("c1", "color", "multiple_choice", "B", ["red", "blue"], "<answer>B</answer>", "1"),
    ("c2", "color", "multiple_choice", "A", ["red", "blue"], "<answer>the blue one</answer>",
     "Verdict: 0"),
    ("n1", "count", "numerical", "3", [], "<answer>three</answer>", "**1**"),
    ("n2", "count", "numerical", "3", [], "<answer>4</answer>", "I think it is correct"),
    ("f1", "caption", "free_form", "a red circle", [], "<answer>a circle</answer>",
     "<think>not red</think>\n\\boxed{0}"),
    ("f2", "caption", "free_form", "a red circle", [], "<answer>a red circle</answer>", "1"),
    ("g1", "grounding", "grounding", "[0, 0, 10, 10]", [], "<answer>[0, 0, 10, 10]</answer>",
     None),
]
# fmt: on


def binary_rows() -> list[dict]:
    return [
        {
            "id": item_id,
            "task": task,
            "problem_type": ptype,
            "problem": f"Question {item_id}?",
            "answer": answer,
            "options": options,
            "boxes": [[0, 0, 10, 10]] if ptype == "grounding" else [],
            "prompt": f"Question {item_id}?",
            "response": response,
        }
        for item_id, task, ptype, answer, options, response, _ in BINARY_ITEMS
    ]


@pytest.fixture
def binary_project(project, endpoint):
    write_predictions("grpo", "shapes_test", binary_rows())
    replies = {
        response.removeprefix("<answer>").removesuffix("</answer>"): reply
        for *_, response, reply in BINARY_ITEMS
        if reply is not None
    }
    replying(endpoint, replies)
    return project


def test_binary_stage_leaves_an_unparsable_verdict_unscored_by_default(binary_project, endpoint):
    cfg = stage_cfg(endpoint.base_url, "score.judge.mode=always")
    assert cfg.score.judge.on_failure == "unscored"
    score.run(EXP, cfg, "grpo", "shapes_test")
    data = scores_of("grpo", "shapes_test")
    items = {item["id"]: item for item in data["items"]}
    expected = {"c1": 1, "c2": 0, "n1": 1, "n2": None, "f1": 0, "f2": 1, "g1": 1}
    assert {k: v["correct"] for k, v in items.items()} == expected
    assert {k: v["method"] for k, v in items.items()} == {
        **dict.fromkeys(expected, "judge"),
        "g1": "rule",  # boxes: IoU only, never the judge
    }
    assert items["n2"]["score"] is None
    assert items["n2"]["judge_error"] == (
        "unparsable: reply is not a 0/1 verdict: 'I think it is correct'"
    )
    assert items["n2"]["judge_reply"] == "I think it is correct"
    # The unscored item is neither right nor wrong: out of n, of the accuracy and of its task.
    assert (data["n"], data["unscored"]) == (6, 1)
    assert data["accuracy"] == pytest.approx(4 / 6, abs=1e-12)
    assert (data["ci_low"], data["ci_high"]) == pytest.approx(wilson_95(4, 6), abs=1e-12)
    assert data["per_task"]["count"]["n"] == 1 and data["per_task"]["count"]["accuracy"] == 1.0
    assert (data["judge"]["calls"], data["judge"]["failures"]) == (6, 1)

    bodies = {candidate_of(body): body for body in endpoint.state.bodies}
    assert len(bodies) == 6 and all(b["model"] == JUDGE_MODEL for b in bodies.values())
    text = user_text(bodies["the blue one"])
    assert "<Question Begin>Question c2?\nOptions: A. red  B. blue<Question End>" in text
    assert "<Reference Begin>A. red<Reference End>" in text
    assert "<Reference Begin>3<Reference End>" in user_text(bodies["three"])


def test_binary_stage_in_fallback_mode_keeps_the_rule_verdict_on_failure(binary_project, endpoint):
    cfg = stage_cfg(endpoint.base_url, "score.judge.mode=fallback")
    score.run(EXP, cfg, "grpo", "shapes_test")
    data = scores_of("grpo", "shapes_test")
    items = {item["id"]: item for item in data["items"]}
    # The rules got c1, f2, g1 right; the judge sees only the others.
    assert {k for k, v in items.items() if v["method"] == "judge"} == {"c2", "n1", "f1"}
    assert (items["n2"]["method"], items["n2"]["correct"]) == ("rule", 0)  # its rule verdict
    assert items["n2"]["judge_error"].startswith("unparsable: ")
    assert (items["n1"]["correct"], items["c2"]["correct"]) == (1, 0)
    assert (data["n"], data.get("unscored", 0)) == (7, 0)
    assert data["accuracy"] == pytest.approx(4 / 7, abs=1e-12)
    assert (data["judge"]["calls"], data["judge"]["failures"]) == (4, 1)


def test_binary_stage_with_http_500_leaves_judged_items_unscored(binary_project, endpoint):
    endpoint.state.fail_always = 500
    score.run(EXP, stage_cfg(endpoint.base_url, "score.judge.mode=always"), "grpo", "shapes_test")
    data = scores_of("grpo", "shapes_test")
    for item in data["items"]:
        if item["id"] == "g1":
            assert (item["method"], item["correct"]) == ("rule", 1)
            continue
        assert (item["correct"], item["score"], item["method"]) == (None, None, "judge")
        assert item["judge_error"].startswith(
            "http_status: InternalServerError (HTTP 500) after 2 attempt(s)"
        )
    assert (data["n"], data["unscored"], data["accuracy"]) == (1, 6, 1.0)
    assert (data["judge"]["failures"], data["judge"]["attempts"]) == (6, 12)


# ----------------------------------------------------------- LogicVista's letter extraction
# Per item: skill, answer, the candidate, the judge's reply ("#" marks a reply that is no letters).
LOGICVISTA_ITEMS = [
    ("inductive", "C", "C", "C"),
    ("inductive", "A, C", "A and C", "CA"),  # order aside
    ("inductive", "A, C", "only A", "A"),
    ("deductive", "3", "the third one", "Z"),  # a numbered answer is never a letter's
    ("deductive", "B", "B, I think", "#B."),
    ("spatial", "D", "no idea", "Z"),
    ("spatial", "B", "box B", " B\n"),  # stripped, as VLMEvalKit's client strips
    ("mechanical", "A, B", "A, B and B", "ABB"),  # a repeated letter is another answer
]


def test_logicvista_stage_scores_the_letters_the_judge_extracts(project, endpoint):
    shutil.copytree(REPO / "envs", project / "envs")
    replying(endpoint, {cand: reply.removeprefix("#") for _, _, cand, reply in LOGICVISTA_ITEMS})
    cfg = stage_cfg(endpoint.base_url, "benchmarks=[logicvista]")
    rows = [
        {
            "id": f"v1_{i}",
            "task": skill,
            "problem_type": "free_form",
            "problem": f"Which box comes next? ({i})",
            "answer": answer,
            "prompt": f"Which box comes next? ({i})",
            "response": f"<think>looking</think><answer>{candidate}</answer>",
        }
        for i, (skill, answer, candidate, _) in enumerate(LOGICVISTA_ITEMS)
    ]
    write_predictions("grpo", "logicvista", rows)
    score.run(EXP, cfg, "grpo", "logicvista")

    data = scores_of("grpo", "logicvista")
    assert data["protocol"] == "vlmevalkit_logicvista"
    assert (data["judge"]["prompt_version"], data["judge"]["failures"]) == ("logicvista-v1", 1)
    expected = [1, 1, 0, 0, None, 0, 1, 0]  # worked out by hand from the items above
    assert [item["correct"] for item in data["items"]] == expected
    assert all(item["method"] == "judge" for item in data["items"])
    assert data["items"][4]["judge_error"].startswith("unparsable: ")
    assert (data["n"], data["unscored"], data["accuracy"]) == (7, 1, pytest.approx(3 / 7))
    per_skill = {task: v["accuracy"] for task, v in data["per_task"].items()}
    assert per_skill == pytest.approx(
        {"inductive": 2 / 3, "deductive": 0.0, "spatial": 1 / 2, "mechanical": 0.0}
    )
    # the extractor's prompt, its authors' budget, the raw question and the answer span
    by_candidate = {candidate_of(body): body for body in endpoint.state.bodies}
    body = by_candidate["A and C"]
    assert body["max_tokens"] == 128
    assert user_text(body).endswith(
        "Question: <start>\nWhich box comes next? (1)\n<end>\n"
        "Answer: <start>\nA and C\n<end>\nYour output: "
    )
