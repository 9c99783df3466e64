"""An LLM judge behind any OpenAI-compatible endpoint.

The judge reads the question, the reference and the candidate's final answer as text (images are
not sent) with the prompt of the item's answer type, or the one its benchmark names
(:mod:`vlrl.scoring.judge_prompts`: binary verifier prompts with a closed 0/1 vocabulary, and
graded ones such as MM-Vet's grader). A reply that does not parse, or a call that still fails
after the retries, is a *failure*: it is never scored as right or wrong here. The score stage
decides what a failure means (``score.judge.on_failure``: leave the item unscored, fail the
stage, or score 0 and count it).

Calls go through :class:`vlrl.endpoints.EndpointClient` (retries with backoff, the API key from
``$api_key_env``, scrubbing; see there what is retried), one client per prompt version. They all
take their turn from one bound on the judge endpoint (:func:`vlrl.endpoints.endpoint_bound`):
items of several answer types are asked concurrently, yet at most ``concurrency`` requests are in
flight at the endpoint, not ``concurrency`` per prompt. Replies are kept in one
:class:`~vlrl.endpoints.EndpointCache` under ``results/<exp>/judge_cache/``, keyed by endpoint,
judge model, prompt version and the request (prompt and decoding parameters), each written as
soon as it arrives: a run that is killed midway loses no reply, and its rerun asks only about
the rest. Only parsed replies are cached, so a rerun asks again about failures.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlrl.config import JudgeConfig
from vlrl.core import paths
from vlrl.endpoints import EndpointCache, EndpointClient, EndpointStats, Failure, endpoint_name
from vlrl.scoring.judge_prompts import JudgePrompt, prompt_for

log = logging.getLogger(__name__)

NOT_JUDGED = frozenset({"grounding", "detection"})
"""Problem types a text judge cannot decide (boxes are scored by IoU only)."""


def judge_cache_dir(exp: str) -> Path:
    """``results/<exp>/judge_cache/``: verdicts shared by every checkpoint and benchmark."""
    return paths.results_dir(exp) / "judge_cache"


# ------------------------------------------------------------------------------- prompting
def render_question(problem: str, options: Sequence[str] = ()) -> str:
    """The question as the judge sees it; options are listed unless the problem lists them.

    >>> render_question("What color is it?", ["red", "blue"])
    'What color is it?\\nOptions: A. red  B. blue'
    >>> render_question("What color is it? Options: A. red B. blue", ["red", "blue"])
    'What color is it? Options: A. red B. blue'
    """
    if not options or all(opt in problem for opt in options):
        return problem
    listed = "  ".join(f"{chr(ord('A') + i)}. {opt}" for i, opt in enumerate(options))
    return f"{problem}\nOptions: {listed}"


def render_reference(answer: str, problem_type: str, options: Sequence[str] = ()) -> str:
    """The reference answer; a multiple-choice letter is followed by its option's text.

    >>> render_reference("B", "multiple_choice", ["red", "blue"])
    'B. blue'
    >>> render_reference("7", "numerical")
    '7'
    """
    letter = answer.strip().strip("().").upper()
    if problem_type == "multiple_choice" and len(letter) == 1 and letter.isalpha():
        index = ord(letter) - ord("A")
        if 0 <= index < len(options):
            return f"{letter}. {options[index]}"
    return answer


# ----------------------------------------------------------------------------------- judge
@dataclass(frozen=True)
class JudgeRequest:
    """One item to judge: texts as the judge sees them, and the prompt that asks
    (:func:`vlrl.scoring.judge_prompts.prompt_for`)."""

    item_id: str
    question: str
    reference: str
    candidate: str
    prompt: JudgePrompt


@dataclass
class JudgeOutcome:
    """``score`` in [0, 1] and ``verdict`` (1 when the score is 1.0, else 0), or both None for a
    failure (``error`` then says why)."""

    score: float | None
    verdict: int | None
    reply: str | None
    error: str | None = None
    cached: bool = False


MAX_LOGGED = 10


class Judge:
    """Judge many items concurrently; see the module docstring.

    Args:
        cfg: the judge section of the experiment config.
        cache_dir: where replies are kept (None: no cache); at most ``cfg.cache_max_entries``.
    """

    def __init__(self, cfg: JudgeConfig, cache_dir: Path | None = None):
        self.cfg = cfg
        self.cache = (
            EndpointCache(cache_dir, cfg.cache_max_entries) if cache_dir is not None else None
        )
        self.clients: dict[str, EndpointClient] = {}  # by prompt version
        self.errors: list[str] = []  # "<item id>: <why>" of every failure, for the stage's error

    def client(self, prompt: JudgePrompt) -> EndpointClient:
        """The endpoint client of one prompt version (its version is part of the cache key)."""
        if prompt.version not in self.clients:
            self.clients[prompt.version] = EndpointClient(
                self.cfg, prompt.version, self.cache, label="judge"
            )
        return self.clients[prompt.version]

    @property
    def stats(self) -> EndpointStats:
        """Calls, attempts, failures and cache hits over every prompt."""
        total = EndpointStats()
        for client in self.clients.values():
            for name in ("calls", "attempts", "failures", "cache_hits"):
                setattr(total, name, getattr(total, name) + getattr(client.stats, name))
        return total

    @property
    def params(self) -> dict[str, Any]:
        """Decoding parameters and ``extra_body`` when set (part of the request, so of the
        cache key)."""
        params = {"temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens}
        if self.cfg.extra_body:
            params["extra_body"] = dict(self.cfg.extra_body)
        return params

    def metadata(self) -> dict[str, Any]:
        """What the scores file records about the judge (never the key)."""
        stats = self.stats
        versions = sorted(self.clients)
        return {
            "model": self.cfg.model,
            "base_url": endpoint_name(self.cfg),
            "mode": self.cfg.mode,
            "prompt_version": ", ".join(versions) if versions else "none",
            **self.params,
            "on_failure": self.cfg.on_failure,
            "calls": stats.calls,
            "attempts": stats.attempts,
            "failures": stats.failures,
            "cache_hits": stats.cache_hits,
        }

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The chat-completion request for one item."""
        prompt = request.prompt.render(request.question, request.reference, request.candidate)
        params = self.params
        if request.prompt.max_tokens is not None:
            params["max_tokens"] = request.prompt.max_tokens
        messages = [{"role": "user", "content": prompt}]
        return {"model": self.cfg.model, "messages": messages, **params}

    def uncached(self, requests: Sequence[JudgeRequest]) -> int:
        """How many of ``requests`` have no usable cached verdict (0: judging needs no server)."""
        return sum(
            self.client(request.prompt).uncached([self.body(request)], request.prompt.parse)
            for request in requests
        )

    def judge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` (blocking); outcomes are in the same order."""
        return asyncio.run(self.ajudge(requests, progress))

    async def ajudge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` inside a running event loop; outcomes are in the same order. The
        requests of each prompt go to its client concurrently, all within the endpoint's one
        bound of ``cfg.concurrency`` requests in flight."""
        by_version: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            by_version.setdefault(request.prompt.version, []).append(i)
        batches = [
            self.client(requests[idx[0]].prompt).acomplete(
                [self.body(requests[i]) for i in idx],
                parse=requests[idx[0]].prompt.parse,
                progress=progress,
            )
            for idx in by_version.values()
        ]
        results: list[Any] = [None] * len(requests)
        for idx, batch in zip(by_version.values(), await asyncio.gather(*batches), strict=True):
            for i, result in zip(idx, batch, strict=True):
                results[i] = result
        outcomes = []
        for request, result in zip(requests, results, strict=True):
            if isinstance(result, Failure):
                message = f"{request.item_id}: {result}"
                self.errors.append(message)
                # The first failures in full; the rest only with --verbose (the count is reported).
                level = logging.WARNING if len(self.errors) <= MAX_LOGGED else logging.DEBUG
                log.log(level, "judge failure on item %s", message)
                outcomes.append(JudgeOutcome(None, None, result.text, error=str(result)))
            else:
                score = request.prompt.score(result.value, request.reference)
                outcomes.append(
                    JudgeOutcome(score, int(score == 1.0), result.text, cached=result.cached)
                )
        return outcomes


def judge_request(
    item_id: str,
    problem: str,
    answer: str,
    problem_type: str,
    options: Sequence[str],
    candidate: str,
    prompt: str | None = None,
) -> JudgeRequest:
    """What the judge is asked about one item: the question (with its options), the reference
    (a letter with its option's text) and the candidate, with the prompt named ``prompt`` or
    the one of ``problem_type``.

    >>> r = judge_request("q1", "Color?", "B", "multiple_choice", ["red", "blue"], "blue")
    >>> r.question, r.reference, r.candidate, r.prompt.version
    ('Color?\\nOptions: A. red  B. blue', 'B. blue', 'blue', 'multiple_choice-v1')
    """
    chosen = prompt_for(problem_type, prompt)
    if chosen.own_layout:  # the raw question and answer, laid out by the prompt
        return JudgeRequest(item_id, problem, answer, candidate, chosen)
    return JudgeRequest(
        item_id,
        render_question(problem, options),
        render_reference(answer, problem_type, options),
        candidate,
        chosen,
    )
