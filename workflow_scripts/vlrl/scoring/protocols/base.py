"""A scoring protocol: its name, source, judge use and matcher (:mod:`vlrl.scoring.protocols`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vlrl.scoring.candidate import Candidate, Verdict

JudgeUse = Literal["none", "optional", "always"]


@dataclass(frozen=True)
class ScoringProtocol:
    """One named scoring protocol (see :mod:`vlrl.scoring.protocols`)."""

    name: str
    title: str
    source: str
    judge: JudgeUse
    covers: frozenset[str]
    match: Callable[[Candidate], Verdict]

    def score(self, candidate: Candidate) -> Verdict:
        """The verdict on one candidate.

        Raises:
            ValueError: the protocol has no rule for the candidate's problem type.
        """
        if candidate.problem_type not in self.covers:
            raise ValueError(
                f"protocol {self.name!r} has no rule for problem_type "
                f"{candidate.problem_type!r} (it covers {sorted(self.covers)})"
            )
        return self.match(candidate)


def judge_mode(
    protocol: ScoringProtocol, bench: str, mode: str | None, per_benchmark: dict[str, str]
) -> str | None:
    """How ``bench`` is judged: ``fallback``, ``always`` or None (not judged).

    ``mode`` is the experiment's judge mode (None: it has no judge), ``per_benchmark`` its
    ``score.judge.benchmarks``: an explicit choice for the benchmark wins; else a rules-only
    protocol is never judged, an ``always`` protocol always is, an ``optional`` one in ``mode``.

    >>> rules = ScoringProtocol("r", "", "", "none", frozenset(), lambda c: None)
    >>> judge_mode(rules, "mme", "fallback", {})
    >>> judge_mode(rules, "mme", "fallback", {"mme": "always"})
    'always'
    """
    if mode is None:
        return None
    if bench in per_benchmark:
        return per_benchmark[bench]
    return {"none": None, "always": "always", "optional": mode}[protocol.judge]
