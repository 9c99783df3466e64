"""Scoring protocols: named, versioned ways to turn a response into a verdict.

The papers scored the same benchmark differently (VLMEvalKit as it was in May 2025, VLM-R1's
own REC script, Vision-SR1's evaluation code, the benchmark authors' scorers), and the
differences move numbers by points. A :class:`ScoringProtocol` names one of them, cites its
source (repository, file, commit) and says

- how a response is matched against the item (``match``: a :class:`~vlrl.scoring.candidate.
  Candidate` → :class:`~vlrl.scoring.candidate.Verdict` function, dispatching on the problem
  type), for the problem types it ``covers``;
- whether its reference uses an LLM judge (``judge``): ``none`` (rules only: the experiment's
  judge is not used for it unless ``score.judge.benchmarks`` says so for the benchmark),
  ``optional`` (the experiment's judge, when it has one, in its mode) or ``always`` (the
  protocol is a judge's: MM-Vet's grader).

A benchmark lists the protocols it supports and its default (``config/benchmarks/<name>.yaml``:
``protocols``, the first is the default); an experiment picks another per benchmark
(``score.protocol``), and ``vlrl rescore`` rescores existing predictions under any supported
protocol without new inference.
"""

from __future__ import annotations

from vlrl.config.reading import unknown_hint
from vlrl.core.errors import ConfigError
from vlrl.scoring.protocols import official, papers, vlmevalkit
from vlrl.scoring.protocols import vlrl as vlrl_rules
from vlrl.scoring.protocols.base import JudgeUse, ScoringProtocol, judge_mode

__all__ = ["PROTOCOLS", "JudgeUse", "ScoringProtocol", "get_protocol", "judge_mode"]


def _registry() -> dict[str, ScoringProtocol]:
    found = [
        *vlrl_rules.PROTOCOLS,
        *vlmevalkit.PROTOCOLS,
        *official.PROTOCOLS,
        *papers.PROTOCOLS,
    ]
    return {protocol.name: protocol for protocol in found}


PROTOCOLS: dict[str, ScoringProtocol] = _registry()
"""Every protocol by name."""


def get_protocol(name: str) -> ScoringProtocol:
    """The protocol named ``name``.

    Raises:
        ConfigError: no such protocol (the message lists them).
    """
    try:
        return PROTOCOLS[name]
    except KeyError:
        hint = unknown_hint(name, PROTOCOLS, "`vlrl protocols`")
        raise ConfigError(f"unknown scoring protocol {name!r}{hint}") from None
