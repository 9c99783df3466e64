"""An LLM judge (verifier pattern) behind any OpenAI-compatible endpoint.

The judge reads the question, the reference and the candidate's final answer as text (images are
not sent) and answers with one token from a closed vocabulary: ``1`` correct, ``0`` incorrect
(reference/evaluation.md §5). A reply whose last line is not such a verdict, or a call that still
fails after the retries, is a *failure*: it is never scored as right or wrong here. The score
stage decides what a failure means (``score.judge.on_failure``: fail the stage, or score 0 and
count it).

- Client: the official ``openai`` ``AsyncOpenAI`` (its own retries off); concurrency is bounded
  by an ``asyncio.Semaphore(cfg.concurrency)``; connection errors, timeouts, 429 and 5xx are
  retried ``cfg.max_retries`` times with exponential backoff (:func:`vlrl.endpoints.complete`);
  other HTTP errors are not retried.
- Cache: :class:`JudgeCache`, one JSON file per verdict under ``results/<exp>/judge_cache/``,
  keyed by the sha256 of judge model, prompt version, question, reference, candidate and
  decoding parameters. Only parsed verdicts are cached, so a rerun asks again about failures.
- The API key is read from ``os.environ[cfg.api_key_env]`` and never written anywhere: error
  texts and replies are scrubbed of it before they are logged or stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from vlrl import paths
from vlrl.config import JudgeConfig
from vlrl.endpoints import CallFailed, EndpointCache, complete, redact_url

log = logging.getLogger(__name__)

PROMPT_VERSION = "verifier-v1"
"""Part of the cache key: bump it when :data:`PROMPT_TEMPLATE` or :func:`parse_verdict` change."""

NOT_JUDGED = frozenset({"grounding", "detection"})
"""Problem types a text judge cannot decide (boxes are scored by IoU only)."""

PROMPT_TEMPLATE = """\
You are a strict grader. Decide whether a candidate's final answer to a question matches the \
reference answer.

Rules:
- Compare only the candidate's final answer with the reference answer; ignore any reasoning.
- Equivalent forms match: 0.5 and 1/2, 3 and three, the same quantity with or without units, an \
option letter and the text of that option.
- If the reference has several parts, every part must match.
- A refusal, an empty, truncated or repetitive answer, or an answer that offers several \
different answers is incorrect.
- Reply with exactly one token: 1 if the candidate is correct, 0 if it is incorrect. Write \
nothing else.

Example:
<Question Begin>How many circles are in the image?<Question End>
<Reference Begin>3<Reference End>
<Candidate Begin>three<Candidate End>
Verdict: 1

Example:
<Question Begin>What color is the square?<Question End>
<Reference Begin>red<Reference End>
<Candidate Begin>The square is blue.<Candidate End>
Verdict: 0

Now grade this candidate.
<Question Begin>{question}<Question End>
<Reference Begin>{reference}<Reference End>
<Candidate Begin>{candidate}<Candidate End>
Verdict:"""

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_VERDICT = re.compile(
    r"(?:(?:final\s+)?(?:verdict|answer|judgment|judgement|grade)\s*[:=]?\s*)?"
    r"(?:\\boxed\{\s*([01])\s*\}|([01]))\.?",
    re.IGNORECASE,
)


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


def build_prompt(question: str, reference: str, candidate: str) -> str:
    """The user message sent to the judge (one message: portable across chat templates).

    >>> build_prompt("Q?", "3", "three").endswith(
    ...     "<Question Begin>Q?<Question End>\\n<Reference Begin>3<Reference End>\\n"
    ...     "<Candidate Begin>three<Candidate End>\\nVerdict:")
    True
    """
    return PROMPT_TEMPLATE.format(question=question, reference=reference, candidate=candidate)


def parse_verdict(reply: str | None) -> int | None:
    """The verdict of a reply: its last non-empty line, after dropping ``<think>…</think>`` and
    Markdown emphasis, must be exactly ``0`` or ``1`` (optionally ``Verdict: 1``, ``\\boxed{1}``,
    a trailing full stop). Anything else is None: a failure, not a verdict.

    >>> [parse_verdict(r) for r in ["1", " 0\\n", "Verdict: 1", "**0**", "<think>so 0</think>1"]]
    [1, 0, 1, 0, 1]
    >>> [parse_verdict(r) for r in ["", "correct", "0 or 1", "10", "1\\nI am not sure", None]]
    [None, None, None, None, None, None]
    """
    if not reply:
        return None
    text = _THINK.sub("", reply)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].strip().replace("*", "").replace("`", "").strip().strip("\"'").strip()
    match = _VERDICT.fullmatch(last)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


# ----------------------------------------------------------------------------------- cache
class JudgeCache(EndpointCache):
    """Judge verdicts (:class:`vlrl.endpoints.EndpointCache` storage), keyed by :meth:`key`.

    >>> import tempfile
    >>> cache = JudgeCache(Path(tempfile.mkdtemp()) / "judge_cache")
    >>> key = JudgeCache.key("judge-m", "Q?", "3", "three", {"temperature": 0.0})
    >>> cache.put(key, {"verdict": 1, "reply": "1"})
    >>> cache.get(key)["verdict"]
    1
    """

    @staticmethod
    def key(
        model: str,
        question: str,
        reference: str,
        candidate: str,
        params: dict[str, Any],
        prompt_version: str = PROMPT_VERSION,
    ) -> str:
        """sha256 of everything that determines a verdict."""
        blob = json.dumps(
            {
                "model": model,
                "prompt_version": prompt_version,
                "question": question,
                "reference": reference,
                "candidate": candidate,
                "params": params,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def valid(self, entry: dict[str, Any]) -> bool:
        """Whether a stored entry holds a usable result (here: a 0/1 verdict)."""
        return entry.get("verdict") in (0, 1)


# ----------------------------------------------------------------------------------- judge
@dataclass(frozen=True)
class JudgeRequest:
    """One item to judge (texts as the judge sees them)."""

    item_id: str
    question: str
    reference: str
    candidate: str


@dataclass
class JudgeOutcome:
    """``verdict`` is 1/0, or None for a failure (``error`` then says why)."""

    verdict: int | None
    reply: str | None
    error: str | None = None
    cached: bool = False


@dataclass
class JudgeStats:
    calls: int = 0
    """Items sent to the endpoint (cache misses)."""
    attempts: int = 0
    """HTTP requests made, retries included."""
    failures: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)


MAX_LOGGED = 10


class Judge:
    """Judge many items concurrently; see the module docstring.

    Args:
        cfg: the judge section of the experiment config.
        cache: where verdicts are kept (None: no cache).
        backoff_s: first retry delay; doubles per retry, at most 30 s.
    """

    def __init__(self, cfg: JudgeConfig, cache: JudgeCache | None = None, backoff_s: float = 1.0):
        self.cfg = cfg
        self.cache = cache
        self.backoff_s = backoff_s
        self.stats = JudgeStats()
        self._secret = os.environ.get(cfg.api_key_env) or ""

    @property
    def params(self) -> dict[str, Any]:
        """Decoding parameters (part of the cache key)."""
        return {"temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens}

    def metadata(self) -> dict[str, Any]:
        """What the scores file records about the judge (never the key)."""
        return {
            "model": self.cfg.model,
            "base_url": redact_url(self.cfg.base_url),
            "mode": self.cfg.mode,
            "prompt_version": PROMPT_VERSION,
            **self.params,
            "on_failure": self.cfg.on_failure,
            "calls": self.stats.calls,
            "attempts": self.stats.attempts,
            "failures": self.stats.failures,
            "cache_hits": self.stats.cache_hits,
        }

    def scrub(self, text: str) -> str:
        """``text`` with the API key (if any is set) replaced by ``***``."""
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "***")
        return text

    def judge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` (blocking); outcomes are in the same order."""
        return asyncio.run(self.ajudge(requests, progress))

    async def ajudge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` inside a running event loop; outcomes are in the same order."""
        semaphore = asyncio.Semaphore(self.cfg.concurrency)
        httpx_log = logging.getLogger("httpx")
        if httpx_log.level == logging.NOTSET:  # one INFO line per request drowns the progress
            httpx_log.setLevel(logging.WARNING)
        client = openai.AsyncOpenAI(
            base_url=self.cfg.base_url,
            api_key=self._secret or "EMPTY",
            timeout=self.cfg.timeout_s,
            max_retries=0,
        )

        async def one(request: JudgeRequest) -> JudgeOutcome:
            async with semaphore:
                outcome = await self._judge_one(client, request)
            if outcome.verdict is None:
                self.stats.failures += 1
                message = f"{request.item_id}: {outcome.error}"
                self.stats.errors.append(message)
                # The first failures in full; the rest only with --verbose (the count is reported).
                level = logging.WARNING if self.stats.failures <= MAX_LOGGED else logging.DEBUG
                log.log(level, "judge failure on item %s", message)
            if progress is not None:
                progress()
            return outcome

        async with client:
            return list(await asyncio.gather(*(one(r) for r in requests)))

    async def _judge_one(self, client: openai.AsyncOpenAI, request: JudgeRequest) -> JudgeOutcome:
        key = JudgeCache.key(
            self.cfg.model, request.question, request.reference, request.candidate, self.params
        )
        if self.cache is not None and (entry := self.cache.get(key)) is not None:
            self.stats.cache_hits += 1
            return JudgeOutcome(int(entry["verdict"]), entry.get("reply"), cached=True)

        self.stats.calls += 1
        prompt = build_prompt(request.question, request.reference, request.candidate)
        try:
            reply = await self._call(client, prompt)
        except CallFailed as failed:
            return JudgeOutcome(None, None, error=self._describe(failed))
        reply = self.scrub(reply)
        verdict = parse_verdict(reply)
        if verdict is None:
            return JudgeOutcome(None, reply, error=f"reply is not a 0/1 verdict: {reply[:200]!r}")
        if self.cache is not None:
            self.cache.put(
                key,
                {
                    "model": self.cfg.model,
                    "prompt_version": PROMPT_VERSION,
                    "params": self.params,
                    "question": request.question,
                    "reference": request.reference,
                    "candidate": request.candidate,
                    "reply": reply,
                    "verdict": verdict,
                    "created": datetime.now(UTC).isoformat(timespec="seconds"),
                },
            )
        return JudgeOutcome(verdict, reply)

    async def _call(self, client: openai.AsyncOpenAI, prompt: str) -> str:
        """One chat completion, retried on transient errors; the reply text ('' if none).

        Raises:
            CallFailed: with the last error and the number of attempts made.
        """

        def counted() -> None:
            self.stats.attempts += 1

        body = {
            "model": self.cfg.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.cfg.temperature,
            "max_tokens": self.cfg.max_tokens,
        }
        return await complete(
            client,
            body,
            max_retries=self.cfg.max_retries,
            backoff_s=self.backoff_s,
            on_attempt=counted,
            label="judge",
        )

    def _describe(self, failed: CallFailed) -> str:
        exc = failed.error
        status = getattr(exc, "status_code", None)
        head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
        return self.scrub(f"{head} after {failed.attempts} attempt(s): {str(exc)[:300]}")
