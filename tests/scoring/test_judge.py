"""The LLM judge against a real OpenAI-compatible server (`transformers serve`, CPU).

Two tiny text models (``tests/text_models.py``) are served by one server (the model is chosen
per request):

- ``random``: a random-init Qwen2 with a small BPE tokenizer; its replies are garbage, so every
  verdict must be recorded as a failure, never as right or wrong;
- ``says1``: the same architecture with hand-set weights (attention and MLP outputs zeroed, one
  embedding direction per token class) so that greedy decoding answers ``1`` and then ends the
  turn: a real model, served for real, that behaves like a judge saying "correct".

Server command (found in transformers 5.19): ``transformers serve --device cpu --host 127.0.0.1
--port <port>``; readiness is polled on ``/health`` (``/v1/models`` scans the hub cache and
answers 500 when it does not exist). ``HF_HUB_DISABLE_UPDATE_CHECK=1`` avoids a network version
check that otherwise delays start-up by about a minute offline.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from endpoint_cases import CASES, ECHO_CASES, LEAK_KEY, OPTIONS, closed_port_url, leaks
from text_models import build_text_models

from vlrl.config import JudgeConfig, load_experiment
from vlrl.config.reads import declared_reads
from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.endpoints import EndpointCache, redact_url
from vlrl.scoring.judge import (
    Judge,
    JudgeRequest,
    judge_cache_dir,
    judge_request,
    render_question,
    render_reference,
)
from vlrl.scoring.judge_prompts import PROMPTS, JudgePrompt
from vlrl.serving.commands import unstarted
from vlrl.stages import score
from vlrl.workflow.reads import RecordingConfig, undeclared

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdef"
KEY_ENV = "VLRL_TEST_JUDGE_KEY"


# ------------------------------------------------------------------------------ unit tests
#: (The prompts and their parsers: tests/scoring/test_judge_prompts.py.)
FREE_FORM = PROMPTS["free_form"]


def test_render_question_and_reference():
    assert render_question("Which?", []) == "Which?"
    assert render_reference("(C)", "multiple_choice", ["a", "b", "c"]) == "C. c"
    assert render_reference("Z", "multiple_choice", ["a"]) == "Z"  # out of range: as given
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


def test_cache_key_covers_everything_that_decides_a_verdict():
    def key(model="m", question="q", reference="r", candidate="c", temperature=0.0, ptype="ocr"):
        cfg = JudgeConfig(base_url="http://h/v1", model=model, temperature=temperature)
        request = judge_request("1", question, reference, ptype, [], candidate)
        body = Judge(cfg).body(request)
        return EndpointCache.key(cfg.base_url, model, request.prompt.version, body)

    variants = [
        key(),
        key(model="m2"),
        key(question="q2"),
        key(reference="r2"),
        key(candidate="c2"),
        key(temperature=0.5),
        key(ptype="numerical"),  # another answer type: another prompt
    ]
    assert len(set(variants)) == len(variants)
    assert key() == key()
    assert key(ptype="ocr") == key(ptype="free_form")  # one prompt for both


def test_extra_body_goes_into_the_request_and_the_key_only_when_set():
    """``extra_body`` (e.g. vLLM's structured outputs) is sent as the openai client's
    ``extra_body``; unset, the request and its cache key are what they were without it."""
    request = judge_request("1", "q", "r", "ocr", [], "c")
    plain = Judge(JudgeConfig(base_url="http://h/v1", model="m")).body(request)
    assert "extra_body" not in plain
    choice = {"structured_outputs": {"choice": ["0", "1"]}}
    held = Judge(JudgeConfig(base_url="http://h/v1", model="m", extra_body=choice)).body(request)
    assert held["extra_body"] == choice and {**held, "extra_body": None} != plain
    keys = {EndpointCache.key("http://h/v1", "m", request.prompt.version, b) for b in (plain, held)}
    assert len(keys) == 2


def test_each_answer_type_is_asked_with_its_prompt_and_a_graded_prompt_sets_its_budget():
    cfg = JudgeConfig(base_url="http://h/v1", model="m")
    judge = Judge(cfg)
    mc = judge.body(judge_request("1", "Which?", "B", "multiple_choice", ["x", "y"], "y"))
    assert "chooses that option" in mc["messages"][0]["content"]
    assert "<Reference Begin>B. y<Reference End>" in mc["messages"][0]["content"]
    request = judge_request("2", "What is x?", "-1<AND>-5", "free_form", [], "-1", "mmvet")
    graded = judge.body(request)
    assert graded["messages"][0]["content"].endswith("\nWhat is x? | -1 <AND> -5 | -1 | ")
    assert graded["max_tokens"] == 3 and mc["max_tokens"] == cfg.max_tokens


def test_unreachable_endpoint_is_retried_then_a_failure(caplog):
    cfg = JudgeConfig(
        base_url=closed_port_url(), model="m", max_retries=2, timeout_s=2, backoff_s=0.01
    )
    judge = Judge(cfg)
    requests = [JudgeRequest(str(i), "q", "r", "c", FREE_FORM) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="vlrl.scoring.judge"):
        outcomes = judge.judge(requests)
    assert [o.verdict for o in outcomes] == [None] * 3
    assert all("APIConnectionError" in o.error and "3 attempt(s)" in o.error for o in outcomes)
    assert (judge.stats.calls, judge.stats.attempts, judge.stats.failures) == (3, 9, 3)
    assert "judge failure on item 0" in caplog.text


# ------------------------------------------------------------------- a misbehaving endpoint
def _fake_cfg(base_url: str, **options) -> JudgeConfig:
    return JudgeConfig(base_url=base_url, model="judge-m", **{**OPTIONS, **options})


REQUESTS = [
    JudgeRequest("a", "Q1?", "3", "three", FREE_FORM),
    JudgeRequest("b", "Q2?", "red", "blue", FREE_FORM),
]


@pytest.mark.parametrize("case", CASES)
def test_misbehaving_endpoint_gives_no_verdict_and_caches_nothing(endpoint, case, tmp_path):
    judge = Judge(_fake_cfg(case.apply(endpoint), **case.settings()), tmp_path / "judge_cache")
    outcomes = judge.judge(REQUESTS)  # never raises
    assert [o.verdict for o in outcomes] == [None, None]  # never right, never wrong
    for outcome in outcomes:
        assert outcome.error.startswith(f"{case.kind}: ")
        assert f"after {case.attempts} attempt(s)" in outcome.error
    assert judge.stats.failures == 2 and len(judge.errors) == 2
    assert judge.errors[0].startswith("a: ")
    assert judge.metadata()["failures"] == 2
    assert not list((tmp_path / "judge_cache").rglob("*.json"))


def test_verdicts_are_cached_per_endpoint_model_and_prompt_version(endpoint, tmp_path):
    endpoint.state.reply = "1"
    cache_dir = tmp_path / "judge_cache"
    first = Judge(_fake_cfg(endpoint.base_url), cache_dir)
    assert [o.verdict for o in first.judge(REQUESTS)] == [1, 1]
    again = Judge(_fake_cfg(endpoint.base_url), cache_dir)
    assert [o.cached for o in again.judge(REQUESTS)] == [True, True]
    assert endpoint.state.requests == 2
    # Another judge model asks again.
    other_model = JudgeConfig(base_url=endpoint.base_url, model="judge-2", **OPTIONS)
    assert [o.cached for o in Judge(other_model, cache_dir).judge(REQUESTS)] == [False, False]
    # Another prompt version (the same text) asks again.
    bumped = JudgePrompt(**{**FREE_FORM.__dict__, "version": "free_form-v2"})
    requests = [
        JudgeRequest(r.item_id, r.question, r.reference, r.candidate, bumped) for r in REQUESTS
    ]
    outcomes = Judge(_fake_cfg(endpoint.base_url), cache_dir).judge(requests)
    assert [o.cached for o in outcomes] == [False, False]
    assert endpoint.state.requests == 6
    # Another endpoint is not answered from this one's cache (here it is down: no verdict).
    outcomes = Judge(_fake_cfg(closed_port_url()), cache_dir).judge(REQUESTS)
    assert [o.verdict for o in outcomes] == [None, None]


def test_unparsable_reply_is_no_verdict(endpoint, tmp_path):
    endpoint.state.reply = "I think it is correct"
    judge = Judge(_fake_cfg(endpoint.base_url), tmp_path / "c")
    outcomes = judge.judge(REQUESTS)
    assert [o.verdict for o in outcomes] == [None, None]
    assert outcomes[0].error == "unparsable: reply is not a 0/1 verdict: 'I think it is correct'"
    assert outcomes[0].reply == "I think it is correct"  # kept for the scores file
    assert endpoint.state.requests == 2  # a verdict that does not parse is not asked again
    assert not list((tmp_path / "c").rglob("*.json"))


def test_answer_types_share_one_bound_on_requests_in_flight(endpoint):
    """Items of three answer types go to three prompt versions at once; the endpoint still has
    at most ``concurrency`` of them in flight (before: ``concurrency`` per prompt, here 6)."""
    endpoint.state.reply = "1"
    endpoint.state.latency_s = 0.05
    judge = Judge(_fake_cfg(endpoint.base_url, concurrency=2))
    requests = [
        judge_request(f"{ptype}{i}", f"Q{i}?", "B", ptype, ["x", "y"], f"c{i}")
        for ptype in ("multiple_choice", "numerical", "free_form")
        for i in range(4)
    ]
    assert len({r.prompt.version for r in requests}) == 3
    outcomes = judge.judge(requests)
    assert [o.verdict for o in outcomes] == [1] * 12
    assert endpoint.state.requests == 12 and len(judge.clients) == 3
    assert endpoint.state.max_in_flight == 2


# ------------------------------------------------------------------------- a real server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def text_models(tmp_path_factory) -> dict[str, str]:
    """The ``random`` and ``says1`` models' directories (``tests/text_models.py``)."""
    return build_text_models(tmp_path_factory.mktemp("judge-models"))


@pytest.fixture(scope="module")
def server(tmp_path_factory, text_models):
    """A `transformers serve` process on 127.0.0.1 serving both models; stopped at teardown."""
    tmp = tmp_path_factory.mktemp("judge-server")
    models = text_models
    exe = Path(sys.executable).with_name("transformers")
    assert exe.is_file(), f"{exe} missing: install transformers[serving] in this environment"
    port = _free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_CACHE": str(tmp / "hub-cache"),
        "TRANSFORMERS_VERBOSITY": "error",
    }
    (tmp / "hub-cache").mkdir()
    log_path = tmp / "serve.log"
    command = [str(exe), "serve", "--device", "cpu", "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # at most ~60 s
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited {proc.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        else:
            pytest.fail(f"transformers serve not ready after 60 s:\n{log_path.read_text()[-3000:]}")
        yield SimpleNamespace(base_url=f"{url}/v1", models=models, log=log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------------------ the stage
# id, task, problem_type, answer, options, boxes, response  # rule verdict
# fmt: off
ITEMS = [
    ("c1", "color", "multiple_choice", "B", ["red", "blue"], [], "<answer>B</answer>"),  # 1
    ("c2", "color", "multiple_choice", "A", ["red", "blue"], [], "<answer>the red one</answer>"),
    ("n1", "count", "numerical", "3", [], [], "<think>x</think><answer>3</answer>"),  # 1
    ("n2", "count", "numerical", "3", [], [], "<answer>three</answer>"),  # 0
    ("f1", "caption", "free_form", "a red circle", [], [], "<answer>a red circle</answer>"),  # 1
    ("f2", "caption", "free_form", "a red circle", [], [], "a circle that is red"),  # 0
    ("g1", "grounding", "grounding", "[0, 0, 10, 10]", [], [[0, 0, 10, 10]],
     "<answer>[5, 5, 9, 90]</answer>"),  # 0, and never judged: only IoU decides boxes
]
# fmt: on
RULE_WRONG_JUDGEABLE = {"c2", "n2", "f2"}


@pytest.fixture
def project(project, monkeypatch):
    """The shared scratch project, with a secret key in the environment and a predictions file."""
    tmp_path = project
    monkeypatch.setenv(KEY_ENV, SECRET)
    rows = [
        {
            "id": i,
            "task": task,
            "problem_type": ptype,
            "problem": f"Question {i}?",
            "answer": answer,
            "options": options,
            "boxes": boxes,
            "images": [f"images/test/{i}.png"],
            "prompt": f"Question {i}? First output the thinking process…",
            "response": response,
            "model": "results/tiny_shapes/model",
            "checkpoint": "grpo",
        }
        for i, task, ptype, answer, options, boxes, response in ITEMS
    ]
    path = paths.predictions_file("tiny_shapes", "grpo", "shapes_test")
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def _cfg(server, model: str, mode: str, on_failure: str | None = None):
    return load_experiment(
        "tiny_shapes",
        [
            f"score.judge.base_url={server.base_url}",
            f"score.judge.model={server.models[model]}",
            f"score.judge.mode={mode}",
            *([f"score.judge.on_failure={on_failure}"] if on_failure else []),
            f"score.judge.api_key_env={KEY_ENV}",
            "score.judge.max_retries=1",
            "score.judge.concurrency=3",
        ],
    )


def _scores():
    return json.loads(paths.scores_file("tiny_shapes", "grpo", "shapes_test").read_text())


@pytest.mark.model_server
def test_garbage_judge_leaves_its_items_unscored_by_default(server, project):
    score.run("tiny_shapes", _cfg(server, "random", "always"), "grpo", "shapes_test")
    data = _scores()
    assert data["judge"]["failures"] == 6 and data["judge"]["on_failure"] == "unscored"
    judged = [item for item in data["items"] if item["method"] == "judge"]
    assert len(judged) == 6 and data["unscored"] == 6
    for item in judged:  # neither right nor wrong, and why
        assert (item["correct"], item["score"]) == (None, None)
        assert item["judge_error"].startswith("unparsable: reply is not a 0/1 verdict")
    # Only the grounding item, which IoU decides, is scored: n counts scored items only.
    assert (data["n"], data["accuracy"]) == (1, 0.0)
    assert set(data["per_task"]) == {"grounding"}
    assert not list(judge_cache_dir("tiny_shapes").rglob("*.json"))  # failures are not cached


@pytest.mark.model_server
def test_garbage_judge_with_on_failure_error_fails_the_stage(server, project):
    cfg = _cfg(server, "random", "always", on_failure="error")
    with pytest.raises(StageError, match=r"judge failed on 6 of 6 items") as info:
        score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    assert "not a 0/1 verdict" in str(info.value)
    assert "on_failure=unscored" in str(info.value)
    assert not paths.scores_file("tiny_shapes", "grpo", "shapes_test").exists()
    # Failures are never cached: nothing under the cache directory is a verdict.
    assert not list(judge_cache_dir("tiny_shapes").rglob("*.json"))


@pytest.mark.model_server
def test_garbage_judge_with_score_zero_counts_failures(server, project):
    cfg = _cfg(server, "random", "always", on_failure="score_zero")
    score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    data = _scores()
    assert data["judge"]["failures"] == 6 and data["judge"]["calls"] == 6
    assert data["judge"]["mode"] == "always" and data["judge"]["cache_hits"] == 0
    by_id = {item["id"]: item for item in data["items"]}
    for item_id, item in by_id.items():
        if item_id == "g1":  # grounding is never judged
            assert item["method"] == "rule" and item["judge_reply"] is None
            continue
        assert item["method"] == "judge"
        assert (item["correct"], item["score"]) == (0, 0.0)
        assert item["judge_error"].startswith("unparsable: reply is not a 0/1 verdict")
        assert isinstance(item["judge_reply"], str) and item["judge_reply"].strip()  # garbage
    assert data["accuracy"] == 0.0 and data["n"] == 7


@pytest.mark.model_server
def test_fallback_judge_only_sees_rule_failures_and_caches(server, project):
    cfg = _cfg(server, "says1", "fallback")
    score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    data = _scores()
    judged = {item["id"] for item in data["items"] if item["method"] == "judge"}
    assert judged == RULE_WRONG_JUDGEABLE
    meta = data["judge"]
    assert (meta["calls"], meta["failures"], meta["cache_hits"]) == (3, 0, 0)
    by_id = {item["id"]: item for item in data["items"]}
    assert all(by_id[i]["correct"] == 1 and by_id[i]["judge_reply"] == "1" for i in judged)
    assert by_id["g1"]["correct"] == 0  # only IoU decides boxes
    assert data["accuracy"] == pytest.approx(6 / 7)
    assert data["per_task"]["grounding"]["accuracy"] == 0.0
    cached = list(judge_cache_dir("tiny_shapes").rglob("*.json"))
    assert len(cached) == 3
    entry = json.loads(cached[0].read_text())
    assert entry["reply"] == "1" and entry["model"] == server.models["says1"]

    # A second run asks the server nothing.
    score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    again = _scores()
    assert (again["judge"]["calls"], again["judge"]["cache_hits"]) == (0, 3)
    assert [i["correct"] for i in again["items"]] == [i["correct"] for i in data["items"]]


@pytest.mark.model_server
def test_api_key_is_never_written(server, project, caplog, capfd):
    cfg = _cfg(server, "random", "always", on_failure="score_zero")
    with caplog.at_level(logging.DEBUG):
        score.run("tiny_shapes", cfg, "grpo", "shapes_test")
        cfg_ok = _cfg(server, "says1", "always")
        score.run("tiny_shapes", cfg_ok, "grpo", "shapes_test")
    assert _scores()["judge"]["calls"] == 6  # the key really was in use for real calls
    written = [p for p in project.rglob("*") if p.is_file() and "config" not in p.parts]
    assert any("judge_cache" in p.parts for p in written)
    for path in written:
        assert SECRET not in path.read_text(errors="replace"), path
    out, err = capfd.readouterr()
    assert SECRET not in caplog.text + out + err
    assert SECRET not in server.log.read_text()


def _serving_processes(model: str) -> list[int]:
    """Processes whose command line serves ``model``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone meanwhile
            continue
        if b"serve" in argv and model.encode() in argv:
            found.append(int(entry.name))
    return found


@pytest.mark.model_server
def test_the_stage_starts_the_judge_it_serves_and_stops_it(text_models, project, monkeypatch):
    """``score.judge.serve`` and no base_url: the stage starts ``transformers serve`` of the
    model, judges through it, and leaves no server behind; the replies are cached under the
    server's name, not its port, so another address of the same server finds them all, and a
    rerun with everything cached starts no server."""
    says1 = text_models["says1"]
    serve = [f"score.judge.serve.model={says1}", "score.judge.serve.backend=transformers"]
    cfg = load_experiment("tiny_shapes", [*serve, "score.judge.max_retries=1"])
    assert cfg.score.judge.base_url is None and cfg.score.judge.model is None
    served_id = unstarted(cfg.score.judge).endpoint_id  # serve:transformers:<model>@<weights>
    assert served_id.startswith(f"serve:transformers:{says1}@")
    seen: set[str] = set()
    score.run("tiny_shapes", RecordingConfig(cfg, seen), "grpo", "shapes_test")
    assert not undeclared(seen, declared_reads("score"))  # as the CLI checks it
    assert not _serving_processes(says1)
    data = _scores()
    meta = data["judge"]
    assert (meta["base_url"], meta["model"]) == (served_id, says1)
    assert (meta["calls"], meta["failures"], meta["cache_hits"]) == (3, 0, 0)
    judged = {item["id"]: item for item in data["items"] if item["method"] == "judge"}
    assert set(judged) == RULE_WRONG_JUDGEABLE
    assert all(item["correct"] == 1 and item["judge_reply"] == "1" for item in judged.values())
    log_file = paths.server_log_dir("score", "tiny_shapes", "grpo", "shapes_test") / "judge.log"
    assert (project / log_file).is_file()

    # The same server at another port (here nothing listens there) answers from the cache.
    elsewhere = load_experiment(
        "tiny_shapes",
        [
            f"score.judge.base_url={closed_port_url()}",
            f"score.judge.model={says1}",
            f"score.judge.endpoint_id={served_id}",
            "score.judge.max_retries=0",
        ],
    )
    score.run("tiny_shapes", elsewhere, "grpo", "shapes_test")
    again = _scores()["judge"]
    assert (again["calls"], again["cache_hits"], again["failures"]) == (0, 3, 0)

    # The served judge again: every verdict is cached, so no server is started at all.
    def started(*args, **kwargs):
        raise AssertionError("a judge server was started although every verdict is cached")

    monkeypatch.setattr("vlrl.scoring.judging.serving", started)  # where the stage starts it
    score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    third = _scores()["judge"]
    assert (third["base_url"], third["model"]) == (served_id, says1)
    assert (third["calls"], third["cache_hits"], third["failures"]) == (0, 3, 0)


# --------------------------------------------------- the stage with a misbehaving endpoint
BENCH = ("grpo", "shapes_test")


def _fake_overrides(base_url: str, on_failure: str) -> list[str]:
    return [
        f"score.judge.base_url={base_url}",
        "score.judge.model=judge-m",
        "score.judge.mode=always",
        f"score.judge.on_failure={on_failure}",
        "score.judge.max_retries=1",
        "score.judge.backoff_s=0.01",
    ]


def _fake_stage_cfg(base_url: str, on_failure: str):
    return load_experiment("tiny_shapes", _fake_overrides(base_url, on_failure))


def test_stage_with_a_failing_endpoint_and_on_failure_error_fails_and_caches_nothing(
    endpoint, project
):
    endpoint.state.fail_always = 503
    with pytest.raises(StageError, match=r"judge failed on 6 of 6 items") as info:
        score.run("tiny_shapes", _fake_stage_cfg(endpoint.base_url, "error"), "grpo", "shapes_test")
    assert "InternalServerError (HTTP 503) after 2 attempt(s)" in str(info.value)
    assert not paths.scores_file("tiny_shapes", "grpo", "shapes_test").exists()
    assert not list(judge_cache_dir("tiny_shapes").rglob("*.json"))


def test_stage_with_a_failing_endpoint_and_score_zero_records_each_failure(endpoint, project):
    endpoint.state.fail_always = "not_json"
    cfg = _fake_stage_cfg(endpoint.base_url, "score_zero")
    score.run("tiny_shapes", cfg, "grpo", "shapes_test")
    data = _scores()
    assert (data["judge"]["failures"], data["judge"]["attempts"]) == (6, 12)
    judged = [item for item in data["items"] if item["method"] == "judge"]
    assert len(judged) == 6
    for item in judged:
        assert (item["correct"], item["score"]) == (0, 0.0)
        assert item["judge_error"].startswith("not_json: HTTP 200 body is not JSON")
    assert not list(judge_cache_dir("tiny_shapes").rglob("*.json"))


def test_a_judge_run_killed_midway_resumes_without_asking_again(endpoint, project):
    """SIGKILL the score stage while the judge is answering: no scores file; the rerun asks only
    about the items whose reply was not cached yet, and scores every item."""
    import signal

    n = 40
    rows = [
        {
            "id": f"k{i}",
            "task": "caption",
            "problem_type": "free_form",
            "problem": f"What is drawn in picture {i}?",
            "answer": "a red circle",
            "prompt": "p",
            "response": f"<answer>shape {i}</answer>",  # wrong by the rules: judged
            "model": "m",
            "checkpoint": "grpo",
        }
        for i in range(n)
    ]
    path = paths.predictions_file("tiny_shapes", "grpo", "shapes_test")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    endpoint.state.reply = "1"
    endpoint.state.latency_s = 0.1
    overrides = [
        f"score.judge.base_url={endpoint.base_url}",
        "score.judge.model=judge-m",
        "score.judge.concurrency=2",
    ]
    command = [str(Path(sys.executable).with_name("vlrl")), "score", "tiny_shapes", "grpo"]
    command += ["shapes_test", *(arg for o in overrides for arg in ("--set", o))]
    proc = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cache = judge_cache_dir("tiny_shapes")
    deadline = time.monotonic() + 120
    while len(list(cache.rglob("*.json"))) < 8:  # some replies are in, most are not
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the judge answered nothing in 120 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert not paths.scores_file("tiny_shapes", "grpo", "shapes_test").exists()
    cached = len(list(cache.rglob("*.json")))
    assert 8 <= cached < n

    asked_before = endpoint.state.requests
    score.run("tiny_shapes", load_experiment("tiny_shapes", overrides), "grpo", "shapes_test")
    data = _scores()
    assert (data["judge"]["cache_hits"], data["judge"]["calls"]) == (cached, n - cached)
    assert endpoint.state.requests - asked_before == n - cached  # no answered call repeated
    assert data["n"] == n and data["accuracy"] == 1.0 and "unscored" not in data


@pytest.mark.parametrize("echo", ECHO_CASES)
def test_a_key_the_judge_echoes_reaches_no_file_log_or_error(
    endpoint, echo, project, monkeypatch, caplog, capfd
):
    """A judge server that repeats the key (whole, cut, split, far into an error, in its reply)
    leaves no run of 8 of its characters in the scores file, the judge cache, the log or the
    stage's error."""
    monkeypatch.setenv(KEY_ENV, LEAK_KEY)
    endpoint.state.fail_always = echo
    key_env = f"score.judge.api_key_env={KEY_ENV}"
    texts = []
    with caplog.at_level(logging.DEBUG):
        for on_failure in ("score_zero", "error"):
            overrides = [*_fake_overrides(endpoint.base_url, on_failure), key_env]
            try:
                score.run("tiny_shapes", load_experiment("tiny_shapes", overrides), *BENCH)
            except StageError as exc:
                texts += [str(exc), repr(exc)]
            if on_failure == "score_zero":
                texts.append(paths.scores_file("tiny_shapes", *BENCH).read_text())
    assert endpoint.state.auth[0] == f"Bearer {LEAK_KEY}"  # the key was sent
    verdicts = echo.name == "a verdict after the key"  # the one echo that yields verdicts
    assert len(texts) == (1 if verdicts else 3)  # the scores file, and the error if any
    assert bool(list(judge_cache_dir("tiny_shapes").rglob("*.json"))) == verdicts
    written = [p for p in project.rglob("*") if p.is_file() and "config" not in p.parts]
    texts += [p.read_text(errors="replace") for p in written]
    out, err = capfd.readouterr()
    texts += [caplog.text, out, err]
    assert not leaks("\n".join(texts)), [t[:200] for t in texts if leaks(t)]
