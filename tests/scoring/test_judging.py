"""The score stage's use of the judge (:func:`vlrl.scoring.judging.apply_judge`), with exact
values.

Pinned: which items are asked (``fallback``: those the rules marked wrong; ``always``: all; never
boxes, never a failed generation) and with what candidate (the ``<answer>``, else the whole
response); what a verdict and a failure do to each item under each ``mode`` and
``score.judge.on_failure`` (a failure is never scored right or wrong, except as the 0 that
``score_zero`` asks for); the metadata (the mode the stage asked for, not the config's); the
stage's error with ``on_failure: error``; the log lines that tell a user what the judge did
(items asked, calls, cache hits, failures, flipped verdicts, what became of the failures); a judge
to serve is started only when some verdict is not cached, with its log under
``logs/score/<exp>`` by default; and the progress bar, drawn on the console the CLI logs to and
cleared when done. The judge is the fake OpenAI-compatible server of
``tests/fake_openai_server.py`` (the ``endpoint`` fixture).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
from pathlib import Path

import pytest
from endpoint_cases import OPTIONS
from rich.console import Console
from rich.logging import RichHandler

from vlrl.config import JudgeConfig
from vlrl.core.errors import StageError
from vlrl.items.predictions import Prediction, ScoredItem
from vlrl.scoring import judging
from vlrl.scoring.judging import apply_judge, candidate
from vlrl.serving.commands import unstarted

EXP = "judging_exp"
JUDGE_MODEL = "judge-m"
_CANDIDATE = re.compile(r"<Candidate Begin>(.*?)<Candidate End>", re.DOTALL)
UNPARSABLE = "unparsable: reply is not a 0/1 verdict: 'maybe'"

# id, problem_type, answer, options, response, rule verdict (correct, score, method)
# fmt: off
ROWS = [
    ("a", "multiple_choice", "B", ["red", "blue"], "<think>hm</think><answer>the blue one</answer>",
     (0, 0.0, "rule")),
    ("b", "numerical", "3", [], "<answer>3</answer>", (1, 1.0, "rule")),
    ("g", "grounding", "[0, 0, 10, 10]", [], "<answer>[5, 5, 9, 90]</answer>", (0, 0.1, "rule")),
    ("x", "free_form", "a red circle", [], "", (0, 0.0, "failed")),  # generation failed
    ("d", "free_form", "a red circle", [], "a circle that is red", (0, 0.5, "rule")),
    ("c", "numerical", "3", [], "<answer>three</answer>", (0, 0.0, "rule")),
]
# fmt: on
# The judge's reply to each candidate ("maybe", to anything else: no verdict).
REPLIES = {"the blue one": "1", "3": "1", "a circle that is red": "1", "three": "maybe"}


def predictions() -> list[Prediction]:
    return [
        Prediction(
            id=rid,
            task="t",
            problem_type=ptype,
            problem=f"Question {rid}?",
            answer=answer,
            options=options,
            prompt=f"Question {rid}?",
            response=response,
            model="m",
            checkpoint="grpo",
        )
        for rid, ptype, answer, options, response, _ in ROWS
    ]


def rule_items() -> list[ScoredItem]:
    return [
        ScoredItem(
            id=rid,
            task="t",
            problem_type=ptype,
            extracted=None,
            correct=correct,
            score=score,
            method=method,
        )
        for rid, ptype, _, _, _, (correct, score, method) in ROWS
    ]


def replying(endpoint, replies: dict[str, str]) -> None:
    def replier(body: dict) -> str:
        return replies.get(_CANDIDATE.findall(body["messages"][0]["content"])[-1], "maybe")

    endpoint.state.replier = replier


def asked(endpoint) -> list[str]:
    """The candidates the judge was asked about, sorted."""
    return sorted(
        _CANDIDATE.findall(b["messages"][0]["content"])[-1] for b in endpoint.state.bodies
    )


def fake_cfg(base_url: str, **options) -> JudgeConfig:
    return JudgeConfig(base_url=base_url, model=JUDGE_MODEL, **{**OPTIONS, **options})


def judging_log(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == judging.__name__]


def state(item: ScoredItem) -> tuple:
    return (item.method, item.correct, item.score, item.judge_reply, item.judge_error)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A scratch working directory: the judge cache goes to ``results/<exp>/judge_cache``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def no_rich_handlers(monkeypatch):
    """The ``vlrl`` and root loggers without a RichHandler (another test may have run the CLI,
    which installs one)."""
    for logger in (logging.getLogger("vlrl"), logging.getLogger()):
        kept = [h for h in logger.handlers if not isinstance(h, RichHandler)]
        monkeypatch.setattr(logger, "handlers", kept)


def test_candidate_is_the_answer_else_the_whole_response():
    assert candidate("<think>hmm</think><answer> blue </answer>") == "blue"
    assert candidate("<think>hmm</think> just blue") == "<think>hmm</think> just blue"
    assert candidate(r"so \boxed{7}") == "7"
    assert candidate("") == ""


@pytest.mark.parametrize(
    ("on_failure", "failed", "outcome"),
    [("unscored", (None, None), "left unscored"), ("score_zero", (0, 0.0), "scored 0")],
)
def test_always_mode_judges_every_judgeable_item(
    endpoint, workdir, caplog, on_failure, failed, outcome
):
    replying(endpoint, REPLIES)
    items = rule_items()
    cfg = fake_cfg(endpoint.base_url, mode="fallback", on_failure=on_failure)
    with caplog.at_level(logging.INFO, logger=judging.__name__):
        meta = apply_judge(EXP, cfg, None, predictions(), items, "always")
    # Not the box (IoU only), not the failed generation; the candidate is the answer, else all.
    assert asked(endpoint) == ["3", "a circle that is red", "the blue one", "three"]
    by_id = {item.id: item for item in items}
    assert state(by_id["a"]) == ("judge", 1, 1.0, "1", None)
    assert state(by_id["b"]) == ("judge", 1, 1.0, "1", None)
    assert state(by_id["g"]) == ("rule", 0, 0.1, None, None)
    assert state(by_id["x"]) == ("failed", 0, 0.0, None, None)
    assert state(by_id["d"]) == ("judge", 1, 1.0, "1", None)
    assert state(by_id["c"]) == ("judge", *failed, "maybe", UNPARSABLE)
    assert meta.model_dump() == {
        "model": JUDGE_MODEL,
        "base_url": endpoint.base_url,
        "mode": "always",  # the stage's mode, not the config's
        "prompt_version": "free_form-v1, multiple_choice-v1, numerical-v1",
        "calls": 4,
        "cache_hits": 0,
        "failures": 1,
        "temperature": 0.0,
        "max_tokens": 16,
        "on_failure": on_failure,
        "attempts": 4,
    }
    assert judging_log(caplog) == [
        (logging.INFO, "score: judge judge-m (mode always): 4 of 6 items"),
        (
            logging.INFO,
            "score: judge calls 4, cache hits 0, failures 1; verdict differs from the rules on 2",
        ),
        (
            logging.WARNING,
            f"score: the judge failed on 1 of 4 items: {outcome} (c: {UNPARSABLE})",
        ),
    ]


@pytest.mark.parametrize("on_failure", ["unscored", "score_zero"])
def test_fallback_mode_judges_rule_failures_and_a_failure_keeps_the_rule_verdict(
    endpoint, workdir, caplog, on_failure
):
    replying(endpoint, REPLIES)
    items = rule_items()
    cfg = fake_cfg(endpoint.base_url, mode="always", on_failure=on_failure)
    with caplog.at_level(logging.INFO, logger=judging.__name__):
        meta = apply_judge(EXP, cfg, "free_form", predictions(), items, "fallback")
    assert asked(endpoint) == ["a circle that is red", "the blue one", "three"]  # not "3": right
    by_id = {item.id: item for item in items}
    assert state(by_id["a"]) == ("judge", 1, 1.0, "1", None)
    assert state(by_id["b"]) == ("rule", 1, 1.0, None, None)
    assert state(by_id["d"]) == ("judge", 1, 1.0, "1", None)
    assert state(by_id["c"]) == ("rule", 0, 0.0, "maybe", UNPARSABLE)  # whatever on_failure says
    assert (meta.mode, meta.prompt_version) == ("fallback", "free_form-v1")
    assert (meta.calls, meta.cache_hits, meta.failures) == (3, 0, 1)
    assert judging_log(caplog) == [
        (logging.INFO, "score: judge judge-m (mode fallback, prompt free_form): 3 of 6 items"),
        (
            logging.INFO,
            "score: judge calls 3, cache hits 0, failures 1; verdict differs from the rules on 2",
        ),
        (
            logging.WARNING,
            f"score: the judge failed on 1 of 3 items: their rule verdicts kept (c: {UNPARSABLE})",
        ),
    ]


def failing_batch(n: int) -> tuple[list[Prediction], list[ScoredItem]]:
    """``n`` numerical items the rules marked wrong, ``q0`` … (the judge will fail on each)."""
    preds = [
        Prediction(
            id=f"q{i}",
            task="t",
            problem_type="numerical",
            problem=f"Question {i}?",
            answer="3",
            prompt="p",
            response=f"<answer>{i + 4}</answer>",
            model="m",
            checkpoint="grpo",
        )
        for i in range(n)
    ]
    items = [
        ScoredItem(
            id=p.id,
            task="t",
            problem_type="numerical",
            extracted=None,
            correct=0,
            score=0.0,
            method="rule",
        )
        for p in preds
    ]
    return preds, items


N_FAILING = 7
FIRST_FAILURES = "; ".join(f"q{i}: {UNPARSABLE}" for i in range(5))  # MAX_LISTED_FAILURES


@pytest.mark.parametrize("mode", ["always", "fallback"])
def test_on_failure_error_fails_the_stage_naming_the_first_failures(endpoint, workdir, mode):
    endpoint.state.reply = "maybe"
    preds, items = failing_batch(N_FAILING)
    cfg = fake_cfg(endpoint.base_url, on_failure="error")
    with pytest.raises(StageError) as info:
        apply_judge(EXP, cfg, None, preds, items, mode)
    assert str(info.value) == (
        f"score: the judge failed on 7 of 7 items (first: {FIRST_FAILURES}). Replies so far "
        f"are cached in {Path('results', EXP, 'judge_cache')}; rerun, fix the judge, or set "
        "score.judge.on_failure=unscored to leave those items unscored"
    )
    assert judging.MAX_LISTED_FAILURES == 5


def test_the_warning_names_the_first_failures(endpoint, workdir, caplog):
    endpoint.state.reply = "maybe"
    preds, items = failing_batch(N_FAILING)
    with caplog.at_level(logging.WARNING, logger=judging.__name__):
        meta = apply_judge(EXP, fake_cfg(endpoint.base_url), None, preds, items, "always")
    assert meta.failures == N_FAILING
    assert [state(item) for item in items] == [("judge", None, None, "maybe", UNPARSABLE)] * 7
    assert judging_log(caplog) == [
        (
            logging.WARNING,
            f"score: the judge failed on 7 of 7 items: left unscored ({FIRST_FAILURES})",
        )
    ]


def test_a_judge_to_serve_is_started_only_when_a_verdict_is_not_cached(
    endpoint, workdir, monkeypatch
):
    """``serving`` (which would start ``transformers serve``) is replaced by one that answers
    with the fake endpoint, as the started server would, and records how it was asked."""
    started: list[tuple] = []

    @contextlib.contextmanager
    def serving(cfg, log_dir, name="server"):
        started.append((cfg, log_dir, name))
        yield cfg.model_copy(
            update={
                "base_url": endpoint.base_url,
                "serve": None,
                "model": "org/judge",
                "endpoint_id": unstarted(cfg).endpoint_id,
            }
        )

    monkeypatch.setattr(judging, "serving", serving)
    monkeypatch.setattr("vlrl.serving.commands.gpu_visible", lambda: False)
    replying(endpoint, REPLIES)
    cfg = JudgeConfig(serve={"model": "org/judge", "backend": "transformers"}, **OPTIONS)

    first = rule_items()
    meta = apply_judge(EXP, cfg, None, predictions(), first, "always")
    assert started == [(cfg, Path("logs", "score", EXP), "judge")]  # the default log directory
    assert (meta.model, meta.base_url) == ("org/judge", unstarted(cfg).endpoint_id)
    assert (meta.calls, meta.cache_hits, meta.failures) == (4, 0, 1)

    # Only the failure is not cached: the server is started again, to ask about it alone.
    apply_judge(EXP, cfg, None, predictions(), rule_items(), "always", workdir / "logs-here")
    assert started[1][1:] == (workdir / "logs-here", "judge")
    assert endpoint.state.requests == 5

    # Every verdict cached: no server at all, and the same verdicts.
    replies_without_failure = {**REPLIES, "three": "0"}
    replying(endpoint, replies_without_failure)
    apply_judge(EXP, cfg, None, predictions(), rule_items(), "always")
    assert len(started) == 3
    again = rule_items()
    meta = apply_judge(EXP, cfg, None, predictions(), again, "always")
    assert len(started) == 3 and endpoint.state.requests == 6
    assert (meta.model, meta.base_url) == ("org/judge", unstarted(cfg).endpoint_id)
    assert (meta.calls, meta.cache_hits, meta.failures) == (0, 4, 0)
    assert [state(i) for i in again if i.id != "c"] == [state(i) for i in first if i.id != "c"]
    assert state(again[-1]) == ("judge", 0, 0.0, "0", None)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_the_progress_bar_is_drawn_on_the_log_console_and_cleared(
    endpoint, workdir, monkeypatch, no_rich_handlers
):
    replying(endpoint, REPLIES)
    out = io.StringIO()
    handler = RichHandler(console=Console(file=out, force_terminal=True, width=100))
    handler.setLevel(logging.CRITICAL + 1)  # the bar only, no log lines
    monkeypatch.setattr(logging.getLogger("vlrl"), "handlers", [handler])
    apply_judge(EXP, fake_cfg(endpoint.base_url), None, predictions(), rule_items(), "always")
    raw = out.getvalue()
    lines = [line for line in re.split(r"[\r\n]", _ANSI.sub("", raw)) if line.strip()]
    assert lines, raw
    # The last state drawn: every item judged, of a known total, with the time it took.
    assert re.fullmatch(r"judge ━{40} 4/4 0:00:\d\d", lines[-1]), lines
    assert raw.endswith("\x1b[2K")  # transient: the bar is erased when done


def test_the_console_is_the_one_the_cli_logs_to(monkeypatch, no_rich_handlers):
    assert judging._console().file is sys.stderr  # no RichHandler: stderr
    root_console = Console(file=io.StringIO())
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [*root.handlers, RichHandler(console=root_console)])
    assert judging._console() is root_console
    vlrl_console = Console(file=io.StringIO())
    monkeypatch.setattr(logging.getLogger("vlrl"), "handlers", [RichHandler(console=vlrl_console)])
    assert judging._console() is vlrl_console  # the package's own handler first
