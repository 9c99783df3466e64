"""What :class:`vlrl.scoring.judge.Judge` asks, records and reports, pinned with exact values.

Complements ``tests/scoring/test_judge.py`` and ``tests/scoring/test_judge_endpoint.py``: the
rendering of a question and its reference at the edges (options already listed, a letter just
past the last option, letters that are not multiple-choice answers), the cache bound taken from
the config, the client's label in the errors a user reads, the judge's metadata field by field,
what counts as a usable cached verdict before a run (the prompt's own parser decides), progress
reported once per item, and which failures are logged as warnings (the first ten). The endpoint
is the fake OpenAI-compatible server of ``tests/fake_openai_server.py`` (the ``endpoint``
fixture).
"""

from __future__ import annotations

import logging
import re

import pytest
from endpoint_cases import OPTIONS

from vlrl.config import JudgeConfig
from vlrl.core.errors import ConfigError
from vlrl.endpoints import EndpointCache
from vlrl.scoring.judge import (
    MAX_LOGGED,
    Judge,
    judge_request,
    render_question,
    render_reference,
)

JUDGE_MODEL = "judge-m"
_CANDIDATE = re.compile(r"<Candidate Begin>(.*?)<Candidate End>", re.DOTALL)
UNPARSABLE = "unparsable: reply is not a 0/1 verdict: 'maybe'"


def fake_cfg(base_url: str, **options) -> JudgeConfig:
    """A judge on the fake endpoint: one retry, 10 ms backoff."""
    return JudgeConfig(base_url=base_url, model=JUDGE_MODEL, **{**OPTIONS, **options})


def reply_by_candidate(endpoint, replies: dict[str, str]) -> None:
    """Make ``endpoint`` answer each binary request by its (last) candidate."""

    def replier(body: dict) -> str:
        return replies.get(_CANDIDATE.findall(body["messages"][0]["content"])[-1], "maybe")

    endpoint.state.replier = replier


def free_form(item_id: str, candidate: str):
    return judge_request(
        item_id, f"Question {item_id}?", "a red circle", "free_form", [], candidate
    )


# ------------------------------------------------------------------------------ rendering
@pytest.mark.parametrize(
    ("problem", "options", "expected"),
    [
        ("Which?", [], "Which?"),
        ("Which?", ["red", "blue"], "Which?\nOptions: A. red  B. blue"),
        # Every option already in the problem: not listed twice.
        ("Which? Options: A. red B. blue", ["red", "blue"], "Which? Options: A. red B. blue"),
        # Only some of them there: all are listed.
        ("Which? red or", ["red", "blue"], "Which? red or\nOptions: A. red  B. blue"),
        ("Q", ["x", "y", "z"], "Q\nOptions: A. x  B. y  C. z"),
    ],
)
def test_render_question_lists_options_unless_the_problem_has_them_all(problem, options, expected):
    assert render_question(problem, options) == expected


LETTERS = [chr(ord("a") + i) for i in range(26)]  # 26 options: "a" … "z"


@pytest.mark.parametrize(
    ("answer", "problem_type", "options", "expected"),
    [
        ("B", "multiple_choice", ["red", "blue"], "B. blue"),
        ("(b)", "multiple_choice", ["red", "blue"], "B. blue"),
        (" A. ", "multiple_choice", ["red", "blue"], "A. red"),
        ("C", "multiple_choice", ["red", "blue"], "C"),  # just past the last option: as given
        ("A", "multiple_choice", [], "A"),  # no options at all
        ("X", "multiple_choice", LETTERS, "X. x"),  # "X" is a letter, not decoration
        ("(X)", "multiple_choice", LETTERS, "X. x"),
        ("Z", "multiple_choice", LETTERS, "Z. z"),
        ("AB", "multiple_choice", ["red", "blue"], "AB"),  # two letters: no option
        ("1", "multiple_choice", ["red", "blue"], "1"),  # not a letter
        ("a", "free_form", ["red", "blue"], "a"),  # only multiple choice maps letters
        ("b", "numerical", ["red", "blue"], "b"),
        ("7", "numerical", [], "7"),
    ],
)
def test_render_reference_maps_only_a_multiple_choice_letter_in_range(
    answer, problem_type, options, expected
):
    assert render_reference(answer, problem_type, options) == expected


# ------------------------------------------------------------------------------ the judge
def test_the_cache_holds_at_most_cache_max_entries_verdicts(endpoint, tmp_path):
    endpoint.state.reply = "1"
    judge = Judge(fake_cfg(endpoint.base_url, cache_max_entries=2), tmp_path / "cache")
    outcomes = judge.judge([free_form(f"i{i}", f"cand {i}") for i in range(5)])
    assert [o.verdict for o in outcomes] == [1] * 5
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2
    # The default bound keeps all five.
    roomy = Judge(fake_cfg(endpoint.base_url), tmp_path / "roomy")
    roomy.judge([free_form(f"i{i}", f"cand {i}") for i in range(5)])
    assert len(list((tmp_path / "roomy").rglob("*.json"))) == 5


def test_errors_a_user_reads_name_the_judge(monkeypatch):
    monkeypatch.delenv("VLRL_TEST_UNSET_JUDGE_KEY", raising=False)
    cfg = JudgeConfig(
        base_url="http://127.0.0.1:1/v1",
        model=JUDGE_MODEL,
        api_key_env="VLRL_TEST_UNSET_JUDGE_KEY",
        api_key_required=True,
    )
    with pytest.raises(ConfigError) as info:
        Judge(cfg).judge([free_form("a", "x")])
    assert str(info.value) == (
        "judge: the API key for http://127.0.0.1:1/v1 is read from "
        "$VLRL_TEST_UNSET_JUDGE_KEY, which is not set (api_key_required is true)"
    )
    # A judge to serve that was not started answers from its cache only.
    unstarted = JudgeConfig(serve={"model": "org/judge"})
    with pytest.raises(ConfigError) as info:
        Judge(unstarted).judge([free_form("a", "x")])
    assert str(info.value).startswith(
        "judge: serve is set but its server is not started, and 1 of 1 requests have no "
        "cached reply"
    )


def test_metadata_records_the_judge_field_by_field(endpoint, tmp_path):
    cfg = fake_cfg(
        endpoint.base_url, mode="always", on_failure="score_zero", temperature=0.25, max_tokens=7
    )
    judge = Judge(cfg, tmp_path / "cache")
    fields = {
        "model": JUDGE_MODEL,
        "base_url": endpoint.base_url,
        "mode": "always",
        "temperature": 0.25,
        "max_tokens": 7,
        "on_failure": "score_zero",
    }
    assert judge.metadata() == {
        **fields,
        "prompt_version": "none",  # nothing asked yet
        "calls": 0,
        "attempts": 0,
        "failures": 0,
        "cache_hits": 0,
    }
    reply_by_candidate(endpoint, {"blue": "1", "x": "0"})
    requests = [
        judge_request("m", "Which?", "B", "multiple_choice", ["red", "blue"], "blue"),
        free_form("f", "x"),
        free_form("g", "garbage"),  # "maybe": a failure
    ]
    assert [o.verdict for o in judge.judge(requests)] == [1, 0, None]
    assert judge.metadata() == {
        **fields,
        "prompt_version": "free_form-v1, multiple_choice-v1",  # sorted, comma-separated
        "calls": 3,
        "attempts": 3,  # an unparsable reply is not asked again
        "failures": 1,
        "cache_hits": 0,
    }
    again = Judge(cfg, tmp_path / "cache")
    again.judge(requests)
    assert {k: again.metadata()[k] for k in ("calls", "failures", "cache_hits")} == {
        "calls": 1,
        "failures": 1,
        "cache_hits": 2,
    }


def test_uncached_counts_only_replies_the_prompt_parses(endpoint, tmp_path):
    """A cached reply the prompt's parser rejects (an older parser stored it) is asked again,
    so a run that has one needs its server."""
    cfg = fake_cfg(endpoint.base_url)
    cache = EndpointCache(tmp_path / "cache")
    requests = [free_form("a", "one"), free_form("b", "two"), free_form("c", "three")]
    judge = Judge(cfg, tmp_path / "cache")
    assert judge.uncached(requests) == 3
    for request, reply in zip(requests[:2], ["1", "perhaps"], strict=True):
        key = EndpointCache.key(
            cfg.base_url, JUDGE_MODEL, request.prompt.version, judge.body(request)
        )
        cache.put(key, {"reply": reply})
    assert Judge(cfg, tmp_path / "cache").uncached(requests) == 2  # "perhaps" is no verdict
    endpoint.state.reply = "0"
    outcomes = Judge(cfg, tmp_path / "cache").judge(requests)
    assert [(o.verdict, o.cached) for o in outcomes] == [(1, True), (0, False), (0, False)]
    assert Judge(cfg, tmp_path / "cache").uncached(requests) == 0


def test_progress_is_reported_once_per_item_across_prompts(endpoint):
    endpoint.state.reply = "1"
    requests = [
        judge_request(f"{ptype}{i}", f"Q{i}?", "B", ptype, ["x", "y"], f"c{i}")
        for ptype in ("multiple_choice", "numerical", "free_form")
        for i in range(2)
    ]
    ticks = []
    outcomes = Judge(fake_cfg(endpoint.base_url)).judge(requests, progress=lambda: ticks.append(1))
    assert [o.verdict for o in outcomes] == [1] * 6
    assert len(ticks) == 6


def test_the_first_failures_are_warnings_and_the_rest_debug(endpoint, caplog):
    endpoint.state.reply = "maybe"
    n = MAX_LOGGED + 2
    requests = [free_form(f"f{i}", f"cand {i}") for i in range(n)]
    judge = Judge(fake_cfg(endpoint.base_url))
    with caplog.at_level(logging.DEBUG, logger="vlrl.scoring.judge"):
        outcomes = judge.judge(requests)
    assert [(o.verdict, o.error) for o in outcomes] == [(None, UNPARSABLE)] * n
    assert judge.errors == [f"f{i}: {UNPARSABLE}" for i in range(n)]
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "vlrl.scoring.judge"]
    assert logged == [
        (
            logging.WARNING if i < MAX_LOGGED else logging.DEBUG,
            f"judge failure on item f{i}: {UNPARSABLE}",
        )
        for i in range(n)
    ]
    assert MAX_LOGGED == 10
