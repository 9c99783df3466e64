"""vlrl's own rules (:func:`vlrl.scoring.rules.score_item`): the strict option-letter rule,
yes/no by VLMEvalKit's ``YOrN_Extraction``, numbers and LaTeX by Math-Verify, IoU ≥ threshold,
ROUGE-L for free text, and a maths answer in free form (LaTeX, ``$…$``, an expression without
words) by equality of value (:func:`vlrl.scoring.maths.equivalent`); the experiment's judge may
decide what the rules mark wrong. The protocol of the shapes world and of a benchmark without
a paper's protocol."""

from __future__ import annotations

import re
from dataclasses import replace

from vlrl.items.answers import has_latex
from vlrl.scoring import maths
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.protocols.base import ScoringProtocol
from vlrl.scoring.rules import TYPES, score_item

_WORD = re.compile(r"[A-Za-z]{3,}")


def is_maths(text: str) -> bool:
    """Whether a free-form answer is maths (LaTeX, ``$…$``, or no word of three letters), so
    equality of value applies; prose ("3 red circles") is compared as text.

    >>> [is_maths(t) for t in ["2 n+1", "$x=1$", "\\frac{1}{2}", "3 red circles"]]
    [True, True, True, False]
    """
    return has_latex(text) or "$" in text or not _WORD.search(text)


def match(candidate: Candidate) -> Verdict:
    """Score by :func:`vlrl.scoring.rules.score_item`, every accepted answer counting."""
    best = _maths_form(candidate)
    if best is not None:
        return best
    for gold in candidate.golds:
        verdict = Verdict(
            *score_item(
                candidate.response,
                gold,
                candidate.problem_type,
                list(candidate.options),
                [list(box) for box in candidate.boxes],
                candidate.iou_threshold,
                False,
                candidate.relaxed_tolerance,
                _frames(candidate),
            )
        )
        # a correct verdict beats a higher-scoring wrong one; ROUGE-L ties "x ray" with
        # "x-ray" although only one of them equals the response
        if best is None or (verdict.correct, verdict.score) > (best.correct, best.score):
            best = verdict
    assert best is not None
    return best


def _maths_form(candidate: Candidate) -> Verdict | None:
    """A free-form maths answer equal in value to a maths gold; None: the text rules decide."""
    if candidate.problem_type != "free_form":
        return None
    golds = [gold for gold in candidate.golds if is_maths(gold)]
    if not golds:
        return None
    found = maths.equivalent_match(replace(candidate, answer=golds[0], accepted=tuple(golds[1:])))
    return found if found.correct else None


def _frames(candidate: Candidate):
    if candidate.box_frames is None:
        return None
    return [list(v) for v in candidate.box_frames]


PROTOCOLS = (
    ScoringProtocol(
        name="vlrl",
        title="vlrl rules",
        source="vlrl (workflow_scripts/vlrl/scoring/rules.py)",
        judge="optional",
        covers=TYPES,
        match=match,
    ),
)
