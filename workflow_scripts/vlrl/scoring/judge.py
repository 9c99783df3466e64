"""An LLM judge (verifier pattern) behind any OpenAI-compatible endpoint.

The judge reads the question, the reference and the candidate's final answer as text (images are
not sent) and answers with one token from a closed vocabulary: ``1`` correct, ``0`` incorrect
(reference/evaluation.md §5). A reply whose last line is not such a verdict, or a call that still
fails after the retries, is a *failure*: it is never scored as right or wrong here. The score
stage decides what a failure means (``score.judge.on_failure``: fail the stage, or score 0 and
count it).

Calls go through :class:`vlrl.endpoints.EndpointClient` (bounded concurrency, retries with
backoff, the API key from ``$api_key_env``, scrubbing; see there what is retried). Verdicts are
kept in its :class:`~vlrl.endpoints.EndpointCache` under ``results/<exp>/judge_cache/``, keyed by
endpoint, judge model, :data:`PROMPT_VERSION` and the request (prompt and decoding parameters).
Only parsed verdicts are cached, so a rerun asks again about failures.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlrl import paths
from vlrl.config import JudgeConfig
from vlrl.endpoints import EndpointCache, EndpointClient, Failure

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


def verdict_of(reply: str) -> int:
    """:func:`parse_verdict`, raising where it gives None (the endpoint client's ``parse``).

    >>> verdict_of("Verdict: 1")
    1
    """
    verdict = parse_verdict(reply)
    if verdict is None:
        raise ValueError(f"reply is not a 0/1 verdict: {reply[:200]!r}")
    return verdict


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


MAX_LOGGED = 10


class Judge:
    """Judge many items concurrently; see the module docstring.

    Args:
        cfg: the judge section of the experiment config.
        cache_dir: where verdicts are kept (None: no cache); at most ``cfg.cache_max_entries``.
    """

    def __init__(self, cfg: JudgeConfig, cache_dir: Path | None = None):
        self.cfg = cfg
        cache = EndpointCache(cache_dir, cfg.cache_max_entries) if cache_dir is not None else None
        self.client = EndpointClient(cfg, PROMPT_VERSION, cache, label="judge")
        self.stats = self.client.stats
        self.errors: list[str] = []  # "<item id>: <why>" of every failure, for the stage's error

    @property
    def params(self) -> dict[str, Any]:
        """Decoding parameters (part of the request, so of the cache key)."""
        return {"temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens}

    def metadata(self) -> dict[str, Any]:
        """What the scores file records about the judge (never the key)."""
        meta = self.client.metadata()
        return {
            "model": self.cfg.model,
            "base_url": meta["base_url"],
            "mode": self.cfg.mode,
            "prompt_version": PROMPT_VERSION,
            **self.params,
            "on_failure": self.cfg.on_failure,
            **{k: meta[k] for k in ("calls", "attempts", "failures", "cache_hits")},
        }

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The chat-completion request for one item."""
        prompt = build_prompt(request.question, request.reference, request.candidate)
        return {
            "model": self.cfg.model,
            "messages": [{"role": "user", "content": prompt}],
            **self.params,
        }

    def judge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` (blocking); outcomes are in the same order."""
        return asyncio.run(self.ajudge(requests, progress))

    async def ajudge(
        self, requests: Sequence[JudgeRequest], progress: Callable[[], None] | None = None
    ) -> list[JudgeOutcome]:
        """Judge ``requests`` inside a running event loop; outcomes are in the same order."""
        results = await self.client.acomplete(
            [self.body(r) for r in requests], parse=verdict_of, progress=progress
        )
        outcomes = []
        for request, result in zip(requests, results, strict=True):
            if isinstance(result, Failure):
                message = f"{request.item_id}: {result}"
                self.errors.append(message)
                # The first failures in full; the rest only with --verbose (the count is reported).
                level = logging.WARNING if len(self.errors) <= MAX_LOGGED else logging.DEBUG
                log.log(level, "judge failure on item %s", message)
                outcomes.append(JudgeOutcome(None, result.text, error=str(result)))
            else:
                outcomes.append(JudgeOutcome(result.value, result.text, cached=result.cached))
        return outcomes
